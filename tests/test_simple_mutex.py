"""Tests of the simple-mutex core patch, its KUnit suite and its benchmark.

Fast part: the commit message, the anchored edits failing loudly on a tree
that lacks an anchor, the patch applied to a fresh hard-linked scratch copy
of the 6.1 tree (spatch included), checkpatch on our kernel C, and the
benchmark log parser on sample logs.

Slow part, sharing the harness's cache (~/.cache/sem2mutex/build/...):
- the touched C objects compile with CONFIG_MUTEX_SIMPLE=y;
- a kernel with CONFIG_MUTEX_SIMPLE=y and lock debugging boots in QEMU
  (TCG, 4 CPUs) and passes the simple_mutex KUnit suite without a splat;
- a kernel with the generic mutex, struct simple_mutex and no lock
  debugging runs the benchmark, whose console lines become bench.json.
Cold, each kernel takes several minutes to build on two cores; warm, the
builds are no-ops and the boots take well under a minute.
"""
from __future__ import annotations

import difflib
import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from qemu.files import write_if_changed
from qemu.harness import BootRequest, build_and_boot, build_dir_lock
from qemu.kconfig import configure
from sem2mutex.audit.intake import ensure_default_tree
from sem2mutex.proof.workspace import hardlinked_scratch
from sem2mutex.paths import QEMU_DIR, REPO_ROOT, cache_layout
from sem2mutex.errors import AlreadyApplied, AnchorError
from sem2mutex.proof.bench import (BenchLogError, bench_summary, parse_bench_log,
                                   write_bench_json)
from sem2mutex.series.simple_mutex import (apply_simple_mutex, copy_new_files, new_files,
                                           simple_mutex_change, simple_mutex_edits)
from sem2mutex.tools.spatch import find_spatch

SIMPLE_MUTEX_CONFIG = QEMU_DIR / "simple-mutex.config"
BENCH_CONFIG = QEMU_DIR / "kunit" / "mutex_bench" / "bench.config"
KUNIT_BENCH = QEMU_DIR / "kunit" / "mutex_bench"
OUR_KERNEL_C = sorted([*(REPO_ROOT / "core" / "simple-mutex" / "tree").rglob("*.[ch]"),
                       *KUNIT_BENCH.glob("*.c")])

EXPECTED_TOUCHED = {
    "include/linux/mutex-simple.h",
    "include/linux/simple_mutex.h",
    "kernel/locking/simple_mutex.c",
    "kernel/locking/simple_mutex_kunit.c",
    "include/linux/mutex.h",
    "include/linux/ww_mutex.h",
    "kernel/Kconfig.preempt",
    "kernel/locking/Makefile",
    "kernel/locking/mutex.c",
    "kernel/locking/rtmutex.c",
    "lib/Kconfig.debug",
}
MANIFEST = ".sem2mutex-simple-mutex-touched"
BOOT_CPUS = 4


# --- helpers ---------------------------------------------------------------

def changed_lines(before: Path, after: Path) -> tuple[list[str], list[str]]:
    """Lines removed from and added to a file, from a unified diff."""
    diff = list(difflib.unified_diff(before.read_text().splitlines(),
                                     after.read_text().splitlines(), lineterm=""))
    removed = [d[1:] for d in diff if d.startswith("-") and not d.startswith("---")]
    added = [d[1:] for d in diff if d.startswith("+") and not d.startswith("+++")]
    return removed, added


def fresh_applied_copy(pristine: Path, work: Path) -> tuple[Path, list[str]]:
    shutil.rmtree(work, ignore_errors=True)
    subprocess.run(["cp", "-al", str(pristine), str(work)], check=True)
    return work, apply_simple_mutex(work, find_spatch())


def sync_boot_tree(pristine: Path, applied: Path, touched: list[str], name: str) -> Path:
    """A persistent scratch tree equal to `applied`, for an incremental build.

    Rewrites only files whose content changed since the last run, so their
    mtimes, and the build dir fed from this tree, stay warm; files an older
    version of the patch touched and this one does not go back to pristine.
    """
    tree = hardlinked_scratch(pristine, cache_layout().scratch(name))
    manifest = tree / MANIFEST
    previous = set(manifest.read_text().split()) if manifest.is_file() else set()
    for rel in touched:
        write_if_changed(tree / rel, (applied / rel).read_bytes())
    for rel in previous - set(touched):
        if (pristine / rel).is_file():
            write_if_changed(tree / rel, (pristine / rel).read_bytes())
        else:
            (tree / rel).unlink(missing_ok=True)
    write_if_changed(manifest, "\n".join(sorted(touched)) + "\n")
    return tree


def bench_line(kind: str, impl: str, threads: int, rnd: int, ops: int, ns: int) -> str:
    return (f"[    2.1{rnd}] \t# bench_{kind}: sem2mutex-bench: v=1 kind={kind} "
            f"impl={impl} threads={threads} round={rnd} ops={ops} ns={ns}")


ENV_LINE = ("[    2.00] \t# bench_uncontended: sem2mutex-bench: v=1 kind=env "
            "mutex=generic cpus=4 hz=250 smp=1 preempt=0 prove_locking=0 "
            "debug_lock_alloc=0 debug_mutexes=0 debug_rt_mutexes=0 "
            "debug_mutex_owner=0 lock_stat=0 cs_spins=32 outside_spins=32")


def sample_log() -> str:
    """Three rounds: ns per op 300/100/200 (+ noise), contended 1 and 4."""
    lines = ["[    1.90] KTAP version 1", ENV_LINE]
    per_op = {"semaphore": (300, 310, 900), "mutex": (100, 90, 110),
              "simple_mutex": (200, 210, 190)}
    for rnd in range(3):
        for impl, costs in per_op.items():
            lines.append(bench_line("uncontended", impl, 1, rnd, 1000, costs[rnd] * 1000))
    rates = {1: {"semaphore": 1000, "mutex": 2000, "simple_mutex": 1500},
             4: {"semaphore": 100, "mutex": 4000, "simple_mutex": 50}}
    for threads, row in rates.items():
        for rnd in range(3):
            for impl, rate in row.items():
                # rate critical sections per second over 0.5 s
                lines.append(bench_line("contended", impl, threads, rnd, rate // 2, 500_000_000))
    lines.append("[   12.00] ok 2 mutex_bench")
    return "\n".join(lines) + "\n"


# --- commit message and anchored edits ---------------------------------------

def test_change_message_says_why_and_credits_the_seed():
    change = simple_mutex_change()
    assert change.subject.startswith("locking/mutex: ")
    assert len(change.subject) <= 75
    assert "David Howells" in change.body
    assert "CONFIG_MUTEX_SIMPLE" in change.body
    assert "slower than the semaphores" in change.body
    assert all(len(line) <= 72 for line in change.body.splitlines())


@pytest.fixture(scope="module")
def pristine() -> Path:
    return ensure_default_tree(cache_layout())


def test_missing_anchor_fails_before_touching_anything(pristine, tmp_path):
    edited = {edit.path for edit in simple_mutex_edits()}
    for rel in edited:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pristine / rel, tmp_path / rel)
    mutex_h = tmp_path / "include/linux/mutex.h"
    mutex_h.write_text(mutex_h.read_text().replace("#ifndef CONFIG_PREEMPT_RT\n",
                                                   "#if !IS_ENABLED(CONFIG_PREEMPT_RT)\n"))
    before = {rel: (tmp_path / rel).read_text() for rel in edited}

    with pytest.raises(AnchorError, match="include/linux/mutex.h"):
        apply_simple_mutex(tmp_path, find_spatch())

    assert {rel: (tmp_path / rel).read_text() for rel in edited} == before
    assert not any((tmp_path / rel).exists() for rel in new_files())


def test_applying_twice_is_refused(tmp_path):
    (tmp_path / "include/linux").mkdir(parents=True)
    (tmp_path / "include/linux/simple_mutex.h").write_text("/* already here */\n")
    with pytest.raises(AlreadyApplied):
        copy_new_files(tmp_path)


@pytest.fixture(scope="module")
def applied(pristine) -> tuple[Path, list[str]]:
    return fresh_applied_copy(pristine, cache_layout().scratch("simple-mutex-apply"))


def test_apply_touches_exactly_the_expected_files(applied, pristine):
    tree, touched = applied
    assert set(touched) == EXPECTED_TOUCHED
    for rel in new_files():
        assert (tree / rel).read_bytes() == (REPO_ROOT / "core/simple-mutex/tree" / rel).read_bytes()
        assert not (pristine / rel).exists()
    # The pristine tree was not written through the hard links.
    assert "CONFIG_MUTEX_SIMPLE" not in (pristine / "include/linux/mutex.h").read_text()


def test_spatch_rewrites_both_ww_gates_in_rtmutex(applied, pristine):
    tree, _ = applied
    removed, added = changed_lines(pristine / "kernel/locking/rtmutex.c",
                                   tree / "kernel/locking/rtmutex.c")
    assert len(removed) == len(added) == 2
    assert all("IS_ENABLED(CONFIG_PREEMPT_RT)" in line and "ww_ctx" in line for line in removed)
    assert all("IS_ENABLED(CONFIG_WW_MUTEX_RT)" in line and "ww_ctx" in line for line in added)


def test_header_edits_only_swap_the_implementation(applied, pristine):
    tree, _ = applied
    removed, added = changed_lines(pristine / "include/linux/mutex.h",
                                   tree / "include/linux/mutex.h")
    assert removed == ["#ifndef CONFIG_PREEMPT_RT"]
    assert "#include <linux/mutex-simple.h>" in added
    assert added[-1] == "#elif !defined(CONFIG_PREEMPT_RT)"
    removed, added = changed_lines(pristine / "include/linux/ww_mutex.h",
                                   tree / "include/linux/ww_mutex.h")
    assert [line.replace("CONFIG_PREEMPT_RT", "CONFIG_WW_MUTEX_RT") for line in removed] == added
    assert len(added) == 3


def test_kconfig_parses_and_offers_the_options(applied, tmp_path):
    """Kconfig accepts the edited files and resolves the new symbols."""
    tree, _ = applied
    fragment = tmp_path / "frag.config"
    fragment.write_text("CONFIG_MUTEX_SIMPLE=y\nCONFIG_DEBUG_KERNEL=y\n"
                        "CONFIG_DEBUG_MUTEX_OWNER=y\nCONFIG_PROVE_LOCKING=y\n"
                        "CONFIG_KUNIT=y\nCONFIG_SIMPLE_MUTEX_KUNIT_TEST=y\n")
    build = tmp_path / "build"
    build.mkdir()
    subprocess.run(["sh", "scripts/kconfig/merge_config.sh", "-n", "-O", str(build),
                    str(fragment)], cwd=tree, check=True, capture_output=True)
    config = (build / ".config").read_text().splitlines()
    for wanted in ("CONFIG_MUTEX_SIMPLE=y", "CONFIG_SIMPLE_MUTEX=y", "CONFIG_WW_MUTEX_RT=y",
                   "CONFIG_RT_MUTEXES=y", "CONFIG_DEBUG_MUTEX_OWNER=y",
                   "CONFIG_PROVE_LOCKING=y", "CONFIG_SIMPLE_MUTEX_KUNIT_TEST=y"):
        assert wanted in config
    # The generic mutex's debugging is no longer forced on by lockdep.
    assert not any(line.startswith("CONFIG_DEBUG_MUTEXES=") for line in config)


@pytest.mark.parametrize("path", OUR_KERNEL_C, ids=lambda p: p.name)
def test_our_kernel_c_is_checkpatch_clean(pristine, path):
    proc = subprocess.run(["perl", str(pristine / "scripts/checkpatch.pl"), "--no-tree",
                           "-f", str(path)], capture_output=True, text=True)
    summary = [line for line in proc.stdout.splitlines() if line.startswith("total:")]
    assert summary == [summary[0]] and summary[0].startswith("total: 0 errors, 0 warnings"), \
        proc.stdout


# --- benchmark log parser ----------------------------------------------------

def test_bench_parser_medians_and_ratios():
    summary = bench_summary(parse_bench_log(sample_log()), "tcg")
    assert summary["accel"] == "tcg"
    assert any("TCG" in note for note in summary["notes"])
    assert summary["environment"]["mutex"] == "generic"
    assert summary["environment"]["cpus"] == 4
    assert summary["environment"]["lock_debugging"] is False
    unc = summary["uncontended"]
    assert unc["semaphore"]["median_ns_per_op"] == 310.0
    assert unc["mutex"]["median_ns_per_op"] == 100.0
    assert unc["simple_mutex"]["median_ns_per_op"] == 200.0
    cost = summary["ratios"]["uncontended_cost"]
    # Per round: 200/300, 210/310, 190/900 -> median 200/300.
    assert cost["simple_mutex/semaphore"] == {
        "median": 0.667, "rounds": "all below 1", "per_round": [0.667, 0.677, 0.211]}
    # Per round: 2.0, 2.333, 1.727.
    assert cost["simple_mutex/mutex"]["median"] == 2.0
    assert cost["simple_mutex/mutex"]["rounds"] == "all above 1"
    assert cost["mutex/semaphore"]["median"] == 0.29  # 0.333, 0.29, 0.122
    con = summary["contended"]
    assert set(con) == {"1", "4"}
    assert con["4"]["mutex"]["median_ops_per_s"] == 4000
    throughput = summary["ratios"]["contended_throughput"]
    assert throughput["4"]["simple_mutex/semaphore"]["median"] == 0.5
    assert throughput["1"]["simple_mutex/mutex"]["median"] == 0.75


def test_bench_ratio_with_rounds_on_both_sides_is_mixed():
    log = sample_log().replace(
        "impl=mutex threads=1 round=2 ops=1000 ns=110000",
        "impl=mutex threads=1 round=2 ops=1000 ns=900000")
    cost = bench_summary(parse_bench_log(log), "tcg")["ratios"]["uncontended_cost"]
    assert cost["simple_mutex/mutex"]["rounds"] == "mixed"


def test_bench_parser_flags_lock_debugging():
    log = sample_log().replace("prove_locking=0", "prove_locking=1")
    summary = bench_summary(parse_bench_log(log), "kvm")
    assert summary["environment"]["lock_debugging"] is True
    assert not any("TCG" in note for note in summary["notes"])
    assert any("Lock debugging was on" in note for note in summary["notes"])


@pytest.mark.parametrize("mangle, message", [
    (lambda log: "\n".join(l for l in log.splitlines() if "sem2mutex-bench" not in l),
     "no benchmark results"),
    (lambda log: log + bench_line("uncontended", "mutex", 1, 0, 1, 1) + "\n",
     "reported twice"),
    (lambda log: log + ENV_LINE.replace("cpus=4", "cpus=1") + "\n", "two different kernels"),
    (lambda log: log.replace("impl=mutex threads=1 round=0", "impl=mutex threads=1 round"),
     "malformed"),
    (lambda log: log.replace("impl=semaphore", "impl=rwsem", 1), "unknown implementation"),
    (lambda log: log.replace("v=1 kind=contended", "v=2 kind=contended", 1), "version"),
])
def test_bench_parser_rejects_bad_logs(mangle, message):
    with pytest.raises(BenchLogError, match=message):
        parse_bench_log(mangle(sample_log()))


def test_write_bench_json(tmp_path):
    log = tmp_path / "boot.log"
    log.write_text(sample_log())
    summary = write_bench_json(log, tmp_path / "bench.json", "tcg")
    assert json.loads((tmp_path / "bench.json").read_text()) == summary


# --- build and boot (shares the harness's cache) ------------------------------

@pytest.fixture(scope="module")
def proof_tree(pristine, applied) -> Path:
    tree, touched = applied
    return sync_boot_tree(pristine, tree, touched, "simple-mutex")


def test_touched_objects_compile_with_mutex_simple(proof_tree, tmp_path):
    build_dir = cache_layout().build("simple-mutex")
    objects = ["kernel/locking/simple_mutex.o", "kernel/locking/mutex.o",
               "kernel/locking/ww_rt_mutex.o", "kernel/locking/rtmutex_api.o"]
    with build_dir_lock(build_dir):
        configure(proof_tree, build_dir, [SIMPLE_MUTEX_CONFIG], tmp_path / "config.log")
        proc = subprocess.run(["make", "-C", str(proof_tree), f"O={build_dir}", "-j2",
                               *objects], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for obj in objects:
        assert (build_dir / obj).is_file(), obj


@pytest.fixture(scope="module")
def proof_boot(proof_tree, tmp_path_factory):
    out = tmp_path_factory.mktemp("simple-mutex-boot")
    return build_and_boot(BootRequest(
        tree=proof_tree, out_dir=out, build_dir=cache_layout().build("simple-mutex"),
        fragments=[SIMPLE_MUTEX_CONFIG],
        watch_files=["kernel/locking/simple_mutex.c", "kernel/locking/simple_mutex_kunit.c",
                     "kernel/locking/ww_rt_mutex.c"],
        cpus=BOOT_CPUS, timeout_s=600))


def test_kernel_on_simple_mutex_boots_clean(proof_boot):
    result = proof_boot
    assert result.passed, result.reasons
    assert result.splats == []
    assert result.machine["ended_by_itself"]
    assert result.init["debug_locks"] == 1  # lockdep still armed at the end
    # Every mutex in this kernel is the simple mutex, ww_mutex on rt_mutex.
    assert result.converted_files_booted == ["kernel/locking/simple_mutex.c",
                                             "kernel/locking/simple_mutex_kunit.c",
                                             "kernel/locking/ww_rt_mutex.c"]


def test_simple_mutex_suite_ran_on_both_types(proof_boot):
    suites = {suite.name: suite for suite in proof_boot.suites}
    suite = suites["simple_mutex"]
    assert suite.counts.failed == 0 and suite.counts.skipped == 0
    # Six behaviour tests on simple_mutex and on struct mutex, plus the
    # mutex API and ww_mutex tests.
    assert suite.counts.passed == 14, suite.cases


def test_boot_used_every_cpu(proof_boot):
    log = Path(proof_boot.paths["boot_log"]).read_text(errors="replace")
    assert f"Brought up 1 node, {BOOT_CPUS} CPUs" in log


@pytest.fixture(scope="module")
def bench_boot(pristine, applied, tmp_path_factory):
    tree, touched = applied
    bench_tree = sync_boot_tree(pristine, tree, touched, "simple-mutex-bench")
    out = tmp_path_factory.mktemp("simple-mutex-bench")
    result = build_and_boot(BootRequest(
        tree=bench_tree, out_dir=out, build_dir=cache_layout().build("simple-mutex-bench"),
        fragments=[BENCH_CONFIG], kunit_dirs=[KUNIT_BENCH],
        cpus=BOOT_CPUS, timeout_s=600))
    return result, out


def test_bench_kernel_runs_and_writes_bench_json(bench_boot):
    result, out = bench_boot
    assert result.passed, result.reasons
    summary = write_bench_json(Path(result.paths["boot_log"]), out / "bench.json",
                               result.accel)
    env = summary["environment"]
    assert env["mutex"] == "generic"
    assert env["lock_debugging"] is False
    assert env["cpus"] == BOOT_CPUS
    for impl in ("semaphore", "mutex", "simple_mutex"):
        assert summary["uncontended"][impl]["median_ns_per_op"] > 0
        for threads in ("1", "2", "4"):
            assert summary["contended"][threads][impl]["median_ops_per_s"] > 0
    assert set(summary["ratios"]["contended_throughput"]) == {"1", "2", "4"}
    print(textwrap.indent(json.dumps(summary["ratios"], indent=1), "  "))
