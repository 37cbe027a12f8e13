"""Filesystem helpers: atomic writes, lock files, hard-linked copies.

Scratch trees are hard-linked copies of the pristine tree, so nothing may
write through a link: files are replaced (a new inode), and a file about
to be edited in place by another program (spatch --in-place) is unshared
first.  The atomic write and the lock are qemu/files.py's, the one copy.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from qemu.files import locked, write_atomic, write_if_changed

__all__ = ["locked", "write_atomic", "write_if_changed", "write_text_atomic", "write_json_atomic",
           "read_json", "replace_file", "unshare", "hardlink_copy", "is_within",
           "check_writable_dir"]


def write_text_atomic(path: Path, text: str) -> None:
    write_atomic(path, text)


def write_json_atomic(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def read_json(path: Path) -> Any:
    """The JSON in PATH, or None if it is missing or not JSON."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def replace_file(path: Path, data: str | bytes) -> None:
    """New content for an existing file, as a new inode with its mode."""
    write_atomic(path, data, mode=path.stat().st_mode & 0o777)


def unshare(path: Path) -> None:
    """Give a hard-linked file its own inode (same content, mode and mtime)."""
    if not path.is_file() or path.is_symlink() or path.stat().st_nlink <= 1:
        return
    private = path.with_name(path.name + ".sem2mutex-unshare")
    shutil.copy2(path, private)
    os.replace(private, path)


def hardlink_copy(source: Path, dest: Path) -> None:
    """DEST as a copy of SOURCE made of hard links (cp -al: a second, no space)."""
    done = subprocess.run(["cp", "-al", str(source), str(dest)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise OSError(f"cp -al {source} {dest}: {done.stderr.strip()}")


def is_within(path: Path, parent: Path) -> bool:
    try:
        path.resolve().relative_to(parent.resolve())
        return True
    except ValueError:
        return False


def check_writable_dir(path: Path) -> str | None:
    """Create PATH if needed; return a problem description, or None if usable."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        return f"cannot create output directory {path}: {err.strerror}"
    if not path.is_dir():
        return f"output path {path} is not a directory"
    try:
        fd, probe = tempfile.mkstemp(prefix=".sem2mutex-probe.", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        return f"output directory {path} is not writable: {err.strerror}"
    return None
