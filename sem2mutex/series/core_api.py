"""The counting-API core patch, the flag-day patch and the old-API check.

Patch 1 of the series gives the counting semaphore API its own names
(``down()`` -> ``down_sem()``, ..., ``up()`` -> ``up_sem()``) and keeps the
old names as thin exported wrappers, so every commit of the series builds.
The last patch (the flag day) removes the wrappers, so a caller left behind
fails to build.  Both are made by spatch from the tree itself:

- ``cocci/core/counting_api.cocci`` renames the definitions, exports and
  prototypes and adds the wrappers and the old prototypes;
- ``cocci/core/counting_api_kerneldoc.cocci`` reports the kerneldoc comment
  above each definition.  Coccinelle 1.1.1 can read comments but cannot
  rewrite one (a comment only goes away with the whole definition, and
  re-adding a body through a statement-list metavariable either fails with
  "already tagged token" or re-prints the body without its blank lines), so
  the one line naming the function (`` * down - acquire the semaphore``) and
  the ``name()`` references inside that comment are renamed here, as an edit
  anchored on the exact comment text spatch reported;
- ``cocci/core/counting_api_state.cocci`` reports which names a tree defines,
  wraps, declares and exports, so a patch is never applied twice or out of
  order;
- ``cocci/core/flag_day.cocci`` removes the wrappers, exports and prototypes;
- ``cocci/check/old_api_callers.cocci`` finds callers of the old names.

spatch is always given explicit file lists (inside a git tree it would
otherwise pick files with git grep and skip untracked ones), runs from a
neutral directory (a kernel tree's ``.cocciconfig`` asks for git grep), with
``--no-includes``, and its exit status and stderr are checked.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

from sem2mutex.model import CoreChange
from sem2mutex.paths import COCCI_DIR
from sem2mutex.errors import AlreadyApplied, AnchorError, CoreApiError, SpatchError
from sem2mutex.tools.api import COUNTING_NAMES, OLD_NAMES, api_environment
from sem2mutex.tools.fs import unshare
from sem2mutex.tools.grep import files_matching
from sem2mutex.tools.cache import ResultCache, file_digest
from sem2mutex.tools.spatch import (IN_PLACE_FLAGS, launch, plural, spatch_failure,
                                    version as spatch_version)

SEMAPHORE_HEADER = "include/linux/semaphore.h"
SEMAPHORE_SOURCE = "kernel/locking/semaphore.c"
CORE_FILES = (SEMAPHORE_SOURCE, SEMAPHORE_HEADER)

# Old name -> new name (the one table, tools/api.py).
NEW_NAMES = COUNTING_NAMES

COUNTING_API_COCCI = COCCI_DIR / "core" / "counting_api.cocci"
KERNELDOC_COCCI = COCCI_DIR / "core" / "counting_api_kerneldoc.cocci"
STATE_COCCI = COCCI_DIR / "core" / "counting_api_state.cocci"
FLAG_DAY_COCCI = COCCI_DIR / "core" / "flag_day.cocci"
OLD_API_CALLERS_COCCI = COCCI_DIR / "check" / "old_api_callers.cocci"

# Per file; a whole-tree scan runs each file as its own spatch group.
SPATCH_TIMEOUT_SECONDS = 120
SPATCH_JOBS = 2


@dataclass(frozen=True)
class ApiSymbol:
    """A counting-API name found in the core files by counting_api_state."""

    file: str  # relative to the tree
    line: int
    name: str
    kind: str  # "definition", "wrapper", "prototype" or "export"


@dataclass(frozen=True)
class OldApiCaller:
    """A call of an old counting-API name left in the tree."""

    file: str  # relative to the tree
    line: int
    function: str | None  # None: in a macro body or an initialiser
    op: str  # the old name called: "down", ..., "up"
    arg_type: str  # "semaphore", or "unknown type" when spatch cannot tell


@dataclass(frozen=True)
class KerneldocComment:
    """The comment above a counting-API definition, as spatch reported it."""

    file: str  # relative to the tree
    line: int  # line of the function name in the definition
    function: str
    comment: str


# --------------------------------------------------------------------------
# Commit messages


def _wrap(paragraphs: list[str]) -> str:
    return "\n\n".join(
        textwrap.fill(p, width=72, break_long_words=False,
                      break_on_hyphens=False)
        for p in paragraphs)


def _name_list(names) -> str:
    calls = [f"{name}()" for name in names]
    return ", ".join(calls[:-1]) + " and " + calls[-1]


def counting_api_change() -> CoreChange:
    """Subject and commit message of patch 1, the counting-API rename."""
    body = _wrap([
        "A struct semaphore is used two ways: as a sleeping lock that one task "
        "takes and the same task releases, which struct mutex does better "
        "(lockdep, owner checks, optimistic spinning), and as a real counting "
        "semaphore, or as a signal released by another task or from "
        "interrupt context, which a mutex must not be. The series this patch "
        "starts converts the first kind to struct mutex and keeps the second "
        "kind a semaphore.",
        "Give the counting API names of its own, "
        + _name_list(NEW_NAMES.values())
        + ", so that a caller that stays a semaphore says so, and so that "
        "after the conversion any caller of the old names is one that was "
        "missed. The implementations, their kerneldoc and their exports move "
        "to the new names unchanged, __must_check included.",
        "The old names " + _name_list(OLD_NAMES)
        + " stay as thin exported wrappers, so that every commit of the "
        "series that converts the callers builds. The last patch of the "
        "series removes them.",
        "No functional change.",
    ])
    return CoreChange(
        subject="locking/semaphore: Add the down_sem() counting semaphore API",
        body=body)


def flag_day_change() -> CoreChange:
    """Subject and commit message of the last patch, the flag day."""
    body = _wrap([
        "Every in-tree user of the counting semaphore API now either holds a "
        "struct mutex or calls the down_sem() family, so the wrappers kept "
        "for the conversion have no users left.",
        "Remove " + _name_list(OLD_NAMES)
        + ", their exports and their prototypes. Code that still calls them, "
        "out of tree or added in parallel with this series, now fails to "
        "build instead of silently keeping semaphore semantics nobody "
        "checked: a sleeping lock taken and released by one task should "
        "become a struct mutex (mutex_lock(), mutex_unlock()), anything else "
        "should call the down_sem() family.",
    ])
    return CoreChange(
        subject="locking/semaphore: Remove the old down() and up() names",
        body=body)


# --------------------------------------------------------------------------
# Running spatch


def run_spatch(spatch: Path, cocci: Path, files: list[Path], *, virtual: str,
               in_place: bool = False, file_groups: bool = False) -> str:
    """Run spatch on explicit files and return its stdout.

    Raises SpatchError on a non-zero exit or on anything written to stderr:
    with --very-quiet a clean run writes nothing there, and a timeout or a
    python exception in a script rule only shows up on stderr.
    """
    if not files:
        return ""
    args = ["--very-quiet", "--no-includes",
            "--timeout", str(SPATCH_TIMEOUT_SECONDS),
            "--sp-file", str(cocci), "-D", virtual]
    if in_place:
        args += IN_PLACE_FLAGS
    with tempfile.TemporaryDirectory(prefix="sem2mutex-spatch-") as neutral:
        if file_groups:
            # One group per file: a group is parsed, matched and timed out
            # as a unit, and groups are what --jobs spreads over processes.
            groups = Path(neutral) / "groups"
            groups.write_text("".join(f"{f}\n\n" for f in files))
            args += ["--jobs", str(SPATCH_JOBS), "--file-groups", str(groups)]
        else:
            args += [str(f) for f in files]
        done = launch(spatch, args, Path(neutral), api_environment())
    if done.returncode != 0 or done.stderr.strip():
        raise SpatchError(spatch_failure(done, f"{plural(len(files), 'file')} with {cocci.name}"))
    return done.stdout


def _json_lines(stdout: str, cocci: Path) -> list[dict]:
    records = []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise SpatchError(
                f"{cocci.name} printed a line that is not JSON: {line!r}"
            ) from err
    return records


def _relative(tree: Path, reported: str) -> str:
    return os.path.relpath(reported, tree)


def _core_paths(tree: Path) -> list[Path]:
    paths = [tree / rel for rel in CORE_FILES]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise CoreApiError(
            f"{tree} is not a 6.1-layout kernel tree: missing {missing}")
    return paths


# --------------------------------------------------------------------------
# State of the core files


def api_state(tree: Path, spatch: Path, cache: ResultCache | None = None) -> list[ApiSymbol]:
    """Definitions, wrappers, prototypes and exports of old and new names;
    with CACHE, kept under the core files' content (every run asks first
    whether the tree carries the series already)."""
    tree = tree.resolve()
    paths = _core_paths(tree)
    key = ""
    if cache is not None and cache.root is not None:
        key = cache.key("api-state", STATE_COCCI.read_text(), spatch_version(spatch),
                        *[f"{p.relative_to(tree)}:{file_digest(p)}" for p in paths])
        kept = cache.get("api-state", key)
        if isinstance(kept, list):
            return [ApiSymbol(*k) for k in kept]
    stdout = run_spatch(spatch, STATE_COCCI, paths, virtual="report")
    symbols = sorted([ApiSymbol(file=_relative(tree, r["file"]), line=r["line"],
                                name=r["name"], kind=r["kind"])
                      for r in _json_lines(stdout, STATE_COCCI)],
                     key=lambda s: (s.file, s.line))
    if key:
        cache.put("api-state", key, [[s.file, s.line, s.name, s.kind] for s in symbols])
    return symbols


def _names_of(symbols: list[ApiSymbol], kind: str) -> set[str]:
    return {s.name for s in symbols if s.kind == kind}


def _describe(symbols: list[ApiSymbol], names) -> str:
    found = [f"{s.name} ({s.kind}, {s.file}:{s.line})"
             for s in symbols if s.name in names]
    return ", ".join(found[:4]) + (" ..." if len(found) > 4 else "")


def _is_pristine(symbols: list[ApiSymbol]) -> bool:
    return (_names_of(symbols, "definition") == set(OLD_NAMES)
            and _names_of(symbols, "prototype") == set(OLD_NAMES)
            and _names_of(symbols, "export") == set(OLD_NAMES)
            and not _names_of(symbols, "wrapper"))


def has_counting_api(symbols: list[ApiSymbol]) -> bool:
    new = set(NEW_NAMES.values())
    return (_names_of(symbols, "definition") == new
            and _names_of(symbols, "prototype") >= new
            and _names_of(symbols, "export") >= new)


def _has_wrappers(symbols: list[ApiSymbol]) -> bool:
    old = set(OLD_NAMES)
    return (_names_of(symbols, "wrapper") == old
            and old <= _names_of(symbols, "prototype")
            and old <= _names_of(symbols, "export"))


def _has_no_old_names(symbols: list[ApiSymbol]) -> bool:
    return not any(s.name in NEW_NAMES for s in symbols)


# --------------------------------------------------------------------------
# Kerneldoc comments


def kerneldoc_comments(tree: Path, spatch: Path) -> list[KerneldocComment]:
    """The comment above each definition of an old or new counting-API name."""
    tree = tree.resolve()
    stdout = run_spatch(spatch, KERNELDOC_COCCI, [tree / SEMAPHORE_SOURCE],
                     virtual="report")
    return [KerneldocComment(file=_relative(tree, r["file"]), line=r["line"],
                             function=r["function"], comment=r["comment"])
            for r in _json_lines(stdout, KERNELDOC_COCCI)]


def kerneldoc_name(comment: str) -> str | None:
    """The function a kerneldoc comment documents, None if not kerneldoc."""
    lines = comment.split("\n")
    if not lines or lines[0].strip() != "/**" or len(lines) < 2:
        return None
    first = lines[1].strip()
    if not first.startswith("* "):
        return None
    name = first[2:].split(" - ", 1)[0].strip()
    return name[:-2] if name.endswith("()") else name


def _is_identifier_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _rename_calls_in_prose(text: str, old: str, new: str) -> str:
    """Replace ``old()`` by ``new()`` where ``old`` is a whole word."""
    target = f"{old}()"
    pieces = []
    start = 0
    while True:
        at = text.find(target, start)
        if at < 0:
            pieces.append(text[start:])
            return "".join(pieces)
        whole_word = at == 0 or not _is_identifier_char(text[at - 1])
        pieces.append(text[start:at])
        pieces.append(f"{new}()" if whole_word else target)
        start = at + len(target)


def renamed_kerneldoc(comment: str, old: str, new: str) -> str:
    """The kerneldoc of ``old`` rewritten to document ``new``.

    The name line `` * old - ...`` becomes `` * new - ...`` (scripts/kernel-doc
    warns when it names another function than the one that follows), and
    every ``name()`` reference to an old counting-API name in the comment
    points at the new name.
    """
    if kerneldoc_name(comment) != old:
        raise AnchorError(
            f"expected a kerneldoc comment for {old}(), got: {comment[:120]!r}")
    opening, name_line, *body = comment.split("\n")
    for spelling in (f"* {old} - ", f"* {old}() - "):
        if spelling in name_line:
            name_line = name_line.replace(
                spelling, spelling.replace(old, new, 1), 1)
            break
    prose = "\n".join(body)
    for old_name, new_name in NEW_NAMES.items():
        prose = _rename_calls_in_prose(prose, old_name, new_name)
    return "\n".join([opening, name_line] + ([prose] if body else []))


def _line_of_end(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _rewrite_kerneldoc(tree: Path, doc: KerneldocComment, old: str) -> None:
    """Exact, anchored edit of one comment (Coccinelle cannot rewrite it)."""
    path = tree / doc.file
    text = path.read_text()
    if text.count(doc.comment) != 1:
        raise AnchorError(
            f"{doc.file}: the comment above {doc.function}() occurs "
            f"{text.count(doc.comment)} times, expected exactly once")
    at = text.index(doc.comment)
    end_line = _line_of_end(text, at + len(doc.comment))
    # The comment must end right above the definition (the return type may
    # sit on its own line above the function name).
    if not 1 <= doc.line - end_line <= 2:
        raise AnchorError(
            f"{doc.file}: the comment above {doc.function}() ends on line "
            f"{end_line}, not just above the definition on line {doc.line}")
    replacement = renamed_kerneldoc(doc.comment, old, doc.function)
    unshare(path)
    tmp = path.with_name(path.name + ".sem2mutex-kerneldoc")
    tmp.write_text(text[:at] + replacement + text[at + len(doc.comment):])
    shutil.copymode(path, tmp)
    os.replace(tmp, path)


def stale_kerneldoc(tree: Path, spatch: Path) -> list[KerneldocComment]:
    """Kerneldoc comments of new-name definitions that name another function."""
    new_names = set(NEW_NAMES.values())
    return [doc for doc in kerneldoc_comments(tree, spatch)
            if doc.function in new_names
            and kerneldoc_name(doc.comment) != doc.function]


def _fix_kerneldoc(tree: Path, spatch: Path) -> None:
    old_of = {new: old for old, new in NEW_NAMES.items()}
    for doc in stale_kerneldoc(tree, spatch):
        documented = kerneldoc_name(doc.comment)
        if documented != old_of[doc.function]:
            raise AnchorError(
                f"{doc.file}:{doc.line}: {doc.function}() is documented as "
                f"{documented!r}, expected {old_of[doc.function]!r}")
        _rewrite_kerneldoc(tree, doc, documented)


# --------------------------------------------------------------------------
# Applying the patches


def _snapshot(paths: list[Path]) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in paths}


def _restore(before: dict[Path, bytes]) -> None:
    for path, content in before.items():
        if path.read_bytes() != content:
            path.write_bytes(content)


def _touched(tree: Path, before: dict[Path, bytes]) -> list[str]:
    return sorted(os.path.relpath(p, tree) for p, content in before.items()
                  if p.read_bytes() != content)


def _apply(tree: Path, spatch: Path, cocci: Path, finish, what: str) -> list[str]:
    """Run ``cocci`` in place on the core files, then ``finish(tree)``.

    ``finish`` completes the edit and returns what is wrong with the result,
    or None.  Any failure restores both files: no half-applied patch.
    """
    paths = _core_paths(tree)
    for path in paths:
        unshare(path)
    before = _snapshot(paths)
    try:
        run_spatch(spatch, cocci, paths, virtual="patch", in_place=True)
        problem = finish(tree, spatch)
        if problem:
            raise CoreApiError(f"{what}: {problem}")
    except BaseException:
        _restore(before)
        raise
    return _touched(tree, before)


def _finish_counting_api(tree: Path, spatch: Path) -> str | None:
    _fix_kerneldoc(tree, spatch)
    symbols = api_state(tree, spatch)
    if not has_counting_api(symbols):
        return "the new names are not all defined, declared and exported"
    if not _has_wrappers(symbols):
        return "the old names are not all thin wrappers with exports"
    stale = stale_kerneldoc(tree, spatch)
    if stale:
        return f"kerneldoc still names other functions: {stale}"
    return None


def apply_counting_api(tree: Path, spatch: Path) -> list[str]:
    """Apply patch 1 to a scratch tree in place; return the touched paths.

    Raises AlreadyApplied on a tree that already has down_sem(), and
    CoreApiError on a tree whose core files are in any other state
    than 6.1's.  On any failure the two files are restored.
    """
    tree = tree.resolve()
    symbols = api_state(tree, spatch)
    if "down_sem" in {s.name for s in symbols}:
        raise AlreadyApplied(
            "the tree already has the counting API down_sem(): "
            + _describe(symbols, set(NEW_NAMES.values())))
    if not _is_pristine(symbols):
        raise CoreApiError(
            "kernel/locking/semaphore.c and include/linux/semaphore.h do not "
            "define, declare and export down() ... up() as 6.1 does: "
            + _describe(symbols, set(OLD_NAMES)))
    return _apply(tree, spatch, COUNTING_API_COCCI, _finish_counting_api,
                  "counting API patch")


def _finish_flag_day(tree: Path, spatch: Path) -> str | None:
    symbols = api_state(tree, spatch)
    if not _has_no_old_names(symbols):
        return "old names are left: " + _describe(symbols, set(OLD_NAMES))
    if not has_counting_api(symbols):
        return "the new names are not all defined, declared and exported"
    return None


def apply_flag_day(tree: Path, spatch: Path) -> list[str]:
    """Apply the flag day to a scratch tree in place; return touched paths.

    Needs patch 1 in the tree (the old names must be wrappers).  Raises
    AlreadyApplied when the old names are already gone.
    """
    tree = tree.resolve()
    symbols = api_state(tree, spatch)
    if has_counting_api(symbols) and _has_no_old_names(symbols):
        raise AlreadyApplied(
            "the flag day is already applied: the tree has down_sem() and "
            "no down(), down_interruptible(), ..., up() any more")
    if not (has_counting_api(symbols) and _has_wrappers(symbols)):
        raise CoreApiError(
            "the flag day needs the counting API patch first (old names as "
            "wrappers of down_sem() ...): "
            + _describe(symbols, set(OLD_NAMES) | set(NEW_NAMES.values())))
    return _apply(tree, spatch, FLAG_DAY_COCCI, _finish_flag_day, "flag day")


# --------------------------------------------------------------------------
# Old-API callers


def _candidate_files(tree: Path) -> list[Path]:
    """Files that may call an old name: a cheap prefilter, not a verdict.

    grep only narrows what spatch parses; whether a line is a call of the
    semaphore API is decided by old_api_callers.cocci.
    """
    pattern = ("(^|[^A-Za-z0-9_])(" + "|".join(OLD_NAMES)
               + r")[[:space:]]*\(")
    return sorted(tree / rel for rel in files_matching(tree, pattern, False, 2))


def find_old_api_callers(tree: Path, spatch: Path, files: list[str] | None = None
                         ) -> list[OldApiCaller]:
    """Calls of down() ... up() left in ``files`` (default: the whole tree).

    ``files`` are paths relative to ``tree``.  Calls whose argument spatch
    knows to be a struct semaphore * have arg_type "semaphore"; calls whose
    argument type it cannot tell have "unknown type".  Calls with an
    argument of another known type, and calls in files that define their own
    function of that name, are not reported.
    """
    tree = tree.resolve()
    if files is None:
        paths = _candidate_files(tree)
    else:
        paths = [tree / f for f in files]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            raise FileNotFoundError(f"not in {tree}: {missing}")
    stdout = run_spatch(spatch, OLD_API_CALLERS_COCCI, paths, virtual="report",
                     file_groups=True)
    callers = {
        OldApiCaller(file=_relative(tree, r["file"]), line=r["line"],
                     function=r["function"], op=r["op"], arg_type=r["type"])
        for r in _json_lines(stdout, OLD_API_CALLERS_COCCI)}
    return sorted(callers, key=lambda c: (c.file, c.line, c.op))
