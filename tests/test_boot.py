"""Tests of the --boot stage (sem2mutex/boot.py): the converted kernel in QEMU.

Fast part: our kernel C is checkpatch-clean; the boot tree is synced file by
file (unchanged files keep their mtimes, files an earlier run changed go
back to pristine); the drivers/Makefile hooks; the fixtures of tests/kernel/
as the real analysis and rewrite convert them, with and without the verdict
that forces the timer-released fixture to a mutex.

Slow part, all in the cache (~/.cache/sem2mutex/): a flag-day series limited
to the directories the boot kernels build (`convert.py --dir ...`: the core
patches plus every converted file they contain, so no down()/up() is left
in them), then three boots of the default kernel and one of the
CONFIG_MUTEX_SIMPLE kernel:
- the default boot passes: every KUnit test of both suites, no kernel report;
- the forced-wrong boot (same build dir: only the hrtimer fixture changes)
  fails, with lock debugging's report of the release from the hrtimer;
- the CONFIG_MUTEX_SIMPLE boot passes with the simple_mutex suite of patch 2 too.
Cold, each kernel builds in minutes on two cores; warm, a boot is a relink
at most plus well under a minute in QEMU.
"""
from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from conftest import REPO, load_json, run_convert
from qemu import intree
from sem2mutex.proof import boot
from sem2mutex.series.core_api import find_old_api_callers
from sem2mutex.audit.decisions import load_verdicts
from sem2mutex.errors import BadSeries
from sem2mutex.proof.bench import bench_series
from sem2mutex.tools.spatch import find_spatch
from sem2mutex.paths import cache_layout
from sem2mutex.progress import Progress

FIXTURES = "drivers/sem2mutex_fixtures"
RELEASED = f"field:{FIXTURES}/fixture_released.c"
HRTIMER_FIXTURE = f"{RELEASED}:struct fixture_hrtimer_op.armed"
EXPECTED_MUTEXES = {
    f"static:{FIXTURES}/fixture_binary.c:fixture_counter_sem",
    f"static:{FIXTURES}/fixture_binary.c:fixture_log_sem",
    f"field:{FIXTURES}/fixture_binary.c:struct fixture_table.lock",
}
EXPECTED_CLASSES = {
    f"field:{FIXTURES}/fixture_counting.c:struct fixture_pool.slots_left": "counting",
    f"static:{FIXTURES}/fixture_counting.c:fixture_lanes": "counting",
    f"field:{FIXTURES}/fixture_signal.c:struct fixture_mailbox.posted": "signal",
    f"static:{FIXTURES}/fixture_signal.c:fixture_ready": "signal",
    HRTIMER_FIXTURE: "ambiguous",
    f"{RELEASED}:struct fixture_tasklet_op.scheduled": "ambiguous",
    f"{RELEASED}:struct fixture_work_op.queued": "ambiguous",
} | {m: "mutex" for m in EXPECTED_MUTEXES}
RELEASE_REASONS = {
    HRTIMER_FIXTURE: "timer-context",
    f"{RELEASED}:struct fixture_tasklet_op.scheduled": "tasklet-context",
    f"{RELEASED}:struct fixture_work_op.queued": "work-item-release",
}
# Every directory with a converted file the default and CONFIG_MUTEX_SIMPLE
# kernels build (ACPI comes with the latter); the flag-day patch removes
# down() and up(), so a user left out here breaks the build.
SERIES_DIRS = ("kernel", "arch/x86", "drivers/parport", "drivers/acpi")
SUITES = {"sem2mutex_semaphore_api": 10, "sem2mutex_converted_fixtures": 12}
CONVERTED_BUILT_IN = {"kernel/printk/printk.c", "kernel/locking/semaphore.c",
                      "drivers/parport/ieee1284.c", "arch/x86/kernel/cpu/intel.c"}
LOCK_DEBUG_KINDS = {"bad unlock balance", "DEBUG_LOCKS_WARN_ON", "inconsistent lock state",
                    "WARNING", "BUG", "lock debugging switched off"}

FORCED_WRONG = textwrap.dedent(f"""\
    # Deliberately wrong: fixture_hrtimer_done() releases this semaphore from
    # an hrtimer, in hard interrupt context, while its owner sleeps.
    [[verdict]]
    instance = "{HRTIMER_FIXTURE}"
    class = "mutex"
    override = true
    reviewer = "tests/test_boot.py <forced-wrong@example.invalid>"
    reason = "forced wrong conversion: the boot must fail"
    """)

OUR_KERNEL_C = sorted([*(REPO / "tests" / "kernel").glob("*.[ch]"),
                       *(REPO / "qemu" / "kunit" / "converted_fixtures").glob("*.c")])


# --- fast: style, tree sync, hooks ---------------------------------------------

@pytest.fixture(scope="module")
def pristine() -> Path:
    tree = cache_layout().default_tree
    if not (tree / "Makefile").is_file():
        from conftest import default_tree
        tree = default_tree()
    return tree


@pytest.mark.parametrize("path", OUR_KERNEL_C, ids=lambda p: p.name)
def test_fixture_and_suite_c_are_checkpatch_clean(pristine, path):
    proc = subprocess.run(["perl", str(pristine / "scripts/checkpatch.pl"), "--no-tree",
                           "-f", str(path)], capture_output=True, text=True)
    summary = [line for line in proc.stdout.splitlines() if line.startswith("total:")]
    assert summary and summary[0].startswith("total: 0 errors, 0 warnings"), proc.stdout


def small_tree(root: Path) -> Path:
    for rel, text in {"a.c": "a\n", "b.c": "b\n", "sub/c.h": "c\n",
                      "drivers/Makefile": "obj-y += base/\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_sync_rewrites_only_what_changed_and_restores_the_rest(tmp_path):
    pristine = small_tree(tmp_path / "pristine")
    tree = tmp_path / "tree"
    subprocess.run(["cp", "-al", str(pristine), str(tree)], check=True)

    assert boot.sync_boot_tree(pristine, tree, {"a.c": b"A\n", "new/d.c": b"d\n",
                                                "b.c": None}) == 3
    assert (tree / "a.c").read_text() == "A\n" and not (tree / "b.c").exists()
    assert (pristine / "a.c").read_text() == "a\n"  # a new inode, not written through
    assert (pristine / "b.c").exists()
    before = (tree / "a.c").stat().st_mtime_ns

    # Same content again: nothing is rewritten, mtimes stay for make.
    assert boot.sync_boot_tree(pristine, tree, {"a.c": b"A\n", "new/d.c": b"d\n",
                                                "b.c": None}) == 0
    assert (tree / "a.c").stat().st_mtime_ns == before

    # A file the last run changed and this one does not goes back to pristine.
    assert boot.sync_boot_tree(pristine, tree, {"sub/c.h": b"C\n"}) == 4
    assert (tree / "a.c").read_text() == "a\n" and (tree / "b.c").read_text() == "b\n"
    assert not (tree / "new/d.c").exists()
    assert (tree / "sub/c.h").read_text() == "C\n"


def test_drivers_makefile_hooks_fixtures_and_suites_once(tmp_path):
    tree = small_tree(tmp_path / "tree")
    text = boot.drivers_makefile("obj-y += base/\n", with_fixtures=True)
    (tree / "drivers/Makefile").write_text(text)
    lines = text.splitlines()
    assert lines.index("obj-y += sem2mutex_fixtures/") < lines.index(intree.HOOK_LINE)
    # The harness finds its hook and leaves the file (and its mtime) alone.
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "t.c").write_text("/* test */\n")
    before = (tree / "drivers/Makefile").stat().st_mtime_ns
    intree.install_kunit_dirs(tree, [suite])
    assert (tree / "drivers/Makefile").read_text() == text
    assert (tree / "drivers/Makefile").stat().st_mtime_ns == before
    assert intree.HOOK_LINE in boot.drivers_makefile("x\n", with_fixtures=False)
    assert "sem2mutex_fixtures" not in boot.drivers_makefile("x\n", with_fixtures=False)


def test_forced_wrong_verdict_file_is_valid(tmp_path):
    path = tmp_path / "wrong.toml"
    path.write_text(FORCED_WRONG)
    [verdict] = load_verdicts(path)
    assert verdict.instance == HRTIMER_FIXTURE and verdict.sem_class.value == "mutex"


def test_bad_input_fails_before_writing_anything(pristine, tmp_path):
    out = tmp_path / "out"
    req = boot.BootStageRequest(tree=pristine, series_dir=tmp_path, out_dir=out,
                                spatch=find_spatch())
    with pytest.raises(BadSeries, match="no series file"):
        boot.boot_series(req, Progress(quiet=True))
    (tmp_path / "series").write_text("0001-x.patch\n")
    with pytest.raises(BadSeries, match="missing patch files"):
        bench_series(req, Progress(quiet=True))
    assert not out.exists()


# --- the fixtures, as the real analysis and rewrite convert them ---------------

def convert_fixtures(pristine: Path, verdicts, use_cache: bool = False
                     ) -> boot.ToolConversion:
    """Runs the analysis and the rewrite (not the cache) unless use_cache."""
    return boot.convert_with_tool(pristine, {FIXTURES: boot.FIXTURE_SOURCES}, verdicts,
                                  find_spatch(), 2, Progress(quiet=True), use_cache)


@pytest.fixture(scope="module")
def fixture_conversion(pristine) -> boot.ToolConversion:
    return convert_fixtures(pristine, [])


def test_analysis_classes_every_fixture_as_written(fixture_conversion):
    found = {c.instance: c for c in fixture_conversion.instances}
    assert {i: c.sem_class for i, c in found.items()} == EXPECTED_CLASSES
    for instance, reason in RELEASE_REASONS.items():
        assert "unpaired-up" in found[instance].reasons
        assert reason in found[instance].reasons
    assert {i for i, c in found.items() if c.became == "mutex"} == EXPECTED_MUTEXES
    assert fixture_conversion.stale_verdicts == []


def test_rewrite_converts_fixture_text(fixture_conversion, tmp_path):
    files = fixture_conversion.files
    binary = files[f"{FIXTURES}/fixture_binary.c"].decode()
    assert "static DEFINE_MUTEX(fixture_counter_sem);" in binary
    assert "__MUTEX_INITIALIZER(fixture_log_sem)" in binary
    assert "mutex_init(&fixture_table.lock);" in binary
    # down_trylock() returns 0 on success, mutex_trylock() 1: both forms.
    assert "if (!mutex_trylock(&fixture_table.lock))" in binary
    assert "busy = !mutex_trylock(&fixture_table.lock);" in binary
    released = files[f"{FIXTURES}/fixture_released.c"].decode()
    assert "up_sem(&op->armed);" in released
    for mutex_api in ("mutex_lock(", "mutex_unlock(", "struct mutex", "<linux/mutex.h>"):
        assert mutex_api not in released
    # Flag-day ready: spatch finds no call of down() ... up() left.
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    c_files = sorted(rel for rel in files if rel.endswith(".c"))
    assert len(c_files) == 4
    assert find_old_api_callers(tmp_path, find_spatch(), c_files) == []
    # ... where the fixtures as written have them in every file.
    before = find_old_api_callers(boot.FIXTURE_SOURCES, find_spatch(), [Path(f).name for f in c_files])
    assert {c.file for c in before} == {Path(f).name for f in c_files}


def test_forced_verdict_makes_the_hrtimer_fixture_a_mutex(pristine, tmp_path):
    path = tmp_path / "wrong.toml"
    path.write_text(FORCED_WRONG)
    conversion = convert_fixtures(pristine, load_verdicts(path))
    found = {c.instance: c for c in conversion.instances}
    assert found[HRTIMER_FIXTURE].became == "mutex"
    assert found[HRTIMER_FIXTURE].pinned_by.startswith("tests/test_boot.py")
    released = conversion.files[f"{FIXTURES}/fixture_released.c"].decode()
    assert "mutex_unlock(&op->armed);" in released
    # Only that instance changed.
    assert {i for i, c in found.items() if c.became == "mutex"} == \
        EXPECTED_MUTEXES | {HRTIMER_FIXTURE}


def test_cached_conversion_is_the_conversion(pristine, fixture_conversion):
    """fixture_conversion stored its result; the boots read it back."""
    cached = convert_fixtures(pristine, [], use_cache=True)
    assert cached.files == fixture_conversion.files
    assert cached.instances == fixture_conversion.instances
    key = boot.conversion_key(pristine, {FIXTURES: boot.FIXTURE_SOURCES}, [], find_spatch())
    wrong = load_verdicts_text(FORCED_WRONG)
    assert boot.conversion_key(pristine, {FIXTURES: boot.FIXTURE_SOURCES}, wrong,
                               find_spatch()) != key


def load_verdicts_text(text: str):
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "verdicts.toml"
        path.write_text(text)
        return load_verdicts(path)


# --- slow: a series, then the boots ---------------------------------------------

@pytest.fixture(scope="module")
def series_dir(tmp_path_factory, pristine) -> Path:
    out = tmp_path_factory.mktemp("boot-series")
    args = ["-q", "-o", str(out), "--identity", "Boot Test <boot-test@example.invalid>"]
    for d in SERIES_DIRS:
        args += ["--dir", d]
    run_convert(*args)
    assert (out / "series").is_file()
    return out


def boot_request(pristine, series_dir, out: Path, **kw) -> boot.BootStageRequest:
    return boot.BootStageRequest(tree=pristine, series_dir=series_dir, out_dir=out,
                                 spatch=find_spatch(), jobs=2, timeout_s=600, **kw)


@pytest.fixture(scope="module")
def good_boot(pristine, series_dir, tmp_path_factory) -> boot.BootOutcome:
    out = tmp_path_factory.mktemp("boot-good")
    return boot.boot_series(boot_request(pristine, series_dir, out), Progress(quiet=True))


def test_converted_kernel_boots_clean(good_boot):
    result = good_boot.result
    assert good_boot.passed, good_boot.reasons
    assert result.splats == []
    assert result.machine["ended_by_itself"]
    assert result.init["debug_locks"] == 1  # lock debugging still armed at the end
    suites = {s.name: s for s in result.suites}
    for name, count in SUITES.items():
        assert suites[name].counts.passed == count, suites[name].cases
        assert suites[name].counts.failed == 0


def test_boot_json_has_the_issue_fields(good_boot):
    report = load_json(good_boot.boot_json)
    assert report["passed"] is True
    assert set(report["tests"]) == {"total", "passed", "failed", "skipped"}
    assert report["tests"]["total"] == sum(SUITES.values())
    assert report["splats"] == []
    assert report["seconds"]["build"] >= 0 and report["seconds"]["boot"] > 0
    assert good_boot.boot_log.read_text().count("sem2mutex-init: rebooting") == 1
    # Converted files of the series in the booted kernel, and the fixtures.
    booted = set(report["converted_files_booted"])
    assert CONVERTED_BUILT_IN <= booted
    assert f"{FIXTURES}/fixture_released.c" in booted
    assert set(report["conversions"]["became_mutex"]) == EXPECTED_MUTEXES
    assert set(report["conversions"]["kept_counting_api"]) == \
        set(EXPECTED_CLASSES) - EXPECTED_MUTEXES


def test_no_old_api_and_no_harness_selftest_in_the_flag_day_kernel(good_boot):
    sources = good_boot.result.kunit_sources_booted
    assert not any("harness_selftest" in s for s in sources)
    tree = Path(load_json(good_boot.boot_json)["series"]["tree"])
    header = (tree / "include/linux/semaphore.h").read_text()
    assert "down_sem(" in header and "extern void down(" not in header


@pytest.fixture(scope="module")
def wrong_boot(pristine, series_dir, good_boot, tmp_path_factory) -> boot.BootOutcome:
    """After good_boot, in the same tree and build dir: one file differs."""
    out = tmp_path_factory.mktemp("boot-wrong")
    decisions = out / "forced-wrong.toml"
    decisions.write_text(FORCED_WRONG)
    return boot.boot_series(boot_request(pristine, series_dir, out, decisions=decisions),
                            Progress(quiet=True))


def test_forced_wrong_conversion_fails_the_boot(wrong_boot):
    result = wrong_boot.result
    assert not wrong_boot.passed
    assert HRTIMER_FIXTURE in load_json(wrong_boot.boot_json)["conversions"]["became_mutex"]
    kinds = {s.kind for s in result.splats}
    assert kinds & LOCK_DEBUG_KINDS, result.splats
    assert any("kernel report" in r for r in wrong_boot.reasons), wrong_boot.reasons
    # The release "works": every test passes; only lock debugging saw it.
    assert result.tests.failed == 0 and result.tests.passed == sum(SUITES.values())
    # The report names the hrtimer callback that released the mutex.
    log = wrong_boot.boot_log.read_text(errors="replace").splitlines()
    first = min(s.line for s in result.splats if s.line > 0)
    assert any("fixture_hrtimer_done" in line for line in log[first - 1:first + 60]), \
        "\n".join(log[first - 1:first + 60])


def test_forced_wrong_boot_rebuilt_only_the_fixture(wrong_boot, good_boot):
    assert wrong_boot.result.paths["build_dir"] == good_boot.result.paths["build_dir"]
    build_log = Path(wrong_boot.result.paths["build_log"]).read_text()
    compiled = [line.split()[-1] for line in build_log.splitlines()
                if line.strip().startswith("CC ")]
    assert f"{FIXTURES}/fixture_released.o" in compiled
    assert len(compiled) <= 5, compiled


@pytest.fixture(scope="module")
def simple_mutex_boot(pristine, series_dir, tmp_path_factory) -> boot.BootOutcome:
    out = tmp_path_factory.mktemp("boot-simple")
    return boot.boot_series(boot_request(pristine, series_dir, out, simple_mutex=True),
                            Progress(quiet=True))


def test_converted_kernel_boots_clean_on_the_simple_mutex(simple_mutex_boot):
    outcome = simple_mutex_boot
    assert outcome.passed, outcome.reasons
    assert outcome.boot_json.parent.name == "simple-mutex"
    result = outcome.result
    assert result.splats == [] and result.init["debug_locks"] == 1
    suites = {s.name: s.counts for s in result.suites}
    assert set(suites) == set(SUITES) | {"simple_mutex"}
    assert all(c.failed == 0 and c.passed > 0 for c in suites.values()), suites
    assert "drivers/acpi/osl.c" in result.converted_files_booted
    log = outcome.boot_log.read_text(errors="replace")
    assert f"Brought up 1 node, {boot.MULTI_CPU} CPUs" in log


def test_a_series_is_applied_once(pristine, series_dir, good_boot):
    """good_boot applied it with git am; later boots read the cached result."""
    import io
    stream = io.StringIO()
    patches, changes = boot.series_changes(pristine, series_dir, Progress(stream=stream))
    assert "series applied before" in stream.getvalue()
    assert patches == (series_dir / "series").read_text().split()
    assert "kernel/printk/printk.c" in changes and "kernel/locking/semaphore.c" in changes
    assert b"down_sem(&console_sem)" in changes["kernel/printk/printk.c"]
