"""Lock/unlock wrapper functions (pass 3).

Drivers often hide a semaphore behind `foo_lock(dev)` / `foo_unlock(dev)`.
The up() inside foo_unlock() is unpaired in its own function; it is still
the caller's release of its own lock when every call of foo_unlock() is
preceded, on every path of its caller, by foo_lock() on the same
arguments.  wrapper_pairing.cocci checks exactly that, one semaphore at a
time, over the files that mention the wrappers.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

from sem2mutex.audit.contexts import ContextMap
from sem2mutex.audit.facts import FACTS_DIR, by_kind, failed_acquires
from sem2mutex.model import FactSet, Instance, Location, Reason, Site
from sem2mutex.progress import Progress
from sem2mutex.audit.intake import kernel_files_mentioning
from sem2mutex.tools.grep import GrepMemo
from sem2mutex.tools.smpl import kept_to, renamed, tagged
from sem2mutex.tools.spatch import SpatchRunner, combine_programs, combine_rules

# contexts.cocci too: a wrapper's caller may sit in a file pass 2 never saw,
# and whether that caller runs in IRQ context matters as much.
WRAPPER_RULES = [FACTS_DIR / "wrapper_pairing.cocci"]
CONTEXT_RULES = [FACTS_DIR / "contexts.cocci"]
WRAPPABLE_LOCKS = ("down", "down_interruptible", "down_killable")
# A lock wrapper doing one of these can fail: it is one only if it returns
# non-zero then, and its callers must test what it returns.
FALLIBLE_LOCKS = ("down_interruptible", "down_killable")
PSEUDO_KINDS = ("pointer", "unresolved")
OUTSIDE_FUNCTIONS = "something_else"  # spatch's current_element there
# A wrapper called in more files than this (lock_kernel() of the 2.6 big
# kernel semaphore, the inode i_sem helpers) would make the analysis parse
# a good part of the tree again; its releases stay unpaired instead.
MAX_WRAPPER_FILES = 40


@dataclass(frozen=True)
class Wrappers:
    instance_id: str
    locks: tuple[str, ...]
    unlocks: tuple[str, ...]
    files: tuple[str, ...]  # files where the wrappers are defined
    macros: tuple[str, ...] = ()  # those of them that are macros
    fallible: tuple[str, ...] = ()  # the lock wrappers that may fail to take it


def find_wrappers(inst: Instance, defined: set[tuple[str, str]],
                  contexts: ContextMap) -> Wrappers | None:
    """INST's lock and unlock wrappers: functions of DEFINED ((file, name)
    of every function the facts saw defined) that only take, or only
    release, the semaphore; and macros whose body only takes, or only
    releases, it (jfs's LOG_LOCK(log), down(&((log)->loglock))).

    A down_interruptible() or down_killable() of a lock wrapper must let
    its callers know it failed: a function must return non-zero then (it
    is fallible: its callers must test it), a macro either has the call
    as its value (fallible too) or returns from the function it is
    expanded in (past it the lock is held).  Any other is no lock
    wrapper: its callers could not tell whether they hold the lock."""
    ops_by_function: dict[tuple[str, str], list[Site]] = defaultdict(list)
    for site in inst.sites:
        if site.via_wrapper is None and site.via_helper is None:
            ops_by_function[(site.location.file, site.macro or site.function)].append(site)
    locks, unlocks, files, macros, fallible = [], [], set(), set(), set()
    for (file, fn), sites in ops_by_function.items():
        macro = any(s.macro for s in sites)
        if macro:
            macros.add(fn)
        if not macro and (file, fn) not in defined:
            continue
        if any(ev.path == (fn,) for ev in contexts.of(file, fn)):
            continue  # a registered callback: its callers are not visible
        ops = {s.op for s in sites}
        if ops <= set(WRAPPABLE_LOCKS):
            exits = {s.failure_returned for s in sites if s.op in FALLIBLE_LOCKS}
            if None in exits:
                continue
            locks.append(fn)
            files.add(file)
            if "value" in exits or (exits and not macro):
                fallible.add(fn)
        # a macro body is no function: pairing.cocci never judged its up()
        elif ops == {"up"} and (macro or not any(s.paired for s in sites)):
            unlocks.append(fn)
            files.add(file)
    if not locks or not unlocks:
        return None
    return Wrappers(inst.id, tuple(sorted(set(locks))), tuple(sorted(set(unlocks))),
                    tuple(sorted(files)), tuple(sorted(macros & set(locks + unlocks))),
                    tuple(sorted(fallible)))


def apply_wrapper_calls(inst: Instance, wrappers: Wrappers, records: list[dict]) -> None:
    """Add the wrapper calls as sites; excuse the wrapper's own up()s when
    every unlock-wrapper call is paired."""
    grouped = by_kind(records)
    unpaired = {(r["file"], r["line"], r["col"]) for r in grouped.get("unpaired", [])}
    failed = failed_acquires(grouped.get("unpaired", []))
    wrapper_names = set(wrappers.locks) | set(wrappers.unlocks)
    calls = [r for r in grouped.get("wrapper_call", [])
             if r.get("function") not in wrapper_names]
    # a lock wrapper that returns without the lock on some path
    # (if (dev->need) down(&dev->sem);): no unlock-wrapper call is paired
    skipping = sorted({f"{r['function']}()" for r in grouped.get("lock_skipped", [])
                       if r["function"] in wrappers.locks})
    if skipping:
        unpaired |= {(r["file"], r["line"], r["col"]) for r in calls if r["role"] == "unlock"}
    # A call in a macro body (6.1's printk.c: #define up_console_sem()
    # __up_console_sem(_RET_IP_)): where the macro is expanded is not
    # followed, so no path is known to hold the lock.
    in_macro = {(r["file"], r["line"], r["col"]): r["macro"] for r in grouped.get("in_macro", [])}
    unpaired |= {(r["file"], r["line"], r["col"]) for r in calls if r["role"] == "unlock"
                 and ((r["file"], r["line"], r["col"]) in in_macro
                      or r.get("function") in (None, "", OUTSIDE_FUNCTIONS))}
    for r in calls:
        key = (r["file"], r["line"], r["col"])
        macro = in_macro.get(key)
        inst.sites.append(Site(Location(r["file"], r["line"]),
                               f"macro {macro}" if macro else r.get("function") or "",
                               f"{r['role']}-wrapper", paired=key not in unpaired, macro=macro,
                               via_wrapper=",".join(wrappers.locks if r["role"] == "lock"
                                                    else wrappers.unlocks),
                               failed_acquire=failed.get(key),
                               address_taken=bool(r.get("ref")),
                               lock_skipped_by=", ".join(skipping)
                               if skipping and r["role"] == "unlock" else None))
    unlock_calls = [r for r in calls if r["role"] == "unlock"]
    all_paired = bool(unlock_calls) and not any(
        (r["file"], r["line"], r["col"]) in unpaired for r in unlock_calls)
    if all_paired:
        inst.sites[:] = [
            replace(s, paired=True, via_wrapper="released for its caller")
            if s.op == "up" and (s.macro or s.function) in wrappers.unlocks else
            # every expansion of a lock macro was just checked with its calls
            replace(s, via_wrapper="taken for its caller")
            if s.macro and s.macro in wrappers.locks else s
            for s in inst.sites]
    inst.sites.sort(key=lambda s: (s.location.file, s.location.line))


def count_one(inst: Instance) -> bool:
    """Only a semaphore every init sets to 1 can become a mutex."""
    return bool(inst.inits) and all(i.count == 1 for i in inst.inits)


@dataclass
class WrapperAnalysis:
    runner: SpatchRunner
    progress: Progress
    memo: GrepMemo | None = None

    def run(self, instances: list[Instance], facts: FactSet, contexts: ContextMap,
            scanned: set[str]) -> list[dict]:
        """Add wrapper-call sites to INSTANCES; return the context records
        spatch reported for the wrappers' callers."""
        defined = {(f.file, f.name) for f in facts.functions}
        found = [w for inst in instances if inst.kind not in PSEUDO_KINDS and count_one(inst)
                 for w in [find_wrappers(inst, defined, contexts)] if w]
        if not found:
            return []
        static = {(f.file, f.name) for f in facts.functions if f.static}
        mentions = kernel_files_mentioning(self.runner.tree,
                                    {n for w in found for n in w.locks + w.unlocks},
                                    self.runner.jobs, self.memo)
        by_id = {inst.id: inst for inst in instances}
        sets = wrapper_sets(found, {w.instance_id: self.files_of(w, static, mentions)
                                    for w in found}, mentions)
        for ws in [ws for ws in sets if len(ws.files) > MAX_WRAPPER_FILES]:
            for w in ws.members:
                by_id[w.instance_id].notes.append(Reason(
                    "wrappers-not-followed", f"{', '.join(ws.names)} are called in "
                    f"{len(ws.files)} files: pairing through them is not checked (at most "
                    f"{MAX_WRAPPER_FILES}), their releases stay unpaired", ()))
        sets = [ws for ws in sets if len(ws.files) <= MAX_WRAPPER_FILES]
        context_records: list[dict] = []
        groups = disjoint_groups(sets)
        records = self.check_groups(groups, scanned, facts.object_macros)
        for n, group in enumerate(groups, 1):
            for ws in group:
                # in a group each file is one name set's
                mine = [r for r in records if r.get("group") == n and r.get("file") in ws.files]
                for w in ws.members:
                    apply_wrapper_calls(by_id[w.instance_id], w, mine)
            self.progress.step(f"wrappers: {n}/{len(groups)} groups ({len(found)} semaphores)")
        context_records += [r for r in records
                            if r["kind"] in ("callback", "fndef", "fnstatic", "calls")]
        return context_records

    @staticmethod
    def files_of(w: Wrappers, static: set[tuple[str, str]],
                 mentions: dict[str, set[str]]) -> set[str]:
        """Where the wrappers are defined, and where they are named unless
        each is static in a .c file (a static inline of a header, 2.6's
        affs_lock_ext() in fs/affs/affs.h, is called where it is included)
        or a macro of a .c file."""
        files: set[str] = set(w.files)
        local = static | {(f, m) for f in w.files for m in w.macros}
        for name in w.locks + w.unlocks:
            if not all((f, name) in local and not f.endswith(".h") for f in w.files):
                files |= mentions.get(name, set())
        return files

    def check_groups(self, groups: list[list[WrapperSet]], scanned: set[str],
                     object_macros: set[str]) -> list[dict]:
        """Pairing of the wrapper calls of GROUPS in one spatch run, each
        record with the number of its group (from 1): each group's copy of
        wrapper_pairing.cocci, renamed, kept to its files and with its
        names; contexts.cocci kept to the files the main pass did not
        already scan.  Each file is parsed once and spatch reads one
        program (6.1: seven runs of 1.0-3.2 s, four of them on one or two
        files, when each group had its runs; a file in two groups was
        parsed twice).  OBJECT_MACROS: the object-like macros among the
        facts' (their bare names are their uses)."""
        files = sorted(set().union(*(ws.files for group in groups for ws in group)))
        programs = [GROUP_TAGGED_EMIT] + [
            tagged(renamed(kept_to(wrapper_program(WRAPPER_RULES,
                                                   group_names(group, object_macros)),
                                   sorted(set().union(*(ws.files for ws in group))), "kept"),
                           f"group{n}_"), "emit", n)
            for n, group in enumerate(groups, 1)]
        new = [f for f in files if f not in scanned]
        if new:
            programs.append(kept_to(combine_rules(CONTEXT_RULES), new, "unscanned"))
        return self.runner.run_program("wrappers", combine_programs(programs), files).records


# What a group's copy of wrapper_pairing.cocci prints through (smpl.tagged).
GROUP_TAGGED_EMIT = """virtual report

@initialize:python depends on report@
@@
def emit_tagged(group, kind, pos, **fields):
	emit(kind, pos, group=group, **fields)
"""


def group_names(group: list[WrapperSet], object_macros: set[str]) -> "WrapperNames":
    """The name sets of GROUP's program."""
    locks = sorted({n for ws in group for n in ws.locks})
    unlocks = sorted({n for ws in group for n in ws.unlocks})
    return WrapperNames(locks, unlocks, sorted(set(locks) & object_macros),
                        sorted(set(unlocks) & object_macros),
                        sorted({n for ws in group for w in ws.members for n in w.fallible}))


@dataclass(frozen=True)
class WrapperNames:
    """The name sets of one wrapper program."""

    locks: list[str]
    unlocks: list[str]
    object_locks: list[str]  # the object-like macros among them
    object_unlocks: list[str]
    fallible_locks: list[str] = field(default_factory=list)  # those that may fail


# SmPL has no empty set: a name no C code has stands for none.
NO_NAME = "sem2mutex_no_such_name"


def wrapper_program(rules: list[Path], names: WrapperNames) -> str:
    """wrapper_pairing.cocci (and contexts.cocci) as one program, its name
    sets written out: a literal set is matched by spatch itself, a script
    constraint costs a Python call for every call of every file (for the
    object-like macros' rules, for every identifier)."""
    text = combine_rules(rules)
    for name, members in (("LOCKS", names.locks), ("UNLOCKS", names.unlocks),
                          ("OBJECT_LOCKS", names.object_locks),
                          ("OBJECT_UNLOCKS", names.object_unlocks),
                          ("FALLIBLE_LOCKS", names.fallible_locks)):
        literal = "{" + ", ".join(members or [NO_NAME]) + "}"
        for var in ("w", "lk", "ul", "flk"):
            text = text.replace(f"identifier {var} : script:python() {{ {var} in {name} }};",
                                f"identifier {var} = {literal};")
    return text


@dataclass
class WrapperSet:
    """Semaphores with the same lock and unlock wrapper names (each
    architecture's probe_sem behind probe_irq_on()/probe_irq_off()): their
    calls pair the same way, one analysis serves them all."""

    locks: tuple[str, ...]
    unlocks: tuple[str, ...]
    members: list[Wrappers]
    files: set[str]  # where their calls are looked at
    # every file naming them: a file with a static function of the same
    # name is no file of theirs, but a run whose program names them reports
    # its calls too
    reach: set[str] = field(default_factory=set)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f"{n}()" for n in self.locks + self.unlocks)


def wrapper_sets(found: list[Wrappers], files: dict[str, set[str]],
                 mentions: dict[str, set[str]] | None = None) -> list[WrapperSet]:
    """The sets of FOUND by names, with the FILES of each member, and
    what MENTIONS (name -> files naming it) says names them."""
    sets: dict[tuple[tuple[str, ...], ...], WrapperSet] = {}
    for w in found:
        key = (w.locks, w.unlocks, w.fallible)
        if key not in sets:
            sets[key] = WrapperSet(w.locks, w.unlocks, [], set())
        sets[key].members.append(w)
        sets[key].files |= files[w.instance_id]
    for ws in sets.values():
        ws.reach = set(ws.files).union(*[(mentions or {}).get(n, set())
                                         for n in ws.locks + ws.unlocks])
    return sorted(sets.values(), key=lambda ws: (ws.locks, ws.unlocks))


def disjoint_groups(sets: list[WrapperSet]) -> list[list[WrapperSet]]:
    """Wrapper sets in groups where no set's files name another's
    wrappers: in one file only one set's wrappers are called, so a lock
    wrapper can only pair with its own unlock wrapper, and every wrapper
    call a run reports in a set's file is that set's.  Greedy, most files
    first."""
    groups: list[tuple[list[WrapperSet], set[str], set[str]]] = []
    for ws in sorted(sets, key=lambda ws: (-len(ws.files), ws.locks, ws.unlocks)):
        for members, files, reach in groups:
            if not files & ws.reach and not reach & ws.files:
                members.append(ws)
                files |= ws.files
                reach |= ws.reach
                break
        else:
            groups.append(([ws], set(ws.files), set(ws.reach)))
    return [members for members, _, _ in groups]
