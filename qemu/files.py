"""Files written whole or not at all, and lock files.

Atomic writes (temp file + rename) mean a reader never sees half a file,
and a file of a hard-linked scratch tree is replaced, never written
through to the tree it was linked from.  sem2mutex builds on these too
(sem2mutex/tools/fs.py): qemu/ is a leaf that imports nothing of it.
"""
from __future__ import annotations

import fcntl
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def write_atomic(path: Path, content: str | bytes, mode: int = 0o644) -> None:
    data = content.encode() if isinstance(content, str) else content
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_if_changed(path: Path, content: str | bytes) -> bool:
    """Replace path only if its content differs; keep the mtime otherwise."""
    data = content.encode() if isinstance(content, str) else content
    if path.is_file() and path.read_bytes() == data:
        return False
    write_atomic(path, data)
    return True


@contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock file: several processes (a run, the tests)
    may want the same cache entry or build directory at once."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
