"""The analysis half of the pipeline: tree -> facts -> instances -> classes."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from sem2mutex.audit.classify import classify_all
from sem2mutex.audit.contexts import add_address_taken, build_context_map
from sem2mutex.audit.decisions import VerdictApplier
from sem2mutex.audit.facts import FactCollector, add_context_records
from sem2mutex.audit.intake import candidate_files
from sem2mutex.model import Audit, KernelTree, SemClass, Verdict
from sem2mutex.progress import Progress
from sem2mutex.audit.resolve import build_instances
from sem2mutex.tools.spatch import SpatchRunner
from sem2mutex.audit.mentions import MentionCheck
from sem2mutex.tools.lexer import Lexer
from sem2mutex.audit.wrappers import WrapperAnalysis, count_one


@dataclass
class AnalysisRequest:
    tree: KernelTree
    spatch: Path
    dirs: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    jobs: int = 2


def analyse(req: AnalysisRequest, progress: Progress) -> Audit:
    started = time.monotonic()
    files = candidate_files(req.tree, req.dirs, req.jobs)
    progress.step(f"{len(files.declaring)} files may declare, {len(files.calling)} may call "
                  "the semaphore API")
    runner = SpatchRunner(req.spatch, req.tree.path, req.jobs, progress)
    lexer = Lexer(req.spatch, req.tree.path, req.jobs)
    facts = FactCollector(runner, lexer).collect(files)
    instances = build_instances(facts)
    contexts = build_context_map(facts)
    add_context_records(facts, WrapperAnalysis(runner, progress).run(instances, facts, contexts,
                                                                 facts.pass2_files))
    contexts = build_context_map(facts)
    add_address_taken(contexts, facts, lexer,
                      {s.location.file for i in instances if count_one(i)
                       for s in i.sites if s.op == "down_trylock"})
    if req.dirs:
        instances = [i for i in instances if touches_scope(i, req.dirs)]
    classify_all(instances, contexts)
    # The last check before `mutex`; lexing every file of every count-one
    # semaphore costs more than the rest of this stage, and a semaphore
    # that is not a mutex already gains nothing from one more obstacle.
    candidates = [i for i in instances if i.sem_class is SemClass.MUTEX]
    MentionCheck(lexer).run(candidates)
    classify_all(candidates, contexts)
    stale = VerdictApplier(req.verdicts).apply(instances)
    for s in stale:
        progress.warn(f"stale verdict for {s.verdict.instance}: {s.why}")
    return Audit(tree=req.tree, scope=req.dirs, instances=instances,
                 parse_failures=facts.parse_failures, stale_verdicts=stale,
                 files_scanned=facts.files_scanned, seconds=time.monotonic() - started)


def touches_scope(inst, dirs: list[str]) -> bool:
    files = {inst.file} | {s.location.file for s in inst.sites} | \
        {i.location.file for i in inst.inits}
    return any(f == d or f.startswith(d.rstrip("/") + "/") for f in files for d in dirs)
