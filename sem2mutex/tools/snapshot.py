"""What a tree's C files are now, in a form cheap to compare with the last run.

A rerun after a reviewer's verdict, or after editing one file, must not
grep the whole kernel again.  A TreeSnapshot lists every .c and .h file
with its size and modification time (one walk of the tree, a third of a
second for 6.1) and cuts the tree into grep units: the top-level entries,
and the subdirectories of the big ones (drivers/, arch/, ...).  A grep's
output for a unit is kept under a hash of the unit's files' sizes and
times, as make trusts them: after editing one driver file only that
driver's unit is grepped again.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

SOURCE_SUFFIXES = (".c", ".h")
# A top-level directory with more files than this is grepped subdirectory by
# subdirectory (and its own files one by one), so an edit re-greps little.
SPLIT_ABOVE = 1500


@dataclass(frozen=True)
class TreeSnapshot:
    tree: Path
    files: dict[str, tuple[int, int]]  # .c/.h file -> (size, mtime in ns)
    units: dict[str, str] = field(default_factory=dict)  # grep unit -> digest of its files

    @classmethod
    def take(cls, tree: Path, skip: tuple[str, ...] = ()) -> "TreeSnapshot":
        files: dict[str, tuple[int, int]] = {}
        # os.scandir: the entry's type comes with the listing, so only the
        # .c/.h files cost a stat (os.walk plus islink took 1.2 s on 6.1)
        stack = [(str(tree), "")]
        while stack:
            path, rel = stack.pop()
            try:
                entries = list(os.scandir(path))
            except OSError:
                continue
            for entry in entries:
                name = entry.name
                if name.startswith(".") or entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if rel or name not in skip:
                        stack.append((entry.path, f"{rel}{name}/"))
                elif name.endswith(SOURCE_SUFFIXES):
                    st = entry.stat(follow_symlinks=False)
                    files[f"{rel}{name}"] = (st.st_size, st.st_mtime_ns)
        files = dict(sorted(files.items()))
        return cls(tree, files, grep_units(files))

    def digest_of(self, files: list[str]) -> str:
        """A hash of FILES' sizes and times (a missing file counts too)."""
        h = hashlib.sha256()
        for f in sorted(files):
            h.update(f"{f}\0{self.files.get(f)}\0".encode())
        return h.hexdigest()


def grep_units(files: dict[str, tuple[int, int]]) -> dict[str, str]:
    """Unit -> digest: a top-level file or directory, or for a directory
    holding more than SPLIT_ABOVE files, each of its entries."""
    by_top: dict[str, list[str]] = {}
    for f in files:
        by_top.setdefault(f.split("/", 1)[0], []).append(f)
    members: dict[str, list[str]] = {}
    for top, fs in by_top.items():
        if len(fs) <= SPLIT_ABOVE or "/" not in fs[0]:
            members[top] = fs
            continue
        for f in fs:
            parts = f.split("/")
            unit = "/".join(parts[:2])
            members.setdefault(unit, []).append(f)
    units = {}
    for unit, fs in members.items():
        h = hashlib.sha256()
        for f in sorted(fs):
            h.update(f"{f}\0{files[f]}\0".encode())
        units[unit] = h.hexdigest()
    return units
