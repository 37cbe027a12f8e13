"""The last pairing check before `mutex`: failure branches that fall through.

pairing.cocci reports an up() a failed conditional down leads to inside
the failure branch, past a negated test, from the label the failure jumps
to and after a dropped result.  A failure branch that ends and falls
through past a plain test (if (down_trylock(&s)) pr_info(...); up(&s);)
it cannot see: failure_branches.cocci can, at the cost of all the other
failed-down rules together, so it runs only on the files where a mutex
candidate takes its semaphore conditionally (6.1: 5 files; 2.6.11: 53).
The up() sites it reports become unpaired, naming the failed call, and
the caller classifies the candidates again.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from sem2mutex.audit.facts import FACTS_DIR, by_kind, failed_acquires
from sem2mutex.audit.resolve import LOCK_OPS
from sem2mutex.model import Instance, Site
from sem2mutex.tools.spatch import SpatchRunner

FAILURE_BRANCH_RULES = [FACTS_DIR / "failure_branches.cocci"]
# non-zero when they did not take the semaphore
CONDITIONAL_DOWNS = frozenset(LOCK_OPS) - {"down"}


def conditional_files(candidates: list[Instance]) -> list[str]:
    """The files where CANDIDATES take their semaphore with a conditional
    down of their own (not through a helper or a wrapper)."""
    return sorted({s.location.file for inst in candidates for s in inst.sites
                   if s.op in CONDITIONAL_DOWNS and s.via_helper is None
                   and s.via_wrapper is None})


def mark_failed(site: Site, failed: dict[tuple[str, int], tuple[str, int]]) -> Site:
    """SITE unpaired if it is an up() of its own that a failure branch
    falls through to."""
    acquire = failed.get((site.location.file, site.location.line))
    if site.op != "up" or acquire is None or site.via_wrapper or site.via_helper:
        return site
    return replace(site, paired=False, failed_acquire=acquire)


@dataclass
class FailureBranchCheck:
    runner: SpatchRunner

    def run(self, candidates: list[Instance]) -> None:
        files = conditional_files(candidates)
        if not files:
            return
        output = self.runner.run("failure branches", FAILURE_BRANCH_RULES, files)
        # the rule reports lines; a site has its line only
        failed = {(file, line): acquire for (file, line, _), acquire
                  in failed_acquires(by_kind(output.records).get("unpaired", [])).items()}
        for inst in candidates:
            inst.sites[:] = [mark_failed(s, failed) for s in inst.sites]
