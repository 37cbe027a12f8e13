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

    def size(self) -> int:
        """Bytes held, for the benchmark's report."""
        if self.root is None or not self.root.is_dir():
            return 0
        return sum(f.stat().st_size for f in self.root.rglob("*.json"))


def file_digest(path: Path) -> str:
    """The content hash of a file: what a per-file result depends on."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def no_cache() -> ResultCache:
    return ResultCache(None)


__all__ = ["ResultCache", "file_digest", "no_cache"]
