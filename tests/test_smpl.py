"""SmPL program text (sem2mutex/tools/smpl.py), and the wrapper stage's one
spatch run for every group (audit/wrappers.py), against a run per group."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURE_TREE
from sem2mutex.audit.wrappers import (CONTEXT_RULES, WRAPPER_RULES, WrapperAnalysis, Wrappers,
                                      WrapperSet, group_names, wrapper_program)
from sem2mutex.paths import COCCI_DIR
from sem2mutex.progress import Progress
from sem2mutex.tools.smpl import kept_to, renamed, split_rules, tagged
from sem2mutex.tools.spatch import SpatchRunner, combine_programs, find_spatch

pytestmark = pytest.mark.fast

PROGRAM = """virtual report

@initialize:python depends on report@
@@
import json


def emit(kind, pos, **fields):
	fields.update(kind=kind, file=pos.file, line=int(pos.line))
	print(json.dumps(fields, sort_keys=True), flush=True)

@script:python depends on report@
@@
emit_file = True

@taken depends on report exists@
position p;
@@
down@p(...)

@released depends on report && taken@
position p;
@@
up@p(...)

@again depends on report@
position taken.p;
@@
down@p(...)

@script:python depends on report && !released@
p << taken.p;
@@
emit("taken", p[0])

@script:python@
p << released.p;
@@
emit("released", p[0])
"""


def test_every_rule_file_splits_into_rules_and_back():
    for path in sorted(COCCI_DIR.rglob("*.cocci")):
        text = path.read_text()
        preamble, rules = split_rules(text)
        assert rules, path
        assert preamble + "".join(r.text() for r in rules) == text, path


def test_rule_names_and_kinds():
    _, rules = split_rules(PROGRAM)
    assert [(r.name, r.is_script) for r in rules] == [
        (None, True), (None, True), ("taken", False), ("released", False), ("again", False),
        (None, True), (None, True)]


def test_renamed_prefixes_each_rule_name_where_headers_and_declarations_name_it():
    text = renamed(PROGRAM, "g1_")
    _, rules = split_rules(text)
    assert [r.header for r in rules] == [
        "initialize:python depends on report", "script:python depends on report",
        "g1_taken depends on report exists", "g1_released depends on report && g1_taken",
        "g1_again depends on report", "script:python depends on report && !g1_released",
        "script:python"]
    assert "position g1_taken.p;" in text
    assert "p << g1_taken.p;" in text and "p << g1_released.p;" in text
    # patterns and Python bodies are left alone
    assert "down@p(...)" in text and 'emit("taken", p[0])' in text
    assert "emit_file = True" in text


def test_kept_to_puts_a_gate_before_every_matching_rule():
    text = kept_to(PROGRAM, ["drivers/x/b.h", "a.c"], "here")
    rules = split_rules(text)[1]
    assert [r.header for r in rules] == [
        "script:python here",
        "initialize:python depends on report", "script:python depends on report",
        "taken depends on here && (report) exists",
        "released depends on here && (report && taken)",
        "again depends on here && (report)",
        "script:python depends on report && !released", "script:python"]
    assert "if not {'a.c', 'drivers/x/b.h'}.intersection(cocci.files()):" in rules[0].body
    with pytest.raises(ValueError):
        kept_to(PROGRAM, [], "here")


def test_tagged_changes_the_calls_of_script_rules_only():
    text = tagged(PROGRAM, "emit", 3)
    assert 'emit_tagged(3, "taken", p[0])' in text
    assert 'emit_tagged(3, "released", p[0])' in text
    assert "def emit(kind, pos, **fields):" in text


def run(spatch: Path, program: str, tree: Path, files: list[str]) -> list[dict]:
    runner = SpatchRunner(spatch, tree, 1, Progress(quiet=True))
    return runner.run_program("test", program, files).records


def test_copies_kept_to_their_files_report_apart_in_one_run(tmp_path):
    spatch = find_spatch()
    (tmp_path / "a.c").write_text("void f(void)\n{\n\tdown(&s);\n\tup(&s);\n}\n")
    (tmp_path / "b.c").write_text("void g(void)\n{\n\tdown(&t);\n}\n")
    tag = "@initialize:python@\n@@\ndef emit_tagged(tag, kind, pos, **fields):\n" \
          "\temit(kind, pos, tag=tag, **fields)\n"
    both = combine_programs([tag] + [tagged(renamed(kept_to(PROGRAM, files, "here"),
                                                    f"c{n}_"), "emit", n)
                                     for n, files in ((1, ["a.c", "b.c"]), (2, ["b.c"]))])
    together = run(spatch, both, tmp_path, ["a.c", "b.c"])
    alone = {n: run(spatch, PROGRAM, tmp_path, files)
             for n, files in ((1, ["a.c", "b.c"]), (2, ["b.c"]))}
    for n in (1, 2):
        mine = [{k: v for k, v in r.items() if k != "tag"} for r in together
                if r.get("tag") == n]
        assert sorted(map(json.dumps, mine)) == sorted(map(json.dumps, alone[n]))
    assert {(r["kind"], r["file"], r["tag"]) for r in together} == {
        ("released", "a.c", 1), ("taken", "b.c", 1), ("taken", "b.c", 2)}


def wrapper_set(locks: tuple[str, ...], unlocks: tuple[str, ...], files: set[str],
                fallible: tuple[str, ...] = ()) -> WrapperSet:
    member = Wrappers(f"test:{locks[0]}", locks, unlocks, tuple(sorted(files)),
                      fallible=fallible)
    return WrapperSet(locks, unlocks, [member], set(files), set(files))


def test_one_run_for_every_group_reports_what_a_run_per_group_does():
    """Two groups share a file (wrappers.c); fallible.c was not scanned by
    the main pass, so its contexts are read too.  Against the runs of
    before: each group alone, contexts.cocci with it on the files the main
    pass did not scan."""
    runner = SpatchRunner(find_spatch(), FIXTURE_TREE, 2, Progress(quiet=True))
    wrappers_c, fallible_c = "drivers/fixture/wrappers.c", "drivers/fixture/fallible.c"
    groups = [[wrapper_set(("wrap_lock",), ("wrap_unlock",), {wrappers_c, fallible_c})],
              [wrapper_set(("cfg_lock",), ("cfg_unlock",), {wrappers_c})],
              [wrapper_set(("fallible_tested_lock",), ("fallible_tested_unlock",),
                           {fallible_c}, fallible=("fallible_tested_lock",))]]
    scanned = {wrappers_c}
    together = WrapperAnalysis(runner, Progress(quiet=True)).check_groups(groups, scanned,
                                                                         set())
    context_kinds = {"callback", "fndef", "fnstatic", "calls"}

    def shown(records):
        return sorted(json.dumps({k: v for k, v in r.items() if k != "group"}, sort_keys=True)
                      for r in records)
    contexts = set()
    for n, group in enumerate(groups, 1):
        names = group_names(group, set())
        files = set().union(*(ws.files for ws in group))
        alone = runner.run_program("known", wrapper_program(WRAPPER_RULES, names),
                                   sorted(files & scanned)).records
        alone += runner.run_program("new", wrapper_program(WRAPPER_RULES + CONTEXT_RULES,
                                                           names),
                                    sorted(files - scanned)).records
        assert shown(r for r in together if r.get("group") == n) == \
            shown(r for r in alone if r["kind"] not in context_kinds)
        assert any(r["kind"] == "wrapper_call" for r in alone)
        contexts |= set(shown(r for r in alone if r["kind"] in context_kinds))
    assert set(shown(r for r in together if "group" not in r)) == contexts
    assert contexts and all(json.loads(r)["file"] == fallible_c for r in contexts)
