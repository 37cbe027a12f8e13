"""seq_file's .start and .stop as one critical section (pass 4).

seq_read() calls a struct seq_operations' .start, then .next and .show,
then .stop, in one read() by one task, and it calls .stop whatever .start
returned.  The /proc listings of 2.6 (misc_sem, module_mutex,
cache_chain_sem, swapon_sem, ...) take a semaphore in .start and release
it in .stop: the up() there is unpaired in its function, yet it releases
the down() the same task did in .start.  It is taken for that release
only when nothing else can call the two functions:

- the semaphore is one object (a static or global variable, not a struct
  member that two expressions may reach differently);
- .start and .stop are static functions of the file of the seq_operations,
  each registered only there, only as that pair, never called or named
  otherwise (Coccinelle's lexer lists the names);
- .start only takes it, with one down() that every path of .start goes
  through; .stop only releases it, with one up() on every path of .stop
  (seq_file_pairing.cocci checks the paths).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

from sem2mutex.audit.contexts import ContextMap, used_other_than_called
from sem2mutex.audit.facts import FACTS_DIR
from sem2mutex.audit.wrappers import count_one
from sem2mutex.model import Callback, FactSet, Instance, Location, Reason, Site
from sem2mutex.tools.lexer import Lexer
from sem2mutex.tools.spatch import SpatchRunner, combine_rules

SEQ_RULES = [FACTS_DIR / "seq_file_pairing.cocci"]
SEQ_OPS = "struct seq_operations"
SINGLE_OBJECT_KINDS = ("static", "global")
NOTE = "seq-file-pair"


@dataclass(frozen=True)
class SeqPair:
    file: str
    holder: str  # the seq_operations variable
    start: str
    stop: str
    location: Location  # its .stop registration


@dataclass(frozen=True)
class Candidate:
    inst: Instance
    pair: SeqPair
    down: Site
    up: Site


def seq_pairs(callbacks: list[Callback]) -> list[SeqPair]:
    """Each seq_operations initializer's (.start, .stop), kept only where
    the two functions are registered nowhere else and as nothing else."""
    slots: dict[tuple[str, str], dict[str, Callback]] = defaultdict(dict)
    registrations: dict[tuple[str, str], int] = defaultdict(int)
    for cb in callbacks:
        registrations[(cb.pos.file, cb.name)] += 1
        if cb.context == "ops" and cb.holder and cb.slot in (f"{SEQ_OPS}.start",
                                                             f"{SEQ_OPS}.stop"):
            slots[(cb.pos.file, cb.holder)][cb.slot.rsplit(".", 1)[1]] = cb
    pairs = []
    for (file, holder), found in sorted(slots.items()):
        if set(found) != {"start", "stop"}:
            continue
        start, stop = found["start"], found["stop"]
        if registrations[(file, start.name)] == registrations[(file, stop.name)] == 1:
            pairs.append(SeqPair(file, holder, start.name, stop.name, stop.pos.location))
    return pairs


def candidates(instances: list[Instance], pairs: list[SeqPair]) -> list[Candidate]:
    """The single-object, count-one semaphores one pair's .start only takes
    with one down() and its .stop only releases with one unpaired up()."""
    found = []
    for inst in instances:
        if inst.kind not in SINGLE_OBJECT_KINDS or not count_one(inst):
            continue
        for pair in pairs:
            start = sites_in(inst, pair.file, pair.start)
            stop = sites_in(inst, pair.file, pair.stop)
            if len(start) != 1 or len(stop) != 1:
                continue
            down, up = start[0], stop[0]
            if down.op == "down" and up.op == "up" and not up.paired \
                    and up.released_after is None and plain(down) and plain(up):
                found.append(Candidate(inst, pair, down, up))
    return found


def sites_in(inst: Instance, file: str, function: str) -> list[Site]:
    return [s for s in inst.sites if (s.location.file, s.function) == (file, function)]


def plain(site: Site) -> bool:
    return not (site.macro or site.via_wrapper or site.via_helper or site.through)


def called_or_named(cands: list[Candidate], facts: FactSet, contexts: ContextMap,
                    lexer: Lexer) -> set[tuple[str, str]]:
    """(file, function) of the pairs' functions that are not static, are
    called in their file, or are named other than in a call or a
    registration."""
    static = {(f.file, f.name) for f in facts.functions if f.static}
    names: dict[str, set[str]] = defaultdict(set)
    for c in cands:
        names[c.pair.file] |= {c.pair.start, c.pair.stop}
    registered = {cb.named_at for cb in facts.callbacks}
    found = used_other_than_called(lexer, names, registered)
    for file, fns in names.items():
        found |= {(file, fn) for fn in fns
                  if (file, fn) not in static or contexts.callers.get((file, fn))}
    return found


@dataclass
class SeqFilePairing:
    runner: SpatchRunner
    lexer: Lexer

    def run(self, instances: list[Instance], facts: FactSet, contexts: ContextMap) -> None:
        """Pair the .stop up() of each semaphore that passes every check
        with its .start down(); say so in a note."""
        cands = candidates(instances, seq_pairs(facts.callbacks))
        if not cands:
            return
        excluded = called_or_named(cands, facts, contexts, self.lexer)
        cands = [c for c in cands if (c.pair.file, c.pair.start) not in excluded
                 and (c.pair.file, c.pair.stop) not in excluded]
        if not cands:
            return
        starts, stops = sorted({c.pair.start for c in cands}), sorted({c.pair.stop for c in cands})
        records = self.runner.run_program("seq_file", seq_program(starts, stops),
                                          sorted({c.pair.file for c in cands}), {
            "SEM2MUTEX_SEQ_STARTS": ",".join(starts),
            "SEM2MUTEX_SEQ_STOPS": ",".join(stops)}).records
        unsure = {Location(r["file"], r["line"]) for r in records
                  if r["kind"] in ("seq_unheld", "seq_unreleased")}
        for c in cands:
            if c.down.location not in unsure and c.up.location not in unsure:
                pair_up(c)


def seq_program(starts: list[str], stops: list[str]) -> str:
    """seq_file_pairing.cocci with its functions written out: matched
    unconstrained, every function of the file that takes or releases a
    semaphore has its paths walked (11 s on 2.6's mm/slab.c)."""
    text = combine_rules(SEQ_RULES)
    for rule, names in (("seq_taken", starts), ("seq_released", stops)):
        declared = f"@{rule} depends on report@\nidentifier fn;"
        assert declared in text, f"seq_file_pairing.cocci: {rule} changed"
        text = text.replace(declared, f"@{rule} depends on report@\n"
                            f"identifier fn = {{{', '.join(names)}}};")
    return text


def pair_up(c: Candidate) -> None:
    c.inst.sites[:] = [replace(s, paired=True) if s is c.up else s for s in c.inst.sites]
    p = c.pair
    c.inst.notes.append(Reason(
        NOTE, f"taken in {p.start}() and released in {p.stop}(), the .start and .stop of "
        f"{p.holder} ({p.location}): seq_read() calls both in one read(), .stop whatever "
        ".start returned, and each takes or releases it on every path",
        (c.down.location, c.up.location)))
