"""The rewrite stage: apply the classification to the C code with spatch.

    audit instances -> plan_rewrite() -> RewritePlan -> apply_rewrite() -> RewriteResult

``plan_rewrite`` is pure: it decides, for every instance, whether it becomes
a ``struct mutex`` or moves to the renamed counting API, and lists every
position to change: file, line, operation, and the instance's name, which
a declaration declares and a call's argument mentions.  ``apply_rewrite``
hands those positions to the semantic patches in ``cocci/rewrite/``
through a JSON plan file, so spatch changes exactly the calls and
declarations the audit found, then checks with ``rewrite_state.cocci``
that every planned position was rewritten.

Positions are lines because the audit's sites carry lines only.  Two
instances with the same operation on one line cannot be told apart that
way; ``plan_rewrite`` finds such clashes and keeps the mutex instance
involved a semaphore (the counting API keeps the semantics whatever the
instance), which is always safe.

A mutex conversion is all or nothing: a ``struct mutex`` with one ``down()``
left on it does not build.  So when spatch leaves any position of a mutex
instance unconverted, the files are restored and that instance is moved to
the counting API instead; the result says so and why.

Lines move: spatch breaks a call that grew past 80 columns over two lines,
and ``#include <linux/mutex.h>`` adds one.  The plan keeps the audit's
line numbers and records every move (``RewritePlan.line_shifts``, measured
by comparing each file before and after), so later calls with the same
plan, for instance one per subsystem on one scratch tree, or a second run
on a tree already rewritten, still find their positions.
"""
from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from sem2mutex.errors import RewriteError, SpatchError
from sem2mutex.model import Location
from sem2mutex.paths import COCCI_DIR
from sem2mutex.series.plan import (COUNTING, DECLARATION, MUTEX, MUTEX_TYPE, SEMAPHORE_TYPE,
                                   Edit, RewritePlan, demote, plan_rewrite, split_lines)
from sem2mutex.series.alignment import Realignment, realign
from sem2mutex.series.includes import (AFTER, BEFORE, DROP, SEMAPHORE_H, IncludeLine,
                                       IncludePlan, in_shared_header, plan_include)
from sem2mutex.tools.api import COUNTING_NAMES, api_table
from sem2mutex.tools.grep import GrepMemo, files_including, files_with_words
from sem2mutex.tools.kernel_tree import NON_KERNEL_TOP_DIRS
from sem2mutex.tools.lexer import directives
from sem2mutex.tools.fs import replace_file, unshare
from sem2mutex.tools.linediff import Block, changed_blocks
from sem2mutex.tools.cache import ResultCache
from sem2mutex.tools.spatch import ParseError, SpatchRun, run_rules

T = TypeVar("T")

__all__ = ["COUNTING", "MUTEX", "Edit", "RewritePlan", "RewriteResult", "apply_rewrite",
           "plan_rewrite"]

REWRITE_DIR = COCCI_DIR / "rewrite"
TRANSFORM_COCCI = [
    REWRITE_DIR / "mutex_declarations.cocci",
    REWRITE_DIR / "mutex_initialisers.cocci",
    REWRITE_DIR / "api_calls.cocci",
]
STATE_COCCI = [REWRITE_DIR / "rewrite_state.cocci"]


# How api_calls.cocci rewrote a down_trylock(), by the name it reports.  A bare
# down_trylock(E) used as a condition is E != 0 to spatch's isomorphisms.
TRYLOCK_FORMS = {
    "unused_result": "down_trylock(E); -> mutex_trylock(E);",
    "negated": "!down_trylock(E) -> mutex_trylock(E)",
    "compared_equal_zero": "down_trylock(E) == 0 -> mutex_trylock(E)",
    "compared_not_zero": "down_trylock(E) as a test (!= 0) -> !mutex_trylock(E)",
    "value": "down_trylock(E) as a value -> !mutex_trylock(E)",
}


# --------------------------------------------------------------------------
# The result


CONVERTED = "converted"
ALREADY = "already-converted"
NOT_CONVERTED = "not-converted"


@dataclass(frozen=True)
class EditOutcome:
    edit: Edit  # at its line in the tree as it is now
    status: str  # CONVERTED, ALREADY or NOT_CONVERTED
    form: str = ""  # how it was rewritten (the rule; the trylock form)
    why: str = ""  # for NOT_CONVERTED


@dataclass
class InstanceRewrite:
    instance: str
    target: str  # what it became: MUTEX or COUNTING
    demoted: list[str]  # why a mutex-class instance stayed a semaphore
    outcomes: list[EditOutcome]

    def with_status(self, status: str) -> list[EditOutcome]:
        return [o for o in self.outcomes if o.status == status]


ADDED = "added"
PRESENT = "present"
NOT_ADDED = "not-added"
NOT_WANTED = "not-wanted"  # the file neither declares a mutex nor dropped semaphore.h

DROPPED = "dropped"
REPLACED = "replaced"  # by <linux/mutex.h>, on its line
KEPT = "kept"


@dataclass(frozen=True)
class IncludeOutcome:
    file: str
    status: str  # <linux/mutex.h>: ADDED, PRESENT, NOT_ADDED or NOT_WANTED
    line: int | None = None  # where #include <linux/mutex.h> is now
    why: str = ""
    semaphore_h: str = ""  # <linux/semaphore.h>: DROPPED, REPLACED, KEPT; "" if absent
    semaphore_why: str = ""  # why it was kept


@dataclass
class RewriteResult:
    files_changed: list[str]
    instances: list[InstanceRewrite]
    includes: list[IncludeOutcome]
    parse_errors: dict[str, list[ParseError]] = field(default_factory=dict)
    # lines spatch changed that no edit planned: must stay empty
    unplanned_changes: list[Location] = field(default_factory=list)
    # padded declarations whose name was put back in its display column
    realigned: list[Realignment] = field(default_factory=list)
    # what a re-read with spatch did not confirm: must stay empty
    unconfirmed: list[str] = field(default_factory=list)

    @property
    def nothing_to_do(self) -> bool:
        """True when the tree already carried every planned change."""
        outcomes = [o for i in self.instances for o in i.outcomes]
        return (bool(outcomes) and not self.files_changed
                and all(o.status == ALREADY for o in outcomes))

    def not_converted(self) -> list[EditOutcome]:
        return [o for i in self.instances for o in i.with_status(NOT_CONVERTED)]

    def summary(self) -> str:
        """What happened, then every problem, one per line."""
        count: dict[str, int] = defaultdict(int)
        for inst in self.instances:
            for o in inst.outcomes:
                count[o.status] += 1
        mutexes = sum(1 for i in self.instances if i.target == MUTEX)
        added = sum(1 for inc in self.includes if inc.status == ADDED)
        gone = sum(1 for inc in self.includes if inc.semaphore_h in (DROPPED, REPLACED))
        if not count:
            lines = ["nothing to rewrite: the plan has no position to change"]
        elif self.nothing_to_do:
            lines = [f"nothing to do: the {count[ALREADY]} planned positions of the "
                     f"{len(self.instances)} instances are already rewritten"]
        else:
            lines = [f"{len(self.instances)} instances ({mutexes} to struct mutex): "
                     f"{count[CONVERTED]} positions rewritten, {count[ALREADY]} already "
                     f"rewritten, {count[NOT_CONVERTED]} not converted; "
                     f"{len(self.files_changed)} files changed, {added} "
                     f"<linux/mutex.h> includes added, {gone} <linux/semaphore.h> "
                     f"dropped or replaced, {len(self.realigned)} declarations "
                     "realigned"]
        for inst in self.instances:
            for why in inst.demoted:
                lines.append(f"  {inst.instance} stays a semaphore: {why}")
        for o in self.not_converted():
            lines.append(f"  not converted: {o.edit.describe()} ({o.edit.instance}): "
                         f"{o.why}")
        for inc in self.includes:
            if inc.status == NOT_ADDED:
                lines.append(f"  <linux/mutex.h> not added to {inc.file}: {inc.why}")
            if inc.semaphore_h == KEPT and inc.semaphore_why != SEMAPHORE_LEFT:
                lines.append(f"  <linux/semaphore.h> kept in {inc.file}: {inc.semaphore_why}")
        for problem in self.unconfirmed:
            lines.append(f"  not confirmed by spatch: {problem}")
        for loc in self.unplanned_changes:
            lines.append(f"  unplanned change at {loc}")
        return "\n".join(lines)


# --------------------------------------------------------------------------
# Running spatch


def run_spatch(spatch: Path, cocci: list[Path], virtuals: list[str], files: list[Path],
               jobs: int, env: dict[str, str] | None = None,
               in_place: bool = False, cache: ResultCache | None = None,
               acting_on: dict[Path, str] | None = None) -> SpatchRun:
    try:
        return run_rules(spatch, cocci, virtuals, files, jobs, env, in_place, cache=cache,
                         acting_on=acting_on)
    except SpatchError as err:
        raise RewriteError(str(err)) from None


# --------------------------------------------------------------------------
# What the files hold, as rewrite_state.cocci reports it


# What still needs <linux/semaphore.h>, and what needs <linux/mutex.h>, as
# rewrite_state.cocci reports it (calls, defines, declarations, types).
SEMAPHORE_SPELLINGS = frozenset({SEMAPHORE_TYPE, "DEFINE_SEMAPHORE", "sema_init",
                                 "__SEMAPHORE_INITIALIZER", *COUNTING_NAMES,
                                 *COUNTING_NAMES.values()})
MUTEX_SPELLINGS = frozenset({MUTEX_TYPE, "DEFINE_MUTEX", "mutex_init", "__MUTEX_INITIALIZER",
                             "mutex_lock", "mutex_lock_interruptible", "mutex_lock_killable",
                             "mutex_trylock", "mutex_unlock", "mutex_destroy",
                             "mutex_is_locked", "mutex_lock_nested",
                             "mutex_lock_interruptible_nested", "mutex_lock_killable_nested",
                             "mutex_lock_io", "mutex_trylock_recursive", "devm_mutex_init",
                             "atomic_dec_and_mutex_lock", "mutex_lock_nest_lock"})


@dataclass
class FileState:
    # line -> {(spelling, column): names}: calls with the names their first
    # argument is made of, declarations and defines with the name declared
    spellings: dict[int, dict[tuple[str, int], set[str]]] = field(
        default_factory=lambda: defaultdict(dict))
    includes: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))
    # (line, name) -> (type, column of the name) of every declaration
    declarations: dict[tuple[int, str], tuple[str, int]] = field(default_factory=dict)
    # struct semaphore / struct mutex -> lines naming the type anywhere
    types: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))

    def uses(self, spellings: frozenset[str]) -> list[int]:
        """The lines that use one of SPELLINGS (call, define, declaration, type)."""
        found = {line for line, seen in self.spellings.items()
                 if any(s in spellings for s, _ in seen)}
        found |= {line for name, lines in self.types.items() if name in spellings
                  for line in lines}
        return sorted(found)

    def header_line(self, style: str) -> int | None:
        lines = [n for n, styles in self.includes.items() if style in styles]
        return min(lines) if lines else None

    def add(self, line: int, spelling: str, column: int, name: str | None) -> None:
        names = self.spellings[line].setdefault((spelling, column), set())
        if name:
            names.add(name)

    def has(self, line: int, spelling: str, name: str | None = None) -> bool:
        """SPELLING at LINE; about NAME (declares it, or its argument names it)."""
        return any(s == spelling and (name is None or name in names)
                   for (s, _), names in self.spellings.get(line, {}).items())

    def mutex_header_line(self) -> int | None:
        return self.header_line("mutex")


@dataclass
class TreeState:
    files: dict[str, FileState]
    parse_errors: dict[str, list[ParseError]]  # relative file -> skipped regions


STATE_KINDS = ("call", "argument", "declaration", "define", "include", "type")


def read_state(tree: Path, files: list[str], spatch: Path, jobs: int,
               cache: ResultCache | None = None) -> TreeState:
    run = run_spatch(spatch, STATE_COCCI, ["report"], [tree / f for f in files], jobs,
                     cache=cache)
    return tree_state(tree, files, run)


def tree_state(tree: Path, files: list[str], run: SpatchRun) -> TreeState:
    """What rewrite_state.cocci's records of RUN say FILES hold."""
    states: dict[str, FileState] = {f: FileState() for f in files}
    records = [r for r in run.records if r["kind"] in STATE_KINDS]
    calls: dict[tuple[str, int, int], str] = {}  # (file, line, column) -> op
    for r in records:
        if r["kind"] == "call":
            calls[(r["file"], r["line"], r["column"])] = r["name"]
    for r in records:
        st = states.setdefault(os.path.relpath(r["file"], tree), FileState())
        if r["kind"] == "call":
            st.add(r["line"], r["name"], r["column"], None)
        elif r["kind"] == "argument":
            op = calls.get((r["file"], r["line"], r["column"]))
            if op:
                st.add(r["line"], op, r["column"], r["name"])
        elif r["kind"] == "declaration":
            st.add(r["line"], r["type"], 0, r["name"])
            st.declarations[(r["line"], r["name"])] = (r["type"], r["column"])
        elif r["kind"] == "type":
            st.types[r["name"]].add(r["line"])
        elif r["kind"] == "define":
            st.add(r["line"], r["macro"], 0, r["name"])
        elif r["kind"] == "include":
            st.includes[r["line"]].add(r["style"])
    errors = {os.path.relpath(f, tree): m for f, m in run.parse_errors.items()}
    return TreeState(states, errors)


def is_rewritten(edit: Edit, state: FileState) -> bool:
    return state.has(edit.line, edit.new, edit.name) \
        and not state.has(edit.line, edit.old, edit.name)


def still_old(edit: Edit, state: FileState) -> bool:
    return state.has(edit.line, edit.old, edit.name)


def rewritten_below_include(edit: Edit, state: FileState) -> bool:
    """Rewritten, one line down, under a <linux/mutex.h> include: a tree that
    already carries the rewrite, planned from the audit of the tree before."""
    header = state.mutex_header_line()
    return (header is not None and header <= edit.line
            and not still_old(edit, state)
            and is_rewritten(replace(edit, line=edit.line + 1), state))


def parse_trouble(edit: Edit, errors: dict[str, list[ParseError]]) -> str | None:
    """What spatch could not parse in the edit's file, the region holding
    the edit first."""
    regions = errors.get(edit.file, [])
    covering = [r for r in regions if r.first_line <= edit.line <= r.last_line]
    return (covering or regions)[0].message if regions else None


def missing_why(edit: Edit, errors: dict[str, list[ParseError]]) -> str:
    if edit.op == DECLARATION:
        what = f"{edit.old} {edit.name}"
    else:
        what = f"{edit.old}()" + (f" on {edit.name}" if edit.name else "")
    where = f"no {what} at {edit.location} in the file as spatch parses it"
    trouble = parse_trouble(edit, errors)
    if trouble:
        return f"{where}; spatch could not parse part of the file: {trouble}"
    return f"{where} (has the file changed since the analysis?)"


def not_rewritten_why(edit: Edit, errors: dict[str, list[ParseError]]) -> str:
    trouble = parse_trouble(edit, errors)
    if trouble:
        return f"spatch left it unchanged; it could not parse part of the file: {trouble}"
    if edit.op == DECLARATION:
        return ("no rule of cocci/rewrite matches this declaration (several "
                "variables declared in one statement?)")
    if edit.macro:
        return f"spatch did not rewrite it in the body of macro {edit.macro}"
    return f"no rule of cocci/rewrite matched this {edit.op}() call"


# --------------------------------------------------------------------------
# Applying


def write_plan_file(directory: Path, tree: Path, edits: list[Edit],
                    includes: list[tuple[str, int, str]]) -> Path:
    """The JSON the semantic patches read ($SEM2MUTEX_REWRITE_PLAN)."""
    path = directory / "plan.json"
    path.write_text(json.dumps({
        "schema": 1,
        "api": api_table(),
        "edits": [{"file": str(tree / e.file), "line": e.line, "op": e.op, "to": e.to,
                   "name": e.name} for e in edits],
        "includes": [{"file": str(tree / f), "line": line, "where": where}
                     for f, line, where in sorted(includes)],
    }, indent=1))
    return path


def in_threads(jobs: int, work: Callable[[str], T], files: Iterable[str]) -> list[T]:
    """WORK on each of FILES, in order, on JOBS threads: what it does per
    file is a diff process (a few milliseconds each, for 126 files after
    the default tree's first transform run)."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(work, files))


def same_but_whitespace(old: list[str], new: list[str]) -> bool:
    return "".join("".join(old).split()) == "".join("".join(new).split())


def unplanned_lines(file: str, before: bytes, after: bytes, planned: set[int],
                    cache: ResultCache | None = None) -> list[Location]:
    """Changed blocks of FILE that hold no planned line (numbered as now).

    A block that only changed in whitespace is spatch re-aligning the
    continuation line of a call it renamed, not a change of its own.
    """
    old, new = split_lines(before), split_lines(after)
    found = []
    for b in changed_blocks(before, after, cache):
        if planned & set(range(b.new_start + 1, b.new_end + 1)):
            continue
        if not same_but_whitespace(old[b.old_start:b.old_end], new[b.new_start:b.new_end]):
            found.append(Location(file, b.new_start + 1))
    return found


@dataclass
class TransformRun:
    """What the transform made of each pending edit (keyed as in the audit)."""

    outcomes: dict[Edit, EditOutcome]
    originals: dict[str, bytes]  # file -> bytes before, for files it changed
    shifts_before: dict[str, list[tuple[int, int]]]  # to roll the plan back
    unplanned: list[Location]
    parse_errors: dict[str, list[ParseError]]
    # with report_before: what the files held before the first run, and
    # initial_status() of every planned edit against that
    before: TreeState | None = None
    initial: dict[Edit, EditOutcome | None] = field(default_factory=dict)
    strayed: bool = False  # it rewrote a position the files did not hold as planned

    def undo(self, tree: Path, plan: RewritePlan) -> None:
        """Put the files and PLAN's line shifts back as they were."""
        for f, data in self.originals.items():
            replace_file(tree / f, data)
        plan.line_shifts.clear()
        plan.line_shifts.update(self.shifts_before)


def transform(tree: Path, plan: RewritePlan, pending: list[Edit], spatch: Path,
              jobs: int, scratch: Path, report_before: bool = False,
              cache: ResultCache | None = None, ahead: LexAhead | None = None
              ) -> TransformRun:
    """Run the transform rules until every pending edit is done or stuck.

    With REPORT_BEFORE, the first run puts rewrite_state.cocci before the
    transform rules, so it also reports what the files held before any
    change (TransformRun.before): one parse of every file less than a run
    of its own.  PENDING is then every planned edit; the ones the files do
    not hold as planned (initial_status) are dropped from it after that
    first run, and TransformRun.strayed says whether it rewrote any of them.

    Why more than one spatch run: once a rule has changed a function, spatch
    re-parses that function from a temporary file, so the positions later
    rules of the same run see there name that file, not the one in the plan,
    and they leave the function alone.  The next run picks up what is left
    (at the lines the plan now maps the audit's to); a run that converts
    nothing ends the loop.  An edit is done when the run's records say a
    rule rewrote its position and its line changed; only the files of the
    other edits are read again (rewrite_state.cocci) to tell.
    """
    files = sorted({e.file for e in pending})
    # the files whose #include lines the include step may need (one that
    # spatch could not parse keeps its <linux/semaphore.h> for that reason,
    # so only <linux/mutex.h> can bring it there): lexed ahead
    declaring_mutexes = {e.file for e in pending
                         if e.to == MUTEX and e.op in (DECLARATION, "DEFINE_SEMAPHORE")}
    for f in files:
        unshare(tree / f)
    originals = {f: (tree / f).read_bytes() for f in files}
    shifts_before = {f: list(v) for f, v in plan.line_shifts.items()}
    last = dict(originals)
    forms: dict[Edit, str] = {}
    errors: dict[str, list[ParseError]] = {}
    remaining = list(pending)
    before: TreeState | None = None
    status: dict[Edit, EditOutcome | None] = {}
    strayed = False
    while remaining:
        reading = report_before and before is None
        todo = sorted({e.file for e in remaining})
        now_at: dict[tuple[str, int, str], list[Edit]] = defaultdict(list)
        now_line: dict[Edit, int] = {}
        for e in remaining:
            moved = plan.moved(e)
            now_at[moved.key].append(e)
            now_line[e] = moved.line
        plan_file = write_plan_file(scratch, tree, [plan.moved(e) for e in remaining], [])
        # rewrite_state.cocci first: its rules see the files before any change
        run = run_spatch(spatch, (STATE_COCCI if reading else []) + TRANSFORM_COCCI,
                         ["report", "patch"] if reading else ["patch"],
                         [tree / f for f in todo], jobs,
                         env={"SEM2MUTEX_REWRITE_PLAN": str(plan_file)}, in_place=True,
                         cache=cache)
        touched = {e: r["rule"] for r in run.records if r["kind"] == "rewrote"
                   for e in now_at.get((os.path.relpath(r["file"], tree), r["line"], r["op"]), [])}
        if reading:
            before = tree_state(tree, todo, run)
            status = initial_status(plan, before)
            pending = [e for e in pending if status[e] is None]
            remaining = list(pending)
            strayed = any(e not in pending for e in touched)
        for e, rule in touched.items():
            forms.setdefault(e, TRYLOCK_FORMS.get(rule, rule))
        for f, messages in run.parse_errors.items():
            errors.setdefault(os.path.relpath(f, tree), messages)
        now = {f: (tree / f).read_bytes() for f in todo}
        changed_now = [f for f in todo if now[f] != last[f]]
        blocks = dict(zip(changed_now, in_threads(
            jobs, lambda f: changed_blocks(last[f], now[f], cache), changed_now)))
        for f in changed_now:
            plan.record_changes(f, blocks[f])
            last[f] = now[f]
        if not remaining:
            break
        if ahead is not None:
            ahead.files([f for f in changed_now if str(tree / f) in run.parse_errors
                         and f in declaring_mutexes])
        # Spatch said it rewrote these, and their lines changed: no need to
        # parse their files again to know it.  The others' files are read.
        unsure = [e for e in remaining
                  if not (e in touched and line_changed(now_line[e], blocks.get(e.file, [])))]
        left = []
        if unsure:
            state = read_state(tree, sorted({e.file for e in unsure}), spatch, jobs, cache)
            for f, messages in state.parse_errors.items():
                errors.setdefault(f, messages)
            left = [e for e in unsure if not is_rewritten(plan.moved(e), state.files[e.file])]
        if len(left) == len(remaining):
            break
        remaining = left
    if report_before and before is None:  # nothing to read: no planned file is there
        before = TreeState({}, {})
        status = initial_status(plan, before)
    stuck = set(remaining)
    outcomes = {e: (EditOutcome(plan.moved(e), NOT_CONVERTED,
                                why=not_rewritten_why(plan.moved(e), errors))
                    if e in stuck else EditOutcome(plan.moved(e), CONVERTED, forms.get(e, "")))
                for e in pending}
    changed = {f: data for f, data in originals.items() if last[f] != data}
    planned_now = {f: {plan.current_line(f, e.line) for e in pending if e.file == f}
                   for f in changed}
    unplanned = [loc for found in in_threads(
        jobs, lambda f: unplanned_lines(f, changed[f], last[f], planned_now[f], cache), changed)
        for loc in found]
    return TransformRun(outcomes, changed, shifts_before, unplanned, errors,
                        before, status, strayed)


def includes_semaphore_h(f: str, before: TreeState | None) -> bool:
    """Whether F includes <linux/semaphore.h>, as far as BEFORE (the state
    read before the transform, which leaves includes alone) knows: a file
    it did not read may."""
    if before is None or f not in before.files:
        return True
    return before.files[f].header_line("semaphore") is not None


def line_changed(line: int, blocks: list[Block]) -> bool:
    """Whether LINE (1-based, in the file before) is among BLOCKS' old lines."""
    return any(b.old_start < line <= b.old_end for b in blocks)


def initial_status(plan: RewritePlan, before: TreeState
                   ) -> dict[Edit, EditOutcome | None]:
    """None for an edit still to do; an outcome for one done or impossible."""
    status: dict[Edit, EditOutcome | None] = {}
    for e in plan.edits:
        now = plan.moved(e)
        st = before.files.get(e.file)
        if st is None:
            status[e] = EditOutcome(now, NOT_CONVERTED, why=f"{e.file} is not in the tree")
        elif still_old(now, st):
            status[e] = None
        elif st.has(now.line, now.new, now.name) or rewritten_below_include(now, st):
            status[e] = EditOutcome(now, ALREADY)
        else:
            status[e] = EditOutcome(now, NOT_CONVERTED,
                                    why=missing_why(now, before.parse_errors))
    return status


def failed_mutexes(outcomes: list[EditOutcome]) -> dict[str, list[str]]:
    failed: dict[str, list[str]] = defaultdict(list)
    for o in outcomes:
        if o.edit.to == MUTEX and o.status == NOT_CONVERTED:
            failed[o.edit.instance].append(f"{o.edit.describe()}: {o.why}")
    return failed


SEMAPHORE_LEFT = "the file still uses a semaphore"
INCLUDE_TEMPLATE = REWRITE_DIR / "mutex_include_next_to.cocci"
TEMPLATE_HEADER = "<SEM2MUTEX_ANCHOR>"


def include_program(headers: list[str]) -> str:
    """mutex_include.cocci with a next-to rule for each of HEADERS."""
    return "\n\n".join([(REWRITE_DIR / "mutex_include.cocci").read_text(),
                        *next_to_rules(headers)]) + "\n"


def next_to_rules(headers: list[str]) -> list[str]:
    """mutex_include_next_to.cocci once per anchor header (its docstring
    says why a rule must name the header)."""
    lines = INCLUDE_TEMPLATE.read_text().splitlines()
    body = "\n".join(line for line in lines if not line.startswith(("virtual ", "//")))
    copies = [body.replace(TEMPLATE_HEADER, header).replace("_ANCHOR", f"_{n}")
              for n, header in enumerate(headers)]
    return copies


def include_lines(spatch: Path, tree: Path, files: list[str], jobs: int, scratch: Path,
                  state: TreeState, cache: ResultCache | None = None
                  ) -> dict[str, list[IncludeLine]]:
    """Each file's #include lines, from Coccinelle's lexer.

    Of a file spatch parsed whole, only the lines up to the last #include
    spatch saw are lexed (bnx2x_main.c: 1.4 s for the whole file); a file
    with a region spatch skipped is lexed whole, since an #include may
    hide in it."""
    heads = scratch / "lexed-heads"

    def one(f: str) -> list[IncludeLine]:
        st = state.files.get(f)
        root = tree
        if f not in state.parse_errors and st is not None and st.includes:
            head = split_after_line((tree / f).read_bytes(), max(st.includes))[0]
            (heads / f).parent.mkdir(parents=True, exist_ok=True)
            (heads / f).write_bytes(head)
            root = heads
        return lexed_include_lines(spatch, root, f, cache)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return dict(zip(files, pool.map(one, files)))


def lexed_include_lines(spatch: Path, root: Path, f: str,
                        cache: ResultCache | None) -> list[IncludeLine]:
    """The #include lines of ROOT/F (the lexer's directives, which CACHE
    keeps under the file's content)."""
    return [IncludeLine(d.line, d.argument) for d in directives(spatch, root, f, cache)
            if d.keyword == "include"]


@dataclass
class LexAhead:
    """Lexes whole files for include_lines() on the core spatch leaves
    idle: a file spatch could not parse whole is lexed whole, and the read
    that checks a rewrite runs one spatch per file, so for one big file
    (bnx2x_main.c: a 1.9 s read, a 1.1 s lexing) the two can overlap.
    What it lexes lands in the cache under the key include_lines() looks
    up, so it changes no result; without a cache it does nothing."""

    spatch: Path
    tree: Path
    cache: ResultCache | None
    pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(max_workers=1))
    pending: list = field(default_factory=list)

    def files(self, files: list[str]) -> None:
        if self.cache is None or self.cache.root is None:
            return
        for f in files:
            self.pending.append(self.pool.submit(lexed_include_lines, self.spatch, self.tree, f,
                                                 self.cache))

    def finish(self) -> None:
        """Wait for what was started; a failure is include_lines()'s to
        meet and report when it lexes the file itself."""
        for job in self.pending:
            try:
                job.result()
            except Exception:  # noqa: BLE001 - see the docstring
                pass
        self.pool.shutdown()


# Words a file that names a semaphore itself must contain: the prefilter
# before spatch reads the includers of a header (down() and up() alone are
# too common; a file that calls them on a semaphore declares or includes one).
SEMAPHORE_WORDS = ["semaphore", "sema_init", "DEFINE_SEMAPHORE", "__SEMAPHORE_INITIALIZER",
                   *sorted(COUNTING_NAMES.values())]


def include_path(header: str) -> str | None:
    """How other files include a shared header: include/xen/xenbus.h is
    <xen/xenbus.h>, arch/x86/include/asm/uv/bios.h is <asm/uv/bios.h>."""
    parts = header.split("/")
    return "/".join(parts[parts.index("include") + 1:]) if "include" in parts else None


def neighbour_includers(header: str, root: Path) -> list[str]:
    """Files of ROOT next to a driver's HEADER that name it (a grep
    prefilter; a shared header's includers are found by includers_in)."""
    directory = os.path.dirname(header)
    if not (root / directory).is_dir():
        return []
    names = sorted(os.path.join(directory, n) for n in os.listdir(root / directory)
                   if n.endswith((".c", ".h")) and os.path.join(directory, n) != header)
    return files_with_words(root, names, [os.path.basename(header)])


def includers_in(root: Path, headers: list[str], jobs: int,
                 memo: GrepMemo | None = None) -> dict[str, set[str]]:
    """Files of ROOT that may include each of HEADERS: next to it for a
    driver's header, anywhere for a shared one, read from ROOT's #include
    directives (with MEMO, the greps the audit's include graph kept: a
    grep of the whole tree per header cost 1 s each)."""
    shared: dict[str, list[str]] = defaultdict(list)
    found: dict[str, set[str]] = {}
    for h in headers:
        path = include_path(h) if in_shared_header(h) else None
        if path:
            shared[path].append(h)
        else:
            found[h] = set(neighbour_includers(h, root))
    for path, files in files_including(root, list(shared), jobs, skip=NON_KERNEL_TOP_DIRS,
                                       memo=memo).items():
        for h in shared[path]:
            found[h] = files - {h}
    return found


def includers_relying_on(headers: list[str], tree: Path, source: Path, spatch: Path,
                         jobs: int, cache: ResultCache | None = None,
                         memo: GrepMemo | None = None) -> dict[str, list[str]]:
    """For each of HEADERS, the files that include it and name a semaphore
    without including <linux/semaphore.h> themselves: they may get it
    through the header.  A driver's header is looked for in its directory,
    a shared one (include/, arch/*/include/) in the whole tree; files are
    read as TREE has them (rewritten), else as SOURCE (the whole tree TREE
    was copied from) does.  grep picks the candidates; spatch decides what
    they use, one read for all of them."""
    mentions = includers_in(tree, headers, jobs)
    if source != tree:
        for h, found in includers_in(source, headers, jobs, memo).items():
            mentions[h] |= found
    everyone = sorted(set().union(*mentions.values())) if mentions else []
    relying: set[str] = set()
    for root in dict.fromkeys([tree, source]):
        mine = [f for f in everyone if (root / f).is_file()
                and (root == tree or not (tree / f).is_file())]
        users = files_with_words(root, mine, SEMAPHORE_WORDS)
        if users:
            state = read_state(root, users, spatch, jobs, cache).files
            relying |= {f for f in users if state[f].uses(SEMAPHORE_SPELLINGS)
                        and state[f].header_line("semaphore") is None}
    return {h: sorted(mentions[h] & relying) for h in headers}


def semaphore_h_keep_reasons(files: list[str], state: TreeState, tree: Path, source: Path,
                             spatch: Path, jobs: int, cache: ResultCache | None = None,
                             memo: GrepMemo | None = None) -> dict[str, str]:
    """Why each of FILES must keep its <linux/semaphore.h>; "" when it may go."""
    reasons = {}
    headers = []
    for f in files:
        st = state.files.get(f, FileState())
        if st.uses(SEMAPHORE_SPELLINGS):
            reasons[f] = SEMAPHORE_LEFT
        elif f in state.parse_errors:
            reasons[f] = "spatch could not parse all of the file, so it may still use one"
        else:
            reasons[f] = ""
            if f.endswith(".h"):
                headers.append(f)
    for f, relying in includers_relying_on(headers, tree, source, spatch, jobs,
                                           cache, memo).items():
        if relying:
            reasons[f] = (f"{', '.join(relying[:3])}{' ...' if len(relying) > 3 else ''} "
                          f"{'uses' if len(relying) == 1 else 'use'} a semaphore and may get "
                          "<linux/semaphore.h> through it")
    return reasons


def realign_declarations(tree: Path, work: RewritePlan, outcomes: dict[Edit, EditOutcome],
                         moved_before: dict[Edit, int], pristine: dict[str, bytes],
                         before: TreeState, now: TreeState) -> list[tuple[Edit, Realignment]]:
    """Put each retyped member's name back in its display column
    (alignment.py says why this is a post-pass, and how narrow)."""
    wanted: dict[str, list] = defaultdict(list)
    for e, o in outcomes.items():
        if not (e.op == DECLARATION and e.to == MUTEX and o.status == CONVERTED):
            continue
        old = before.files.get(e.file, FileState()).declarations.get(
            (moved_before[e], e.name))
        line = work.moved(e).line
        new = now.files.get(e.file, FileState()).declarations.get((line, e.name))
        if not old or not new or new[0] != MUTEX_TYPE or e.file not in pristine:
            continue
        old_text = split_lines(pristine[e.file])[moved_before[e] - 1]
        wanted[e.file].append((e, line, e.name, new[1], old_text, old[1]))
    done = []
    for f, items in wanted.items():
        changed = realign(tree, f, [item[1:] for item in items])
        edit_of = {(item[1], item[2]): item[0] for item in items}
        done += [(edit_of[(r.line, r.name)], r) for r in changed]
    return done


def update_includes(tree: Path, source: Path, work: RewritePlan, files: set[str],
                    mutex_files: set[str], state: TreeState, spatch: Path, jobs: int,
                    scratch: Path, cache: ResultCache | None = None,
                    memo: GrepMemo | None = None
                    ) -> tuple[list[IncludeOutcome], dict[str, int]]:
    """Drop, replace and add includes in FILES (series/includes.py decides);
    returns the outcomes (lines not yet confirmed) and, for each file it
    changed, how many lines of it now hold all its includes (its head).

    spatch runs on each file's head only: the lines up to its last
    #include, all the include rules can act on (they match #include lines
    and nothing else), then the rest of the file is put back unchanged.
    Parsing and printing a whole file for one #include line cost 3.3 s
    on bnx2x_main.c (15,000 lines), its head 0.3 s."""
    plans: dict[str, IncludePlan] = {}
    keeps = semaphore_h_keep_reasons(
        [f for f in sorted(files) if state.files.get(f, FileState()).header_line("semaphore")],
        state, tree, source, spatch, jobs, cache, memo)
    # The lexer is asked only where an include may change: <linux/mutex.h>
    # to add, or a <linux/semaphore.h> nothing keeps.  Elsewhere spatch's
    # state says all the plan needs: whether <linux/semaphore.h> is there
    # (33 of 56 files on the default tree, 0.1 s of lexing each).
    needs_names = []
    names: dict[str, list[IncludeLine]] = {}
    for f in sorted(files):
        st = state.files.get(f, FileState())
        semaphore_h = st.header_line("semaphore")
        if (f in mutex_files and not st.mutex_header_line()) or \
                (semaphore_h is not None and not keeps.get(f)):
            needs_names.append(f)
        elif semaphore_h is not None:
            names[f] = [IncludeLine(semaphore_h, SEMAPHORE_H)]
    names.update(include_lines(spatch, tree, needs_names, jobs, scratch, state, cache))
    for f in sorted(files):
        st = state.files.get(f, FileState())
        keep = keeps.get(f, "")
        plans[f] = plan_include(f, names.get(f, []), semaphore_left=keep == SEMAPHORE_LEFT,
                                keep_why=keep, wants_mutex_h=f in mutex_files,
                                calls_mutex=bool(st.uses(MUTEX_SPELLINGS)),
                                has_mutex_h=st.mutex_header_line() is not None)
    entries = []
    for f, ip in plans.items():
        if ip.add:
            entries.append((f, ip.add[0], ip.add[1], ip.add[2]))
        if ip.drop:
            entries.append((f, ip.drop, DROP, ""))
    heads_now: dict[str, int] = {}
    if entries:
        todo = sorted({e[0] for e in entries})
        heads = scratch / "include-heads"
        rests: dict[str, bytes] = {}
        originals: dict[str, bytes] = {}
        for f in todo:
            unshare(tree / f)
            originals[f] = (tree / f).read_bytes()
            head, rests[f] = split_after_line(
                originals[f], last_include_line(names.get(f, []), state.files.get(f)))
            (heads / f).parent.mkdir(parents=True, exist_ok=True)
            (heads / f).write_bytes(head)
        anchor = {e[0]: e[3] for e in entries if e[2] in (AFTER, BEFORE)}
        program = scratch / "mutex_include.cocci"
        program.write_text(include_program(sorted(set(anchor.values()))))
        plan_file = write_plan_file(scratch, heads, [], [(f, line, where)
                                                         for f, line, where, _ in entries])
        # a next-to rule acts only at its own header's planned line
        acting_on = {heads / f: include_program([anchor[f]] if f in anchor else [])
                     for f in todo}
        run_spatch(spatch, [program], ["patch"], [heads / f for f in todo], jobs,
                   env={"SEM2MUTEX_REWRITE_PLAN": str(plan_file)}, in_place=True,
                   cache=cache, acting_on=acting_on)
        for f in todo:
            head = (heads / f).read_bytes()
            data = head + rests[f]
            if data != originals[f]:
                replace_file(tree / f, data)
                heads_now[f] = head.count(b"\n")
                work.record_changes(f, changed_blocks(originals[f], data, cache))
    outcomes = []
    for f, ip in plans.items():
        st = state.files.get(f, FileState())
        had_sem = st.header_line("semaphore") is not None
        sem = (REPLACED if ip.replaces else DROPPED if ip.drop else KEPT if had_sem else "")
        present = st.mutex_header_line()
        if ip.add:
            status, why = ADDED, ""
        elif present:
            status, why = PRESENT, ""
        elif ip.no_place:
            status, why = NOT_ADDED, ("the file has no #include to put <linux/mutex.h> "
                                      "next to; it relies on its includers for its types")
        elif f in mutex_files:
            status, why = NOT_ADDED, "no place found"
        else:
            status, why = NOT_WANTED, ""
        outcomes.append(IncludeOutcome(f, status, present, why, sem,
                                       ip.keep_why if sem == KEPT else ""))
    return outcomes, heads_now


def last_include_line(names: list[IncludeLine], state: FileState | None) -> int:
    """The line of the file's last #include, as the lexer and spatch saw it."""
    lines = [i.line for i in names] + list(state.includes if state else [])
    return max(lines, default=0)


def split_after_line(data: bytes, line: int) -> tuple[bytes, bytes]:
    """DATA cut after its LINE-th newline: (the lines up to LINE, the rest)."""
    at = 0
    for _ in range(line):
        newline = data.find(b"\n", at)
        if newline < 0:
            return data, b""
        at = newline + 1
    return data[:at], data[at:]


def confirm(tree: Path, work: RewritePlan, includes: list[IncludeOutcome],
            realigned: list[tuple[Edit, Realignment]], changed: set[str], spatch: Path,
            jobs: int, scratch: Path, heads: dict[str, int],
            cache: ResultCache | None = None
            ) -> tuple[list[IncludeOutcome], list[Realignment], list[str]]:
    """Re-read the files the include and alignment steps changed with
    spatch: every realigned name where alignment.py put it, <linux/mutex.h>
    where it was added, <linux/semaphore.h> gone where it was dropped.  A
    file only the include step changed is read up to its last #include
    (HEADS: how many lines that is now): the rest is as the read after the
    transform saw it."""
    if not changed:
        return includes, [r for _, r in realigned], []
    moved = {r.file for _, r in realigned}
    whole = sorted(f for f in changed if f in moved or f not in heads)
    head_only = sorted(f for f in changed if f not in whole)
    state = read_state(tree, whole, spatch, jobs, cache).files if whole else {}
    if head_only:
        root = scratch / "confirm-heads"
        for f in head_only:
            (root / f).parent.mkdir(parents=True, exist_ok=True)
            (root / f).write_bytes(split_after_line((tree / f).read_bytes(), heads[f])[0])
        state.update(read_state(root, head_only, spatch, jobs, cache).files)
    problems, final_includes, final_realigned = [], [], []
    for e, r in realigned:
        line = work.moved(e).line
        found = state.get(r.file, FileState()).declarations.get((line, r.name))
        if found != (MUTEX_TYPE, r.column):
            problems.append(f"{r.file}:{line} {r.name} is not at column {r.column} "
                            "after the realignment")
        final_realigned.append(replace(r, line=line))
    for inc in includes:
        st = state.get(inc.file)
        if st is None:
            final_includes.append(inc)
            continue
        line = st.mutex_header_line()
        if inc.status in (ADDED, PRESENT) and line is None:
            problems.append(f"{inc.file}: no #include <linux/mutex.h> after the include step")
        if inc.semaphore_h in (DROPPED, REPLACED) and st.header_line("semaphore"):
            problems.append(f"{inc.file}: #include <linux/semaphore.h> is still there")
        final_includes.append(replace(inc, line=line))
    return final_includes, final_realigned, problems


def not_seen_rewritten(work: RewritePlan, outcomes: dict[Edit, EditOutcome],
                       state: TreeState) -> list[str]:
    """The converted edits in the files STATE read that it does not show
    rewritten at their line (STATE: read right after the transform)."""
    return [f"{work.moved(e).describe()}: not seen rewritten by the read after the transform"
            for e, o in outcomes.items()
            if o.status == CONVERTED and e.file in state.files
            and not is_rewritten(work.moved(e), state.files[e.file])]


def record_demotions(plan: RewritePlan, work: RewritePlan) -> None:
    """Carry the demotions decided while applying WORK back into PLAN, so
    the next call with PLAN does not try those mutex conversions again."""
    newly = {i: why for i, why in work.demoted.items()
             if plan.targets.get(i) == MUTEX and work.targets.get(i) == COUNTING}
    if newly:
        updated = demote(plan, newly)
        plan.edits, plan.targets, plan.demoted = \
            updated.edits, updated.targets, updated.demoted


def apply_rewrite(tree: Path, plan: RewritePlan, spatch: Path, jobs: int,
                  instance_ids: set[str] | None = None,
                  source: Path | None = None,
                  cache: ResultCache | None = None,
                  memo: GrepMemo | None = None) -> RewriteResult:
    """Rewrite TREE in place (a scratch copy the caller owns) as PLAN says.

    Only the instances in INSTANCE_IDS when given.  Every planned position
    is checked after spatch ran; a mutex instance that could not be
    rewritten completely is moved to the counting API instead.  Then the
    retyped members are realigned and the includes of the files it changed
    updated (<linux/mutex.h> added, an unused <linux/semaphore.h> dropped);
    SOURCE is the whole tree TREE's files come from, where the files that
    include a header are looked for (default: TREE).  PLAN is updated with
    what this learnt: the lines that moved (PLAN.line_shifts) and the
    instances it had to keep as semaphores, so call it again with the same
    plan (the next subsystem, a rerun).  On a tree that already carries the
    rewrite nothing changes and result.nothing_to_do is true.
    """
    tree = tree.resolve()
    source = (source or tree).resolve()
    work = plan.for_instances(instance_ids) if instance_ids is not None else plan
    ahead = LexAhead(spatch, tree, cache)
    with tempfile.TemporaryDirectory(prefix="sem2mutex-rewrite-plan-") as tmp:
        scratch = Path(tmp)
        present = {f for f in work.files() if (tree / f).is_file()}
        # where each planned line is before any change, and the files then:
        # what the realignment compares with
        moved_before = {e: work.moved(e).line for e in work.edits}
        pristine = {f: (tree / f).read_bytes() for f in present}
        # Usually every planned position is still to do (a fresh copy of
        # the analysed tree), and the first transform run can read the
        # files too.  If not (a tree already rewritten, a stale plan), its
        # work is undone and redone from what the files held.
        first: TransformRun | None = transform(
            tree, work, [e for e in work.edits if e.file in present], spatch, jobs, scratch,
            report_before=True, cache=cache, ahead=ahead)
        before = first.before or TreeState({}, {})
        # as the files were before it: the plan's lines have moved since
        status = first.initial
        if first.strayed or failed_mutexes([o for o in status.values() if o]):
            first.undo(tree, work)
            first = None
        errors = dict(before.parse_errors)
        while True:
            if first is None:
                status = initial_status(work, before)
            failed = failed_mutexes([o for o in status.values() if o])
            if failed:  # a mutex position is missing: no safe mutex conversion
                work = demote(work, failed)
                continue
            pending = [e for e, o in status.items() if o is None]
            run = first or transform(tree, work, pending, spatch, jobs, scratch, cache=cache,
                                     ahead=ahead)
            first = None
            for f, messages in run.parse_errors.items():
                errors.setdefault(f, messages)
            failed = failed_mutexes(list(run.outcomes.values()))
            if not failed:
                break
            run.undo(tree, work)
            work = demote(work, failed)
        outcomes = {e: o or run.outcomes[e] for e, o in status.items()}
        record_demotions(plan, work)
        mutex_files = {o.edit.file for o in outcomes.values()
                       if o.edit.to == MUTEX and o.status != NOT_CONVERTED
                       and o.edit.op in (DECLARATION, "DEFINE_SEMAPHORE")}
        # The files this call changed, and those that declare its mutexes
        # (a rerun on a converted tree may still lack the include).
        # Only those that declare a mutex or include <linux/semaphore.h> (the
        # transform does not touch includes: the state read before it says)
        # can need the realignment or an include change.
        touched = {f for f in (set(run.originals) | mutex_files) & present
                   if f in mutex_files or includes_semaphore_h(f, before)}
        before_finish = {f: (tree / f).read_bytes() for f in touched}
        state = read_state(tree, sorted(touched), spatch, jobs, cache) if touched \
            else TreeState({}, {})
        # the transform took spatch's records for these edits: this read checks them
        unseen = not_seen_rewritten(work, outcomes, state)
        realigned = realign_declarations(tree, work, outcomes, moved_before, pristine,
                                         before, state)
        ahead.finish()
        includes, heads = update_includes(tree, source, work, touched, mutex_files, state,
                                          spatch, jobs, scratch, cache, memo)
        changed = {f for f in touched if (tree / f).read_bytes() != before_finish[f]}
        includes, realigned_now, unconfirmed = confirm(tree, work, includes, realigned,
                                                       changed, spatch, jobs, scratch, heads,
                                                       cache)
    files_changed = set(run.originals) | changed
    unconfirmed = unseen + unconfirmed
    by_instance: dict[str, list[EditOutcome]] = defaultdict(list)
    for e, o in outcomes.items():  # at their lines once the includes are in
        by_instance[e.instance].append(replace(o, edit=work.moved(e)))
    instances = [InstanceRewrite(iid, target, work.demoted.get(iid, []),
                                 sorted(by_instance.get(iid, []),
                                        key=lambda o: (o.edit.file, o.edit.line)))
                 for iid, target in sorted(work.targets.items())]
    return RewriteResult(files_changed=sorted(files_changed), instances=instances,
                         includes=includes, parse_errors=errors,
                         unplanned_changes=run.unplanned, realigned=realigned_now,
                         unconfirmed=unconfirmed)

