"""Kernel trees for the harness's own use: the default tree and scratch copies.

convert.py makes its own scratch copy (series applied); these helpers serve
the harness's self-test and CLI users who just want to boot a stock tree.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from qemu.errors import TreeError
from sem2mutex.audit import intake
from sem2mutex.tools.fs import locked
from sem2mutex.paths import DEBIAN_SOURCE_TARBALL, CacheLayout

SCRATCH_MARKER = ".sem2mutex-scratch-of"


def ensure_default_tree(layout: CacheLayout, tarball: Path = DEBIAN_SOURCE_TARBALL) -> Path:
    """The unpacked Debian linux-source-6.1 tree, unpacking it on a cold cache."""
    try:
        return intake.ensure_default_tree(layout, tarball)
    except intake.IntakeError as err:
        raise TreeError(str(err)) from None


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
    with locked(dest.parent / f".{dest.name}.lock"):
        if marker.is_file() and marker.read_text() == str(source):
            return dest
        partial = dest.with_name(dest.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run(["cp", "-al", str(source), str(partial)], check=True)
        (partial / SCRATCH_MARKER).write_text(str(source))
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(partial, dest)
    return dest
