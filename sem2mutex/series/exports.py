"""Which exported symbols a series adds and removes, and under which
configuration: the one list of the scope report out-of-tree code depends on.

    tree, series copy, touched files -> diff_exports() -> ExportDiff

An export is one EXPORT_SYMBOL*() line, as cocci/check/exports.cocci
reports it, with the preprocessor conditions around it (read from
Coccinelle's lexer: spatch 1.1.1 parses every #ifdef branch and its SmPL
cannot match the directives themselves) and the Kconfig symbol that builds
its file (the obj-$(CONFIG_X) line of the file's Makefile).

A symbol is removed when the touched files exported it before the series
and nothing in the tree exports it after; added when the touched files
export it after and nothing in the tree exported it before.  The rest of
the tree is only read for the symbols whose export moved: a symbol that
one touched file stops exporting while an untouched file still exports it
is not removed.  Export lines that stay but under other conditions (the
generic mutex.c compiled out by CONFIG_MUTEX_SIMPLE) are listed apart.
"""
from __future__ import annotations

import re
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from sem2mutex.paths import COCCI_DIR
from sem2mutex.progress import Progress
from sem2mutex.tools.grep import GrepMemo, files_matching, files_with_words
from sem2mutex.tools.kernel_tree import NON_KERNEL_TOP_DIRS
from sem2mutex.tools.lexer import Directive, directives
from sem2mutex.tools.cache import ResultCache, no_cache
from sem2mutex.tools.spatch import SpatchRunner

EXPORTS_RULE = COCCI_DIR / "check" / "exports.cocci"
EXPORT_MACROS = ("EXPORT_SYMBOL", "EXPORT_SYMBOL_GPL", "EXPORT_SYMBOL_NS",
                 "EXPORT_SYMBOL_NS_GPL", "EXPORT_PER_CPU_SYMBOL", "EXPORT_PER_CPU_SYMBOL_GPL")


@dataclass(frozen=True)
class ExportSite:
    name: str
    macro: str  # EXPORT_SYMBOL, EXPORT_SYMBOL_GPL, ...
    file: str
    line: int
    # preprocessor conditions that must all hold, as written:
    # ("defined(CONFIG_MUTEX_SIMPLE)", "!defined(CONFIG_DEBUG_LOCK_ALLOC)")
    conditions: tuple[str, ...] = ()
    built_if: str | None = None  # CONFIG_X of obj-$(CONFIG_X) += file.o; None: obj-y or unknown

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.name, self.file, self.macro)

    def when(self) -> str:
        """Under which configuration the export happens, for a reader."""
        parts = ([f"IS_ENABLED({self.built_if})"] if self.built_if else []) \
            + list(self.conditions)
        return " && ".join(parts)

    def as_dict(self) -> dict:
        return {"name": self.name, "macro": self.macro, "file": self.file, "line": self.line,
                "conditions": list(self.conditions), "built_if": self.built_if}


@dataclass(frozen=True)
class ConditionChange:
    before: ExportSite
    after: ExportSite


@dataclass
class ExportDiff:
    added: list[str] = field(default_factory=list)  # exported nowhere before
    removed: list[str] = field(default_factory=list)  # exported nowhere after
    lines_added: list[ExportSite] = field(default_factory=list)
    lines_removed: list[ExportSite] = field(default_factory=list)
    conditions_changed: list[ConditionChange] = field(default_factory=list)

    def site_of(self, name: str) -> ExportSite | None:
        """Where an added symbol is exported now (the first line)."""
        return next((s for s in self.lines_added if s.name == name), None)


# ------------------------------------------------------------- conditions


def negate(condition: str) -> str:
    if condition.startswith("!defined(") and condition.endswith(")") \
            and condition.count("(") == 1:
        return condition[1:]
    if condition.startswith("defined(") and condition.endswith(")") \
            and condition.count("(") == 1:
        return "!" + condition
    return f"!({condition})"


@dataclass
class Frame:
    """One #if ... #endif being read: the branches already passed, the one
    now open (None after #else)."""

    passed: list[str]
    current: str | None

    def conditions(self) -> list[str]:
        return [negate(c) for c in self.passed] + ([self.current] if self.current else [])


def opening_condition(d: Directive) -> str:
    if d.keyword == "ifdef":
        return f"defined({d.argument})"
    if d.keyword == "ifndef":
        return f"!defined({d.argument})"
    return d.argument


def conditions_at(found: list[Directive], lines: list[int]) -> dict[int, tuple[str, ...]]:
    """The conditions in force at each of LINES, from the file's directives."""
    wanted = sorted(set(lines))
    answers: dict[int, tuple[str, ...]] = {}
    stack: list[Frame] = []
    events = sorted(found, key=lambda d: d.line)
    i = 0
    for line in wanted:
        while i < len(events) and events[i].line < line:
            d = events[i]
            i += 1
            if d.keyword in ("if", "ifdef", "ifndef"):
                stack.append(Frame([], opening_condition(d)))
            elif not stack:  # unbalanced: spatch's lexer saw more #endif than #if
                continue
            elif d.keyword == "elif":
                top = stack[-1]
                top.passed.append(top.current or "")
                top.current = d.argument
            elif d.keyword == "else":
                top = stack[-1]
                if top.current:
                    top.passed.append(top.current)
                top.current = None
            elif d.keyword == "endif":
                stack.pop()
        answers[line] = tuple(c for frame in stack for c in frame.conditions() if c)
    return answers


# ------------------------------------------------------------- Kconfig


MAKE_ASSIGNMENT = re.compile(r"^(?P<target>[A-Za-z0-9_.$()-]+?)-(?P<cond>y|objs|\$\((?P<config>"
                             r"CONFIG_[A-Za-z0-9_]+)\))\s*[:+]?=\s*(?P<objects>.*)$")


def makefile_lines(path: Path) -> list[str]:
    """The Makefile's lines with continuation lines joined."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return text.replace("\\\n", " ").splitlines()


def built_if(roots: list[Path], rel: str) -> str | None:
    """The CONFIG_ symbol whose obj-$(CONFIG_X) line builds REL, following
    one composite object (hinic-y := ... file.o; obj-$(CONFIG_HINIC) +=
    hinic.o).  None for obj-y, or when the Makefile does not say plainly.

    Kbuild Makefiles are make syntax, not C: this reads their assignment
    lines, the only place the answer is written.
    """
    path = Path(rel)
    makefile = next((r / path.parent / "Makefile" for r in roots
                     if (r / path.parent / "Makefile").is_file()), None)
    if makefile is None:
        return None
    assignments = [m for line in makefile_lines(makefile)
                   if (m := MAKE_ASSIGNMENT.match(line.strip()))]

    def builder(obj: str, depth: int) -> str | None:
        for m in assignments:
            if obj not in m["objects"].split():
                continue
            if m["target"] == "obj":
                return m["config"]  # None for obj-y
            if depth == 0:
                composite = f"{m['target']}.o"
                return m["config"] or builder(composite, 1)
        return None

    return builder(f"{path.stem}.o", 0)


# ------------------------------------------------------------- reading


def export_sites(spatch: Path, root: Path, files: list[str], jobs: int,
                 kbuild_roots: list[Path] | None = None,
                 cache: ResultCache | None = None) -> list[ExportSite]:
    """Every export of FILES under ROOT, with its conditions."""
    candidates = files_with_words(root, [f for f in files if f.endswith((".c", ".h"))
                                         and (root / f).is_file()], list(EXPORT_MACROS))
    if not candidates:
        return []
    runner = SpatchRunner(spatch, root, max(1, jobs), Progress(quiet=True),
                          cache=cache or no_cache())
    records = [r for r in runner.run("exports", [EXPORTS_RULE], candidates).records
               if r["kind"] == "export"]
    by_file: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_file[r["file"]].append(r)
    roots = kbuild_roots or [root]

    def of_file(rel: str) -> list[ExportSite]:
        found = conditions_at(directives(spatch, root, rel, cache),
                              [r["line"] for r in by_file[rel]])
        config = built_if(roots, rel)
        return [ExportSite(r["name"], r["macro"], rel, r["line"], found[r["line"]], config)
                for r in by_file[rel]]

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        sites = [s for group in pool.map(of_file, sorted(by_file)) for s in group]
    return sorted(set(sites), key=lambda s: (s.file, s.line, s.name))


def exporters(spatch: Path, tree: Path, names: set[str], skip_files: set[str],
              use_git: bool, jobs: int, cache: ResultCache | None = None,
              memo: GrepMemo | None = None) -> set[str]:
    """Those of NAMES some file of TREE outside SKIP_FILES exports.  grep
    only picks the files worth reading; spatch decides."""
    if not names:
        return set()
    pattern = (r"EXPORT_[A-Z_]*SYMBOL[A-Z_]*\((" + "|".join(sorted(names)) + r")\b")
    files = sorted(files_matching(tree, pattern, use_git, jobs, skip=NON_KERNEL_TOP_DIRS,
                                  memo=memo) - skip_files)
    return {s.name for s in export_sites(spatch, tree, files, jobs, cache=cache)} & names


# ------------------------------------------------------------- the diff


def diff_exports(spatch: Path, tree: Path, series_root: Path, touched: list[str],
                 jobs: int, use_git: bool = False,
                 cache: ResultCache | None = None,
                 memo: GrepMemo | None = None) -> ExportDiff:
    """The exports TREE loses and gains when its TOUCHED files are replaced
    by SERIES_ROOT's (the series' scratch repository at its last commit).

    TOUCHED may leave out changed files whose changes hold no export line,
    no preprocessor conditional and no Makefile line: their exports are the
    same before and after, and they count as the rest of the tree.
    """
    before = export_sites(spatch, tree, touched, jobs, cache=cache)
    after = export_sites(spatch, series_root, touched, jobs, [series_root, tree], cache)
    names_before = {s.name for s in before}
    names_after = {s.name for s in after}
    moved = (names_before ^ names_after)
    elsewhere = exporters(spatch, tree, moved, set(touched), use_git, jobs, cache, memo)
    diff = ExportDiff(added=sorted(names_after - names_before - elsewhere),
                      removed=sorted(names_before - names_after - elsewhere))
    old: dict[tuple, list[ExportSite]] = defaultdict(list)
    new: dict[tuple, list[ExportSite]] = defaultdict(list)
    for s in before:
        old[s.key].append(s)
    for s in after:
        new[s.key].append(s)
    for key in sorted(set(old) | set(new)):
        was, now = list(old.get(key, [])), list(new.get(key, []))
        for s in list(was):  # the same export under the same conditions stays
            same = next((t for t in now if (t.conditions, t.built_if)
                         == (s.conditions, s.built_if)), None)
            if same:
                was.remove(s)
                now.remove(same)
        while was and now:
            diff.conditions_changed.append(ConditionChange(was.pop(0), now.pop(0)))
        diff.lines_removed += was
        diff.lines_added += now
    return diff
