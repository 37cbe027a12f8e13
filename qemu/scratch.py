"""Kernel trees for the harness's own use: the default tree and scratch copies.

convert.py makes its own scratch copy (series applied); these helpers serve
the harness's self-test and CLI users who just want to boot a stock tree.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

from qemu.errors import TreeError
from sem2mutex.paths import DEBIAN_SOURCE_DIRNAME, DEBIAN_SOURCE_TARBALL, CacheLayout

SCRATCH_MARKER = ".sem2mutex-scratch-of"


@contextmanager
def _locked(lock_path: Path):
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_default_tree(layout: CacheLayout, tarball: Path = DEBIAN_SOURCE_TARBALL) -> Path:
    """The unpacked Debian linux-source-6.1 tree, unpacking it on a cold cache."""
    tree = layout.default_tree
    with _locked(layout.root / ".default-tree.lock"):
        if (tree / "Makefile").is_file():
            return tree
        if not tarball.is_file():
            raise TreeError(f"no kernel tree at {tree} and no {tarball} to unpack")
        unpack_dir = Path(tempfile.mkdtemp(prefix=".unpack-", dir=layout.root))
        try:
            subprocess.run(["tar", "-xf", str(tarball), "-C", str(unpack_dir)], check=True)
            os.rename(unpack_dir / DEBIAN_SOURCE_DIRNAME, tree)
        finally:
            shutil.rmtree(unpack_dir, ignore_errors=True)
    return tree


def hardlinked_scratch(source: Path, dest: Path) -> Path:
    """A scratch copy of source made of hard links, reused when present.

    Cheap (about a second for a whole tree) and it keeps the source's mtimes,
    so a build dir fed from it stays incremental even if the copy is redone.
    The price: a file edited *in place* in the copy would change the source.
    The harness only ever replaces files (qemu.atomic), and `patch`/`git
    apply` do too; anything else writing into such a copy must do the same.
    """
    source = source.resolve()
    marker = dest / SCRATCH_MARKER
    with _locked(dest.parent / f".{dest.name}.lock"):
        if marker.is_file() and marker.read_text() == str(source):
            return dest
        partial = dest.with_name(dest.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run(["cp", "-al", str(source), str(partial)], check=True)
        (partial / SCRATCH_MARKER).write_text(str(source))
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(partial, dest)
    return dest
