"""Which lines of a file changed, by GNU diff.

The rewrite stage maps the audit's line numbers through every change
spatch makes, so it needs the changed blocks of big files (bnx2x_main.c
has 15,000 lines) several times per run.  difflib.SequenceMatcher without
its junk heuristic took about 15 s for one series; with the heuristic it
may report an unchanged line inside a changed block, which would map the
lines around it wrongly.  diff --minimal gives minimal blocks in
milliseconds.
"""
from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sem2mutex.errors import DiffError
from sem2mutex.tools.cache import ResultCache

# One line per changed block: the old file's lines (e, l] became the new
# file's lines (E, L]; e == l for an insertion, E == L for a deletion.
GROUP_FORMAT = "%de %dl %dE %dL\n"


@dataclass(frozen=True)
class Block:
    """Lines [old_start, old_end) became [new_start, new_end) (0-based)."""

    old_start: int
    old_end: int
    new_start: int
    new_end: int


def changed_blocks(before: bytes, after: bytes, cache: ResultCache | None = None
                   ) -> list[Block]:
    """The blocks of lines that differ between BEFORE and AFTER, in order
    (kept in CACHE: a rerun of the series diffs the same files again)."""
    if before == after:
        return []
    if cache is None or cache.root is None:
        return diff_blocks(before, after)
    key = cache.key(GROUP_FORMAT, before, after)
    kept = cache.get("linediff", key)
    if isinstance(kept, list):
        return [Block(*b) for b in kept]
    blocks = diff_blocks(before, after)
    cache.put("linediff", key, [[b.old_start, b.old_end, b.new_start, b.new_end]
                                for b in blocks])
    return blocks


def diff_blocks(before: bytes, after: bytes) -> list[Block]:
    with tempfile.TemporaryDirectory(prefix="sem2mutex-diff-") as tmp:
        old, new = Path(tmp) / "old", Path(tmp) / "new"
        old.write_bytes(before)
        new.write_bytes(after)
        done = subprocess.run(
            ["diff", "--minimal", "--text", "--unchanged-group-format=",
             f"--old-group-format={GROUP_FORMAT}", f"--new-group-format={GROUP_FORMAT}",
             f"--changed-group-format={GROUP_FORMAT}", str(old), str(new)],
            capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise DiffError(f"diff failed: {done.stderr.strip()[:200]}")
    return [Block(*map(int, line.split())) for line in done.stdout.splitlines()]
