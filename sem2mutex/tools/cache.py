"""Results kept between runs, keyed by everything they were made from.

A rerun after a reviewer's verdict, or after editing one file, must take
seconds: what spatch, the lexer, checkpatch or get_maintainer said about
an input is kept in the cache directory (outside the repository) under a
hash of that input and of everything else the answer depends on (the
rules, the tool's version, the options).  A changed input has another
key, so nothing is ever invalidated by hand; an entry that cannot be read
is recomputed.

    cache = ResultCache(cache_layout().results)
    key = cache.key("facts", program_text, spatch_version, file_bytes)
    records = cache.get("facts", key)       # None when not there
    cache.put("facts", key, records)
"""
from __future__ import annotations

import hashlib
import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qemu.files import write_atomic


@dataclass(frozen=True)
class ResultCache:
    root: Path | None  # None: a cache that keeps nothing

    @staticmethod
    def key(*parts: str | bytes) -> str:
        digest = hashlib.sha256()
        for part in parts:
            data = part.encode() if isinstance(part, str) else part
            digest.update(f"{len(data)}:".encode())
            digest.update(data)
        return digest.hexdigest()

    def _path(self, namespace: str, key: str) -> Path:
        assert self.root is not None
        return self.root / namespace / key[:2] / f"{key[2:]}.json"

    def get(self, namespace: str, key: str) -> Any | None:
        if self.root is None:
            return None
        try:
            return json.loads(self._path(namespace, key).read_text())
        except (OSError, ValueError):
            return None

    def put(self, namespace: str, key: str, value: Any) -> None:
        if self.root is None:
            return
        try:
            write_atomic(self._path(namespace, key), json.dumps(value, separators=(",", ":")))
        except OSError:
            pass  # a full or read-only cache only costs the next run time

    def get_object(self, namespace: str, key: str) -> Any | None:
        """A Python object put_object() kept (sem2mutex's own records, in
        the user's own cache directory), or None."""
        if self.root is None:
            return None
        try:
            return pickle.loads(self._object_path(namespace, key).read_bytes())
        except Exception:  # noqa: BLE001 - a stale or torn entry is recomputed
            return None

    def put_object(self, namespace: str, key: str, value: Any) -> None:
        if self.root is None:
            return
        try:
            write_atomic(self._object_path(namespace, key),
                         pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:
            pass

    def _object_path(self, namespace: str, key: str) -> Path:
        assert self.root is not None
        return self.root / namespace / key[:2] / f"{key[2:]}.pickle"

    def size(self) -> int:
        """Bytes held, for the benchmark's report."""
        if self.root is None or not self.root.is_dir():
            return 0
        return sum(f.stat().st_size for f in self.root.rglob("*") if f.is_file())


def file_digest(path: Path) -> str:
    """The content hash of a file: what a per-file result depends on."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def code_digest(*roots: Path) -> str:
    """A hash of every file under ROOTS: what sem2mutex's own results
    depend on besides their inputs."""
    h = hashlib.sha256()
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()
                           and "__pycache__" not in p.parts):
            h.update(f"{path.relative_to(root.parent)}\0".encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def no_cache() -> ResultCache:
    return ResultCache(None)


__all__ = ["ResultCache", "code_digest", "file_digest", "no_cache"]
