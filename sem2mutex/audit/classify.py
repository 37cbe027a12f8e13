"""Classify stage: decide each instance's class from its merged facts.

A wrong `mutex` verdict ships a bug to users; a needless `ambiguous` only
costs a reviewer's time.  So `mutex` needs positive proof on every count:
every initialisation is a literal 1, and every up() is the same task's
release of its own down() (paired in one function, directly or through
lock/unlock wrappers), in process context, with nothing the analysis
could not see (escaping address, macro, unparsed code, unresolved use).
Reason codes are documented in audit/README.md.
"""
from __future__ import annotations

from dataclasses import dataclass

from sem2mutex.audit.contexts import ATOMIC_CONTEXTS, ContextMap, base_context
from sem2mutex.model import Instance, Location, Reason, SemClass, Site
from sem2mutex.audit.resolve import LOCK_OPS

LOCKING = LOCK_OPS + ("lock-wrapper",)
RELEASING = ("up", "unlock-wrapper")
CONTEXT_REASON = {"hardirq": "irq-context", "timer": "timer-context",
                  "tasklet": "tasklet-context", "softirq": "softirq-context"}
OTHER_TASK_REASON = {"work": "work-item-release", "kthread": "kthread-release",
                     "irq_thread": "irq-thread-release"}
# Notes gathered while resolving that are evidence, not obstacles.
# An export changes nothing in-tree (an out-of-tree module's down() on a
# converted semaphore fails to build; the series lists the exports it
# changes).
INFORMATIONAL_NOTES = ("resolved-by-field-name", "unresolved-why", "helper-attributed",
                      "wrappers-not-followed", "exported", "seq-file-pair", "macro-parameter")
# A pointer instance that stands for the semaphores others name, each
# judged on its own: it keeps the counting API.
SETTLED_POINTERS = ("helper-attributed", "macro-parameter")
# Reasons that say the analysis could not see all uses, not that the code
# is doubtful: a reviewer starts with the other kind.
UNSEEN_REASONS = frozenset(("unresolved-target", "via-pointer", "parse-failure",
                            "possible-unresolved-use", "no-init", "no-lock-sites",
                            "typedef-declared"))
PSEUDO_KINDS = ("pointer", "unresolved")
# Declared (and perhaps initialised) but never taken, released, passed on or
# named in code spatch could not parse: a mutex changes nothing there.
UNUSED = Reason("unused", "never taken, released, passed on or named in unparsed code: "
                "as a mutex it behaves the same")


def ambiguity(inst: Instance) -> str | None:
    """For an ambiguous instance: "doubtful" when some reason is about the
    code itself (unsafe or unproven), "unseen" when every reason is the
    analysis not seeing all uses."""
    if inst.sem_class is not SemClass.AMBIGUOUS:
        return None
    codes = {r.code for r in inst.reasons}
    return "unseen" if codes <= UNSEEN_REASONS else "doubtful"


def merge_by_code(reasons: list[Reason]) -> list[Reason]:
    """One reason per code, details joined, locations merged."""
    merged: dict[str, Reason] = {}
    for r in reasons:
        if r.code not in merged:
            merged[r.code] = r
            continue
        m = merged[r.code]
        detail = m.detail if r.detail in m.detail else f"{m.detail}; {r.detail}"
        where = tuple(sorted(set(m.locations) | set(r.locations),
                             key=lambda l: (l.file, l.line)))
        merged[r.code] = Reason(r.code, detail, where)
    return list(merged.values())


def locs(items) -> tuple[Location, ...]:
    return tuple(sorted({i.location for i in items}, key=lambda l: (l.file, l.line)))


def seq_file_locations(inst: Instance) -> set[Location]:
    """The down() and up() of INST that a seq_file's .start and .stop pair
    (seqfile.py)."""
    return {loc for n in inst.notes if n.code == "seq-file-pair" for loc in n.locations}


def site_text(s: Site) -> str:
    text = f"{s.op}() in {s.function}() at {s.location}"
    if s.released_after:
        text += f" (a path reaches it right after the up() of line {s.released_after})"
    if s.failed_acquire:
        op, line = s.failed_acquire
        text += f" (a path reaches it where the {op}() of line {line} failed to take it)"
    if s.address_taken:
        text += " (named, not called: what calls it through that pointer is not seen)"
    if s.lock_skipped_by:
        text += (f" (after {s.lock_skipped_by}, which returns without taking it on some "
                 "path)")
    return text


def running_where_named(sites: list[Site]) -> list[Site]:
    """SITES but for unlock wrappers named, not called (d->done =
    foo_unlock;): the release does not run in the function that names it."""
    return [s for s in sites if not s.address_taken]


@dataclass
class Classifier:
    contexts: ContextMap

    def classify(self, inst: Instance) -> None:
        sem_class, reasons = self.decide(inst)
        inst.sem_class = sem_class
        inst.reasons = reasons

    def decide(self, inst: Instance) -> tuple[SemClass, list[Reason]]:
        blocking = merge_by_code([n for n in inst.notes if n.code not in INFORMATIONAL_NOTES])
        if inst.kind in PSEUDO_KINDS:
            return self.decide_pseudo(inst, blocking)
        hard = [n for n in blocking if n.code == "parse-failure"]
        unused = not inst.sites and not inst.escapes and not blocking
        if unused and not inst.inits:
            return SemClass.MUTEX, [UNUSED]
        count_class, count_reasons = self.by_count(inst)
        if unused and count_class is SemClass.MUTEX:
            return SemClass.MUTEX, count_reasons + [UNUSED]
        if count_class is SemClass.AMBIGUOUS:
            return count_class, count_reasons + blocking
        if count_class is not SemClass.MUTEX:
            return (SemClass.AMBIGUOUS if hard else count_class), count_reasons + hard
        obstacles = merge_by_code(blocking + self.mutex_obstacles(inst))
        if obstacles:
            return SemClass.AMBIGUOUS, obstacles
        return SemClass.MUTEX, count_reasons + self.mutex_evidence(inst)

    def decide_pseudo(self, inst: Instance, blocking: list[Reason]
                      ) -> tuple[SemClass, list[Reason]]:
        """A pointer or unresolved instance never becomes a mutex, but what
        its code shows still counts: a count that is not 1 says what every
        semaphore it initialises is, and an up() in a timer is doubtful
        code whichever semaphore it releases."""
        where = locs(inst.sites + inst.inits)
        settled = [n for n in inst.notes if n.code in SETTLED_POINTERS]
        if settled:
            return SemClass.COUNTING, merge_by_code(settled)
        if inst.kind == "pointer":
            pointer = f"the struct semaphore * member `{inst.struct}.{inst.name}`" \
                if inst.struct else f"the pointer `{inst.name}`"
            unseen = Reason("via-pointer", f"operations through {pointer}: the semaphore it "
                            "points to is chosen at run time", where)
        else:
            why = "; ".join(sorted({n.detail for n in inst.notes if n.code == "unresolved-why"}))
            unseen = Reason("unresolved-target", f"which semaphore `{inst.name}` is could not "
                            f"be told{': ' + why if why else ''}", where)
        if inst.inits:
            count_class, count_reasons = self.by_count(inst)
            if count_class in (SemClass.COUNTING, SemClass.SIGNAL):
                return count_class, count_reasons + [unseen]
        obstacles = [r for r in self.mutex_obstacles(inst)
                     if r.code not in ("no-lock-sites", "never-released")]
        return SemClass.AMBIGUOUS, [unseen] + obstacles + blocking

    # ------------------------------------------------------------ counts

    def by_count(self, inst: Instance) -> tuple[SemClass, list[Reason]]:
        """MUTEX here means only "every init is a literal 1"."""
        inits = inst.inits
        if not inits:
            return SemClass.AMBIGUOUS, [Reason(
                "no-init", "no initialisation found (sema_init, DEFINE_SEMAPHORE, "
                "__SEMAPHORE_INITIALIZER); it may be set up by memset or copying, "
                "which a mutex does not allow")]
        variable = [i for i in inits if i.count is None]
        if variable:
            texts = ", ".join(sorted({i.count_text for i in variable}))
            return SemClass.COUNTING, [Reason(
                "count-not-literal", f"initial count is not a literal: {texts}", locs(variable))]
        many = [i for i in inits if i.count > 1]
        if many:
            counts = ", ".join(str(c) for c in sorted({i.count for i in many}))
            return SemClass.COUNTING, [Reason("count-many", f"initial count {counts}", locs(many))]
        counts = {i.count for i in inits}
        if counts == {0}:
            waits = [s for s in inst.sites if s.op in LOCKING]
            posts = [s for s in inst.sites if s.op in RELEASING]
            detail = (f"starts locked (count 0): {len(waits)} wait(s), {len(posts)} post(s); "
                      "a completion candidate")
            return SemClass.SIGNAL, [Reason("count-zero", detail, locs(inits))]
        if counts != {1}:
            return SemClass.AMBIGUOUS, [Reason(
                "mixed-counts", "initialised with different counts: "
                + ", ".join(f"{i.count} at {i.location}" for i in inits), locs(inits))]
        return SemClass.MUTEX, [Reason("count-one", "every initialisation has count 1",
                                       locs(inits))]

    # ----------------------------------------------------- mutex proof

    def mutex_obstacles(self, inst: Instance) -> list[Reason]:
        obstacles = []
        locks = [s for s in inst.sites if s.op in LOCKING]
        releases = [s for s in inst.sites if s.op in RELEASING]
        if not locks:
            obstacles.append(Reason("no-lock-sites", "never taken: nothing shows how it is used"))
        elif not releases:
            obstacles.append(Reason("never-released", "taken but never released", locs(locks)))
        timeouts = [s for s in inst.sites if s.op == "down_timeout"]
        if timeouts:
            obstacles.append(Reason("down-timeout", "down_timeout() has no mutex equivalent",
                                    locs(timeouts)))
        # a lock or unlock macro whose calls the wrapper analysis checked is not
        macros = [s for s in inst.sites if s.macro and not s.via_wrapper]
        if macros:
            names = ", ".join(sorted({s.macro for s in macros}))
            obstacles.append(Reason("macro-use", f"used inside macro(s) {names}; every "
                                    "expansion would need checking", locs(macros)))
        obstacles += self.pairing_obstacles(inst, releases)
        obstacles += self.trylock_obstacles(inst)
        obstacles += self.context_obstacles(inst)
        if inst.escapes:
            where = "; ".join(sorted({f"{'passed to ' + e.callee + '()' if e.callee else 'stored'}"
                                      f" at {e.pos.location}" for e in inst.escapes}))
            obstacles.append(Reason("address-escapes", f"its address leaves the semaphore API: "
                                    f"{where}", tuple(sorted({e.pos.location for e in inst.escapes},
                                                             key=lambda l: (l.file, l.line)))))
        return obstacles

    def pairing_obstacles(self, inst: Instance, releases: list[Site]) -> list[Reason]:
        unpaired = [s for s in releases if not s.paired]
        if not unpaired:
            return []
        reasons = [Reason("unpaired-up", "released where the same function did not take it, "
                          "or released again with no down() since the last up(): "
                          + "; ".join(site_text(s) for s in unpaired), locs(unpaired))]
        slots = self.callback_slots(inst)
        if len(slots) > 1:
            reasons.append(Reason("cross-callback", "taken and released in different callbacks "
                                  f"({', '.join(sorted(slots))}): the lock is held between "
                                  "calls, maybe by another task", locs(unpaired)))
        for s in running_where_named(unpaired):
            for ev in self.contexts.of(s.location.file, s.function):
                code = OTHER_TASK_REASON.get(base_context(ev.context))
                if code:
                    reasons.append(Reason(code, f"{site_text(s)} runs in another task: "
                                          f"{ev.describe()}", (s.location, ev.location)))
        return reasons

    def trylock_obstacles(self, inst: Instance) -> list[Reason]:
        """down_trylock() never sleeps: code that only trylocks may run in
        atomic context, where mutex_trylock() is not allowed.  A function
        that also takes the semaphore with a sleeping down() is process
        context; otherwise all its callers must be visible."""
        sleeping = {(s.location.file, s.function) for s in inst.sites
                    if s.op in ("down", "down_interruptible", "down_killable", "lock-wrapper")}
        risky = []
        for s in inst.sites:
            key = (s.location.file, s.function)
            if s.op != "down_trylock" or key in sleeping:
                continue
            entry = self.contexts.entry_point_reaching(*key)
            if entry:
                risky.append((s, entry))
        if not risky:
            return []
        detail = "; ".join(f"{site_text(s)} is reachable from {entry}(), which code this "
                           "analysis cannot see may call in any context" for s, entry in risky)
        return [Reason("trylock-context-unknown", detail, locs([s for s, _ in risky]))]

    def callback_slots(self, inst: Instance) -> set[str]:
        """The ops slots INST's sites run in, but for the .start and .stop
        that hold it from one to the other (seqfile.py)."""
        paired = seq_file_locations(inst)
        slots = set()
        for s in running_where_named(inst.sites):
            if s.location in paired:
                continue
            for ev in self.contexts.of(s.location.file, s.function):
                if ev.context.startswith("ops"):
                    slots.add(ev.context.split(" ", 1)[1].strip("()"))
        return slots

    def context_obstacles(self, inst: Instance) -> list[Reason]:
        found: dict[str, list[tuple[Site, str, Location]]] = {}
        for s in running_where_named(inst.sites):
            for ev in self.contexts.of(s.location.file, s.function):
                ctx = base_context(ev.context)
                if ctx in ATOMIC_CONTEXTS:
                    found.setdefault(CONTEXT_REASON[ctx], []).append(
                        (s, ev.describe(), ev.location))
        return [Reason(code, "; ".join(f"{site_text(s)}: {why}" for s, why, _ in items),
                       tuple(sorted({l for s, _, reg in items for l in (s.location, reg)},
                                    key=lambda l: (l.file, l.line))))
                for code, items in sorted(found.items())]

    def mutex_evidence(self, inst: Instance) -> list[Reason]:
        seq_paired = seq_file_locations(inst)
        releases = [s for s in inst.sites if s.op in RELEASING and s.location not in seq_paired]
        through = [s for s in inst.sites if s.via_wrapper]
        evidence = [Reason("paired-release", "every up() follows a down() of the same "
                           "semaphore in the same function, on every path",
                           locs(releases))] if releases else []
        if through:
            evidence.append(Reason("paired-through-wrappers", "released through unlock "
                                   "wrappers whose every caller took the lock through its "
                                   "lock wrapper on the same arguments", locs(through)))
        evidence += merge_by_code([Reason("paired-through-seq-file", n.detail, n.locations)
                                   for n in inst.notes if n.code == "seq-file-pair"])
        evidence.append(Reason("process-context", "no site runs in IRQ, timer, tasklet or "
                               "softirq context", ()))
        return evidence


def classify_all(instances: list[Instance], contexts: ContextMap) -> None:
    classifier = Classifier(contexts)
    for inst in instances:
        classifier.classify(inst)


