"""The analysis on the fixture trees: every class and every reason code."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from conftest import FIXTURE_TREE, LEGACY_TREE, load_json, run_convert
from sem2mutex.audit.contexts import ContextMap
from sem2mutex.audit.facts import by_kind, same_file_only

EXPECTED = json.loads((FIXTURE_TREE / "expected.json").read_text())


def classes(audit: dict) -> dict[str, dict]:
    return {i["id"]: {"class": i["class"], "reasons": [r["code"] for r in i["reasons"]]}
            for i in audit["instances"]}


def test_every_instance_has_its_expected_class_and_reasons(fixture_audit):
    assert classes(fixture_audit) == EXPECTED


def test_fixtures_cover_every_class_and_reason_code():
    codes = {c for e in EXPECTED.values() for c in e["reasons"]}
    documented = set()
    for line in (FIXTURE_TREE.parents[2] / "audit" / "README.md").read_text().splitlines():
        if line.startswith("| `") and "` |" in line:
            documented.add(line.split("`")[1])
    reason_codes = documented - {"global", "static", "local", "array", "field", "field-array",
                                 "pointer", "unresolved", "mutex", "counting", "signal",
                                 "ambiguous"}
    assert {e["class"] for e in EXPECTED.values()} == {"mutex", "counting", "signal",
                                                       "ambiguous"}
    # every documented code is exercised by a fixture, and nothing undocumented is used
    missing = reason_codes - codes - {"possible-unresolved-use", "resolved-by-field-name"}
    assert not missing, f"reason codes without a fixture: {sorted(missing)}"
    assert codes <= reason_codes


def test_notes_for_field_name_resolution(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    nearest = by_id["field:drivers/fixture/more.c:struct more_dev.nearest"]
    assert [n["code"] for n in nearest["notes"]] == ["resolved-by-field-name"]
    for dup in ("field:struct dup_one.dup", "field:struct dup_two.dup"):
        assert "possible-unresolved-use" in [r["code"] for r in by_id[dup]["reasons"]]


def test_every_init_and_site_of_the_fixtures_is_attributed(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    shared = by_id["field:struct shared_dev.lock"]
    assert {s["file"] for s in shared["sites"]} == {"drivers/fixture/shared_a.c",
                                                    "drivers/fixture/shared_b.c"}
    irq = by_id["field:struct shared_irq_dev.busy"]
    assert {s["file"] for s in irq["sites"]} == {"drivers/fixture/irq_a.c",
                                                 "drivers/fixture/irq_b.c"}
    wrap = by_id["field:drivers/fixture/wrappers.c:struct wrap_dev.io_sem"]
    assert sum(1 for s in wrap["sites"] if s["op"] == "unlock-wrapper") == 2
    assert all(s["paired"] for s in wrap["sites"])
    cfg = by_id["field:drivers/fixture/wrappers.c:struct wrap_dev.cfg_sem"]
    assert any(s["op"] == "unlock-wrapper" and not s["paired"] for s in cfg["sites"])


def unpaired_wrapper_calls(inst: dict) -> list[tuple[str, int]]:
    return [(s["file"], s["line"]) for s in inst["sites"]
            if s["op"] == "unlock-wrapper" and not s["paired"]]


def test_an_unlock_wrapper_call_whose_result_is_used_is_checked(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    res = by_id["field:drivers/fixture/wrappers_result.c:struct res_dev.sem"]
    # `return res_unlock(dev);` in res_work() is paired, in res_finish() not
    assert unpaired_wrapper_calls(res) == [("drivers/fixture/wrappers_result.c", 37)]
    assert res["class"] == "ambiguous"


def test_an_unlock_wrapper_call_in_a_file_without_lock_calls_is_unpaired(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    drop = by_id["field:struct drop_dev.sem"]
    assert unpaired_wrapper_calls(drop) == [("drivers/fixture/wrappers_drop_user.c", 7)]
    assert drop["class"] == "ambiguous"


def test_a_lock_wrapper_that_may_fail_pairs_only_where_its_failure_is_tested(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    sem = {name: by_id[f"field:drivers/fixture/fallible.c:struct fallible_dev.{name}"]
           for name in ("void_sem", "hidden_sem", "dropped_sem", "stored_sem", "tested_sem",
                        "value_sem", "return_sem", "negative_sem")}
    # a function that loses its down_interruptible()'s failure is no lock
    # wrapper: its callers' unlocks are not theirs to pair
    for name in ("void_sem", "hidden_sem"):
        assert not [s for s in sem[name]["sites"] if s["op"].endswith("-wrapper")], name
    f = "drivers/fixture/fallible.c"
    # dropped, kept and not tested, released in the failure branch
    assert unpaired_wrapper_calls(sem["dropped_sem"]) == [(f, 90), (f, 101)]
    assert unpaired_wrapper_calls(sem["stored_sem"]) == [(f, 123), (f, 136)]
    assert unpaired_wrapper_calls(sem["value_sem"]) == [(f, 205)]
    # if (down_killable(&s) < 0) { up(&s); ... }
    negative = sem["negative_sem"]
    assert [(s["file"], s["line"]) for s in negative["sites"] if not s["paired"]] == [(f, 233)]
    assert negative["class"] == "ambiguous"
    for name in ("void_sem", "hidden_sem", "dropped_sem", "stored_sem", "value_sem"):
        assert sem[name]["class"] == "ambiguous", name
    tested = sem["tested_sem"]
    assert [s["line"] for s in tested["sites"] if s["op"] == "lock-wrapper"] == [158, 169, 179]
    for name in ("tested_sem", "return_sem"):
        assert unpaired_wrapper_calls(sem[name]) == [], name
        assert sem[name]["class"] == "mutex", name


def test_a_failure_tested_with_the_result_assigned_in_the_condition(fixture_audit):
    # if ((err = down_interruptible(&s)) != 0) { up(&s); ... }, in the else
    # of if (!(err = ...)), past if ((err = ...) == 0) with no else; the
    # same with a lock wrapper that returns its down_interruptible()
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    f = "drivers/typed/assigned.c"
    for name, unpaired in (("sem", [(f, 24, "up")]), ("past_sem", [(f, 37, "up")]),
                           ("else_sem", [(f, 47, "up")]),
                           ("wrapped_sem", [(f, 61, "up"), (f, 70, "unlock-wrapper"),
                                            (f, 80, "unlock-wrapper")])):
        inst = by_id[f"field:{f}:struct assigned_dev.{name}"]
        assert [(s["file"], s["line"], s["op"]) for s in inst["sites"]
                if not s["paired"]] == unpaired, name
        assert inst["class"] == "ambiguous", name


def test_an_unlock_wrapper_stored_in_a_pointer_is_not_all_seen(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    stored = by_id["field:drivers/fixture/wrappers_pointer.c:struct wp_dev.sem"]
    # dev->done = wp_unlock; counts as a call no path was checked for
    assert unpaired_wrapper_calls(stored) == [("drivers/fixture/wrappers_pointer.c", 36)]
    (reason,) = stored["reasons"]
    assert "named, not called" in reason["detail"] and stored["class"] == "ambiguous"
    # EXPORT_SYMBOL_GPL(wpx_unlock) calls nothing
    exported = by_id["field:drivers/fixture/wrappers_pointer.c:struct wpx_dev.sem"]
    assert unpaired_wrapper_calls(exported) == [] and exported["class"] == "mutex"


def test_a_lock_wrapper_that_may_return_without_the_lock_pairs_nothing(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    f = "drivers/fixture/wrappers_skip.c"
    for name, line, wrapper in (("cond_sem", 30, "skip_cond_lock()"),
                                ("early_sem", 51, "skip_early_lock()")):
        inst = by_id[f"field:{f}:struct skip_dev.{name}"]
        assert unpaired_wrapper_calls(inst) == [(f, line)], name
        (reason,) = inst["reasons"]
        assert f"after {wrapper}, which returns without taking it" in reason["detail"]
        assert inst["class"] == "ambiguous", name
    # bus->master->bus_sem or bus->bus_sem: one member on either path
    bus = by_id[f"field:{f}:struct skip_bus.bus_sem"]
    assert unpaired_wrapper_calls(bus) == [] and bus["class"] == "mutex"


def test_an_up_after_its_struct_pointer_moved_is_unpaired(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    f = "drivers/fixture/rebase.c"
    moved = by_id[f"field:{f}:struct rebase_node.sem"]
    # down(&node->sem); node = node->next; up(&node->sem);
    assert [(s["line"], s["paired"]) for s in moved["sites"]] == [(18, True), (20, False)]
    assert moved["class"] == "ambiguous"
    assert by_id[f"field:{f}:struct rebase_node.walk_sem"]["class"] == "mutex"


def test_parse_failure_is_listed_with_spatch_error(fixture_audit):
    failures = {f["file"]: f["error"] for f in fixture_audit["parse_failures"]}
    assert sorted(failures) == ["drivers/typed/unparsable.c", "fs/fixture/broken.c"]
    assert "parse error at line 16" in failures["fs/fixture/broken.c"]


def test_a_parse_failure_taints_only_what_its_file_can_see(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    # drivers/typed/unparsable.c includes <typed/typed.h>: its skipped lines
    # name `lock` and `anon_sem` of that header's structs ...
    for seen in ("field:struct typed_sub.lock", "field:struct typed_dev.anon_sem"):
        assert "parse-failure" in [r["code"] for r in by_id[seen]["reasons"]], seen
    # ... but not private.c's struct, nor a header it does not include
    private = by_id["field:drivers/typed/private.c:struct private_dev.lock"]
    assert private["class"] == "mutex"
    shared = by_id["field:struct shared_dev.lock"]
    assert "parse-failure" not in [r["code"] for r in shared["reasons"]]


def test_audit_markdown_opens_with_what_a_reviewer_acts_on(fixture_audit):
    md = (Path(fixture_audit["_outdir"]) / "audit.md").read_text()
    assert md.index("## Ambiguous, doubtful code") < md.index("## Ambiguous, not all uses") \
        < md.index("## Mutex") < md.index("## Counting") \
        < md.index("## Appendix: files spatch could not parse")
    mutexes = sum(1 for e in EXPECTED.values() if e["class"] == "mutex")
    assert f"| mutex | {mutexes} |" in md
    summary = fixture_audit["summary"]
    assert f"| ambiguous: doubtful code | {summary['ambiguous_doubtful']} |" in md
    assert summary["ambiguous_doubtful"] + summary["ambiguous_unseen"] == summary["ambiguous"]
    assert md.index("- `fs/fixture/broken.c`") > md.index("## Appendix")


def test_each_ambiguous_instance_says_which_kind_it_is(fixture_audit):
    unseen = {"unresolved-target", "via-pointer", "parse-failure", "possible-unresolved-use",
              "no-init", "no-lock-sites", "typedef-declared"}
    for inst in fixture_audit["instances"]:
        codes = {r["code"] for r in inst["reasons"]}
        if inst["class"] != "ambiguous":
            assert inst["ambiguity"] is None
        else:
            assert inst["ambiguity"] == ("unseen" if codes <= unseen else "doubtful"), inst["id"]


def test_uses_through_an_api_macro_in_unparsed_files_are_no_mutex(fixture_audit):
    # tdef_far.c names neither the API nor struct semaphore: spatch does not
    # parse it, and its tsem_lock(&tdef_shared) is seen by the mention check
    # only; tdef_unrelated.c's member of the same name cannot see the global
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    for iid, lines in (("global:tdef_shared", [13, 14]),
                       ("field:struct tdef_box.box_sem", [19, 21])):
        inst = by_id[iid]
        assert inst["class"] == "ambiguous", iid
        (reason,) = inst["reasons"]
        assert reason["code"] == "unexplained-use", iid
        assert [(l["file"], l["line"]) for l in reason["locations"]] == \
            [("drivers/fixture/tdef_far.c", n) for n in lines], iid
    macro = by_id["pointer:include/fixture/tdef.h:macro tsem_lock:s"]
    assert macro["class"] == "counting"
    assert [r["code"] for r in macro["reasons"]] == ["macro-parameter"]


def test_calls_the_type_index_ties_down(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    sub = by_id["field:struct typed_sub.lock"]
    assert {s["function"] for s in sub["sites"]} == {"typed_use", "typed_sub_use",
                                                     "typed_global_use"}
    anon = by_id["field:struct typed_dev.anon_sem"]
    assert [s["line"] for s in anon["sites"]] == [27, 28]  # through to_typed()
    assert not [i for i in by_id if i.startswith("unresolved:drivers/typed/")]
    (other,) = [c for c in fixture_audit["other_type_calls"] if c["file"].startswith(
        "drivers/typed/")]
    assert "rw_semaphore" in other["why"]


def test_a_call_the_api_does_not_take_is_no_instance(fixture_audit):
    # arity.c's own up(x, r): listed with the calls on something else
    assert not [i for i in fixture_audit["instances"] if i["file"] == "drivers/fixture/arity.c"]
    (other,) = [c for c in fixture_audit["other_type_calls"]
                if c["file"] == "drivers/fixture/arity.c"]
    assert (other["line"], other["op"], other["argument"]) == (16, "up", "var -> xoffset")
    assert other["why"] == ("called with 2 arguments where the semaphore API's up() takes 1: "
                            "a function or macro of the same name")
    # down_timeout() takes two: a site like any other
    timed = [s for i in fixture_audit["instances"] for s in i["sites"]
             if s["op"] == "down_timeout"]
    assert [(s["file"], s["line"]) for s in timed] == [("drivers/fixture/counts.c", 69)]


def test_seeing_more_does_not_make_a_mutex_of_a_timer_release(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    # seen only through the accessor to_typed(), and through a helper
    for iid in ("field:struct typed_dev.timer_sem",
                "field:drivers/typed/helpers.c:struct helped_dev.timer_sem"):
        codes = [r["code"] for r in by_id[iid]["reasons"]]
        assert by_id[iid]["class"] == "ambiguous" and "timer-context" in codes, iid


def test_a_second_release_on_some_path_is_unpaired(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    loop = by_id["field:drivers/typed/pairing.c:struct pairing_dev.loop_sem"]
    assert loop["class"] == "ambiguous"
    (second,) = [s for s in loop["sites"] if not s["paired"]]
    assert second["released_after"] == 26
    retake = by_id["field:drivers/typed/pairing.c:struct pairing_dev.retake_sem"]
    assert retake["class"] == "mutex"
    twice = by_id["field:drivers/typed/helpers.c:struct helped_pair.twice_sem"]
    assert twice["class"] == "ambiguous"
    # taking one semaphore pairs no up() of another in the same function
    first = by_id["field:drivers/typed/pairing.c:struct pairing_two.first"]
    assert first["class"] == "mutex"
    second = by_id["field:drivers/typed/pairing.c:struct pairing_two.second"]
    assert [s["line"] for s in second["sites"] if not s["paired"]] == [64]
    # an up() inside an expression is checked like one standing alone
    in_expr = by_id["field:drivers/typed/pairing.c:struct pairing_expr.sem"]
    assert [s["line"] for s in in_expr["sites"] if not s["paired"]] == [96]


def test_helpers_and_local_pointers_are_followed(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    held = by_id["field:drivers/typed/helpers.c:struct helped_pair.held_sem"]
    assert held["class"] == "mutex"
    assert {s["via_helper"] for s in held["sites"]} == {None, "helped_give"}
    for helper in ("helped_take:sem", "helped_give:sem", "helped_pick:s"):
        inst = by_id[f"pointer:drivers/typed/helpers.c:{helper}"]
        assert [r["code"] for r in inst["reasons"]] == ["helper-attributed"], helper
    # a helper that keeps the pointer is not followed: its caller's
    # semaphore escapes
    kept = by_id["field:drivers/typed/helpers.c:struct helped_dev.kept_sem"]
    assert "address-escapes" in [r["code"] for r in kept["reasons"]]
    assert by_id["pointer:drivers/typed/helpers.c:helped_keep:s"]["class"] == "ambiguous"


def test_scope_limits_files_but_resolves_headers(tmp_path, fixture_tree_copy):
    run_convert(str(fixture_tree_copy), "--analyze-only", "-q", "--dir", "fs/fixture",
                "-o", str(tmp_path))
    audit = load_json(tmp_path / "audit.json")
    assert audit["scope"] == ["fs/fixture"]
    files = {i["file"] for i in audit["instances"]}
    assert files and all(f.startswith("fs/fixture/") for f in files)


def test_git_checkout_with_untracked_files_is_analysed_whole(tmp_path, fixture_audit):
    tree = tmp_path / "git-tree"
    shutil.copytree(FIXTURE_TREE, tree)
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "Makefile", "include"], check=True)
    subprocess.run(git + ["commit", "-qm", "partial"], check=True)
    (tree / ".gitignore").write_text("drivers/fixture/more.c\n")
    out = tmp_path / "out"
    run_convert(str(tree), "--analyze-only", "-q", "-o", str(out))
    assert classes(load_json(out / "audit.json")) == EXPECTED


def test_legacy_tree_api_era_and_classes(tmp_path):
    run_convert(str(LEGACY_TREE), "--analyze-only", "-q", "-o", str(tmp_path))
    audit = load_json(tmp_path / "audit.json")
    assert audit["tree"]["api_era"] == "2.6.x"
    assert audit["tree"]["version"] == "2.6.15"
    assert classes(audit) == {
        "field:drivers/char/legacy.c:struct legacy_dev.lock":
            {"class": "mutex", "reasons": ["count-one", "paired-release", "process-context"]},
        "field:drivers/char/legacy.c:struct legacy_dev.ready":
            {"class": "signal", "reasons": ["count-zero"]},
        "static:drivers/char/legacy.c:legacy_started":
            {"class": "signal", "reasons": ["count-zero"]},
        "static:drivers/char/legacy.c:legacy_table_lock":
            {"class": "mutex", "reasons": ["count-one", "paired-release", "process-context"]},
    }


def test_entry_point_reaching_is_the_nearest_and_stable():
    # a.c: trylock_site <- helper <- {zeta_op, alpha_op}; zeta_op and
    # alpha_op are both one call away, far_entry two calls away.
    cmap = ContextMap()
    for caller, callee in [("helper", "trylock_site"), ("zeta_op", "helper"),
                           ("alpha_op", "helper"), ("far_entry", "zeta_op")]:
        cmap.callers[("a.c", callee)].add(caller)
    cmap.entry_points = {("a.c", "zeta_op"), ("a.c", "alpha_op"), ("a.c", "far_entry")}
    assert cmap.entry_point_reaching("a.c", "trylock_site") == "alpha_op"
    cmap.entry_points = {("a.c", "far_entry"), ("a.c", "zeta_op")}
    assert cmap.entry_point_reaching("a.c", "trylock_site") == "zeta_op"
    assert cmap.entry_point_reaching("b.c", "trylock_site") is None


def test_calls_stay_in_their_file_and_ops_callbacks_need_a_definition():
    # contexts.cocci's set of defined functions outlives a file within one
    # spatch process: b.c's records may name a function only a.c defines.
    records = [
        {"kind": "fndef", "file": "a.c", "name": "helper"},
        {"kind": "fndef", "file": "b.c", "name": "b_open"},
        {"kind": "calls", "file": "a.c", "function": "x", "callee": "helper"},
        {"kind": "calls", "file": "b.c", "function": "b_open", "callee": "helper"},
        {"kind": "callback", "file": "b.c", "name": "b_open", "context": "ops"},
        {"kind": "callback", "file": "c.c", "name": "helper", "context": "ops"},
        {"kind": "callback", "file": "c.c", "name": "nowhere", "context": "ops"},
        {"kind": "callback", "file": "c.c", "name": "nowhere", "context": "timer"},
    ]
    grouped = same_file_only(by_kind(records))
    assert [(r["file"], r["callee"]) for r in grouped["calls"]] == [("a.c", "helper")]
    assert [(r["name"], r["context"]) for r in grouped["callback"]] == \
        [("b_open", "ops"), ("helper", "ops"), ("nowhere", "timer")]


def test_calls_through_an_accessor_macro_are_its_sites(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    # typed_macro_sem(d) (&(d)->macro_sem), in a header the main pass parses
    macro = by_id["field:struct typed_dev.macro_sem"]
    assert [(s["op"], s["line"]) for s in macro["sites"]] == [("down", 62), ("up", 63)]
    assert [(i["op"], i["line"]) for i in macro["inits"]] == [("sema_init", 61)]
    assert macro["class"] == "mutex"
    # acc_io_lock(d) (&(d)->io_lock), in a header that names none of the
    # API: parsed because the calls go through a macro no parsed file defines
    io = by_id["field:drivers/fixture/accessor.c:struct acc_dev.io_lock"]
    assert [(s["op"], s["line"]) for s in io["sites"]] == [("down", 33), ("up", 34)]
    assert [s["through"] for s in io["sites"]] == ["acc_io_lock", "acc_io_lock"]
    assert [i["through"] for i in io["inits"]] == ["acc_io_lock"]
    assert io["class"] == "mutex"
    # the key is there only for a call through an accessor
    nxt = by_id["field:drivers/fixture/accessor.c:struct acc_dev.next_lock"]
    assert "through" not in nxt["inits"][0]
    assert not [i for i in by_id if i.startswith("pointer:drivers/typed/typed.c:typed_macro")]
    # acc_priv_lock(d) (((struct acc_priv *)(d)->priv)->lock): struct acc_priv's
    priv = by_id["field:drivers/fixture/accessor.c:struct acc_priv.lock"]
    assert [(s["op"], s["line"], s["through"]) for s in priv["sites"]] == \
        [("down", 53, "acc_priv_lock"), ("up", 54, "acc_priv_lock")]
    assert priv["class"] == "mutex"


def test_every_other_use_of_an_accessor_macro_must_be_explained(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    cfg = by_id["field:drivers/fixture/accessor.c:struct acc_dev.cfg_lock"]
    (reason,) = cfg["reasons"]
    assert reason["code"] == "unexplained-use"
    assert reason["detail"].startswith("acc_cfg_lock(), which its calls go through, is used "
                                       "where the analysis saw none of its API calls")
    assert reason["locations"] == [{"file": "drivers/fixture/accessor.c", "line": 41}]


def test_a_macro_that_is_no_accessor_leaves_its_calls_unresolved(fixture_audit):
    # acc_next_lock(d) (&(d)->next_lock + 1): not the member's address
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    nxt = by_id["field:drivers/fixture/accessor.c:struct acc_dev.next_lock"]
    assert not nxt["sites"]
    assert "possible-unresolved-use" in [r["code"] for r in nxt["reasons"]]
    assert by_id["pointer:drivers/fixture/accessor.c:acc_next:acc_next_lock ( dev )"]["sites"]


def test_a_line_another_structs_call_takes_is_no_unexplained_use(fixture_audit):
    # samename.c: struct sn_cam and struct sn_tuner both have a `lock`
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    for struct in ("sn_cam", "sn_tuner"):
        inst = by_id[f"field:drivers/fixture/samename.c:struct {struct}.lock"]
        assert inst["class"] == "mutex" and not inst["notes"], struct
    # samename_size.c: down(&meter->lock); n = sizeof(radio->lock) + ...
    radio = by_id["field:drivers/fixture/samename_size.c:struct snz_radio.lock"]
    (reason,) = radio["reasons"]
    assert reason["code"] == "unexplained-use"
    assert reason["locations"] == [{"file": "drivers/fixture/samename_size.c", "line": 31}] * 2
    assert by_id["field:drivers/fixture/samename_size.c:struct snz_meter.lock"]["class"] == "mutex"
    # samename_wrappers.c: each struct's unlock wrapper does its own up()
    for struct in ("snw_rx", "snw_tx"):
        inst = by_id[f"field:drivers/fixture/samename_wrappers.c:struct {struct}.sem"]
        assert inst["class"] == "mutex", struct


def test_static_inline_wrappers_of_a_header_are_followed_where_included(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    ext = by_id["field:struct inl_dev.ext_lock"]
    assert ext["class"] == "mutex"
    assert [(s["file"], s["line"], s["op"]) for s in ext["sites"] if s["op"].endswith("wrapper")] \
        == [("drivers/fixture/wrappers_inline.c", 15, "lock-wrapper"),
            ("drivers/fixture/wrappers_inline.c", 17, "unlock-wrapper"),
            ("drivers/fixture/wrappers_inline.c", 21, "unlock-wrapper")]


def test_an_export_is_no_use_and_is_noted(fixture_audit):
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    lock = by_id["global:exp_table_lock"]
    assert lock["class"] == "mutex"
    (note,) = lock["notes"]
    assert note["code"] == "exported" and "EXPORT_SYMBOL_GPL()" in note["detail"]
    assert note["locations"] == [{"file": "drivers/fixture/exported.c", "line": 11}]


def test_an_address_given_to_another_locks_function_is_no_escape(fixture_audit):
    # otherlock_user.c: spin_lock(&ol_ring(x)->lock), its type not known
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    lock = by_id["field:struct ol_dev.lock"]
    assert lock["class"] == "mutex" and lock["escapes"] == []


def test_another_lock_types_argument_is_no_unexplained_use(fixture_audit):
    # otherlock.c: spin_lock_init(&ol_ring(x)->lock) beside ol_dev's calls
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    assert not by_id["field:struct ol_dev.lock"]["notes"]


def test_an_extern_array_without_size_is_a_declaration(fixture_audit):
    # extern_array_user.c: extern struct semaphore ea_slots[];
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    slots = by_id["global:ea_slots"]
    assert slots["class"] == "mutex"
    assert {"file": "drivers/fixture/extern_array_user.c", "line": 4} in slots["decls"]


def test_a_seq_file_pair_is_its_own_evidence(fixture_audit):
    # list_stop()'s up() is paired by seq_read(), not in its own function
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    reasons = {r["code"]: r for r in by_id["static:drivers/fixture/seqfile.c:list_sem"]["reasons"]}
    in_function = {l["line"] for l in reasons["paired-release"]["locations"]}
    across = {l["line"] for l in reasons["paired-through-seq-file"]["locations"]}
    assert across == {26, 40} and 40 not in in_function and in_function
    assert "list_start()" in reasons["paired-through-seq-file"]["detail"]


def test_a_typedef_of_several_names_is_seen(fixture_audit):
    # tdef_list.h: typedef struct { ... } tlist_dev_t, *ptlist_dev_t; and a
    # typedef of two names in a header that names no semaphore (tlist_types.h)
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    assert not [i for i in by_id if "tdef_list" in i]  # nothing unresolved
    for inst_id, function in (("field:tlist_dev_t.mutex", "tlist_open"),
                              ("field:tlist_chan_t.readmutex", "tlist_read"),
                              ("field:struct tlist_hold.lock", "tlist_hold"),
                              ("field:struct tlist_far.lock", "tlist_far")):
        inst = by_id[inst_id]
        assert inst["class"] == "mutex" and not inst["notes"], inst_id
        assert {s["function"] for s in inst["sites"]} == {function}
        assert inst["file"] == "drivers/fixture/tdef_list.h"


def test_a_declared_result_and_a_success_flag_say_where_the_down_failed(fixture_audit):
    # failedlock.c: int ret = down_interruptible(&s); locked = !down_trylock(&s);
    # locked = down_trylock(&s) == 0; and a flag past a test with no else
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    prefix = "field:drivers/fixture/failedlock.c:struct failed_flag_dev."
    failed = {}
    for name in ("declared_sem", "flag_sem", "equal_sem", "past_sem"):
        (site,) = [s for s in by_id[prefix + name]["sites"] if s.get("failed_acquire")]
        failed[name] = (site["function"], site["line"], site["failed_acquire"]["op"],
                        site["failed_acquire"]["line"])
    assert failed == {"declared_sem": ("failed_declared", 251, "down_interruptible", 248),
                      "flag_sem": ("failed_flag", 266, "down_trylock", 264),
                      "equal_sem": ("failed_flag_equal", 279, "down_trylock", 275),
                      "past_sem": ("failed_flag_past", 291, "down_trylock", 287)}
    # failed_flag_ok() tests its flags before releasing
    assert by_id[prefix + "ok_sem"]["class"] == "mutex"


def test_a_semaphore_pointer_member_is_one_entry_for_every_function(fixture_audit):
    # ptrmember_a.c and ptrmember_b.c: up(h->eh_wait), struct pm_host's
    # struct semaphore *eh_wait, in two functions of two files
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    assert not [i for i in by_id if i.startswith("pointer:drivers/fixture/ptrmember")]
    member = by_id["pointer:struct pm_host.eh_wait"]
    assert (member["kind"], member["file"], member["line"]) == \
        ("pointer", "drivers/fixture/ptrmember.h", 9)
    assert [(s["file"], s["function"]) for s in member["sites"]] == [
        ("drivers/fixture/ptrmember_a.c", "pm_wakeup"), ("drivers/fixture/ptrmember_b.c", "pm_done")]
    assert member["class"] == "ambiguous" and member["ambiguity"] == "doubtful"
    assert "`struct pm_host.eh_wait`" in member["reasons"][0]["detail"]


def test_an_alias_is_its_targets_semaphore_under_another_name(fixture_audit):
    # alias_def.c: extern struct semaphore alias_other_name __alias(alias_lock);
    # alias_user.c takes and releases alias_other_name
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    assert "global:alias_other_name" not in by_id
    lock = by_id["static:drivers/fixture/alias_def.c:alias_lock"]
    assert [(s["file"], s["op"], s.get("spelled")) for s in lock["sites"]] == [
        ("drivers/fixture/alias_def.c", "down_interruptible", None),
        ("drivers/fixture/alias_def.c", "up", None),
        ("drivers/fixture/alias_user.c", "down_interruptible", "alias_other_name"),
        ("drivers/fixture/alias_user.c", "up", "alias_other_name")]
    (reason,) = lock["reasons"]
    assert reason["code"] == "symbol-alias" and lock["class"] == "ambiguous"
    assert "`alias_other_name` with __alias() at drivers/fixture/alias_def.c:9, which " \
        "drivers/fixture/alias_user.c takes and releases" in reason["detail"]


def test_object_like_lock_macros_pair_like_wrappers(fixture_audit):
    # objmacro.c: #define OBJ_LOCK down(&obj_sem), used as OBJ_LOCK;
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    good = by_id["static:drivers/fixture/objmacro.c:obj_sem"]
    assert good["class"] == "mutex"
    assert "paired-through-wrappers" in [r["code"] for r in good["reasons"]]
    bad = by_id["static:drivers/fixture/objmacro.c:obj_bad_sem"]
    unpaired = [(s["line"], s["function"]) for s in bad["sites"]
                if s["op"] == "unlock-wrapper" and not s["paired"]]
    # another macro's body, a skipped lock, a use as a value, a second release
    assert unpaired == [(18, "macro OBJ_BAD_LEAVE"), (36, "obj_bad"), (38, "obj_bad"),
                        (46, "obj_twice")]


def test_a_lock_macro_use_does_not_pair_an_unlock_function_call(fixture_audit):
    # objmacro.c: if (x) OBJ_MIXED_LOCK; obj_mixed_unlock(x);
    by_id = {i["id"]: i for i in fixture_audit["instances"]}
    mixed = by_id["static:drivers/fixture/objmacro.c:obj_mixed_sem"]
    assert mixed["class"] == "ambiguous"
    assert [(s["line"], s["paired"]) for s in mixed["sites"] if s["op"] == "unlock-wrapper"] \
        == [(67, False)]
