"""Build a kernel with lock debugging and KUnit, boot it in QEMU, judge it.

    python3 -m qemu.harness --tree SCRATCH_TREE --out OUTDIR [--selftest]

The stages, each in its own module:
    kconfig   tinyconfig + qemu/*.config + caller fragments, verified
    intree    callers' KUnit directories built in (scratch tree only)
    build     make O=BUILD_DIR -j2, incremental
    initramfs qemu/init.c, static, packed as a newc cpio
    boot      qemu-system-x86_64 -nographic -no-reboot, with a timeout
    verdict   kunit.py parse + console scan + /init's report -> boot.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from qemu import boot as qemu_boot
from qemu import build, initramfs, intree, kconfig, verdict
from qemu.files import locked, write_atomic
from qemu.errors import HarnessError

QEMU_DIR = Path(__file__).resolve().parent
SELFTEST_KUNIT_DIR = QEMU_DIR / "kunit" / "harness_selftest"
SELFTEST_WRONG_KUNIT_DIR = QEMU_DIR / "kunit" / "harness_selftest_wrong"
INITRAMFS_SUBDIR = "sem2mutex-initramfs"
BOOT_LOG = "boot.log"
BOOT_JSON = "boot.json"
BUILD_LOG = "build.log"


@dataclass
class BootRequest:
    tree: Path                 # scratch kernel tree the harness may modify
    out_dir: Path              # where boot.log / boot.json go
    build_dir: Path            # make O=..., kept between runs for incremental builds
    fragments: list[Path] = field(default_factory=list)   # extra config fragments
    kunit_dirs: list[Path] = field(default_factory=list)  # dirs of KUnit C sources to build in
    watch_files: list[str] = field(default_factory=list)  # tree-relative .c files
    accel: str = "tcg"
    timeout_s: int = 300
    cpus: int = 1
    memory_mb: int = 512
    kernel_args: list[str] = field(default_factory=list)  # appended to the command line
    jobs: int = 2


@dataclass
class BootResult:
    passed: bool
    reasons: list[str]
    failed_stage: str | None  # config / tree / build / initramfs, or None if it booted
    tests: verdict.TestCounts
    suites: list[verdict.SuiteResult]
    splats: list[verdict.Splat]
    converted_files_booted: list[str]
    watch_files_not_booted: list[str]
    kunit_sources_booted: list[str]
    seconds: dict[str, float]
    accel: str
    machine: dict
    init: dict
    kunit_parse: dict
    config: dict
    paths: dict[str, str]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=False) + "\n"


def build_dir_lock(build_dir: Path):
    """One harness at a time per build dir: two makes in one O= corrupt it."""
    return locked(build_dir.parent / f".{build_dir.name}.lock")


def build_and_boot(req: BootRequest) -> BootResult:
    """Configure, build, boot and judge; always writes boot.log and boot.json."""
    out_dir = Path(req.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    build_dir = Path(req.build_dir)
    build_log = out_dir / BUILD_LOG
    write_atomic(build_log, "")
    with build_dir_lock(build_dir):
        try:
            result = _build_and_boot_locked(req, Path(req.tree), build_dir, out_dir, build_log)
        except HarnessError as err:
            result = _failed_before_boot(req, build_dir, out_dir, err)
    write_atomic(out_dir / BOOT_JSON, result.to_json())
    return result


def _build_and_boot_locked(req: BootRequest, tree: Path, build_dir: Path,
                           out_dir: Path, build_log: Path) -> BootResult:
    seconds: dict[str, float] = {}
    start = time.monotonic()
    installed = intree.install_kunit_dirs(tree, [Path(d) for d in req.kunit_dirs])
    config = kconfig.configure(tree, build_dir, req.fragments, build_log)
    seconds["config"] = time.monotonic() - start

    built = build.build_kernel(tree, build_dir, build_log, jobs=req.jobs)
    seconds["build"] = built.seconds
    linked = build.built_in_sources(
        list(req.watch_files) + [c for d in installed for c in d.sources], build_dir)
    ramfs = initramfs.build_initramfs(build_dir / INITRAMFS_SUBDIR, build_log)

    # The console goes to a temp name first so boot.log only ever holds a
    # complete log.
    partial_log = out_dir / f".{BOOT_LOG}.partial"
    spec = qemu_boot.BootSpec(kernel=built.image, initrd=ramfs.archive,
                              console_log=partial_log, accel=req.accel,
                              timeout_s=req.timeout_s, memory_mb=req.memory_mb,
                              cpus=req.cpus, kernel_args=tuple(req.kernel_args))
    machine = qemu_boot.boot(spec)
    seconds["boot"] = machine.seconds
    boot_log = out_dir / BOOT_LOG
    partial_log.replace(boot_log)

    log_text = boot_log.read_text(errors="replace")
    init = verdict.parse_init_report(log_text)
    splats = verdict.scan_splats(log_text) + verdict.init_splats(init)
    kunit = verdict.parse_kunit(tree, boot_log)
    judged = verdict.judge(kunit, splats, init, machine.ended_by_itself, machine.timed_out)
    watch = set(req.watch_files)
    return BootResult(
        passed=judged.passed, reasons=judged.reasons, failed_stage=None,
        tests=kunit.counts, suites=kunit.suites, splats=splats,
        converted_files_booted=[c for c in linked if c in watch],
        watch_files_not_booted=[c for c in req.watch_files if c not in linked],
        kunit_sources_booted=[c for c in linked if c not in watch],
        seconds={k: round(v, 1) for k, v in seconds.items()},
        accel=req.accel,
        machine={"ended_by_itself": machine.ended_by_itself, "timed_out": machine.timed_out,
                 "exit_code": machine.exit_code, "timeout_s": req.timeout_s,
                 "command": machine.command},
        init=asdict(init),
        kunit_parse={"exit_code": kunit.exit_code, "summary": kunit.summary},
        config={"fragments": [str(f) for f in config.fragments],
                "changed": config.changed},
        paths=_paths(out_dir, build_dir, built.image, ramfs.archive),
    )


def _failed_before_boot(req: BootRequest, build_dir: Path, out_dir: Path,
                        err: HarnessError) -> BootResult:
    boot_log = out_dir / BOOT_LOG
    write_atomic(boot_log, f"sem2mutex harness: no boot, {err.stage} stage failed:\n{err}\n")
    return BootResult(
        passed=False, reasons=[f"{err.stage} failed: {err}"], failed_stage=err.stage,
        tests=verdict.TestCounts(), suites=[], splats=[], converted_files_booted=[],
        watch_files_not_booted=list(req.watch_files), kunit_sources_booted=[],
        seconds={}, accel=req.accel, machine={}, init={}, kunit_parse={}, config={},
        paths=_paths(out_dir, build_dir, None, None))


def _paths(out_dir: Path, build_dir: Path, image: Path | None, initrd: Path | None) -> dict:
    paths = {"boot_log": str(out_dir / BOOT_LOG), "build_log": str(out_dir / BUILD_LOG),
             "build_dir": str(build_dir)}
    if image:
        paths["kernel"] = str(image)
    if initrd:
        paths["initrd"] = str(initrd)
    return paths


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python3 -m qemu.harness",
        description="Build a kernel tree with lock debugging and KUnit, boot it in QEMU "
                    "and write OUT/boot.log and OUT/boot.json (exit 0 only if it passed).")
    parser.add_argument("--tree", type=Path, required=True,
                        help="scratch kernel tree; the harness adds drivers/sem2mutex_harness/")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--build-dir", type=Path, required=True,
                        help="kernel build directory (make O=...), reused between runs")
    parser.add_argument("--fragment", type=Path, action="append", default=[],
                        help="extra Kconfig fragment (repeatable)")
    parser.add_argument("--kunit-dir", type=Path, action="append", default=[],
                        help="directory of KUnit C sources to build in (repeatable)")
    parser.add_argument("--selftest", action="store_true",
                        help="build in the harness's own smoke suite")
    parser.add_argument("--selftest-wrong", action="store_true",
                        help="also build in the deliberately wrong suite (mutex_unlock "
                             "from a timer); the boot must then fail")
    parser.add_argument("--watch", action="append", default=[],
                        help="tree-relative .c file: report whether it is built in")
    parser.add_argument("--accel", choices=qemu_boot.ACCELERATORS, default="tcg")
    parser.add_argument("--timeout", type=int, default=300, help="boot timeout, seconds")
    parser.add_argument("--cpus", type=int, default=1)
    parser.add_argument("--kernel-arg", action="append", default=[],
                        help="extra kernel command-line argument (repeatable)")
    return parser.parse_args(argv)


def request_from_args(args: argparse.Namespace) -> BootRequest:
    kunit_dirs = list(args.kunit_dir)
    if args.selftest or args.selftest_wrong:
        kunit_dirs.append(SELFTEST_KUNIT_DIR)
    if args.selftest_wrong:
        kunit_dirs.append(SELFTEST_WRONG_KUNIT_DIR)
    return BootRequest(tree=args.tree, out_dir=args.out, build_dir=args.build_dir,
                       fragments=args.fragment, kunit_dirs=kunit_dirs,
                       watch_files=args.watch, accel=args.accel, timeout_s=args.timeout,
                       cpus=args.cpus, kernel_args=args.kernel_arg)


def main(argv: list[str] | None = None) -> int:
    result = build_and_boot(request_from_args(parse_args(argv)))
    status = "PASSED" if result.passed else "FAILED"
    print(f"boot {status}: {result.tests.passed}/{result.tests.total} KUnit tests passed, "
          f"{len(result.splats)} kernel report(s), seconds {result.seconds}")
    for reason in result.reasons:
        print(f"  - {reason}")
    print(f"  {result.paths['boot_log']}")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
