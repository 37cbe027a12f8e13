"""Semaphores reached through a pointer: helpers and local aliases.

A function taking a struct semaphore * (a helper) does its down()/up() on
whatever its callers pass, and a local struct semaphore * does them on
whatever it was assigned.  Left alone, those calls make `pointer`
instances: the analysis could not see which semaphore.  helpers.cocci
reports, per file, each such parameter and where it goes (another
helper, an escape), and the values each local pointer is given; here the
operations are attributed to the semaphores the callers pass:

- each call h(&X) of a helper gives X the helper's operations, at the
  call, in the caller (so the caller's context and pairing judge them),
  marked via_helper; a helper handing its parameter to another helper
  has that helper's operations too;
- the pointer instance of a helper whose every call is so attributed
  (a static helper: its calls are all in its file) is kept only for the
  rewrite, which keeps the helper on the counting API: it is no longer
  ambiguous;
- a helper whose pointer is stored, returned or handed to a function the
  tree does not define is not followed: its pointer instance stays.

Attributed operations are never rewritten where they are attributed (the
call line has no down() on it); the plan keeps such semaphores on the
counting API, since the helper keeps its struct semaphore * parameter.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sem2mutex.model import Escape, Instance, Location, Reason, Site

API_OPS = frozenset(("sema_init", "init_MUTEX", "init_MUTEX_LOCKED", "down",
                     "down_interruptible", "down_killable", "down_trylock", "down_timeout",
                     "up"))
MAX_DEPTH = 4


@dataclass(frozen=True)
class Operation:
    op: str
    paired: bool
    location: Location  # where the helper itself does it


@dataclass
class Helper:
    file: str
    function: str
    param: str
    index: int
    static: bool
    passes: list[tuple[str, int, int]] = field(default_factory=list)  # callee, index, line
    other_uses: list[int] = field(default_factory=list)

    @property
    def pointer_id(self) -> str:
        return f"pointer:{self.file}:{self.function}:{self.param}"


@dataclass
class Attribution:
    """What the helpers let the analysis see."""

    helpers: dict[tuple[str, str], Helper]
    by_name: dict[str, list[Helper]]
    operations: dict[tuple[str, str], list[Operation] | str]  # or why not followed
    covered: set[tuple[str, int, str]] = field(default_factory=set)  # attributed calls
    callers: dict[tuple[str, str], list[str]] = field(
        default_factory=lambda: defaultdict(list))  # helper -> instances passed to it

    def helper_for(self, name: str, from_file: str) -> Helper | None:
        """The helper a call of NAME in FROM_FILE reaches: the file's own,
        else the one non-static definition of the tree."""
        candidates = self.by_name.get(name, [])
        own = [h for h in candidates if h.file == from_file]
        if own:
            return own[0]
        public = [h for h in candidates if not h.static]
        return public[0] if len(public) == 1 else None

    def callers_of(self, helper: Helper, depth: int = 0) -> list[str]:
        """The instances whose operations HELPER does: those passed to it,
        and those passed to the helpers that hand it their pointer."""
        found = list(self.callers.get((helper.file, helper.function), []))
        if depth < MAX_DEPTH:
            for outer in self.helpers.values():
                if any(callee == helper.function for callee, _, _ in outer.passes) \
                        and self.helper_for(helper.function, outer.file) is helper:
                    found += self.callers_of(outer, depth + 1)
        return sorted(set(found))

    def followed(self, helper: Helper) -> list[Operation] | None:
        found = self.operations.get((helper.file, helper.function))
        return found if isinstance(found, list) else None


def collect_helpers(records: list[dict], static: set[tuple[str, str]]) -> dict[tuple[str, str], Helper]:
    params: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in records:
        if r["kind"] == "sem_param":
            params[(r["file"], r["helper"])].append(r)
    helpers = {}
    for (file, fn), recs in params.items():
        names = {(r["name"], r["index"]) for r in recs}
        if len(names) != 1:
            continue  # two semaphore parameters: which call argument is which is not followed
        ((name, index),) = names
        helpers[(file, fn)] = Helper(file, fn, name, index, (file, fn) in static)
    for r in records:
        h = helpers.get((r["file"], r.get("helper", "")))
        if h is None or r.get("name") != h.param:
            continue
        if r["kind"] == "param_passed" and r["callee"] not in API_OPS:
            h.passes.append((r["callee"], r["index"], r["line"]))
        elif r["kind"] == "param_other":
            h.other_uses.append(r["line"])
    return helpers


def follow(helpers: dict[tuple[str, str], Helper], pointers: dict[str, Instance]
           ) -> Attribution:
    by_name: dict[str, list[Helper]] = defaultdict(list)
    for h in helpers.values():
        by_name[h.function].append(h)
    attribution = Attribution(helpers, dict(by_name), {})

    def operations(h: Helper, depth: int) -> list[Operation] | str:
        key = (h.file, h.function)
        if key in attribution.operations:
            return attribution.operations[key]
        if depth > MAX_DEPTH:
            return f"{h.function}() hands its pointer down too many calls"
        attribution.operations[key] = "a helper that calls itself"  # cycle guard
        result: list[Operation] | str
        if h.other_uses:
            result = (f"{h.function}() also uses its pointer `{h.param}` otherwise "
                      f"(line {', '.join(map(str, sorted(set(h.other_uses))))})")
        else:
            own = pointers.get(h.pointer_id)
            result = [Operation(s.op, s.paired, s.location)
                      for s in (own.sites + [] if own else []) if s.macro is None]
            for callee, index, line in h.passes:
                inner = attribution.helper_for(callee, h.file)
                if inner is None or inner.index != index:
                    result = (f"{h.function}() hands its pointer to {callee}() at "
                              f"{h.file}:{line}, which is not followed")
                    break
                nested = operations(inner, depth + 1)
                if isinstance(nested, str):
                    result = nested
                    break
                result += nested
        attribution.operations[key] = result
        return result

    for h in helpers.values():
        operations(h, 0)
    return attribution


@dataclass(frozen=True)
class Handoffs:
    """pairing.cocci's view of the calls that hand &E to a function in a
    function that takes E: held on every path, or not."""

    held: set[tuple[str, int, str]]  # (file, line, callee) with E held on every path
    released_after: dict[tuple[str, int], tuple[int, str]]  # up() line -> (call line, callee)

    @classmethod
    def from_records(cls, records: list[dict]) -> "Handoffs":
        unheld = {(r["file"], r["line"]) for r in records if r["kind"] == "unheld_handoff"}
        held = {(r["file"], r["line"], r["callee"]) for r in records
                if r["kind"] == "handoff" and (r["file"], r["line"]) not in unheld}
        after = {(r["file"], r["line"]): (r["handoff"], r["callee"]) for r in records
                 if r["kind"] == "up_after_handoff"}
        return cls(held, after)


def attributed_sites(helper: Helper, ops: list[Operation], call: Escape,
                     handoffs: Handoffs) -> list[Site]:
    """The helper's operations as the caller's, at the call.  An up() the
    helper does on a pointer it did not take itself releases the caller's
    hold: paired when the caller holds the semaphore on every path there."""
    held = (call.pos.file, call.pos.line, helper.function) in handoffs.held
    return [Site(call.pos.location, call.pos.function, o.op,
                 paired=o.paired or (o.op == "up" and held), via_helper=helper.function)
            for o in ops]


def releases(ops: list[Operation]) -> bool:
    return any(o.op == "up" for o in ops)


def helper_note(helper: Helper, callers: list[str]) -> Reason:
    return Reason("helper-attributed",
                  f"{helper.function}() works on the semaphore its callers pass; its "
                  f"operations are judged with theirs ({', '.join(sorted(set(callers)))}) "
                  "and it keeps the counting API", ())


@dataclass(frozen=True)
class LocalAlias:
    file: str
    function: str
    name: str
    values: tuple[tuple[int, str], ...]  # (line, value as spatch printed it)

    @property
    def pointer_id(self) -> str:
        return f"pointer:{self.file}:{self.function}:{self.name}"


def local_aliases(records: list[dict]) -> dict[str, LocalAlias]:
    values: dict[tuple[str, str, str], set[tuple[int, str]]] = defaultdict(set)
    for r in records:
        if r["kind"] == "local_assigned":
            values[(r["file"], r["function"], r["name"])].add((r["line"], r["value"]))
    aliases = {}
    for (file, fn, name), vals in values.items():
        alias = LocalAlias(file, fn, name, tuple(sorted(vals)))
        aliases[alias.pointer_id] = alias
    return aliases
