"""Old-API calls in code spatch cannot parse.

Function-defining macros (`#define FOO(_name) static ssize_t _name##_show()
{ ... down(&hba->host_sem); ... }`) defeat Coccinelle's parser, so neither
the audit nor the rewrite sees their calls, and the flag day would break
them.  Every semaphore such a region names is already `ambiguous`
(parse-failure), so the only safe conversion is the counting API, a pure
rename: `down` -> `down_sem` at the byte offset Coccinelle's lexer reports
for a `down` identifier followed by `(`.  The edit checks the bytes it
replaces; verification (`--verify`) reports whatever is left.
"""
from __future__ import annotations

from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from sem2mutex.audit.facts import FACTS_DIR
from sem2mutex.progress import Progress
from sem2mutex.tools.api import COUNTING_NAMES
from sem2mutex.tools.spatch import ParseError, SpatchRunner
from sem2mutex.tools.fs import replace_file
from sem2mutex.tools.lexer import Token, lex

PARSE_CHECK_RULES = [FACTS_DIR / "calls.cocci"]


@dataclass(frozen=True)
class UnparsedCall:
    file: str
    line: int
    offset: int
    op: str

    @property
    def new(self) -> str:
        return COUNTING_NAMES[self.op]


def skipped_regions(spatch: Path, tree: Path, files: list[str],
                    jobs: int) -> dict[str, list[ParseError]]:
    runner = SpatchRunner(spatch, tree, jobs, Progress(quiet=True))
    return runner.run("parse check", PARSE_CHECK_RULES, files).parse_errors


def calls_in(tokens: list[Token], regions: list[ParseError], rel: str) -> list[UnparsedCall]:
    found = []
    for i, tok in enumerate(tokens[:-1]):
        if not tok.identifier or tok.text not in COUNTING_NAMES:
            continue
        prev = tokens[i - 1] if i else None
        if prev is not None and not prev.identifier and prev.text in ("->", "."):
            continue  # ops->up(...): a member, not the semaphore API
        if tokens[i + 1].text != "(" or tokens[i + 1].identifier:
            continue
        if any(r.first_line <= tok.line <= r.last_line for r in regions):
            found.append(UnparsedCall(rel, tok.line, tok.offset, tok.text))
    return found


def unparsed_old_api_calls(spatch: Path, tree: Path, files: list[str],
                           jobs: int = 2) -> list[UnparsedCall]:
    """Old-API call tokens inside the regions spatch skips in FILES."""
    regions = skipped_regions(spatch, tree, files, jobs)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        per_file = pool.map(lambda f: calls_in(lex(spatch, tree, f), regions[f], f),
                            sorted(regions))
    return sorted((c for calls in per_file for c in calls),
                  key=lambda c: (c.file, c.offset))


def rename_calls(tree: Path, calls: list[UnparsedCall]) -> tuple[list[str], list[str]]:
    """Rename CALLS in place; return (files changed, problems)."""
    by_file: dict[str, list[UnparsedCall]] = defaultdict(list)
    for c in calls:
        by_file[c.file].append(c)
    changed, problems = [], []
    for rel, file_calls in sorted(by_file.items()):
        path = tree / rel
        data = bytearray(path.read_bytes())
        done = 0
        for c in sorted(file_calls, key=lambda c: c.offset, reverse=True):
            old = c.op.encode()
            if bytes(data[c.offset:c.offset + len(old)]) != old:
                problems.append(f"{rel}:{c.line}: no `{c.op}` at byte {c.offset}")
                continue
            data[c.offset:c.offset + len(old)] = c.new.encode()
            done += 1
        if done:
            replace_file(path, bytes(data))
            changed.append(rel)
    return changed, problems
