"""The old-API check of --verify: no caller of down() ... up() is left.

old_api_callers.cocci (core_api.find_old_api_callers) over every file of
the patched tree that may still call an old name; git grep only picks the
files worth parsing, spatch decides.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sem2mutex.audit.intake import split_by_mentions
from sem2mutex.errors import GitError
from sem2mutex.progress import Progress
from sem2mutex.series import core_api
from sem2mutex.tools.api import OLD_NAMES
from sem2mutex.tools.fs import read_json, write_json_atomic
from sem2mutex.tools.git import nul_split
from sem2mutex.tools.kernel_tree import NON_KERNEL_DIRS
from sem2mutex.tools.spatch import version as spatch_version
from sem2mutex.proof.workspace import git

# Prefilter for the old-API check (PCRE, for git grep -P); spatch decides.
OLD_API_CALL = r"\b(" + "|".join(OLD_NAMES) + r")\s*\("
OLD_API_CACHE_FILE = "sem2mutex-old-api-cache.json"


@dataclass(frozen=True)
class OldApiLeft:
    file: str
    line: int
    function: str | None   # None: in a macro body or an initialiser
    op: str                # down, down_interruptible, ..., up
    type: str              # "semaphore", or "unknown type"

    @property
    def context(self) -> str:
        return "function" if self.function else "macro body or initialiser"



def old_api_candidates(repo: Path) -> list[str]:
    """Kernel .c/.h files whose text may call down() ... up()."""
    done = git(repo, "grep", "-l", "-I", "-z", "-P", "-e", OLD_API_CALL, "--", "*.c", "*.h",
               check=False)
    if done.returncode not in (0, 1):
        raise GitError(f"git grep failed in {repo}: {done.stderr.strip()}")
    return sorted(rel for rel in nul_split(done.stdout) if not rel.startswith(NON_KERNEL_DIRS))


def _index_blobs(repo: Path, paths: list[str]) -> dict[str, str]:
    if not paths:
        return {}
    out = git(repo, "--literal-pathspecs", "ls-files", "-s", "-z", "--", *paths).stdout
    blobs = {}
    for record in nul_split(out):
        meta, rel = record.split("\t", 1)
        blobs[rel] = meta.split()[1]
    return blobs


def _old_api_cache_key(spatch: Path) -> str:
    return json.dumps([core_api.OLD_API_CALLERS_COCCI.read_text(), spatch_version(spatch),
                       OLD_API_CALL])


def find_old_api_left(repo: Path, spatch: Path, progress: Progress) -> tuple[list[OldApiLeft], dict]:
    """Old-API callers in the patched tree, and how the search went.

    spatch reads each file on its own (--no-includes, one file group per
    file), so a file's callers depend on its content only: they are cached
    per git blob, and a rerun only parses the files that changed.
    """
    candidates = old_api_candidates(repo)
    blobs = _index_blobs(repo, candidates)
    cache_path = repo / ".git" / OLD_API_CACHE_FILE
    key = _old_api_cache_key(spatch)
    cache = read_json(cache_path) or {}
    cached = cache.get("blobs", {}) if cache.get("key") == key else {}
    unknown = [rel for rel in candidates if blobs.get(rel) not in cached]
    # Files whose only mention of up( or down( is in a comment: no call.
    _, calling, _ = split_by_mentions(repo, set(unknown)) if unknown else (set(), set(), set())
    to_parse = sorted(calling)
    progress.step(f"verify: old-API check: {len(candidates)} files mention down()/up(), "
                  f"{len(candidates) - len(unknown)} known from the last run, "
                  f"spatch parses {len(to_parse)}")
    found: dict[str, list[dict]] = {rel: [] for rel in unknown}
    for caller in core_api.find_old_api_callers(repo, spatch, to_parse):
        found[caller.file].append({"line": caller.line, "function": caller.function,
                                   "op": caller.op, "type": caller.arg_type})
    fresh = {blobs[rel]: found[rel] for rel in unknown if rel in blobs}
    keep = {blobs[rel]: cached[blobs[rel]] for rel in candidates if blobs.get(rel) in cached}
    write_json_atomic(cache_path, {"key": key, "blobs": keep | fresh})
    left = []
    for rel in candidates:
        records = found[rel] if rel in found else cached.get(blobs.get(rel, ""), [])
        left += [OldApiLeft(file=rel, **r) for r in records]
    left.sort(key=lambda c: (c.file, c.line, c.op))
    stats = {"old_api_candidates": len(candidates), "old_api_parsed": len(to_parse),
             "old_api_cached": len(candidates) - len(unknown)}
    return left, stats


