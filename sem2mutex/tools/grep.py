"""grep, the one place it is started from (git grep goes through tools/git).

Every grep in sem2mutex is a prefilter: it picks the files worth giving
to spatch or to the compiler, never decides anything about C.

The prefilters that keep spatch to the files that can match (intake's
candidate files, the callers of a wrapper or of a pointer-taking function)
grep the whole kernel: about 70,000 .c and .h files, 3 to 7 s for one
single-threaded grep.  GNU grep has no threads of its own, so the tree is
split and the greps run side by side: without a cache one grep per
top-level entry, the directories with the most subdirectories (drivers/
first) started first; with one, the snapshot's grep units, those not
answered from the cache a batch at a time (grep_by_unit).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from sem2mutex.errors import GrepError
from sem2mutex.tools.batches import heaviest_first
from sem2mutex.tools.cache import ResultCache
from sem2mutex.tools.git import git
from sem2mutex.tools.snapshot import TreeSnapshot

SOURCE_GLOBS = ("--include=*.c", "--include=*.h")


# grep runs in the C locale, where every byte is a character: in a UTF-8
# locale grep -I drops a matching line that holds a byte of another
# encoding (a Latin-1 name in a comment beside a down() call), and -w
# counts a non-ASCII letter as part of a word.  Part of the cache keys:
# answers kept from another locale may lack lines.
GREP_LOCALE = "C"


def c_locale() -> dict[str, str]:
    """The environment grep runs in."""
    return {**os.environ, "LC_ALL": GREP_LOCALE}


def top_level_entries(tree: Path) -> list[str]:
    """TREE's entries, biggest-looking directories first, files last.

    Symbolic links are left out: grep -r follows a link named on its
    command line, and a single grep -r over TREE would not.
    """
    def weight(entry: os.DirEntry) -> int:
        if entry.is_dir(follow_symlinks=False):
            return entry.stat(follow_symlinks=False).st_nlink
        return 0
    with os.scandir(tree) as it:
        entries = [e for e in it if not e.is_symlink()]
    return [e.name for e in sorted(entries, key=lambda e: (-weight(e), e.name))]


@dataclass(frozen=True)
class GrepMemo:
    """Where grep's answers are kept (CACHE), and what the tree is now
    (SNAPSHOT): a unit of the tree whose files did not change since the
    answer was kept is not grepped again."""

    cache: ResultCache
    snapshot: TreeSnapshot

    def answer(self, label: str, args: list, files: list[str], compute) -> list:
        key = self.cache.key("grep", GREP_LOCALE, label, json.dumps(args),
                             self.snapshot.digest_of(files))
        kept = self.cache.get("grep", key)
        if isinstance(kept, list):
            return kept
        found = compute()
        self.cache.put("grep", key, found)
        return found


def grep_sources(tree: Path, options: list[str], jobs: int,
                 skip: tuple[str, ...] = (), memo: GrepMemo | None = None) -> list[str]:
    """The output lines of `grep -r OPTIONS` over TREE's .c and .h files,
    with paths relative to TREE.  OPTIONS must hold the patterns (-e ...).
    SKIP names top-level directories the caller would drop anyway.  With
    MEMO, each unit of the tree whose files did not change is answered
    from the cache."""
    if memo is not None and memo.cache.root is not None:
        units = [u for u in memo.snapshot.units if u.split("/")[0] not in skip]
        by_unit = grep_by_unit(tree, options, units, jobs, memo)
        return [line for u in sorted(units) for line in by_unit[u]]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return [line for lines in pool.map(partial(grep_entry, tree, options),
                                           [e for e in top_level_entries(tree) if e not in skip])
                for line in lines]


def grep_entry(tree: Path, options: list[str], entry: str) -> list[str]:
    """grep -r OPTIONS over ENTRY of TREE (a file or directory)."""
    # -H: a top-level file is grep's only operand, and would print unnamed
    done = subprocess.run(["grep", "-r", "-H", "-I", *SOURCE_GLOBS, *options, "--", entry],
                          cwd=tree, capture_output=True, env=c_locale(), text=True,
                          errors="replace")
    if done.returncode not in (0, 1):
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise GrepError(f"grep failed in {tree}/{entry}: {last}")
    return done.stdout.splitlines()


def grep_by_unit(tree: Path, options: list[str], units: list[str], jobs: int,
                 memo: GrepMemo) -> dict[str, list[str]]:
    """unit -> the output lines of grep -r OPTIONS over that unit of
    MEMO's snapshot; a unit whose files did not change is answered from
    the cache."""
    keys = {u: memo.cache.key("grep-unit", GREP_LOCALE, json.dumps(options), u,
                              memo.snapshot.units[u])
            for u in units}
    found: dict[str, list[str]] = {}
    for u in units:
        kept = memo.cache.get("grep-unit", keys[u])
        if isinstance(kept, list):
            found[u] = kept
    todo = [u for u in units if u not in found]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for lines in pool.map(partial(grep_units, tree, options),
                              unit_batches(todo, memo.snapshot, jobs)):
            found.update(lines)
    for u in todo:
        memo.cache.put("grep-unit", keys[u], found[u])
    return found


# A cold tree has some 500 units: one grep for each cost 3.7 s on 6.1
# where one grep per top-level entry took 2.0 s (process starts, and the
# small units queueing behind one big one).  The units not in the cache are
# grepped a batch at a time instead, weighed by their file counts, and
# grep's output split back by unit.
def unit_batches(units: list[str], snapshot: TreeSnapshot, jobs: int) -> list[list[str]]:
    """UNITS in batches of about equal file counts, the biggest first."""
    wanted = set(units)
    sizes = dict.fromkeys(units, 0)
    for f in snapshot.files:
        unit = unit_of(f, wanted)
        if unit is not None:
            sizes[unit] += 1
    return heaviest_first(sizes, jobs)


def unit_of(path: str, units: set[str]) -> str | None:
    """The one of UNITS (top-level entries, or entries of a split top-level
    directory) that PATH lies in."""
    parts = path.split("/", 2)
    if parts[0] in units:
        return parts[0]
    two = "/".join(parts[:2])
    return two if two in units else None


def grep_units(tree: Path, options: list[str], units: list[str]) -> dict[str, list[str]]:
    """unit -> the lines `grep -r OPTIONS` prints for that unit, from one
    grep over all of UNITS.  -Z ends each file name with a NUL byte, so a
    line is given back to its unit whatever the name or the match holds;
    the lines come back as grep prints them without -Z."""
    done = subprocess.run(["grep", "-r", "-H", "-I", "-Z", *SOURCE_GLOBS, *options, "--",
                           *units], cwd=tree, capture_output=True, env=c_locale(), text=True,
                          errors="replace")
    if done.returncode not in (0, 1):
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise GrepError(f"grep failed in {tree}: {last}")
    found: dict[str, list[str]] = {u: [] for u in units}
    wanted = set(units)

    def unit_named(name: str) -> str:
        unit = unit_of(name, wanted)
        if unit is None:
            raise GrepError(f"grep printed {name!r}, outside the units it was given")
        return unit
    if names_only(options):
        for name in filter(None, done.stdout.split("\0")):
            found[unit_named(name)].append(name)
        return found
    current = None
    for line in done.stdout.splitlines():
        name, nul, rest = line.partition("\0")
        if nul:
            current = unit_named(name)
            line = f"{name}:{rest}"
        elif current is None:
            raise GrepError(f"grep printed {line!r} before any file name")
        # else: the rest of a match that held a line separator of
        # splitlines() (a form feed): a line of its own, as without -Z
        found[current].append(line)
    return found


def names_only(options: list[str]) -> bool:
    """Whether grep prints file names alone (-l, -L, unbundled)."""
    args = iter(options)
    for option in args:
        if option == "-e":
            next(args, None)  # a pattern, whatever it looks like
        elif option in ("-l", "-L", "--files-with-matches", "--files-without-match"):
            return True
    return False


def files_matching(tree: Path, pattern: str, use_git: bool, jobs: int,
                   skip: tuple[str, ...] = (), memo: GrepMemo | None = None) -> set[str]:
    """Tree-relative .c/.h files whose text matches the ERE PATTERN.

    A git checkout is searched with git grep, its untracked and ignored
    files included: they are part of the tree too.
    """
    if use_git:
        done = git(tree, "grep", "-l", "-I", "-E", "--untracked", "--no-exclude-standard",
                   "-e", pattern, "--", "*.c", "*.h", check=False)
        if done.returncode in (0, 1):
            return {f for f in done.stdout.split() if not f.startswith(tuple(s + "/" for s in skip))}
    return set(grep_sources(tree, ["-l", "-E", "-e", pattern], jobs, skip=skip, memo=memo))


# A C identifier: a word grep -w can look for inside one ERE alternation.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Beyond some hundreds of names grep's automaton for the alternation costs
# more than it saves (benchmarks/wordgrep.sh: over 6.1's drivers/ and fs/,
# 25-150 names 2.1-2.4 s as one alternation against 3.5-4.7 s a pattern
# each, 300 names 3.6 s against 4.8 s, 600 names 92.3 s against 5.2 s).
# 2.6.11's mention check looks for 285 names: a pattern each.
MAX_ALTERNATION = 150


def word_options(words) -> list[str]:
    """grep options finding WORDS as words: one ERE alternation when they
    are identifiers, at most MAX_ALTERNATION of them (-w -E -e 'a|b|c').
    The same matches as a pattern per word (-w -e a -e b -e c), which GNU
    grep searches as a list of fixed strings, but found in about half the
    time for a few dozen names (the wrapper and pointer-caller greps of
    the whole tree: 87 names over 2.6.11, 0.45 s of processor time
    instead of 0.95 s)."""
    words = sorted(set(words))
    if 0 < len(words) <= MAX_ALTERNATION and all(IDENTIFIER.fullmatch(w) for w in words):
        return ["-w", "-E", "-e", "|".join(words)]
    return ["-w", *[a for w in words for a in ("-e", w)]]


def files_mentioning(tree: Path, names: set[str], jobs: int,
                     skip: tuple[str, ...] = (), memo: GrepMemo | None = None
                     ) -> dict[str, set[str]]:
    """name -> files whose text has NAME as a word."""
    if not names:
        return {}
    found: dict[str, set[str]] = defaultdict(set)
    for line in grep_sources(tree, ["-o", *word_options(names)], jobs, skip=skip, memo=memo):
        path, _, word = line.rpartition(":")
        found[word].add(path)
    return found


def files_with_words(root: Path, files: list[str], words: list[str]) -> list[str]:
    """Those of FILES whose text has one of WORDS."""
    if not files or not words:
        return []
    done = subprocess.run(["grep", "-l", *word_options(words), "--", *files], cwd=root,
                          capture_output=True, env=c_locale(), text=True)
    if done.returncode > 1:
        raise GrepError(f"grep failed in {root}: {done.stderr.strip()[:200]}")
    return sorted(set(done.stdout.split()))


# A preprocessor line, not C: grep reads #include directives the way the
# kernel's own scripts/headerdep.pl does.  Which file a directive names is
# decided by audit/visibility.py.
INCLUDE_DIRECTIVE = r'^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"][^>"]+[>"]'


def include_directives(tree: Path, jobs: int, skip: tuple[str, ...] = (),
                       memo: GrepMemo | None = None) -> dict[str, list[str]]:
    """file -> the #include directives of TREE's .c and .h files, as
    written (`#include <linux/fs.h>`), in file order."""
    return directives_of(grep_sources(tree, INCLUDE_OPTIONS, jobs, skip=skip, memo=memo))


INCLUDE_OPTIONS = ["-o", "-E", "-e", INCLUDE_DIRECTIVE]


def directives_of(lines: list[str]) -> dict[str, list[str]]:
    """file -> directives, from grep's INCLUDE_OPTIONS output LINES."""
    found: dict[str, list[str]] = defaultdict(list)
    for line in lines:
        path, sep, directive = line.partition(":#")
        if sep:
            found[path].append("#" + directive)
        else:  # spaces before the #
            path, _, directive = line.partition(":")
            found[path].append(directive.strip())
    return dict(found)


def files_including(tree: Path, paths: list[str], jobs: int, skip: tuple[str, ...] = (),
                    memo: GrepMemo | None = None) -> dict[str, set[str]]:
    """path -> the .c/.h files of TREE with an #include directive of PATH
    (`#include <xen/xenbus.h>` or `"xen/xenbus.h"` for xen/xenbus.h),
    read from include_directives(): with MEMO, the greps the include
    graph kept, not a grep of the tree per path."""
    found: dict[str, set[str]] = {p: set() for p in paths}
    if not paths:
        return found
    # the tree has 330,000 directives: only those ending so are looked at
    endings = tuple(f"{opening}{p}{closing}" for p in paths for opening, closing in ("<>", '""'))
    lines = [line for line in grep_sources(tree, INCLUDE_OPTIONS, jobs, skip=skip, memo=memo)
             if line.endswith(endings)]
    for file, directives in directives_of(lines).items():
        for directive in directives:
            named = included_path(directive)
            if named in found:
                found[named].add(file)
    return found


def included_path(directive: str) -> str:
    """xen/xenbus.h of `#include <xen/xenbus.h>` (a line INCLUDE_DIRECTIVE matched)."""
    opening = min(directive.find(c) for c in '<"' if c in directive)
    return directive[opening + 1:-1].strip()


def files_with_patterns(root: Path, files: list[str], patterns: list[str],
                        chunk: int = 400, memo: GrepMemo | None = None) -> set[str]:
    """Those of FILES whose text matches one of the EREs PATTERNS."""
    found: set[str] = set()
    if not files or not patterns:
        return found
    if memo is not None and memo.cache.root is not None:
        return set(memo.answer("files_with_patterns", patterns, files,
                               lambda: sorted(files_with_patterns(root, files, patterns,
                                                                  chunk))))
    options = [a for p in patterns for a in ("-e", p)]
    for start in range(0, len(files), chunk):
        done = subprocess.run(["grep", "-l", "-E", *options, "--", *files[start:start + chunk]],
                              cwd=root, capture_output=True, env=c_locale(), text=True,
                              errors="replace")
        if done.returncode > 1:
            raise GrepError(f"grep failed in {root}: {done.stderr.strip()[:200]}")
        found.update(done.stdout.split())
    return found


def word_lines(root: Path, files: list[str], words: set[str],
               chunk: int = 400, memo: GrepMemo | None = None
               ) -> dict[str, dict[str, set[int]]]:
    """file -> word -> the lines of FILES where WORDS occur as words."""
    found: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    if not files or not words:
        return {}
    if memo is not None and memo.cache.root is not None:
        kept = memo.answer("word_lines", sorted(words), files, lambda: [
            [f, w, sorted(lines)] for f, ws in word_lines(root, files, words, chunk).items()
            for w, lines in ws.items()])
        for f, w, lines in kept:
            found[f][w].update(lines)
        return {f: dict(ws) for f, ws in found.items()}
    options = word_options(words)
    for start in range(0, len(files), chunk):
        done = subprocess.run(["grep", "-H", "-n", "-o", *options, "--",
                               *files[start:start + chunk]],
                              cwd=root, capture_output=True, env=c_locale(), text=True,
                              errors="replace")
        if done.returncode > 1:
            raise GrepError(f"grep failed in {root}: {done.stderr.strip()[:200]}")
        for line in done.stdout.splitlines():
            path, _, rest = line.partition(":")
            number, _, word = rest.partition(":")
            if number.isdigit():
                found[path][word].add(int(number))
    return {f: dict(ws) for f, ws in found.items()}
