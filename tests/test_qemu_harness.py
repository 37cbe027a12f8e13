"""Tests of the QEMU build-and-boot harness (qemu/).

The first part checks the pure parts (log scan, /init report, verdict,
config verification, initramfs packing, tree hook) on small inputs.  The
second part builds one tinyconfig kernel with lock debugging and boots it
twice: with the harness's smoke suite (the boot must pass) and with the
deliberately wrong suite added (mutex_unlock() from a timer: the boot must
fail, with the lockdep report listed).  Both boots share one build dir in the
cache, so a warm run only relinks; a cold run builds the kernel once.
"""
from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from qemu import boot as qemu_boot
from qemu import build, initramfs, intree, kconfig, verdict
from qemu.errors import ConfigError, TreeError
from qemu.harness import (SELFTEST_KUNIT_DIR, SELFTEST_WRONG_KUNIT_DIR, BootRequest,
                          build_and_boot)
from sem2mutex.audit.intake import ensure_default_tree
from sem2mutex.proof.workspace import hardlinked_scratch
from sem2mutex.paths import cache_layout

REPO_ROOT = Path(__file__).resolve().parent.parent
QEMU_DIR = REPO_ROOT / "qemu"
SELFTEST_BUILD = "qemu-harness-selftest"
BUILT_IN_FILE = "kernel/locking/semaphore.c"        # always in a 6.1 kernel
NOT_BUILT_FILE = "drivers/net/ethernet/intel/e1000/e1000_main.c"  # no PCI here

LOCKDEP_UNLOCK_FROM_TIMER = """\
[    1.100000] KTAP version 1
[    1.200000] =====================================
[    1.200001] WARNING: bad unlock balance detected!
[    1.200002] 6.1.0 #1 Not tainted
[    1.200003] -------------------------------------
[    1.200004] swapper/0 is trying to release lock (&wrong->lock) at:
[    1.200005] [<ffffffff81000000>] wrong_unlock_timer_fn+0x10/0x20
[    1.200006] but there are no more locks to release!
"""

CLEAN_BOOT = """\
[    0.000000] Linux version 6.1.0 (root@host) #1
[    0.100000] RETBleed: WARNING: Spectre v2 mitigation leaves CPU vulnerable
[    0.200000] Spectre V2 : WARNING: Unprivileged eBPF is enabled
[    2.000000] sem2mutex-init: reached /init
sem2mutex-init: release=6.1.0
sem2mutex-init: tainted=262144
sem2mutex-init: debug_locks=1
sem2mutex-init: rebooting
[    2.100000] reboot: Restarting system
"""

KTAP_TWO_SUITES = """\
[    1.000000] KTAP version 1
[    1.000001] 1..2
[    1.000002]     KTAP version 1
[    1.000003]     # Subtest: alpha
[    1.000004]     1..2
[    1.000005]     ok 1 alpha_one
[    1.000006]     ok 2 alpha_two # SKIP not today
[    1.000007] ok 1 alpha
[    1.000008]     KTAP version 1
[    1.000009]     # Subtest: beta
[    1.000010]     1..1
[    1.000011]     # beta_one: EXPECTATION FAILED at x.c:1
[    1.000012]     not ok 1 beta_one
[    1.000013] not ok 2 beta
"""


# --- pure logic: console scan, /init report, verdict --------------------------

def test_lockdep_report_is_a_splat():
    splats = verdict.scan_splats(LOCKDEP_UNLOCK_FROM_TIMER)
    assert [s.kind for s in splats] == ["bad unlock balance"]
    assert splats[0].line == 3
    assert "bad unlock balance detected" in splats[0].text


@pytest.mark.parametrize("line, kind", [
    ("[    3.1] BUG: sleeping function called from invalid context at kernel/x.c:1",
     "sleeping in atomic context"),
    ("[    3.1] WARNING: CPU: 0 PID: 1 at kernel/locking/mutex.c:935 x+0x1/0x2", "WARNING"),
    ("[    3.1] DEBUG_LOCKS_WARN_ON(__owner_task(owner) != current)", "DEBUG_LOCKS_WARN_ON"),
    ("[    3.1] WARNING: possible recursive locking detected", "possible recursive locking"),
    ("[    3.1] WARNING: inconsistent lock state", "inconsistent lock state"),
    ("WARNING: possible circular locking dependency detected", "possible circular locking"),
    ("[    3.1] BUG: scheduling while atomic: kunit/1/0x00000002", "scheduling while atomic"),
    ("[    3.1] BUG: unable to handle page fault for address: 0000", "BUG"),
    ("[    3.1] Kernel panic - not syncing: Attempted to kill init!", "Kernel panic"),
    ("[    3.1] kernel BUG at mm/slub.c:123!", "kernel BUG"),
])
def test_each_kernel_report_kind_is_recognised(line, kind):
    assert [s.kind for s in verdict.scan_splats(line)] == [kind]


def test_clean_boot_has_no_splat_despite_mitigation_warnings():
    assert verdict.scan_splats(CLEAN_BOOT) == []


def test_init_report_parsed():
    report = verdict.parse_init_report(CLEAN_BOOT)
    assert report.reached and report.finished
    assert report.release == "6.1.0"
    assert report.tainted == 262144  # TAINT_TEST only: KUnit ran
    assert report.debug_locks == 1
    assert verdict.init_splats(report) == []


def test_init_report_of_a_broken_kernel_adds_splats():
    log = ("sem2mutex-init: reached /init\nsem2mutex-init: tainted=512\n"
           "sem2mutex-init: debug_locks=0\n")
    report = verdict.parse_init_report(log)
    assert not report.finished
    kinds = {s.kind for s in verdict.init_splats(report)}
    assert kinds == {"lock debugging switched off", "kernel tainted: warning (taint W)"}


def _kunit(total, passed, failed, skipped=0, exit_code=None):
    counts = verdict.TestCounts(total, passed, failed, skipped)
    code = (1 if failed else 0) if exit_code is None else exit_code
    return verdict.KunitReport(counts, [], code, "")


GOOD_INIT = verdict.InitReport(reached=True, finished=True, debug_locks=1)


def test_verdict_passes_a_clean_boot():
    judged = verdict.judge(_kunit(3, 3, 0), [], GOOD_INIT, True, False)
    assert judged.passed and judged.reasons == []


@pytest.mark.parametrize("kunit, splats, init, ended, timed_out, reason", [
    (_kunit(0, 0, 0), [], GOOD_INIT, True, False, "no KUnit test ran"),
    (_kunit(3, 2, 1), [], GOOD_INIT, True, False, "1 KUnit test(s) failed"),
    (_kunit(2, 0, 0, 2), [], GOOD_INIT, True, False, "no KUnit test passed"),
    (_kunit(3, 3, 0, exit_code=1), [], GOOD_INIT, True, False, "kunit.py parse reported"),
    (_kunit(3, 3, 0), [verdict.Splat("WARNING", 7, "WARNING: x")], GOOD_INIT, True, False,
     "1 kernel report(s): WARNING"),
    (_kunit(3, 3, 0), [], GOOD_INIT, False, True, "the machine did not end before the timeout"),
    (_kunit(3, 3, 0), [], verdict.InitReport(), True, False, "/init never ran"),
    (_kunit(3, 3, 0), [], verdict.InitReport(reached=True), True, False, "/init did not finish"),
])
def test_verdict_fails_for_each_reason(kunit, splats, init, ended, timed_out, reason):
    judged = verdict.judge(kunit, splats, init, ended, timed_out)
    assert not judged.passed
    assert any(r.startswith(reason) for r in judged.reasons), judged.reasons


# --- KTAP through the tree's own kunit.py -----------------------------------

@pytest.fixture(scope="module")
def default_tree() -> Path:
    return ensure_default_tree(cache_layout())


def test_kunit_parse_counts_per_suite(default_tree, tmp_path):
    log = tmp_path / "boot.log"
    log.write_text(KTAP_TWO_SUITES)
    report = verdict.parse_kunit(default_tree, log)
    assert report.exit_code != 0  # beta failed
    assert (report.counts.total, report.counts.passed, report.counts.failed,
            report.counts.skipped) == (3, 1, 1, 1)
    by_name = {s.name: s for s in report.suites}
    assert by_name["alpha"].cases == {"alpha_one": "PASS", "alpha_two": "SKIP"}
    assert by_name["beta"].cases == {"beta_one": "FAIL"}


def test_kunit_parse_without_ktap_counts_nothing(default_tree, tmp_path):
    log = tmp_path / "boot.log"
    log.write_text(CLEAN_BOOT)
    report = verdict.parse_kunit(default_tree, log)
    assert report.counts.total == 0
    assert not verdict.judge(report, [], GOOD_INIT, True, False).passed


# --- config verification ------------------------------------------------------

def test_missing_options_named(tmp_path):
    fragment = tmp_path / "x.config"
    fragment.write_text("CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=\"s\"\nCONFIG_D=y\n")
    final = kconfig.parse_config_text("CONFIG_A=y\nCONFIG_B=y\nCONFIG_C=\"s\"\n"
                                      "# CONFIG_D is not set\n")
    missing = kconfig.missing_options(kconfig.requested_values([fragment]), final)
    assert [(m.name, m.requested, m.actual) for m in missing] == [
        ("CONFIG_B", None, "y"), ("CONFIG_D", "y", None)]
    assert "CONFIG_D: requested y (by x.config), got not set" == missing[1].describe()


def test_later_fragment_wins(tmp_path):
    first, second = tmp_path / "1.config", tmp_path / "2.config"
    first.write_text("CONFIG_MUTEX_SIMPLE=y\n")
    second.write_text("# CONFIG_MUTEX_SIMPLE is not set\n")
    requested = kconfig.requested_values([first, second])
    assert requested["CONFIG_MUTEX_SIMPLE"] == (None, second)


def test_our_fragments_ask_for_lock_debugging_and_kunit():
    requested = kconfig.requested_values(kconfig.default_fragments())
    for option in ("CONFIG_DEBUG_KERNEL", "CONFIG_PROVE_LOCKING", "CONFIG_DEBUG_MUTEXES",
                   "CONFIG_DEBUG_ATOMIC_SLEEP", "CONFIG_DEBUG_LOCK_ALLOC", "CONFIG_KUNIT",
                   "CONFIG_SERIAL_8250_CONSOLE", "CONFIG_BLK_DEV_INITRD",
                   "CONFIG_BINFMT_ELF"):
        assert requested[option][0] == "y", option


def test_unmet_dependency_fails_loudly(default_tree, tmp_path):
    # Real Kconfig in a config-only build dir: E1000 needs PCI, which the
    # tiny base leaves off, so Kconfig drops it without a word.
    fragment = tmp_path / "e1000.config"
    fragment.write_text("CONFIG_E1000=y\n")
    build_dir = cache_layout().build("qemu-harness-kconfig-check")
    with pytest.raises(ConfigError) as err:
        kconfig.configure(default_tree, build_dir, [fragment], tmp_path / "config.log")
    assert "CONFIG_E1000: requested y (by e1000.config), got not set" in str(err.value)
    assert "CONFIG_PROVE_LOCKING" not in str(err.value)


# --- initramfs, tree hook, build bookkeeping, QEMU command -------------------

def test_initramfs_holds_static_init_and_console(tmp_path):
    ramfs = initramfs.build_initramfs(tmp_path / "ramfs", tmp_path / "build.log")
    assert ramfs.init_binary.read_bytes()[:4] == b"\x7fELF"
    listing = subprocess.run(["cpio", "-itv"], input=ramfs.archive.read_bytes(),
                             capture_output=True, check=True).stdout.decode()
    lines = {line.split()[-1]: line for line in listing.splitlines()}
    assert set(lines) == {"dev", "dev/console", "proc", "init"}
    assert lines["dev/console"].startswith("crw-------") and "5,   1" in lines["dev/console"]
    assert lines["init"].startswith("-rwxr-xr-x")
    file_type = subprocess.run(["file", "-b", str(ramfs.init_binary)],
                               capture_output=True, text=True).stdout
    assert "statically linked" in file_type or "static-pie" in file_type


def test_newc_records_are_aligned():
    data = initramfs.pack_newc([initramfs.CpioEntry("a", stat.S_IFREG | 0o644, b"xyz")])
    assert data.startswith(b"070701") and len(data) % 4 == 0
    assert data.endswith(b"TRAILER!!!\0" + b"\0" * (-(110 + 11) % 4))


def _fake_tree(root: Path) -> Path:
    (root / "drivers").mkdir(parents=True)
    (root / "drivers/Makefile").write_text("obj-y += base/\n")
    return root


def _suite_dir(root: Path, name: str, makefile: str | None = None) -> Path:
    suite = root / name
    suite.mkdir(parents=True)
    (suite / f"{name}_test.c").write_text("/* test */\n")
    (suite / "notes.txt").write_text("not copied\n")
    if makefile:
        (suite / "Makefile").write_text(makefile)
    return suite


def test_kunit_dirs_hooked_into_drivers(tmp_path):
    tree = _fake_tree(tmp_path / "tree")
    one = _suite_dir(tmp_path / "src", "one")
    two = _suite_dir(tmp_path / "src", "two", makefile="obj-y += two_test.o\n")
    installed = intree.install_kunit_dirs(tree, [one, two])

    assert (tree / "drivers/Makefile").read_text().splitlines()[-1] == intree.HOOK_LINE
    hook = tree / intree.HOOK_DIR
    assert (hook / "Makefile").read_text().endswith("obj-y += one/\nobj-y += two/\n")
    assert "obj-y += one_test.o" in (hook / "one/Makefile").read_text()
    assert (hook / "two/Makefile").read_text() == "obj-y += two_test.o\n"
    assert not (hook / "one/notes.txt").exists()
    assert installed[0].sources == ["drivers/sem2mutex_harness/one/one_test.c"]


def test_reinstall_keeps_mtimes_and_drops_stale_suites(tmp_path):
    tree = _fake_tree(tmp_path / "tree")
    one = _suite_dir(tmp_path / "src", "one")
    two = _suite_dir(tmp_path / "src", "two")
    intree.install_kunit_dirs(tree, [one, two])
    source = tree / intree.HOOK_DIR / "one/one_test.c"
    parent = tree / "drivers/Makefile"
    before = (source.stat().st_mtime_ns, parent.stat().st_mtime_ns)

    intree.install_kunit_dirs(tree, [one])

    assert (source.stat().st_mtime_ns, parent.stat().st_mtime_ns) == before
    assert not (tree / intree.HOOK_DIR / "two").exists()
    assert (parent.read_text().count(intree.HOOK_LINE)) == 1


def test_hook_replaces_instead_of_writing_through_hard_links(tmp_path):
    pristine = _fake_tree(tmp_path / "pristine")
    scratch = hardlinked_scratch(pristine, tmp_path / "scratch")
    intree.install_kunit_dirs(scratch, [_suite_dir(tmp_path / "src", "one")])
    assert intree.HOOK_LINE not in (pristine / "drivers/Makefile").read_text()
    assert intree.HOOK_LINE in (scratch / "drivers/Makefile").read_text()


def test_kunit_dir_without_c_file_rejected(tmp_path):
    tree = _fake_tree(tmp_path / "tree")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TreeError):
        intree.install_kunit_dirs(tree, [empty])


def test_linked_objects_are_archive_members(tmp_path):
    # Thin archives like kbuild's vmlinux.a and lib/lib.a, made by the real
    # `ar`; a stale object that no archive lists is not built in.
    for obj in ("kernel/a.o", "drivers/foo/part.o", "lib/sort.o", "mm/stale.o"):
        (tmp_path / obj).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / obj).write_bytes(b"")
    subprocess.run(["ar", "cDPrST", "vmlinux.a", "kernel/a.o", "drivers/foo/part.o"],
                   cwd=tmp_path, check=True)
    subprocess.run(["ar", "cDPrST", "lib.a", "sort.o"], cwd=tmp_path / "lib", check=True)
    watch = ["kernel/a.c", "mm/stale.c", "drivers/foo/part.c", "lib/sort.c"]
    assert build.built_in_sources(watch, tmp_path) == [
        "kernel/a.c", "drivers/foo/part.c", "lib/sort.c"]


def test_qemu_command_is_headless_and_ends_on_reboot(tmp_path):
    spec = qemu_boot.BootSpec(kernel=tmp_path / "bzImage", initrd=tmp_path / "i.cpio",
                              console_log=tmp_path / "log", kernel_args=("quiet",))
    cmd = qemu_boot.qemu_command(spec)
    assert cmd[:3] == ["qemu-system-x86_64", "-accel", "tcg"]
    assert "-nographic" in cmd and "-no-reboot" in cmd
    assert cmd[cmd.index("-append") + 1] == "console=ttyS0 panic=-1 quiet"
    kvm = qemu_boot.qemu_command(qemu_boot.BootSpec(spec.kernel, spec.initrd, spec.console_log,
                                                    accel="kvm"))
    assert kvm[1:5] == ["-accel", "kvm", "-cpu", "host"]
    with pytest.raises(ValueError):
        qemu_boot.qemu_command(qemu_boot.BootSpec(spec.kernel, spec.initrd, spec.console_log,
                                                  accel="hvf"))


def test_our_kernel_c_is_checkpatch_clean(default_tree):
    # Only the harness's own C: other suites under qemu/kunit/ have owners
    # and tests of their own.
    sources = [QEMU_DIR / "init.c", *sorted(SELFTEST_KUNIT_DIR.glob("*.c")),
               *sorted(SELFTEST_WRONG_KUNIT_DIR.glob("*.c"))]
    assert len(sources) == 3
    for source in sources:
        proc = subprocess.run(["perl", str(default_tree / "scripts/checkpatch.pl"), "--no-tree",
                               "-f", str(source)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout
        assert "total: 0 errors, 0 warnings" in proc.stdout, proc.stdout


def test_cli_help_runs():
    proc = subprocess.run([sys.executable, "-m", "qemu.harness", "--help"], cwd=REPO_ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0
    assert "--selftest-wrong" in proc.stdout and "--accel" in proc.stdout


# --- real builds and boots ------------------------------------------------------

@pytest.fixture(scope="module")
def scratch_tree(default_tree) -> Path:
    return hardlinked_scratch(default_tree, cache_layout().scratch(SELFTEST_BUILD))


def _selftest_request(tree: Path, out_dir: Path, kunit_dirs: list[Path]) -> BootRequest:
    return BootRequest(tree=tree, out_dir=out_dir, build_dir=cache_layout().build(SELFTEST_BUILD),
                       fragments=[], kunit_dirs=kunit_dirs,
                       watch_files=[BUILT_IN_FILE, NOT_BUILT_FILE], timeout_s=300)


@pytest.fixture(scope="module")
def good_boot(scratch_tree, tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("good-boot")
    return build_and_boot(_selftest_request(scratch_tree, out_dir, [SELFTEST_KUNIT_DIR])), out_dir


@pytest.fixture(scope="module")
def wrong_boot(scratch_tree, good_boot, tmp_path_factory):
    # Depends on good_boot only to order the two builds: one build dir,
    # never two makes at once.
    out_dir = tmp_path_factory.mktemp("wrong-boot")
    request = _selftest_request(scratch_tree, out_dir,
                                [SELFTEST_KUNIT_DIR, SELFTEST_WRONG_KUNIT_DIR])
    return build_and_boot(request), out_dir


def test_good_kernel_boots_and_passes(good_boot):
    result, out_dir = good_boot
    assert result.passed, (result.reasons, result.paths)
    assert result.failed_stage is None
    assert result.splats == []
    assert result.tests.total >= 2 and result.tests.failed == 0
    suites = {s.name: s for s in result.suites}
    assert suites["sem2mutex_harness_selftest"].cases == {
        "harness_mutex_lock_unlock": "PASS", "harness_semaphore_down_up": "PASS"}
    assert "sem2mutex_harness_wrong" not in suites
    assert result.machine["ended_by_itself"] and not result.machine["timed_out"]
    assert result.init["finished"] and result.init["debug_locks"] == 1


def test_good_boot_reports_what_is_built_in(good_boot):
    result, _ = good_boot
    assert result.converted_files_booted == [BUILT_IN_FILE]
    assert result.watch_files_not_booted == [NOT_BUILT_FILE]
    assert result.kunit_sources_booted == [
        "drivers/sem2mutex_harness/harness_selftest/harness_selftest.c"]


def test_good_boot_writes_log_and_json(good_boot):
    result, out_dir = good_boot
    on_disk = json.loads((out_dir / "boot.json").read_text())
    assert on_disk["passed"] is True
    assert on_disk["tests"] == {"total": result.tests.total, "passed": result.tests.passed,
                                "failed": 0, "skipped": result.tests.skipped}
    assert set(on_disk["seconds"]) >= {"build", "boot"}
    assert on_disk["accel"] == "tcg"
    log = (out_dir / "boot.log").read_text()
    assert "sem2mutex-init: rebooting" in log and "KTAP version 1" in log
    assert not list(out_dir.glob(".*partial*"))


def test_mutex_unlock_from_timer_fails_the_boot(wrong_boot):
    result, out_dir = wrong_boot
    assert not result.passed
    lock_reports = {"bad unlock balance", "DEBUG_LOCKS_WARN_ON", "inconsistent lock state",
                    "WARNING"}
    assert lock_reports & {s.kind for s in result.splats}, result.splats
    assert any(r.startswith("kernel report") or "kernel report(s)" in r for r in result.reasons)
    # The wrong test itself passes: only lock debugging catches this bug.
    suites = {s.name: s for s in result.suites}
    assert suites["sem2mutex_harness_wrong"].cases == {"harness_mutex_unlock_from_timer": "PASS"}
    assert result.init["debug_locks"] == 0
    on_disk = json.loads((out_dir / "boot.json").read_text())
    assert on_disk["passed"] is False and on_disk["splats"]


def test_boot_timeout_is_enforced(good_boot, wrong_boot, tmp_path):
    # Reuse the last kernel, but give it an init that does not exist and
    # panic=0 (wait forever on panic): the guest can never end by itself, so
    # only the timeout can stop it however fast the host is.  (A short budget
    # alone is not enough: a quick CI host booted this kernel in 1.3 s.)
    result, _ = wrong_boot
    spec = qemu_boot.BootSpec(kernel=Path(result.paths["kernel"]),
                              initrd=Path(result.paths["initrd"]),
                              console_log=tmp_path / "console.log", timeout_s=2,
                              kernel_args=("rdinit=/sem2mutex-no-such-init", "panic=0"))
    outcome = qemu_boot.boot(spec)
    assert outcome.timed_out and not outcome.ended_by_itself
    assert outcome.seconds < 2 + qemu_boot.KILL_GRACE_S + 5
