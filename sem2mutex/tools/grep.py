"""grep -r over a whole tree, one grep per top-level entry, in parallel.

The prefilters that keep spatch to the files that can match (intake's
candidate files, the callers of a wrapper or of a pointer-taking function)
grep the whole kernel: about 70,000 .c and .h files, 3 to 7 s for one
single-threaded grep.  GNU grep has no threads of its own, so the tree is
split at its top level and the greps run side by side, the directories
with the most subdirectories (drivers/ first) started first.
"""
from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SOURCE_GLOBS = ("--include=*.c", "--include=*.h")


class GrepError(RuntimeError):
    pass


def top_level_entries(tree: Path) -> list[str]:
    """TREE's entries, biggest-looking directories first, files last.

    Symbolic links are left out: grep -r follows a link named on its
    command line, and a single grep -r over TREE would not.
    """
    def weight(entry: os.DirEntry) -> int:
        if entry.is_dir(follow_symlinks=False):
            return entry.stat(follow_symlinks=False).st_nlink
        return 0
    with os.scandir(tree) as it:
        entries = [e for e in it if not e.is_symlink()]
    return [e.name for e in sorted(entries, key=lambda e: (-weight(e), e.name))]


def grep_sources(tree: Path, options: list[str], jobs: int,
                 skip: tuple[str, ...] = ()) -> list[str]:
    """The output lines of `grep -r OPTIONS` over TREE's .c and .h files,
    with paths relative to TREE.  OPTIONS must hold the patterns (-e ...).
    SKIP names top-level directories the caller would drop anyway."""
    def one(entry: str) -> list[str]:
        # -H: a top-level file is grep's only operand, and would print unnamed
        done = subprocess.run(["grep", "-r", "-H", "-I", *SOURCE_GLOBS, *options, "--", entry],
                              cwd=tree, capture_output=True, text=True, errors="replace")
        if done.returncode not in (0, 1):
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise GrepError(f"grep failed in {tree}/{entry}: {last}")
        return done.stdout.splitlines()

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return [line for lines in pool.map(one, [e for e in top_level_entries(tree)
                                                        if e not in skip]) for line in lines]
