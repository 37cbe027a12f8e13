"""The classifier on hand-built instances: every class and every obstacle,
without spatch.  A wrong `mutex` ships a bug, so most cases here are ways
a count-one semaphore must NOT become a mutex."""
from __future__ import annotations

import pytest

from sem2mutex.audit.classify import Classifier
from sem2mutex.audit.contexts import ContextEvidence, ContextMap
from sem2mutex.audit.facts import failed_acquires
from sem2mutex.audit.failures import conditional_files, mark_failed
from sem2mutex.audit.resolve import note_macro_parameter
from sem2mutex.model import (ApiCall, Escape, Init, Instance, Location, Position, Reason,
                             SemClass, Site, Target)

F = "drivers/x/x.c"


def loc(line: int, file: str = F) -> Location:
    return Location(file, line)


def init(count: int | None = 1, text: str | None = None, line: int = 10) -> Init:
    return Init(loc(line), "sema_init", count, text or str(count))


def site(op: str, function: str = "f", line: int = 20, paired: bool = True,
         macro: str | None = None, via_wrapper: str | None = None) -> Site:
    return Site(loc(line), function, op, paired, macro, via_wrapper)


def instance(inits=(), sites=(), kind="field", **kw) -> Instance:
    return Instance(id=f"{kind}:x", kind=kind, name="sem", struct="struct x", file=F,
                    inits=list(inits), sites=list(sites), **kw)


def locked_in_f() -> list[Site]:
    return [site("down", line=20), site("up", line=22)]


def classify(inst: Instance, contexts: ContextMap | None = None) -> tuple[SemClass, list[str]]:
    Classifier(contexts or ContextMap()).classify(inst)
    return inst.sem_class, [r.code for r in inst.reasons]


def in_context(context: str, function: str = "f", path: tuple[str, ...] = ("f",)) -> ContextMap:
    cmap = ContextMap()
    cmap.by_function[(F, function)].append(ContextEvidence(context, path[0], loc(5), path))
    return cmap


# ------------------------------------------------------------------ classes


def test_binary_paired_in_process_context_is_a_mutex():
    cls, codes = classify(instance([init(1)], locked_in_f()))
    assert cls is SemClass.MUTEX
    assert codes == ["count-one", "paired-release", "process-context"]


def test_pairing_through_wrappers_is_evidence():
    sites = [site("lock-wrapper", "g", 30, via_wrapper="x_lock"),
             site("unlock-wrapper", "g", 32, via_wrapper="x_unlock"),
             site("down", "x_lock", 40), site("up", "x_unlock", 44, via_wrapper="released")]
    cls, codes = classify(instance([init(1)], sites))
    assert cls is SemClass.MUTEX
    assert "paired-through-wrappers" in codes


@pytest.mark.parametrize("inits, expected, code", [
    ([init(4)], SemClass.COUNTING, "count-many"),
    ([init(None, "n")], SemClass.COUNTING, "count-not-literal"),
    ([init(0)], SemClass.SIGNAL, "count-zero"),
    ([init(0), init(1, line=11)], SemClass.AMBIGUOUS, "mixed-counts"),
    ([], SemClass.AMBIGUOUS, "no-init"),
])
def test_the_count_decides_first(inits, expected, code):
    cls, codes = classify(instance(inits, locked_in_f()))
    assert cls is expected and codes[0] == code


def test_signal_counts_waits_and_posts():
    inst = instance([init(0)], [site("down", "waiter"), site("up", "poster", paired=False)])
    classify(inst)
    assert "1 wait(s), 1 post(s)" in inst.reasons[0].detail


@pytest.mark.parametrize("kind, code", [("pointer", "via-pointer"),
                                        ("unresolved", "unresolved-target")])
def test_what_the_tool_cannot_tie_to_one_semaphore_is_ambiguous(kind, code):
    cls, codes = classify(instance([init(1)], locked_in_f(), kind=kind))
    assert (cls, codes) == (SemClass.AMBIGUOUS, [code])


# ------------------------------------------- count one, but not a mutex


@pytest.mark.parametrize("sites, code", [
    ([site("up", "other", 30, paired=False)], "no-lock-sites"),
    ([site("down")], "never-released"),
    ([site("down_timeout"), site("up", line=22)], "down-timeout"),
    ([site("down", macro="LOCK"), site("up", macro="LOCK", line=22)], "macro-use"),
    ([site("down"), site("up", "other", 30, paired=False)], "unpaired-up"),
])
def test_count_one_obstacles(sites, code):
    cls, codes = classify(instance([init(1)], sites))
    assert cls is SemClass.AMBIGUOUS
    assert code in codes


@pytest.mark.parametrize("context, code", [("hardirq", "irq-context"),
                                           ("timer", "timer-context"),
                                           ("tasklet", "tasklet-context"),
                                           ("softirq", "softirq-context")])
def test_atomic_context_of_any_site_blocks_the_mutex(context, code):
    cls, codes = classify(instance([init(1)], locked_in_f()), in_context(context))
    assert cls is SemClass.AMBIGUOUS and code in codes


def test_atomic_context_reached_through_a_call_chain_blocks_the_mutex():
    contexts = in_context("timer", "f", ("timer_fn", "helper", "f"))
    cls, codes = classify(instance([init(1)], locked_in_f()), contexts)
    assert cls is SemClass.AMBIGUOUS and "timer-context" in codes


@pytest.mark.parametrize("context, code", [("work", "work-item-release"),
                                           ("kthread", "kthread-release"),
                                           ("irq_thread", "irq-thread-release")])
def test_release_by_another_task(context, code):
    sites = [site("down", "submit"), site("up", "worker", 30, paired=False)]
    cls, codes = classify(instance([init(1)], sites), in_context(context, "worker",
                                                                 ("worker",)))
    assert cls is SemClass.AMBIGUOUS and code in codes


def test_one_reason_per_code_however_many_sites_show_it():
    # airo.c: twenty up()s reached from one kthread made twenty
    # kthread-release entries; a reviewer reads one, with every location
    sites = [site("down", "submit"), site("up", "worker", 30, paired=False),
             site("up", "worker", 34, paired=False)]
    inst = instance([init(1)], sites)
    cls, codes = classify(inst, in_context("kthread", "worker", ("worker",)))
    assert cls is SemClass.AMBIGUOUS
    assert codes.count("kthread-release") == 1 and len(codes) == len(set(codes))
    (reason,) = [r for r in inst.reasons if r.code == "kthread-release"]
    assert {30, 34} <= {l.line for l in reason.locations}


def test_taken_and_released_in_different_callbacks():
    contexts = ContextMap()
    contexts.by_function[(F, "open")].append(
        ContextEvidence("ops (struct file_operations.open)", "open", loc(5), ("open",)))
    contexts.by_function[(F, "release")].append(
        ContextEvidence("ops (struct file_operations.release)", "release", loc(6),
                        ("release",)))
    sites = [site("down", "open"), site("up", "release", 30, paired=False)]
    cls, codes = classify(instance([init(1)], sites), contexts)
    assert cls is SemClass.AMBIGUOUS and "cross-callback" in codes


def test_trylock_reachable_from_unseen_callers():
    contexts = ContextMap()
    contexts.entry_points.add((F, "poll"))
    sites = [site("down_trylock", "poll"), site("up", "poll", 22)]
    cls, codes = classify(instance([init(1)], sites), contexts)
    assert cls is SemClass.AMBIGUOUS and codes == ["trylock-context-unknown"]


def test_trylock_next_to_a_sleeping_down_is_process_context():
    contexts = ContextMap()
    contexts.entry_points.add((F, "f"))
    sites = [site("down", "f"), site("up", "f", 21), site("down_trylock", "f", 24),
             site("up", "f", 26)]
    cls, _ = classify(instance([init(1)], sites), contexts)
    assert cls is SemClass.MUTEX


def test_escaping_address_blocks_the_mutex():
    esc = Escape(Position(F, 50, 1, "f"), "call", "stash", Target("field", field="sem"))
    cls, codes = classify(instance([init(1)], locked_in_f(), escapes=[esc]))
    assert cls is SemClass.AMBIGUOUS
    assert codes == ["address-escapes"]


# --------------------------------------------------------------- notes


def test_notes_that_say_the_tool_could_not_see_block_the_mutex():
    note = Reason("parse-failure", "spatch skipped code that mentions `sem`", (loc(1),))
    cls, codes = classify(instance([init(1)], locked_in_f(), notes=[note]))
    assert (cls, codes) == (SemClass.AMBIGUOUS, ["parse-failure"])


def test_a_parse_failure_makes_counting_ambiguous_too():
    note = Reason("parse-failure", "spatch skipped code that mentions `sem`", (loc(1),))
    cls, codes = classify(instance([init(4)], locked_in_f(), notes=[note]))
    assert (cls, codes) == (SemClass.AMBIGUOUS, ["count-many", "parse-failure"])


def test_field_name_resolution_is_only_a_note():
    note = Reason("resolved-by-field-name", "nearest field", (loc(1),))
    cls, _ = classify(instance([init(1)], locked_in_f(), notes=[note]))
    assert cls is SemClass.MUTEX


def test_possible_unresolved_use_blocks_the_mutex():
    note = Reason("possible-unresolved-use", "`p->sem` may name this", (loc(1),))
    cls, codes = classify(instance([init(1)], locked_in_f(), notes=[note]))
    assert (cls, codes) == (SemClass.AMBIGUOUS, ["possible-unresolved-use"])


# -------------------------------------------------------------- unused


def test_an_unused_semaphore_is_a_mutex_for_what_it_is_worth():
    cls, codes = classify(instance([init(1)], []))
    assert cls is SemClass.MUTEX and codes == ["count-one", "unused"]
    cls, codes = classify(instance([], []))
    assert cls is SemClass.MUTEX and codes == ["unused"]


def test_unused_but_named_in_unparsed_code_or_escaping_is_not():
    tainted = instance([init(1)], [], notes=[Reason("parse-failure", "skipped", ())])
    assert classify(tainted)[0] is SemClass.AMBIGUOUS
    escaping = instance([init(1)], [], escapes=[Escape(
        Position(F, 40, 1, "g"), "call", "keep", Target("field", field="sem"))])
    assert classify(escaping)[0] is SemClass.AMBIGUOUS
    counted = instance([init(2)], [])
    assert classify(counted)[0] is SemClass.COUNTING


# ------------------------------------------------------- pointers, helpers


def test_a_pointer_instance_is_judged_on_its_own_code_too():
    pointer = instance([], [site("up", "tasklet_fn", paired=False)], kind="pointer")
    cls, codes = classify(pointer, in_context("tasklet", "tasklet_fn", ("tasklet_fn",)))
    assert cls is SemClass.AMBIGUOUS
    assert codes == ["via-pointer", "unpaired-up", "tasklet-context"]


def test_a_pointer_that_initialises_with_a_variable_count_is_counting():
    pointer = instance([init(None, "units")], [], kind="pointer")
    assert classify(pointer) == (SemClass.COUNTING, ["count-not-literal", "via-pointer"])


def test_a_settled_helper_keeps_the_counting_api():
    helper = instance([], [site("up", paired=False)], kind="pointer",
                      notes=[Reason("helper-attributed", "h() works on ...", ())])
    assert classify(helper) == (SemClass.COUNTING, ["helper-attributed"])


def api_call(op: str, line: int, param: str | None) -> ApiCall:
    return ApiCall(Position(F, line, 9, "something_else"), op, "s", False, None, "M",
                   paired=True, macro_param=param)


def test_a_macro_on_its_parameter_stands_for_no_semaphore():
    # #define M(s) down(s): each expansion names its own semaphore
    macro = instance([], [site("down", "macro M", macro="M")], kind="pointer")
    note_macro_parameter(macro, [api_call("down", 20, "s")])
    assert classify(macro) == (SemClass.COUNTING, ["macro-parameter"])


def test_a_macro_call_on_no_parameter_of_its_keeps_the_pointer_ambiguous():
    # one call of the instance acts on no parameter (the macro's own global
    # pointer, say): what it points to is not seen
    macro = instance([], [site("down", "macro M", macro="M"),
                          site("up", "macro M", line=21, macro="M")], kind="pointer")
    note_macro_parameter(macro, [api_call("down", 20, "s"), api_call("up", 21, None)])
    cls, codes = classify(macro)
    assert cls is SemClass.AMBIGUOUS and "macro-parameter" not in codes


def test_a_release_attributed_from_a_helper_in_a_timer_is_not_a_mutex():
    sites = [site("down", "start", 10), Site(loc(20), "timer_fn", "up", paired=False,
                                             via_helper="give")]
    cls, codes = classify(instance([init(1)], sites),
                          in_context("timer", "timer_fn", ("timer_fn",)))
    assert cls is SemClass.AMBIGUOUS and "timer-context" in codes


# ------------------------------------------------------- failed conditional downs


def test_an_up_a_failed_down_leads_to_says_which_down_failed():
    failed_up = Site(loc(24), "f", "up", paired=False, failed_acquire=("down_trylock", 21))
    inst = instance([init(1)], [site("down_trylock", line=21), site("up", line=22), failed_up])
    cls, codes = classify(inst)
    assert cls is SemClass.AMBIGUOUS
    assert codes == ["unpaired-up"]
    assert inst.reasons[0].detail.endswith(
        "up() in f() at drivers/x/x.c:24 (a path reaches it where the down_trylock() of "
        "line 21 failed to take it)")


def test_the_first_failed_down_in_the_file_is_the_one_named():
    recs = [{"file": F, "line": 30, "col": 1, "failed": 27, "failed_op": "down_killable"},
            {"file": F, "line": 30, "col": 1, "failed": 21, "failed_op": "down_trylock"},
            {"file": F, "line": 31, "col": 1}]
    assert failed_acquires(recs) == {(F, 30, 1): ("down_trylock", 21)}


def test_a_failure_branch_falling_through_unpairs_only_an_up_of_its_own():
    failed = {(F, 24): ("down_trylock", 21)}
    own = Site(loc(24), "f", "up")
    wrapped = Site(loc(24), "f", "up", via_wrapper="released for its caller")
    assert mark_failed(own, failed) == Site(loc(24), "f", "up", paired=False,
                                            failed_acquire=("down_trylock", 21))
    assert mark_failed(wrapped, failed) == wrapped
    assert mark_failed(Site(loc(25), "f", "up"), failed).paired
    inst = instance([init(1)], [site("down_trylock", line=21), own,
                                Site(loc(9, "drivers/x/y.c"), "g", "down_interruptible",
                                     via_helper="h")])
    assert conditional_files([inst]) == [F]


def test_a_lock_wrapper_that_may_fail_must_return_its_failure():
    from dataclasses import replace

    from sem2mutex.audit.wrappers import find_wrappers
    defined = {(F, "x_lock"), (F, "x_unlock")}
    unlock = site("up", "x_unlock", 44, paired=False)
    lost = site("down_interruptible", "x_lock", 40)
    # void x_lock(d) { down_interruptible(&d->sem); }: no caller can tell
    assert find_wrappers(instance([init()], [lost, unlock]), defined, ContextMap()) is None
    returned = replace(lost, failure_returned="return")
    found = find_wrappers(instance([init()], [returned, unlock]), defined, ContextMap())
    assert found and found.locks == ("x_lock",) and found.fallible == ("x_lock",)
    plain = find_wrappers(instance([init()], [site("down", "x_lock", 40), unlock]), defined,
                          ContextMap())
    assert plain and plain.locks == ("x_lock",) and plain.fallible == ()
    # a macro: its value is the failure (fallible), or it returns from the
    # function it is expanded in (past it the lock is held)
    macro_unlock = site("up", "X_UNLOCK", 45, macro="X_UNLOCK")
    for exit_, fallible in (("value", ("X_LOCK",)), ("return", ())):
        lock = replace(site("down_interruptible", "X_LOCK", 41, macro="X_LOCK"),
                       failure_returned=exit_)
        found = find_wrappers(instance([init()], [lock, macro_unlock]), set(), ContextMap())
        assert found and found.locks == ("X_LOCK",) and found.fallible == fallible, exit_
