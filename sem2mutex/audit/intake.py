"""Tree intake: check that a path is a kernel tree, find its API era,
unpack the default tree, and prefilter the files worth giving to spatch.

The tree is only ever read.  Prefiltering is a speed measure only: it
picks the files that mention the semaphore API at all, and spatch decides
everything about them.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from sem2mutex.errors import BadInput, BadOption, GrepError, MissingTool, NotAKernelTree
from sem2mutex.tools.fs import locked
from sem2mutex.model import ApiEra, KernelTree
from sem2mutex.paths import DEBIAN_SOURCE_DIRNAME, DEBIAN_SOURCE_TARBALL, CacheLayout
from sem2mutex.audit import visibility as visibility_module
from sem2mutex.audit.visibility import HeaderPaths, IncludeGraph, IncludeResolver
from sem2mutex.tools import grep as grep_module
from sem2mutex.tools.cache import file_digest
from sem2mutex.tools.grep import (INCLUDE_OPTIONS, GrepMemo, directives_of, files_matching,
                                  files_mentioning, grep_by_unit, include_directives)
from sem2mutex.tools.kernel_tree import NON_KERNEL_TOP_DIRS, is_kernel_source
from sem2mutex.tools.lexer import Lexer, Token


# What makes a file worth parsing: the macros that declare a semaphore
# (and `struct semaphore`), the calls of the API, every era's spelling.
DECLARING_MACROS = ("DEFINE_SEMAPHORE", "DECLARE_MUTEX", "__SEMAPHORE_INITIALIZER")
CALLED_NAMES = ("sema_init", "init_MUTEX", "init_MUTEX_LOCKED", "down", "down_interruptible",
                "down_killable", "down_trylock", "down_timeout", "up")
DECL_TOKENS = "struct[[:space:]]+semaphore|" + "|".join(DECLARING_MACROS)
CALL_TOKENS = r"\b(" + "|".join(CALLED_NAMES) + r")[[:space:]]*\("


def read_version(tree: Path) -> str:
    """VERSION.PATCHLEVEL.SUBLEVEL from the top Makefile (not C: a make file)."""
    makefile = tree / "Makefile"
    try:
        text = makefile.read_text(errors="replace")
    except OSError:
        raise NotAKernelTree(f"{tree} is not a kernel tree: no top-level Makefile") from None
    fields = dict(re.findall(r"^(VERSION|PATCHLEVEL|SUBLEVEL)\s*=\s*(\d*)\s*$", text, re.M))
    if not fields.get("VERSION") or not fields.get("PATCHLEVEL"):
        raise NotAKernelTree(f"{tree} is not a kernel tree: Makefile has no VERSION/PATCHLEVEL")
    return ".".join(fields[k] for k in ("VERSION", "PATCHLEVEL", "SUBLEVEL") if fields.get(k))


def api_era_for(version: str) -> ApiEra:
    """init_MUTEX()/DECLARE_MUTEX() were removed in 2.6.37."""
    parts = [int(p) for p in version.split(".")]
    major, minor = parts[0], parts[1]
    sub = parts[2] if len(parts) > 2 else 0
    if major < 2 or (major == 2 and (minor < 6 or (minor == 6 and sub < 37))):
        return ApiEra.LEGACY
    return ApiEra.MODERN


def semaphore_header(tree: Path, era: ApiEra) -> Path | None:
    candidates = [tree / "include/linux/semaphore.h"]
    if era is ApiEra.LEGACY:
        candidates += sorted(tree.glob("include/asm-*/semaphore.h"))
        candidates += sorted(tree.glob("arch/*/include/asm/semaphore.h"))
    return next((c for c in candidates if c.is_file()), None)


def open_tree(path: Path) -> KernelTree:
    if not path.exists():
        raise NotAKernelTree(f"{path}: no such directory")
    if not path.is_dir():
        raise NotAKernelTree(f"{path} is not a directory")
    version = read_version(path)
    era = api_era_for(version)
    if semaphore_header(path, era) is None:
        raise NotAKernelTree(f"{path} is not a kernel tree: no semaphore header (include/linux/semaphore.h)")
    return KernelTree(path=path.resolve(), version=version, api_era=era,
                      is_git=(path / ".git").exists())


def ensure_default_tree(cache: CacheLayout, tarball: Path = DEBIAN_SOURCE_TARBALL) -> Path:
    """Unpack Debian's linux-source tarball into the cache once, atomically."""
    tree = cache.default_tree
    with locked(cache.root / ".default-tree.lock"):
        if (tree / "Makefile").is_file():
            return tree
        if not tarball.is_file():
            raise MissingTool(
                f"no TREE given and {tarball} is missing: apt-get install linux-source-6.1")
        staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=cache.root))
        try:
            done = subprocess.run(["tar", "-xf", str(tarball), "-C", str(staging)],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise BadInput(f"cannot unpack {tarball}: {done.stderr.strip()}")
            (staging / DEBIAN_SOURCE_DIRNAME).rename(tree)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return tree


@dataclass(frozen=True)
class CandidateFiles:
    """Tree-relative files that mention the semaphore API."""

    declaring: list[str]  # may declare a semaphore (needed tree-wide for headers)
    calling: list[str]  # may call the API
    # of those, the files whose every mention may be inside a string or a
    # character literal ("link not up (%s)"): Coccinelle's lexer decides
    in_literals_only: list[str] = field(default_factory=list)


def _grep(tree: Path, pattern: str, use_git: bool, jobs: int,
          memo: GrepMemo | None = None) -> set[str]:
    """Files (tree-relative) whose text matches PATTERN (ERE)."""
    try:
        return files_matching(tree, pattern, use_git, jobs, skip=NON_KERNEL_TOP_DIRS,
                              memo=memo)
    except GrepError as err:
        raise NotAKernelTree(f"cannot read {tree}: {err}") from err


def in_scope(rel: str, dirs: list[str]) -> bool:
    return not dirs or any(rel == d or rel.startswith(d.rstrip("/") + "/") for d in dirs)


# A line no C file holds: where one file's text ends in a batch.
FILE_MARK = "sem2mutex_file_boundary_9f1c"
FILES_PER_GCC = 40


def mentions_outside_comments(tree: Path, batch: list[str], patterns: list[re.Pattern]
                              ) -> dict[str, list[bool]]:
    """Which PATTERNS occur in each file of BATCH once the C preprocessor
    dropped its comments.

    `up(` and `down(` are common words in comments; parsing every file
    that only says "wake up (...)" would double spatch's work.  gcc's own
    preprocessor (-fpreprocessed: no includes, no macro expansion) removes
    the comments, one gcc for a batch of files (a gcc per file costs 40 ms)
    read back to back with a mark between them; a batch gcc cannot read
    whole (a comment left open) is split in two, and a file gcc cannot
    process is kept whole.
    """
    text = "".join(f"\n{FILE_MARK}\n" + (tree / rel).read_text(errors="replace")
                   for rel in batch)
    done = subprocess.run(["gcc", "-x", "c", "-fpreprocessed", "-dD", "-E", "-P", "-"],
                          input=text, capture_output=True, text=True, errors="replace")
    parts = done.stdout.split(FILE_MARK)[1:] if done.returncode == 0 else []
    if len(parts) != len(batch):
        if len(batch) == 1:
            return {batch[0]: [True] * 2 * len(patterns)}
        half = len(batch) // 2  # find the file gcc stumbles on
        return {**mentions_outside_comments(tree, batch[:half], patterns),
                **mentions_outside_comments(tree, batch[half:], patterns)}
    return {rel: mention_flags(part, patterns) for rel, part in zip(batch, parts)}


# A string or character literal, once gcc removed the comments.  It only
# picks the files to ask Coccinelle's lexer about (in_literals_only); the
# lexer, not this pattern, decides that a file does not use the API.
LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def mention_flags(text: str, patterns: list[re.Pattern]) -> list[bool]:
    """For each of PATTERNS: found in TEXT, then found outside its literals."""
    found = [bool(p.search(text)) for p in patterns]
    if not any(found):
        return found + found
    code = LITERAL.sub('""', text)
    return found + [bool(p.search(code)) for p in patterns]


def split_by_mentions(tree: Path, files: set[str], memo: GrepMemo | None = None
                      ) -> tuple[set[str], set[str], set[str]]:
    """(declaring, calling, in literals only) among FILES, ignoring
    mentions in comments; with MEMO, a file that did not change since the
    last run is not read."""
    patterns = [re.compile(grep_to_python(DECL_TOKENS)), re.compile(grep_to_python(CALL_TOKENS))]
    ordered = sorted(files)
    found: dict[str, list[bool]] = {}
    keys: dict[str, str] = {}
    if memo is not None and memo.cache.root is not None:
        for f in ordered:
            keys[f] = memo.cache.key("mentions", "and in code", f,
                                     memo.snapshot.digest_of([f]))
            kept = memo.cache.get("mentions", keys[f])
            if isinstance(kept, list) and len(kept) == 4:
                found[f] = kept
    todo = [f for f in ordered if f not in found]
    if shutil.which("gcc") is None:
        found.update({f: [True] * 4 for f in todo})
    else:
        batches = [todo[i:i + FILES_PER_GCC] for i in range(0, len(todo), FILES_PER_GCC)]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            for part in pool.map(lambda b: mentions_outside_comments(tree, b, patterns),
                                 batches):
                found.update(part)
                for f, flags in part.items():
                    if f in keys:
                        memo.cache.put("mentions", keys[f], flags)
    return ({f for f in ordered if found[f][0]}, {f for f in ordered if found[f][1]},
            {f for f in ordered if any(found[f][:2]) and not any(found[f][2:])})


def grep_to_python(ere: str) -> str:
    return ere.replace("[[:space:]]", r"\s")


def candidate_files(tree: KernelTree, dirs: list[str], jobs: int = 2,
                    memo: GrepMemo | None = None) -> CandidateFiles:
    mentioning = {f for f in _grep(tree.path, f"{DECL_TOKENS}|{CALL_TOKENS}", tree.is_git, jobs,
                                   memo) if is_kernel_source(f)}
    declaring, calling, in_literals = split_by_mentions(tree.path, mentioning, memo)
    # Headers are read tree-wide so a scoped run still resolves struct
    # fields declared outside the scope.
    declaring = {f for f in declaring if in_scope(f, dirs) or f.endswith(".h")}
    calling = {f for f in calling if in_scope(f, dirs)}
    return CandidateFiles(declaring=sorted(declaring), calling=sorted(calling),
                          in_literals_only=sorted(in_literals & (declaring | calling)))


# The same, as identifier tokens of Coccinelle's lexer.
DECLARING_IDENTIFIERS = frozenset({"semaphore", *DECLARING_MACROS})
CALLED_IDENTIFIERS = frozenset(CALLED_NAMES)


# What uses_in_code() looks for, for the cache of its answers.
USES_IN_CODE = "uses-in-code:" + " ".join(sorted(DECLARING_IDENTIFIERS)) + ":" + \
    " ".join(sorted(CALLED_IDENTIFIERS))


def uses_in_code(tokens: list[Token]) -> tuple[bool, bool]:
    """(may declare, may call) from a file's tokens: string and character
    literals and comments are not tokens of their own in the lexer's list,
    so a "link up (%s)" message counts for nothing.  A call name counts
    when the next listed token is "(" (the list leaves out operators and
    numbers, so this errs on the side of keeping the file)."""
    declares = any(t.identifier and t.text in DECLARING_IDENTIFIERS for t in tokens)
    calls = any(t.identifier and t.text in CALLED_IDENTIFIERS and nxt.text == "("
                for t, nxt in zip(tokens, tokens[1:]))
    return declares, calls


def drop_literal_mentions(files: CandidateFiles, lexer: Lexer) -> CandidateFiles:
    """FILES without those whose every mention of the API the lexer finds
    inside a literal (hfi1's chip.c: 460 KB parsed for "link not up (%s)")."""
    if not files.in_literals_only:
        return files
    uses = lexer.summaries(files.in_literals_only, USES_IN_CODE, uses_in_code)
    declaring, calling = set(files.declaring), set(files.calling)
    for f, (declares, calls) in uses.items():
        if not declares:
            declaring.discard(f)
        if not calls:
            calling.discard(f)
    return replace(files, declaring=sorted(declaring), calling=sorted(calling),
                   in_literals_only=[])


def normalise_dirs(tree: Path, dirs: list[str]) -> list[str]:
    """Check --dir arguments against the tree; return them tree-relative."""
    result = []
    for d in dirs:
        rel = d.strip("/")
        if rel.startswith("./"):
            rel = rel[2:]
        if not (tree / rel).exists():
            raise BadOption(f"--dir {d}: no such file or directory in {tree}")
        result.append(rel)
    return result


def kernel_files_mentioning(tree: Path, names: set[str], jobs: int,
                            memo: GrepMemo | None = None) -> dict[str, set[str]]:
    """name -> kernel source files whose text has NAME as a word (a
    prefilter for spatch: callers of a wrapper or of a pointer helper)."""
    found = files_mentioning(tree, names, jobs, skip=NON_KERNEL_TOP_DIRS, memo=memo)
    return {name: {f for f in files if is_kernel_source(f)} for name, files in found.items()}


def include_graph(tree: Path, jobs: int, memo: GrepMemo | None = None) -> IncludeGraph:
    """The #include graph of TREE's kernel sources (audit/visibility.py)."""
    if memo is not None and memo.cache.root is not None:
        try:
            return cached_include_graph(tree, jobs, memo)
        except GrepError as err:
            raise NotAKernelTree(f"cannot read {tree}: {err}") from err
    try:
        directives = include_directives(tree, jobs, skip=NON_KERNEL_TOP_DIRS, memo=memo)
    except GrepError as err:
        raise NotAKernelTree(f"cannot read {tree}: {err}") from err
    paths = HeaderPaths.of_files(set(memo.snapshot.files)) if memo is not None \
        else HeaderPaths.scan(tree, skip=NON_KERNEL_TOP_DIRS)
    return IncludeGraph.build(directives, paths)


def cached_include_graph(tree: Path, jobs: int, memo: GrepMemo) -> IncludeGraph:
    """include_graph() kept unit by unit of MEMO's snapshot: what a unit's
    files include depends on their text and on which files the tree has,
    so after editing one driver only its unit is grepped and resolved
    again (resolving the whole 6.1 tree's 330,000 directives takes 1.7 s)."""
    snapshot = memo.snapshot
    units = sorted(u for u in snapshot.units if u.split("/")[0] not in NON_KERNEL_TOP_DIRS)
    listing = memo.cache.key("\0".join(snapshot.files))
    code = "".join(file_digest(Path(source))
                   for source in (visibility_module.__file__, grep_module.__file__, __file__))
    keys = {u: memo.cache.key("include-edges", code, listing, u, snapshot.units[u])
            for u in units}
    kept = {u: memo.cache.get_object("include-edges", keys[u]) for u in units}
    todo = [u for u in units if not isinstance(kept[u], dict)]
    if todo:
        lines = grep_by_unit(tree, INCLUDE_OPTIONS, todo, jobs, memo)
        resolver = IncludeResolver.of(HeaderPaths.of_files(set(snapshot.files)))
        for u in todo:
            kept[u] = resolver.edges(directives_of(lines[u]))
            memo.cache.put_object("include-edges", keys[u], kept[u])
    edges: dict[str, set[str]] = {}
    for u in units:
        edges.update(kept[u])
    return IncludeGraph(edges)
