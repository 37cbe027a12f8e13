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
from dataclasses import dataclass, replace

from sem2mutex.audit.contexts import ContextMap
from sem2mutex.audit.facts import FACTS_DIR, by_kind
from sem2mutex.model import FactSet, Instance, Location, Site
from sem2mutex.progress import Progress
from sem2mutex.audit.intake import kernel_files_mentioning
from sem2mutex.tools.spatch import SpatchRunner

# contexts.cocci too: a wrapper's caller may sit in a file pass 2 never saw,
# and whether that caller runs in IRQ context matters as much.
WRAPPER_RULES = [FACTS_DIR / "wrapper_pairing.cocci"]
WRAPPER_AND_CONTEXT_RULES = WRAPPER_RULES + [FACTS_DIR / "contexts.cocci"]
WRAPPABLE_LOCKS = ("down", "down_interruptible", "down_killable")
PSEUDO_KINDS = ("pointer", "unresolved")


@dataclass(frozen=True)
class Wrappers:
    instance_id: str
    locks: tuple[str, ...]
    unlocks: tuple[str, ...]
    files: tuple[str, ...]  # files where the wrappers are defined


def find_wrappers(inst: Instance, facts: FactSet, contexts: ContextMap) -> Wrappers | None:
    ops_by_function: dict[tuple[str, str], list[Site]] = defaultdict(list)
    for site in inst.sites:
        if site.macro is None and site.via_wrapper is None and site.via_helper is None:
            ops_by_function[(site.location.file, site.function)].append(site)
    defined = {(f.file, f.name) for f in facts.functions}
    locks, unlocks, files = [], [], set()
    for (file, fn), sites in ops_by_function.items():
        if (file, fn) not in defined:
            continue
        if any(ev.path == (fn,) for ev in contexts.of(file, fn)):
            continue  # a registered callback: its callers are not visible
        ops = {s.op for s in sites}
        if ops <= set(WRAPPABLE_LOCKS):
            locks.append(fn)
            files.add(file)
        elif ops == {"up"} and not any(s.paired for s in sites):
            unlocks.append(fn)
            files.add(file)
    if not locks or not unlocks:
        return None
    return Wrappers(inst.id, tuple(sorted(set(locks))), tuple(sorted(set(unlocks))),
                    tuple(sorted(files)))


def apply_wrapper_calls(inst: Instance, wrappers: Wrappers, records: list[dict]) -> None:
    """Add the wrapper calls as sites; excuse the wrapper's own up()s when
    every unlock-wrapper call is paired."""
    grouped = by_kind(records)
    unpaired = {(r["file"], r["line"], r["col"]) for r in grouped.get("unpaired", [])}
    wrapper_names = set(wrappers.locks) | set(wrappers.unlocks)
    calls = [r for r in grouped.get("wrapper_call", [])
             if r.get("callee") in wrapper_names and r.get("function") not in wrapper_names]
    for r in calls:
        key = (r["file"], r["line"], r["col"])
        inst.sites.append(Site(Location(r["file"], r["line"]), r.get("function") or "",
                               f"{r['role']}-wrapper", paired=key not in unpaired,
                               via_wrapper=",".join(wrappers.locks if r["role"] == "lock"
                                                    else wrappers.unlocks)))
    unlock_calls = [r for r in calls if r["role"] == "unlock"]
    all_paired = bool(unlock_calls) and not any(
        (r["file"], r["line"], r["col"]) in unpaired for r in unlock_calls)
    if all_paired:
        inst.sites[:] = [
            replace(s, paired=True, via_wrapper="released for its caller")
            if s.op == "up" and s.function in wrappers.unlocks else s
            for s in inst.sites]
    inst.sites.sort(key=lambda s: (s.location.file, s.location.line))


def count_one(inst: Instance) -> bool:
    """Only a semaphore every init sets to 1 can become a mutex."""
    return bool(inst.inits) and all(i.count == 1 for i in inst.inits)


@dataclass
class WrapperAnalysis:
    runner: SpatchRunner
    progress: Progress

    def run(self, instances: list[Instance], facts: FactSet, contexts: ContextMap,
            scanned: set[str]) -> list[dict]:
        """Add wrapper-call sites to INSTANCES; return the context records
        spatch reported for the wrappers' callers."""
        found = [w for inst in instances if inst.kind not in PSEUDO_KINDS and count_one(inst)
                 for w in [find_wrappers(inst, facts, contexts)] if w]
        if not found:
            return []
        static = {(f.file, f.name) for f in facts.functions if f.static}
        mentions = kernel_files_mentioning(self.runner.tree,
                                    {n for w in found for n in w.locks + w.unlocks},
                                    self.runner.jobs)
        by_id = {inst.id: inst for inst in instances}
        files = {w.instance_id: self.files_of(w, static, mentions) for w in found}
        context_records: list[dict] = []
        groups = disjoint_groups(found, files)
        for n, group in enumerate(groups, 1):
            records = self.check_group(group, set().union(*(files[w.instance_id]
                                                            for w in group)), scanned)
            for w in group:
                apply_wrapper_calls(by_id[w.instance_id], w, records)
            context_records += [r for r in records
                                if r["kind"] in ("callback", "fndef", "fnstatic", "calls")]
            self.progress.step(f"wrappers: {n}/{len(groups)} groups of semaphores "
                               f"({len(found)} in all)")
        return context_records

    @staticmethod
    def files_of(w: Wrappers, static: set[tuple[str, str]],
                 mentions: dict[str, set[str]]) -> set[str]:
        """Where the wrappers are defined, and where the non-static ones are named."""
        files: set[str] = set(w.files)
        for name in w.locks + w.unlocks:
            if not all((f, name) in static for f in w.files):
                files |= mentions.get(name, set())
        return files

    def check_group(self, group: list[Wrappers], files: set[str],
                    scanned: set[str]) -> list[dict]:
        """Pairing of the wrapper calls of GROUP in one spatch run (each
        file parsed once); contexts only for the files the main pass did
        not already scan."""
        env = {"SEM2MUTEX_LOCK_WRAPPERS": ",".join(sorted({n for w in group for n in w.locks})),
               "SEM2MUTEX_UNLOCK_WRAPPERS": ",".join(sorted({n for w in group
                                                             for n in w.unlocks}))}
        known, new = sorted(files & scanned), sorted(files - scanned)
        records = self.runner.run("wrappers", WRAPPER_RULES, known, env=env).records
        records += self.runner.run("wrappers", WRAPPER_AND_CONTEXT_RULES, new, env=env).records
        return records


def disjoint_groups(found: list[Wrappers], files: dict[str, set[str]]) -> list[list[Wrappers]]:
    """Semaphores in groups whose wrapper files do not overlap: in one file
    only one semaphore's wrappers are called, so a lock wrapper can only
    pair with its own unlock wrapper.  Greedy, most files first."""
    groups: list[tuple[list[Wrappers], set[str]]] = []
    for w in sorted(found, key=lambda w: (-len(files[w.instance_id]), w.instance_id)):
        mine = files[w.instance_id]
        for members, used in groups:
            if not used & mine:
                members.append(w)
                used |= mine
                break
        else:
            groups.append(([w], set(mine)))
    return [members for members, _ in groups]
