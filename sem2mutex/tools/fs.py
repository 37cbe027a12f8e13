"""Small filesystem helpers: atomic writes, write-permission checks, lock files."""
from __future__ import annotations

import fcntl
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator


def write_text_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same directory, then rename.

    A reader (or a crash) never sees a half-written report.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


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


@contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock file: several processes (a run, the tests)
    may want the same cache entry at once."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
