"""The analysis half of the pipeline: tree -> facts -> instances -> classes."""
from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from sem2mutex.audit.classify import classify_all
from sem2mutex.audit.contexts import add_address_taken, build_context_map
from sem2mutex.audit.decisions import REFUSED, VerdictApplier
from sem2mutex.audit.facts import FactCollector, add_context_records
from sem2mutex.audit.failures import FailureBranchCheck
from sem2mutex.audit.intake import candidate_files, drop_literal_mentions, include_graph
from sem2mutex.model import (Audit, FactSet, Instance, KernelTree, OtherTypeCall, ParseFailure,
                             SemClass, Verdict)
from sem2mutex.paths import COCCI_DIR
from sem2mutex.progress import Progress
from sem2mutex.audit.resolve import Resolved, build_instances
from sem2mutex.audit.seqfile import SeqFilePairing
from sem2mutex.tools.cache import ResultCache, code_digest, no_cache
from sem2mutex.tools.grep import GrepMemo
from sem2mutex.tools.spatch import SpatchRunner
from sem2mutex.tools.spatch import version as spatch_version
from sem2mutex.audit.mentions import MentionCheck
from sem2mutex.tools.lexer import Lexer
from sem2mutex.audit.visibility import Visibility
from sem2mutex.audit.wrappers import WrapperAnalysis, count_one


TYPE_ROUNDS = 2
PACKAGE_DIR = Path(__file__).resolve().parent.parent  # sem2mutex/


@dataclass
class AnalysisRequest:
    tree: KernelTree
    spatch: Path
    dirs: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    jobs: int = 2
    cache: ResultCache = field(default_factory=no_cache)
    memo: GrepMemo | None = None  # the tree's snapshot: greps of unchanged units kept


@dataclass
class Examined:
    """The audit before the reviewer's verdicts: all a verdict cannot change."""

    instances: list[Instance]
    parse_failures: list[ParseFailure]
    other_type_calls: list[OtherTypeCall]
    files_scanned: int


def analyse(req: AnalysisRequest, progress: Progress) -> Audit:
    started = time.monotonic()
    key = examined_key(req)
    examined = req.cache.get_object("examined", key) if key else None
    if isinstance(examined, Examined):
        progress.step("the tree's C files, the rules and sem2mutex are as at a run before: "
                      "its audit, before verdicts, is taken from the cache")
    else:
        examined = examine(req, progress)
        if key:
            req.cache.put_object("examined", key, examined)
    stale = VerdictApplier(req.verdicts).apply(examined.instances)
    for s in stale:
        if s.why.startswith(REFUSED):
            progress.warn(f"verdict for {s.verdict.instance} {s.why}")
        else:
            progress.warn(f"stale verdict for {s.verdict.instance}: {s.why}")
    return Audit(tree=req.tree, scope=req.dirs, instances=examined.instances,
                 parse_failures=examined.parse_failures, stale_verdicts=stale,
                 other_type_calls=examined.other_type_calls,
                 files_scanned=examined.files_scanned, seconds=time.monotonic() - started,
                 timings=progress.timings())


def examined_key(req: AnalysisRequest) -> str | None:
    """What the audit before verdicts depends on: every C file of the tree
    (by size and time, as the snapshot has them), the scope, sem2mutex's
    code and rules, and spatch; None without a cache and a snapshot."""
    if req.cache.root is None or req.memo is None:
        return None
    snapshot = req.memo.snapshot
    return req.cache.key(str(req.tree.path), snapshot.digest_of(list(snapshot.files)),
                         json.dumps(req.dirs), code_digest(PACKAGE_DIR, COCCI_DIR),
                         spatch_version(req.spatch))


def examine(req: AnalysisRequest, progress: Progress) -> Examined:
    lexer = Lexer(req.spatch, req.tree.path, req.jobs, cache=req.cache)
    try:
        return examine_with(lexer, req, progress)
    finally:
        lexer.close()


def examine_with(lexer: Lexer, req: AnalysisRequest, progress: Progress) -> Examined:
    with progress.stage("prefilter (grep)"):
        files = candidate_files(req.tree, req.dirs, req.jobs, req.memo)
    if files.in_literals_only:
        with progress.stage("prefilter (lexer: mentions in string literals)"):
            literal_only = len(files.in_literals_only)
            before = set(files.declaring) | set(files.calling)
            files = drop_literal_mentions(files, lexer)
            dropped = len(before - set(files.declaring) - set(files.calling))
        progress.step(f"{dropped} of the {literal_only} files that name the API only in "
                      "string literals, as the lexer reads them, are not parsed")
    progress.step(f"{len(files.declaring)} files may declare, {len(files.calling)} may call "
                  "the semaphore API")
    runner = SpatchRunner(req.spatch, req.tree.path, req.jobs, progress, cache=req.cache)
    collector = FactCollector(runner, lexer, req.memo)
    # grep and a directory walk: I/O that overlaps spatch's parsing
    with ThreadPoolExecutor(max_workers=1) as background:
        graph = background.submit(include_graph, req.tree.path, req.jobs, req.memo)
        with progress.stage("facts (spatch, one parse per file)"):
            facts = collector.collect(files)
        visibility = Visibility(graph.result())
    with progress.stage("resolve (types, helpers)"):
        resolved = resolve_with_types(collector, facts, visibility)
    instances = resolved.instances
    contexts = build_context_map(facts)
    # wrappers only add wrapper-call sites: the trylock files stay the same
    trylock_files = {s.location.file for i in instances if count_one(i)
                     for s in i.sites if s.op == "down_trylock"}
    lexer.lex_ahead(sorted(trylock_files))
    with progress.stage("wrappers (spatch)"):
        add_context_records(facts, WrapperAnalysis(runner, progress, req.memo).run(
            instances, facts, contexts, facts.pass2_files))
    contexts = build_context_map(facts)
    with progress.stage("seq_file pairs (lexer, spatch)"):
        SeqFilePairing(runner, lexer).run(instances, facts, contexts)
    with progress.stage("lexer (trylock callers, unexplained uses)"):
        add_address_taken(contexts, facts, lexer, trylock_files)
        everyone = instances  # out of --dir's scope too: their facts explain lines
        if req.dirs:
            instances = [i for i in instances if touches_scope(i, req.dirs)]
        classify_all(instances, contexts)
        # The last check before `mutex`; lexing every file of every count-one
        # semaphore costs more than the rest of this stage, and a semaphore
        # that is not a mutex already gains nothing from one more obstacle.
        candidates = [i for i in instances if i.sem_class is SemClass.MUTEX]
        MentionCheck(lexer, req.memo, visibility).run(candidates, everyone,
                                                       facts.other_lock_arguments)
    with progress.stage("failure branches (spatch)"):
        FailureBranchCheck(runner).run(candidates)
    classify_all(candidates, contexts)
    progress.spent_on("spatch", runner.seconds_by_file)
    progress.spent_on("lexer", lexer.seconds_by_file)
    return Examined(instances, facts.parse_failures, resolved.other_type_calls,
                    facts.files_scanned)


def resolve_with_types(collector: FactCollector, facts: FactSet,
                       visibility: Visibility) -> Resolved:
    """Instances from the facts; a struct or typedef some call needs may
    live in a header the prefilter did not pick (no semaphore in it):
    those are parsed (types.cocci only), twice at most (a typedef's struct
    may be in a third header)."""
    resolved = build_instances(facts, visibility)
    for _ in range(TYPE_ROUNDS):
        more = collector.more_types(resolved.missing_types, visibility, facts.parsed_files)
        if not more:
            break
        facts.type_records += more
        resolved = build_instances(facts, visibility)
    return resolved


def touches_scope(inst, dirs: list[str]) -> bool:
    files = {inst.file} | {s.location.file for s in inst.sites} | \
        {i.location.file for i in inst.inits}
    return any(f == d or f.startswith(d.rstrip("/") + "/") for f in files for d in dirs)
