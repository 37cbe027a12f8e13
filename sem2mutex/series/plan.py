"""The rewrite plan: for every instance, mutex or counting API, and every
position to change.

    audit instances -> plan_rewrite() -> RewritePlan

Pure: no file is read or written.  Positions are lines because the
audit's sites carry lines only.  Two instances with the same operation on
one line cannot be told apart that way; plan_rewrite() finds such clashes
and keeps the mutex instance involved a semaphore (the counting API keeps
the semantics whatever the instance), which is always safe.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

from sem2mutex.model import WRAPPER_OPS, Instance, Location, SemClass
from sem2mutex.tools.linediff import Block
from sem2mutex.tools.api import COUNTING_NAMES, MUTEX_CALLS, MUTEX_INITIALISERS

MUTEX = "mutex"
COUNTING = "counting"

# The op of an edit that changes a declaration's type.
DECLARATION = "declaration"

# What each old spelling becomes: tools/api.py.
COUNTING_CALLS = COUNTING_NAMES
SEMAPHORE_TYPE = "struct semaphore"
MUTEX_TYPE = "struct mutex"


@dataclass(frozen=True)
class Edit:
    """One position to rewrite: a declaration, an initialiser or a call."""

    instance: str
    file: str  # relative to the tree
    line: int
    op: str  # "declaration", DEFINE_SEMAPHORE, sema_init, ..., down, ..., up
    to: str  # MUTEX or COUNTING
    name: str | None = None  # the name it declares or its argument names
    macro: str | None = None  # the macro whose body holds the call

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.file, self.line, self.op)

    @property
    def location(self) -> Location:
        return Location(self.file, self.line)

    @property
    def old(self) -> str:
        """The spelling rewrite_state.cocci reports before the rewrite."""
        return SEMAPHORE_TYPE if self.op == DECLARATION else self.op

    @property
    def new(self) -> str:
        """The spelling rewrite_state.cocci reports after the rewrite."""
        if self.op == DECLARATION:
            return MUTEX_TYPE
        if self.to == MUTEX:
            return {**MUTEX_CALLS, **MUTEX_INITIALISERS}[self.op]
        return COUNTING_CALLS[self.op]

    def describe(self) -> str:
        if self.op == DECLARATION:
            return f"{self.file}:{self.line} {self.old} {self.name} -> {self.new}"
        about = f" on {self.name}" if self.name else ""
        return f"{self.file}:{self.line} {self.old}(){about} -> {self.new}()"


@dataclass
class RewritePlan:
    edits: list[Edit]  # positions as the audit found them
    targets: dict[str, str]  # instance id -> MUTEX or COUNTING
    # mutex-class instances kept as semaphores, and why
    demoted: dict[str, list[str]] = field(default_factory=dict)
    # file -> (audit line A, delta): apply_rewrite moved every line below A
    # by delta lines (an added include, a call broken over two lines)
    line_shifts: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def for_instances(self, ids: set[str]) -> RewritePlan:
        """The part of the plan for IDS; it shares line_shifts with this one."""
        return RewritePlan(
            edits=[e for e in self.edits if e.instance in ids],
            targets={i: t for i, t in self.targets.items() if i in ids},
            demoted={i: r for i, r in self.demoted.items() if i in ids},
            line_shifts=self.line_shifts)

    def current_line(self, file: str, line: int) -> int:
        """Where an audit line of FILE is now."""
        return line + sum(delta for after, delta in self.line_shifts.get(file, [])
                          if after < line)

    def audit_line(self, file: str, current: int) -> int:
        """The audit line now at CURRENT (the one above, for an added line)."""
        line = current
        while line > 0 and self.current_line(file, line) > current:
            line -= 1
        return line

    def moved(self, edit: Edit) -> Edit:
        """EDIT at its line in the tree as it is now."""
        return replace(edit, line=self.current_line(edit.file, edit.line))

    def record_changes(self, file: str, blocks: list[Block]) -> None:
        """Record the lines that moved when FILE changed by BLOCKS."""
        found = []
        for b in blocks:
            grown = (b.new_end - b.new_start) - (b.old_end - b.old_start)
            if grown:  # lines below the changed block (old_start, old_end] moved
                found.append((self.audit_line(file, b.old_end), grown))
        self.line_shifts.setdefault(file, []).extend(found)

    def files(self) -> list[str]:
        return sorted({e.file for e in self.edits})


def split_lines(data: bytes) -> list[str]:
    return data.decode(errors="replace").split("\n")


def mutex_obstacles(inst: Instance) -> list[str]:
    """Why a mutex-class instance cannot be rewritten to struct mutex."""
    problems = []
    if inst.kind in ("pointer", "unresolved"):
        problems.append(f"a {inst.kind} instance has no declaration to turn into "
                        "struct mutex")
    if not inst.decls:
        problems.append("no declaration found to turn into struct mutex")
    problems += [f"{n.detail} ({n.code})" for n in inst.notes if n.code == "symbol-alias"]
    if not inst.inits:
        problems.append("no initialiser found: a struct mutex needs mutex_init() "
                        "or DEFINE_MUTEX()")
    for init in inst.inits:
        if init.op not in MUTEX_INITIALISERS:
            problems.append(f"{init.op}() at {init.location} has no mutex rewrite")
        elif init.count != 1:
            problems.append(f"{init.op}() at {init.location} sets the count to "
                            f"{init.count_text}, not 1")
    helpers = sorted({s.via_helper for s in inst.sites if s.via_helper})
    if helpers:
        problems.append(f"taken or released through {', '.join(helpers)}: a struct "
                        "semaphore * that stays one for every semaphore it serves")
    for site in inst.sites:
        if site.op in WRAPPER_OPS or site.via_helper:
            continue
        if site.macro and not site.via_wrapper:
            problems.append(f"{site.op}() at {site.location} is inside macro "
                            f"{site.macro}: a macro site never makes a mutex, unless the "
                            "audit checked every call of it as a lock or unlock wrapper")
        elif site.op not in MUTEX_CALLS:
            problems.append(f"{site.op}() at {site.location} has no mutex equivalent")
    return problems


def identity(inst: Instance) -> str | None:
    """The name every position of INST mentions, None when it has none.

    A declaration declares it; a call's first argument names it (&dev->lock
    names lock).  apply_rewrite only rewrites a planned line that does, so
    a plan applied to a tree whose lines moved cannot hit a neighbour.
    Pointer and unresolved instances are expressions, not names.
    """
    if inst.kind in ("pointer", "unresolved"):
        return None
    return inst.name.split(".")[-1]


def edits_for(inst: Instance, target: str) -> list[Edit]:
    """Every position of INST to rewrite when it becomes TARGET."""
    name = identity(inst)
    edits: list[Edit] = []
    if target == MUTEX:
        defines = {i.location for i in inst.inits if i.op == "DEFINE_SEMAPHORE"}
        # DEFINE_SEMAPHORE(x) declares and initialises in one: one edit.
        edits += [Edit(inst.id, d.file, d.line, DECLARATION, MUTEX, name)
                  for d in inst.decls if d not in defines]
        edits += [Edit(inst.id, i.location.file, i.location.line, i.op, MUTEX,
                       i.through or name) for i in inst.inits]
        calls = MUTEX_CALLS
    else:
        calls = COUNTING_CALLS
    # Wrapper calls (op lock-wrapper/unlock-wrapper) are not API calls: the
    # down()/up() inside the wrapper is a site of its own.
    # A helper's operations are attributed at its call; its own down()/up()
    # belong to the helper's pointer instance.
    # a call through an accessor macro names the macro (down(PIPE_SEM(inode)))
    edits += [Edit(inst.id, s.location.file, s.location.line, s.op, target,
                   s.through or s.spelled or name, s.macro)
              for s in inst.sites if s.op in calls and not s.via_helper]
    return list(dict.fromkeys(edits))  # two calls on one line: one edit


def clashes(edits: list[Edit], kept_declarations: dict[Location, set[str]]
            ) -> dict[str, list[str]]:
    """Mutex instances whose positions cannot be told apart from another's.

    The same (file, line, op) with a different target, or a declaration line
    that also declares an instance staying a semaphore (struct semaphore
    a, b;), cannot be rewritten for one instance only.
    """
    by_key: dict[tuple[str, int, str], list[Edit]] = defaultdict(list)
    for e in edits:
        by_key[e.key].append(e)
    found: dict[str, list[str]] = defaultdict(list)
    for (file, line, op), group in by_key.items():
        if len({e.to for e in group}) > 1:
            everyone = {e.instance for e in group}
            for e in group:
                if e.to == MUTEX:
                    found[e.instance].append(
                        f"{op} at {file}:{line} is shared with "
                        f"{', '.join(sorted(everyone - {e.instance}))}, which stays a "
                        "semaphore: rewrite positions are lines")
    for e in edits:
        if e.to == MUTEX and e.op == DECLARATION:
            stay = kept_declarations.get(e.location, set()) - {e.instance}
            if stay:
                found[e.instance].append(
                    f"declared at {e.location} together with {', '.join(sorted(stay))}, "
                    "which stays a semaphore")
    return found


def plan_rewrite(instances: list[Instance]) -> RewritePlan:
    """What to change where, for every instance of an audit.  Pure."""
    targets: dict[str, str] = {}
    demoted: dict[str, list[str]] = {}
    for inst in instances:
        problems = mutex_obstacles(inst) if inst.sem_class == SemClass.MUTEX else []
        targets[inst.id] = MUTEX if inst.sem_class == SemClass.MUTEX and not problems \
            else COUNTING
        if problems:
            demoted[inst.id] = problems
    while True:
        edits = [e for inst in instances for e in edits_for(inst, targets[inst.id])]
        kept: dict[Location, set[str]] = defaultdict(set)
        for inst in instances:
            if targets[inst.id] == COUNTING:
                for d in inst.decls:
                    kept[d].add(inst.id)
        found = clashes(edits, kept)
        if not found:
            break
        # Demoting only turns mutex edits into counting ones, so this ends.
        for iid, why in found.items():
            targets[iid] = COUNTING
            demoted.setdefault(iid, []).extend(why)
    edits.sort(key=lambda e: (e.file, e.line, e.op, e.instance))
    return RewritePlan(edits=edits, targets=targets, demoted=demoted)


def demote(plan: RewritePlan, why: dict[str, list[str]]) -> RewritePlan:
    """The same plan with the instances of WHY moved from mutex to counting."""
    edits = []
    for e in plan.edits:
        if e.instance not in why:
            edits.append(e)
        elif e.op in COUNTING_CALLS:
            edits.append(replace(e, to=COUNTING))
    demoted = {k: list(v) for k, v in plan.demoted.items()}
    for iid, reasons in why.items():
        demoted.setdefault(iid, []).extend(reasons)
    targets = {i: (COUNTING if i in why else t) for i, t in plan.targets.items()}
    return RewritePlan(edits=edits, targets=targets, demoted=demoted,
                       line_shifts=plan.line_shifts)
