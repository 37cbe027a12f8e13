"""How a fact pass spreads its files over spatch's processes: one spatch,
the costliest files first, each file timed by the clock rules around the
program (its cost for the next run, -v's slowest files, the progress, the
file a failed spatch was on); the tree-wide greps' batches; and
checkpatch.pl's runs, cut by the lines the patches add."""
from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from sem2mutex.errors import SpatchError
from sem2mutex.paths import COCCI_DIR
from sem2mutex.progress import Progress
from sem2mutex.tools.batches import heaviest_first
from sem2mutex.tools.kernel_scripts import PATCH_OVERHEAD_LINES, added_lines, checkpatch_batches
from sem2mutex.tools.spatch import (ClockLine, SpatchRunner, clock_seconds, files_failure,
                                    files_on_failure, find_spatch, with_clock)

CALLS = textwrap.dedent("""\
    virtual report

    @initialize:python@
    @@
    import json

    @call depends on report@
    identifier f;
    position p;
    @@
    f@p(...)

    @script:python@
    f << call.f;
    p << call.p;
    @@
    print(json.dumps(dict(kind="call", name=f, file=p[0].file, line=int(p[0].line))),
          flush=True)
    """)


def c_file(calls: int) -> str:
    body = "".join(f"\tg{n}();\n" for n in range(calls))
    return f"void f(void)\n{{\n{body}}}\n"


def tree_of(tmp_path: Path, sizes: dict[str, int]) -> Path:
    tree = tmp_path / "tree"
    for name, calls in sizes.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(c_file(calls))
    return tree


class Counted(Progress):
    def __init__(self) -> None:
        super().__init__(quiet=True)
        self.counts: list[tuple[str, int, int]] = []

    def count(self, label: str, done: int, total: int) -> None:
        self.counts.append((label, done, total))


def test_virtual_lines_stay_first_and_the_clock_rules_go_around():
    program = with_clock("// a rule\nvirtual report\nvirtual patch\n\n@r@\n@@\nfoo();\n")
    lines = program.splitlines()
    assert lines[:2] == ["virtual report", "virtual patch"]
    assert not any(line.startswith("virtual ") for line in lines[2:])
    start, rule, end = (program.index('"start"'), program.index("@r@"), program.index('"end"'))
    assert start < rule < end


def test_a_file_costs_from_the_end_of_the_one_before():
    lines = [ClockLine("init", None, 1, 100.0),
             ClockLine("start", "a.c", 11, 101.0), ClockLine("end", "a.c", 11, 104.0),
             ClockLine("start", "b.c", 11, 104.5), ClockLine("end", "b.c", 11, 105.0),
             ClockLine("start", "c.c", 12, 100.5), ClockLine("end", "c.c", 12, 102.0),
             # d.c timed out: its rules never ended; e.c's start closes it
             ClockLine("start", "d.c", 12, 102.2), ClockLine("start", "e.c", 12, 110.0),
             ClockLine("end", "e.c", 12, 111.0),
             # f.c was still running when spatch ended
             ClockLine("start", "f.c", 11, 105.5)]
    seconds = clock_seconds(lines, ended=107.0)
    assert seconds == pytest.approx({"a.c": 4.0, "b.c": 1.0, "c.c": 2.0, "d.c": 8.0,
                                     "e.c": 1.0, "f.c": 2.0})


def test_a_failed_pass_names_the_files_its_processes_were_on():
    order = ["big.c", "mid.c", "small.c", "tiny.c"]
    lines = [ClockLine("start", "small.c", 2, 1.0), ClockLine("end", "small.c", 2, 2.0)]
    stderr = ["HANDLING: big.c\n", "HANDLING: small.c\nHANDLING: mid.c\n"]
    assert files_on_failure(order, lines, stderr) == ["big.c", "mid.c"]
    # a python rule that raised on a file its process had left: what did not end
    done = ["HANDLING: big.c\nHANDLING: small.c\n"]
    assert files_on_failure(order, lines, done) == ["big.c", "mid.c", "tiny.c"]
    crashed = subprocess.CompletedProcess([], -11, "", "HANDLING: big.c\n")
    assert files_failure(["big.c"], 4, crashed) == \
        "spatch died of SIGSEGV on big.c (a pass over 4 files): HANDLING: big.c"


@pytest.mark.parametrize("jobs", [1, 2])
def test_one_spatch_gives_every_file_its_records_and_its_seconds(tmp_path, jobs):
    sizes = {"drivers/a.c": 3, "drivers/b.c": 400, "fs/c.c": 1, "fs/d.c": 60}
    tree = tree_of(tmp_path, sizes)
    progress = Counted()
    runner = SpatchRunner(find_spatch(), tree, jobs, progress)
    output = runner.run_program("calls", CALLS, sorted(sizes))
    found = {}
    for rec in output.records:
        found.setdefault(rec["file"], []).append(rec["line"])
    assert {f: len(lines) for f, lines in found.items()} == sizes
    assert sorted(found["fs/d.c"]) == list(range(3, 63))
    assert set(runner.seconds_by_file) == set(sizes)
    assert all(0.0 < s < 60.0 for s in runner.seconds_by_file.values())
    assert progress.counts[-1] == ("calls", 4, 4)
    assert [done for _, done, _ in progress.counts] == \
        sorted(done for _, done, _ in progress.counts)
    # nothing of spatch's own is left in the tree (parmap's output files)
    assert sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()) == \
        sorted(sizes)


def test_a_python_rule_that_raised_fails_the_pass_naming_its_file(tmp_path):
    tree = tree_of(tmp_path, {"a.c": 2, "b.c": 5})
    raising = CALLS.replace("print(json.dumps(", "assert f != 'g4', f\nprint(json.dumps(")
    runner = SpatchRunner(find_spatch(), tree, 2, Progress(quiet=True))
    with pytest.raises(SpatchError, match=r"on b\.c \(a pass over 2 files\)"):
        runner.run_program("calls", raising, ["a.c", "b.c"])


def test_batches_give_every_name_once_the_heaviest_first_and_alone():
    """The tree-wide greps' units in batches of about a quarter of a
    worker's share; a unit heavier than that goes alone, first."""
    weights = {f"drivers/u{n}": 0.1 + (n % 7) * 0.3 for n in range(400)}
    weights["drivers/huge"] = 100.0
    batches = heaviest_first(weights, 2)
    assert sorted(n for b in batches for n in b) == sorted(weights)
    assert batches[0] == ["drivers/huge"]
    share = sum(weights.values()) / 8
    assert all(sum(weights[n] for n in b) < share + 1.0 for b in batches[1:])


def test_many_light_names_make_a_quarter_share_each():
    weights = {f"fs/u{n}": 0.1 for n in range(900)}
    assert [len(b) for b in heaviest_first(weights, 2)] == [113] * 7 + [109]


def test_checkpatch_runs_share_the_added_lines(tmp_path):
    """One patch adding 1,600 lines and seventy adding 13 each: two runs of
    about the same work, the big patch first, every patch once."""
    def patch(name: str, added: int) -> Path:
        path = tmp_path / name
        path.write_text("--- a/x.c\n+++ b/x.c\n@@ -1 +1 @@\n" + " ctx\n-old\n"
                        + "+new\n" * added)
        return path
    big = patch("0002-core.patch", 1600)
    small = [patch(f"{n:04}-unit.patch", 13) for n in range(3, 73)]
    batches = checkpatch_batches([big, *small], jobs=2)
    assert sorted(p for b in batches for p in b) == sorted([big, *small])
    assert batches[0][0] == big
    work = [sum(PATCH_OVERHEAD_LINES + added_lines(p) for p in b) for b in batches]
    assert len(batches) == 2 and max(work) / min(work) < 1.1, work
    assert added_lines(big) == 1600


def test_a_file_s_facts_do_not_depend_on_the_files_its_process_read_before(tmp_path):
    """contexts.cocci follows calls to the functions of the file at hand: a
    function defined in a file read earlier by the same spatch process is
    no function of the next file (the records would depend on how the
    files fell to the processes, and the cache would keep them so)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    # the bigger file goes first
    (tree / "a.c").write_text("/* " + "padding " * 200 + "*/\nvoid helper(void)\n{\n}\n")
    (tree / "b.c").write_text("void user(void)\n{\n\thelper();\n\tlocal();\n}\n"
                              "void local(void)\n{\n}\n")
    program = (COCCI_DIR / "facts" / "contexts.cocci").read_text()

    def calls(files):
        runner = SpatchRunner(find_spatch(), tree, 1, Progress(quiet=True))
        return sorted((r["file"], r["callee"]) for r in
                      runner.run_program("contexts", program, files).records
                      if r["kind"] == "calls")
    assert calls(["a.c", "b.c"]) == calls(["b.c"]) == [("b.c", "local")]
