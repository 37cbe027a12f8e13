"""seq_file .start/.stop pairs: which registrations make a pair, which
semaphores are candidates, and the note a paired one gets (no spatch:
the path checks of seq_file_pairing.cocci have their golden in
tests/fixtures/facts/)."""
from __future__ import annotations

from sem2mutex.audit.seqfile import (Candidate, SeqPair, candidates, pair_up, seq_pairs,
                                     seq_program)
from sem2mutex.model import Callback, Init, Instance, Location, Position, Site

F = "fs/proc/things.c"


def ops(line: int, name: str, slot: str, holder: str = "things_ops",
        struct: str = "struct seq_operations") -> Callback:
    return Callback(Position(F, line, 9, "something_else"), name, "ops", f"{struct}.{slot}",
                    holder)


def sem(kind: str = "static", count: int = 1, **sites: tuple[str, bool]) -> Instance:
    """A semaphore with one site per function: SITES maps function -> (op, paired)."""
    inst = Instance(id=f"{kind}:{F}:things_sem", kind=kind, name="things_sem", struct=None,
                    file=F, inits=[Init(Location(F, 3), "sema_init", count, str(count))])
    inst.sites = [Site(Location(F, 10 + n), fn, op, paired=paired)
                  for n, (fn, (op, paired)) in enumerate(sites.items())]
    return inst


PAIR = [ops(40, "things_start", "start"), ops(41, "things_next", "next"),
        ops(42, "things_stop", "stop")]


def test_a_seq_operations_start_and_stop_make_a_pair():
    assert seq_pairs(PAIR) == [SeqPair(F, "things_ops", "things_start", "things_stop",
                                       Location(F, 42))]


def test_no_pair_without_both_or_in_another_structure():
    assert seq_pairs(PAIR[:2]) == []
    assert seq_pairs([ops(40, "a", "start", struct="struct file_operations"),
                      ops(42, "b", "stop", struct="struct file_operations")]) == []


def test_no_pair_when_a_function_is_registered_twice():
    # the same .stop in a second seq_operations whose .start may not take it
    again = [ops(50, "other_start", "start", holder="other_ops"),
             ops(52, "things_stop", "stop", holder="other_ops")]
    assert seq_pairs(PAIR + again) == []
    # or as another callback
    assert seq_pairs(PAIR + [Callback(Position(F, 60, 5, "f"), "things_start", "timer")]) == []


def test_only_a_plain_down_in_start_and_up_in_stop_of_one_object():
    pairs = seq_pairs(PAIR)
    good = sem(things_start=("down", True), things_stop=("up", False))
    assert [c.inst for c in candidates([good], pairs)] == [good]
    for other in (sem(things_start=("down_interruptible", True), things_stop=("up", False)),
                  sem(things_start=("down_trylock", True), things_stop=("up", False)),
                  sem(things_start=("down", True), things_stop=("up", True)),
                  sem(kind="field", things_start=("down", True), things_stop=("up", False)),
                  sem(count=2, things_start=("down", True), things_stop=("up", False)),
                  sem(things_start=("down", True))):
        assert candidates([other], pairs) == []


def test_two_sites_in_start_are_no_candidate():
    inst = sem(things_start=("down", True), things_stop=("up", False))
    inst.sites.append(Site(Location(F, 30), "things_start", "up"))
    assert candidates([inst], seq_pairs(PAIR)) == []


def test_pairing_marks_the_release_paired_and_notes_why():
    inst = sem(things_start=("down", True), things_stop=("up", False))
    (cand,) = candidates([inst], seq_pairs(PAIR))
    pair_up(cand)
    assert all(s.paired for s in inst.sites)
    (note,) = inst.notes
    assert note.code == "seq-file-pair"
    assert "things_start()" in note.detail and "things_ops" in note.detail
    assert note.locations == (Location(F, 10), Location(F, 11))
    assert isinstance(cand, Candidate)


def test_the_path_rules_walk_only_the_pairs_functions():
    text = seq_program(["things_start", "other_start"], ["things_stop"])
    assert "identifier fn = {things_start, other_start};" in text
    assert "identifier fn = {things_stop};" in text
