"""The last check before `mutex`: every mention of a semaphore's name is
one of the facts the analysis understood, its own or, on a line another
semaphore of the same name's call takes, that one's (no spatch: mentions
as the lexer would list them)."""
from __future__ import annotations

from sem2mutex.audit.mentions import Mention, OthersFacts, unexplained
from sem2mutex.model import Instance, Location, Site

F = "drivers/media/cam.c"


def field(struct: str, lines: list[int], op: str = "down", **site) -> Instance:
    return Instance(id=f"field:{struct}.lock", kind="field", name="lock", struct=struct,
                    file=F, sites=[Site(Location(F, n), "f", op, **site) for n in lines])


def members(*lines: int) -> list[Mention]:
    return [Mention(n, "lock", True) for n in lines]


def test_another_structs_call_explains_its_line():
    cam, tuner = field("struct cam", [10, 12]), field("struct tuner", [20, 22])
    seen = {F: members(10, 12, 20, 22)}
    assert unexplained(cam, seen) == [Location(F, 20), Location(F, 22)]  # without the others
    others = OthersFacts.of([cam, tuner])
    assert unexplained(cam, seen, others) == []
    assert unexplained(tuner, seen, others) == []


def test_a_line_naming_it_more_often_than_the_calls_on_it_is_unexplained():
    cam, tuner = field("struct cam", [10]), field("struct tuner", [20])
    # down(&tuner->lock); n = sizeof(cam_or_other->lock);
    seen = {F: members(10, 20, 20)}
    assert unexplained(cam, seen, OthersFacts.of([cam, tuner])) == [Location(F, 20)] * 2


def test_calls_that_name_it_elsewhere_explain_nothing():
    cam = field("struct cam", [10])
    # a wrapper call or one through an accessor macro does not name `lock`
    for site in ({"op": "lock-wrapper", "via_wrapper": "tuner_lock"},
                 {"through": "TUNER_LOCK"}, {"via_helper": "tuner_get"},
                 {"macro": "TUNER_DOWN"}):
        tuner = field("struct tuner", [20], **site)
        assert unexplained(cam, {F: members(10, 20)}, OthersFacts.of([cam, tuner])) == \
            [Location(F, 20)], site


def test_a_wrappers_own_release_names_it_on_its_line():
    cam = field("struct cam", [10])
    # tuner_unlock(t) { up(&t->lock); }: released for its caller, and a
    # call of the API that names `lock` all the same
    tuner = field("struct tuner", [20], op="up", via_wrapper="released for its caller")
    assert unexplained(cam, {F: members(10, 20)}, OthersFacts.of([cam, tuner])) == []


def test_a_pointer_or_unresolved_call_explains_nothing():
    cam = field("struct cam", [10])
    unsure = Instance(id="unresolved:x", kind="unresolved", name="& x -> lock", struct=None,
                      file=F, sites=[Site(Location(F, 20), "f", "down")])
    assert unexplained(cam, {F: members(10, 20)}, OthersFacts.of([cam, unsure])) == \
        [Location(F, 20)]


def test_a_variable_of_the_same_name_explains_only_plain_mentions():
    cam = field("struct cam", [10])
    lock = Instance(id="static:drivers/media/cam.c:lock", kind="static", name="lock",
                    struct=None, file=F, sites=[Site(Location(F, 20), "f", "down")])
    # line 20 names `lock` after `->`: not the variable's call
    assert unexplained(cam, {F: members(10, 20)}, OthersFacts.of([cam, lock])) == \
        [Location(F, 20)]


def test_an_address_given_to_another_lock_type_explains_its_mention():
    cam = field("struct cam", [10])
    # spin_lock_init(&ov->sbuf[i].lock): a spinlock, one mention of `lock`
    spin = [(Location(F, 20), "lock", True)]
    assert unexplained(cam, {F: members(10, 20)}, OthersFacts.of([cam], spin)) == []
    assert unexplained(cam, {F: members(10, 20, 20)}, OthersFacts.of([cam], spin)) == \
        [Location(F, 20)] * 2


def test_if0_lines_are_the_dead_branches_only():
    from sem2mutex.tools.lexer import Directive, if0_lines
    found = [Directive("include", "<linux/semaphore.h>", 1),
             Directive("if", "0000", 10), Directive("ifdef", "CONFIG_X", 12),
             Directive("endif", "", 14), Directive("else", "", 16), Directive("endif", "", 18),
             Directive("if", "(0)", 20), Directive("elif", "defined(CONFIG_Y)", 22),
             Directive("endif", "", 24),
             Directive("if", "10", 30), Directive("endif", "", 32),
             Directive("ifdef", "CONFIG_Z", 40), Directive("if", "0", 41),
             Directive("endif", "", 43), Directive("endif", "", 45)]
    # #if 0000 with a conditional inside, up to its #else; #if (0) up to
    # its #elif; #if 0 nested in a live #ifdef; #if 10 is live
    assert if0_lines(found) == {11, 12, 13, 14, 15, 21, 42}
