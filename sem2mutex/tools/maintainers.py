"""Which MAINTAINERS section a file belongs to.

Groups audit entries and conversion patches by subsystem, so that each
maintainer reviews one group.  The most specific F: pattern wins, as in
scripts/get_maintainer.pl; Cc lists themselves come from get_maintainer.pl.
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

FALLBACK_SECTION = "THE REST"


@dataclass(frozen=True)
class Section:
    name: str
    files: tuple[str, ...]
    excluded: tuple[str, ...]
    lists: tuple[str, ...] = ()
    status: str = ""


def pattern_matches(pattern: str, path: str) -> bool:
    if pattern.endswith("/"):
        return path.startswith(pattern)
    if any(ch in pattern for ch in "*?["):
        # F: drivers/net/* matches files in drivers/net but not below.
        if not fnmatch.fnmatch(path, pattern):
            return False
        return path.count("/") == pattern.count("/")
    return path == pattern or path.startswith(pattern + "/")


def specificity(pattern: str) -> int:
    """Longer literal prefixes are more specific."""
    literal = re.split(r"[*?\[]", pattern, maxsplit=1)[0]
    return len(literal)


def parse_maintainers(text: str) -> list[Section]:
    sections: list[Section] = []
    body = text.split("\nMaintainers List", 1)[-1]
    name, files, excluded, lists, status = None, [], [], [], ""
    for line in body.splitlines() + [""]:
        if not line.strip():
            if name and files:
                sections.append(Section(name, tuple(files), tuple(excluded), tuple(lists), status))
            name, files, excluded, lists, status = None, [], [], [], ""
            continue
        tag = re.match(r"^([A-Z]):\s*(.*)$", line)
        if tag is None:
            if name is None and not line.startswith(("-", " ", "\t", ".")):
                name = line.strip()
            continue
        letter, value = tag.groups()
        if letter == "F":
            files.append(value.strip())
        elif letter == "X":
            excluded.append(value.strip())
        elif letter == "L":
            lists.append(value.split()[0])
        elif letter == "S":
            status = value.strip()
    return sections


def literal_components(pattern: str) -> tuple[str, ...]:
    """The path components PATTERN starts with before any wildcard: a path
    it matches starts with the same components."""
    found = []
    for part in pattern.rstrip("/").split("/"):
        if any(ch in part for ch in "*?["):
            break
        found.append(part)
    return tuple(found)


@dataclass
class Maintainers:
    sections: list[Section] = field(default_factory=list)
    # literal leading components -> (section number, pattern), so that a
    # lookup tries the few patterns that can match, not all 20,000
    _by_prefix: dict[tuple[str, ...], list[tuple[int, str]]] = field(
        default_factory=dict, init=False, repr=False)
    _answers: dict[str, str] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for number, sec in enumerate(self.sections):
            if sec.name == FALLBACK_SECTION:
                continue
            for pattern in sec.files:
                self._by_prefix.setdefault(literal_components(pattern), []).append(
                    (number, pattern))

    @classmethod
    def load(cls, tree: Path) -> "Maintainers":
        path = tree / "MAINTAINERS"
        if not path.is_file():
            return cls([])
        return cls(parse_maintainers(path.read_text(errors="replace")))

    def section_for(self, path: str) -> str:
        if path not in self._answers:
            self._answers[path] = self._best_section(path)
        return self._answers[path]

    def _best_section(self, path: str) -> str:
        parts = tuple(path.split("/"))
        candidates = sorted(c for n in range(len(parts) + 1)
                            for c in self._by_prefix.get(parts[:n], ()))
        best, best_score = FALLBACK_SECTION, -1
        for number, pattern in candidates:
            sec = self.sections[number]
            if not pattern_matches(pattern, path) or \
                    any(pattern_matches(x, path) for x in sec.excluded):
                continue
            score = specificity(pattern)
            if score > best_score:
                best, best_score = sec.name, score
        return best
