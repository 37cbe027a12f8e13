"""Command line: parse options, run the stages, map failures to exit codes."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from sem2mutex.audit.pipeline import AnalysisRequest, analyse
from sem2mutex.proof.boot import BootStageError, BootStageRequest, bench_series, boot_series
from sem2mutex.audit.decisions import load_verdicts
from sem2mutex.tools.fs import check_writable_dir, is_within
from sem2mutex.audit.intake import IntakeError, ensure_default_tree, find_spatch, normalise_dirs, open_tree
from sem2mutex.tools.maintainers import Maintainers
from sem2mutex.paths import REPO_ROOT, cache_layout
from sem2mutex.progress import Progress
from sem2mutex.audit.report import write_reports
from sem2mutex.series.builder import (MODES, SeriesError, SeriesRequest, default_identity, generate_series,
                     split_identity)
from sem2mutex.tools.spatch import SpatchError
from sem2mutex.proof.verify import VerifyError, VerifyRequest, verify_series

EXIT_BAD_INPUT = 2
EXIT_TOOL_FAILURE = 1

DESCRIPTION = """\
Audit every struct semaphore of a Linux kernel tree with Coccinelle and
classify each one: mutex (binary, released by its owner), counting,
signal (starts at 0), or ambiguous (needs a human).  Then write the patch
series that converts the binary ones to struct mutex and moves the others
to the down_sem() counting API.  Writes into OUTDIR: audit.json, audit.md,
the series (0000-cover-letter.patch, 0001-...patch, series), scope.md and
scope.json.  The tree is only read, never written.

Proof stages, each run after the series is written, on scratch copies of
the tree kept in the sem2mutex cache (reruns are incremental):
  --verify  git am the series, check no old-API caller is left, compile
            every touched file under x86_64 allmodconfig: verify.json
  --boot    build a lock-debugging kernel carrying the series and the
            converted fixtures, boot it in QEMU, run the KUnit suites:
            boot.json and boot.log; then the same with CONFIG_MUTEX_SIMPLE=y
            (the seed's mutex): simple-mutex/boot.json
  --bench   boot a benchmark kernel comparing struct semaphore, the 6.1
            mutex and the simple mutex: bench.json"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="convert.py", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tree", nargs="?", type=Path,
                   help="kernel source tree (default: Debian's linux-source-6.1, "
                        "unpacked once into the sem2mutex cache)")
    p.add_argument("-o", "--outdir", type=Path, default=REPO_ROOT / "patches-out",
                   help="where reports (and the series) are written (default: patches-out/)")
    p.add_argument("--analyze-only", action="store_true",
                   help="stop after the audit report")
    p.add_argument("--dir", dest="dirs", action="append", default=[], metavar="SUBDIR",
                   help="only consider files under SUBDIR (repeatable), like make M=; "
                        "headers anywhere in the tree are still read")
    p.add_argument("--decisions", type=Path, metavar="FILE",
                   help="TOML file of reviewer verdicts pinning instances' classes")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2,
                   help="parallel spatch processes (default: number of CPUs)")
    p.add_argument("--mode", choices=MODES, default="flag-day",
                   help="flag-day (default): the last patch removes down()/up() and friends; "
                        "gradual: stop before it, the old names stay as wrappers")
    p.add_argument("--identity", metavar="'NAME <EMAIL>'",
                   help="author and Signed-off-by of the patches (default: git config "
                        "user.name and user.email)")
    proof = p.add_argument_group("proof stages (need the series; not with --analyze-only)")
    proof.add_argument("--verify", action="store_true",
                       help="apply the series to a scratch git copy and compile what it "
                            "touches (allmodconfig); writes verify.json")
    proof.add_argument("--boot", action="store_true",
                       help="build and boot the converted kernel in QEMU with lock debugging "
                            "and KUnit, with the generic and with the simple mutex; writes "
                            "boot.json, boot.log, simple-mutex/boot.json")
    proof.add_argument("--bench", action="store_true",
                       help="boot the benchmark kernel; writes bench.json")
    proof.add_argument("--accel", choices=("tcg", "kvm"), default="tcg",
                       help="QEMU accelerator (default tcg: KVM guests hang on some hosts)")
    proof.add_argument("--boot-timeout", type=int, default=300, metavar="SECONDS",
                       help="give up on a guest that has not powered off after this long "
                            "(default 300)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return p


def resolve_identity(given: str | None) -> str:
    identity = given or default_identity()
    if not identity:
        raise IntakeError("no identity for Signed-off-by: pass --identity 'Name <email>' "
                          "or set git config user.name and user.email")
    try:
        split_identity(identity)
    except SeriesError as err:
        raise IntakeError(str(err)) from None
    return identity


def proof_stages_wanted(args: argparse.Namespace) -> list[str]:
    return [name for name in ("verify", "boot", "bench") if getattr(args, name)]


def check_options(args: argparse.Namespace) -> None:
    wanted = proof_stages_wanted(args)
    if args.analyze_only and wanted:
        raise IntakeError(f"--{wanted[0]} needs the series; it cannot be combined with "
                          "--analyze-only")
    if args.jobs < 1:
        raise IntakeError("--jobs must be at least 1")
    if args.boot_timeout < 1:
        raise IntakeError("--boot-timeout must be at least 1 second")


def run(args: argparse.Namespace, progress: Progress) -> int:
    check_options(args)
    spatch = find_spatch()
    if args.tree is None:
        progress.step("using the default tree (Debian linux-source-6.1)")
        tree_path = ensure_default_tree(cache_layout())
    else:
        tree_path = args.tree
    tree = open_tree(tree_path)
    if is_within(args.outdir, tree.path):
        raise IntakeError(f"output directory {args.outdir} is inside the tree {tree.path}; "
                          "sem2mutex never writes into the tree")
    problem = check_writable_dir(args.outdir)
    if problem:
        raise IntakeError(problem)
    dirs = normalise_dirs(tree.path, args.dirs)
    identity = "" if args.analyze_only else resolve_identity(args.identity)
    verdicts = load_verdicts(args.decisions) if args.decisions else []
    progress.step(f"tree {tree.path}: Linux {tree.version}, API era {tree.api_era.value}")
    audit = analyse(AnalysisRequest(tree, spatch, dirs, verdicts, args.jobs), progress)
    written = write_reports(audit, args.outdir, Maintainers.load(tree.path))
    counts = ", ".join(f"{c}: {sum(1 for i in audit.instances if i.sem_class.value == c)}"
                       for c in ("mutex", "counting", "signal", "ambiguous"))
    progress.step(f"{len(audit.instances)} instances ({counts}) in {audit.seconds:.1f}s; "
                  f"wrote {', '.join(str(p) for p in written)}")
    if args.analyze_only:
        return 0
    status = write_series(args, tree, audit, spatch, identity, progress)
    if status is None:
        return 0
    return max([status] + [stage(args, tree.path, spatch, progress)
                           for stage in proof_stages(args)])


def write_series(args, tree, audit, spatch, identity: str, progress: Progress) -> int | None:
    """Write the series; None when there is nothing to convert."""
    result = generate_series(SeriesRequest(tree.path, audit, args.outdir, spatch, args.mode,
                                           identity, args.jobs), progress)
    if result.nothing_to_convert:
        progress.step("nothing to convert: the tree already carries the series "
                      "(the down_sem() API exists and no old-API user is left)")
        if proof_stages_wanted(args):
            progress.step("no series, so nothing to verify, boot or benchmark")
        return None
    errors = [(p.file, e) for p in result.patches if p.checkpatch for e in p.checkpatch.errors]
    progress.step(f"wrote {len(result.patches)} patches and a cover letter to {args.outdir} "
                  f"({result.shortstat})")
    for patch, error in errors:
        progress.warn(f"checkpatch ERROR in {patch}: {error}")
    return EXIT_TOOL_FAILURE if errors else 0


def proof_stages(args: argparse.Namespace) -> list:
    stages = {"verify": run_verify, "boot": run_boot, "bench": run_bench}
    return [stages[name] for name in proof_stages_wanted(args)]


def run_verify(args, tree_path: Path, spatch: Path, progress: Progress) -> int:
    result = verify_series(VerifyRequest(tree=tree_path, series_dir=args.outdir,
                                         out_dir=args.outdir, jobs=args.jobs), progress)
    counts = result.counts
    progress.step(f"verify: applied={result.applied}, old-API users left: "
                  f"{counts.get('old_api_left')}, compiled {counts.get('compiled')} files, "
                  f"{counts.get('compile_failures')} failed, "
                  f"{counts.get('not_buildable')} not buildable on x86_64")
    return 0 if result.passed else EXIT_TOOL_FAILURE


def boot_request(args, tree_path: Path, spatch: Path, simple_mutex: bool) -> BootStageRequest:
    return BootStageRequest(tree=tree_path, series_dir=args.outdir, out_dir=args.outdir,
                            spatch=spatch, jobs=args.jobs, accel=args.accel,
                            timeout_s=args.boot_timeout, simple_mutex=simple_mutex)


def run_boot(args, tree_path: Path, spatch: Path, progress: Progress) -> int:
    status = 0
    for simple_mutex in (False, True):
        outcome = boot_series(boot_request(args, tree_path, spatch, simple_mutex), progress)
        if not outcome.passed:
            progress.warn(f"boot of the {outcome.variant} kernel failed: "
                          f"{'; '.join(outcome.reasons)} (see {outcome.boot_log})")
            status = EXIT_TOOL_FAILURE
    return status


def run_bench(args, tree_path: Path, spatch: Path, progress: Progress) -> int:
    bench_series(boot_request(args, tree_path, spatch, simple_mutex=False), progress)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    progress = Progress(quiet=args.quiet)
    try:
        return run(args, progress)
    except IntakeError as err:
        print(f"convert.py: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (SpatchError, SeriesError, VerifyError, BootStageError) as err:
        print(f"convert.py: error: {err}", file=sys.stderr)
        return EXIT_TOOL_FAILURE
    except KeyboardInterrupt:
        print("convert.py: interrupted", file=sys.stderr)
        return 130
