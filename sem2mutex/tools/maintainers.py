"""Which MAINTAINERS section a file belongs to, and MAINTAINERS excerpts.

Groups audit entries and conversion patches by subsystem, so that each
maintainer reviews one group.  The most specific F: pattern wins, as in
scripts/get_maintainer.pl; Cc lists themselves come from get_maintainer.pl,
which is handed the excerpt of MAINTAINERS that can concern a patch's
files (MaintainersFile: the file split as get_maintainer.pl reads it,
where a blank line does not end a section, unlike parse_maintainers()'s
grouping by paragraph).
"""
from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

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


# How scripts/get_maintainer.pl reads MAINTAINERS (read_maintainer_file):
# a line "X: value" is an entry, a blank line or a "#" comment is skipped,
# any other line is a section's name (the file's preamble is such lines).
# Perl's \s on bytes is ASCII whitespace: re.ASCII.
ENTRY = re.compile(rb"^([A-Z]):\s*(.*)", re.ASCII)
SKIPPED = re.compile(rb"^\s*(?:#|$)", re.ASCII)
# The characters an F: value keeps literal once get_maintainer.pl turned it
# into the regex it anchors at a file's start (only ".", "*" and "?" are
# converted; "." becomes "\."): a file the pattern matches starts with the
# value's longest prefix of these.
LITERAL_PREFIX = re.compile(rb"[A-Za-z0-9_./,-]*")


@dataclass(frozen=True)
class EntryRun:
    """A section as get_maintainer.pl delimits it: a run of entries (blank
    lines and comments between them do not end it) and the name line
    before it, as line numbers of the file."""

    lines: tuple[int, ...]
    # N: (a regex on the path) or K: (a regex on the file's text): may
    # match any file, so always kept
    always: bool
    prefixes: tuple[bytes, ...]  # of its F: values


@dataclass(frozen=True)
class MaintainersFile:
    """MAINTAINERS byte for byte, split into the sections get_maintainer.pl
    sees, to hand it an excerpt (--mpath): reading and compiling the whole
    file is most of a run (0.16 s of 0.19 s on 6.1), and a series asks
    about some 70 file lists."""

    lines: tuple[bytes, ...]
    runs: tuple[EntryRun, ...]

    @classmethod
    def read(cls, path: Path) -> "MaintainersFile | None":
        try:
            data = path.read_bytes()
        except OSError:
            return None
        return cls.parse(data)

    @classmethod
    def parse(cls, data: bytes) -> "MaintainersFile":
        lines = tuple(data.split(b"\n"))
        runs: list[list[int]] = []
        name: int | None = None
        in_run = False
        for number, line in enumerate(lines):
            if ENTRY.match(line):
                if not in_run:
                    runs.append([] if name is None else [name])
                    in_run = True
                runs[-1].append(number)
            elif not SKIPPED.match(line):
                name, in_run = number, False
        return cls(lines, tuple(run_of(lines, numbers) for numbers in runs))

    def excerpt(self, files: Iterable[str]) -> bytes:
        """The file without the sections none of FILES can match: what
        get_maintainer.pl answers for FILES from it is what it answers
        from the whole file."""
        wanted = [os.fsencode(f) for f in files]
        dropped = {number for run in self.runs
                   if not run.always and not any(f.startswith(p) for p in run.prefixes
                                                 for f in wanted)
                   for number in run.lines}
        return b"\n".join(line for number, line in enumerate(self.lines)
                          if number not in dropped)


def run_of(lines: tuple[bytes, ...], numbers: list[int]) -> EntryRun:
    """The EntryRun of the file's lines NUMBERS (a name line, then entries)."""
    always, prefixes = False, []
    for number in numbers:
        entry = ENTRY.match(lines[number])
        if entry is None:
            continue
        kind, value = entry.groups()
        if kind in (b"N", b"K"):
            always = True
        elif kind == b"F":
            prefixes.append(LITERAL_PREFIX.match(value).group(0))
    return EntryRun(tuple(numbers), always, tuple(prefixes))


@dataclass
class Maintainers:
    sections: list[Section] = field(default_factory=list)
    file: MaintainersFile | None = None  # the text, for get_maintainer.pl excerpts
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
        return cls(parse_maintainers(path.read_text(errors="replace")),
                   MaintainersFile.read(path))

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
