"""The command line: the one entry point (./convert.py).

Parse the options, check everything that can be checked before the long
work (the tree, the tools, what the tree supports, OUTDIR), run the stages,
and turn every sem2mutex error into one line on stderr and its exit status
(sem2mutex/errors.py).
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from sem2mutex.audit.decisions import load_verdicts
from sem2mutex.audit.intake import ensure_default_tree, normalise_dirs, open_tree
from sem2mutex.audit.pipeline import AnalysisRequest, analyse
from sem2mutex.audit.report import write_reports
from sem2mutex.errors import (EXIT_BAD_INPUT, EXIT_TOOL_FAILURE, BadOption, BadOutputDir,
                              Sem2mutexError, SeriesError, TreeUnsupported)
from sem2mutex.model import KernelTree, Verdict
from sem2mutex.paths import REPO_ROOT, cache_layout
from sem2mutex.progress import Progress
from sem2mutex.proof.bench import bench_series
from sem2mutex.proof.boot import BootStageRequest, boot_problem, boot_series
from sem2mutex.proof.verify import VerifyRequest, verify_series
from sem2mutex.proof.workspace import read_series
from sem2mutex.series.builder import (MODES, SeriesRequest, default_identity, generate_series,
                                      series_problem, split_identity)
from sem2mutex.tools.cache import ResultCache, no_cache
from sem2mutex.tools.fs import check_writable_dir, is_within
from sem2mutex.tools.grep import GrepMemo
from sem2mutex.tools.kernel_tree import NON_KERNEL_TOP_DIRS
from sem2mutex.tools.snapshot import TreeSnapshot
from sem2mutex.tools.git import check_git
from sem2mutex.tools.maintainers import Maintainers
from sem2mutex.tools.spatch import find_spatch, raise_stack_limit

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
            mutex and the simple mutex: bench.json
With --from-series DIR the proof stages run on a series written before
(DIR holds its `series` file), without analysing the tree again.

Exit status: 0 when everything asked for passed, 1 when a stage failed,
2 for bad input (found before any long work)."""


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
    proof.add_argument("--from-series", type=Path, metavar="DIR",
                       help="run the proof stages on the series in DIR instead of "
                            "writing one (results still go to OUTDIR)")
    proof.add_argument("--accel", choices=("tcg", "kvm"), default="tcg",
                       help="QEMU accelerator (default tcg: KVM guests hang on some hosts)")
    proof.add_argument("--boot-timeout", type=int, default=300, metavar="SECONDS",
                       help="give up on a guest that has not powered off after this long "
                            "(default 300)")
    proof.add_argument("--boot-name", default="boot", metavar="NAME",
                       help="prefix of the boot stage's scratch trees and build "
                            "directories in the cache (default: boot)")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the per-file facts kept in the cache "
                        "(a cold run, as on a first run)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="at the end, the wall and processor time of each stage and the "
                        "slowest files")
    return p


@dataclass(frozen=True)
class Plan:
    """What this run will do, decided before any long work."""

    tree: KernelTree
    spatch: Path
    series: bool       # write the series
    proof: list[str]   # verify, boot, bench
    series_dir: Path   # where the proof stages read the series
    identity: str
    dirs: list[str]
    verdicts: list[Verdict]


def resolve_identity(given: str | None) -> str:
    identity = given or default_identity()
    if not identity:
        raise BadOption("no identity for Signed-off-by: pass --identity 'Name <email>' "
                        "or set git config user.name and user.email")
    try:
        split_identity(identity)
    except SeriesError as err:
        raise BadOption(str(err)) from None
    return identity


def results_cache(args: argparse.Namespace) -> ResultCache:
    """What spatch, the lexer, checkpatch and get_maintainer said, kept
    between runs under a hash of their inputs (--no-cache: nothing kept)."""
    return no_cache() if args.no_cache else ResultCache(cache_layout().results)


def proof_stages_wanted(args: argparse.Namespace) -> list[str]:
    return [name for name in ("verify", "boot", "bench") if getattr(args, name)]


def check_options(args: argparse.Namespace) -> None:
    wanted = proof_stages_wanted(args)
    if args.analyze_only and wanted:
        raise BadOption(f"--{wanted[0]} needs the series; it cannot be combined with "
                        "--analyze-only")
    if args.from_series and not wanted:
        raise BadOption("--from-series names a series for the proof stages: "
                        "add --verify, --boot or --bench")
    if args.from_series and args.analyze_only:
        raise BadOption("--from-series and --analyze-only exclude each other")
    if args.jobs < 1:
        raise BadOption("--jobs must be at least 1")
    if args.boot_timeout < 1:
        raise BadOption("--boot-timeout must be at least 1 second")


def check_outdir(outdir: Path, tree: KernelTree) -> None:
    if is_within(outdir, tree.path):
        raise BadOutputDir(f"output directory {outdir} is inside the tree {tree.path}; "
                           "sem2mutex never writes into the tree")
    problem = check_writable_dir(outdir)
    if problem:
        raise BadOutputDir(problem)


def supported(tree: KernelTree, args: argparse.Namespace) -> tuple[str, list[str]]:
    """What TREE supports, in words, and the problems with what was asked."""
    series = series_problem(tree)
    boot = series or boot_problem(tree.path)
    if series:
        what = "the audit only"
    elif boot:
        what = "the audit and the series (not --boot/--bench: " + boot + ")"
    else:
        what = "the audit, the series and the boot stages"
    asked = []
    if not args.analyze_only and not args.from_series and series:
        asked.append(series)
    if (args.boot or args.bench) and boot:
        asked.append(boot)
    return what, asked


def plan_run(args: argparse.Namespace, progress: Progress) -> Plan:
    check_options(args)
    spatch = find_spatch()
    if not args.analyze_only:
        check_git()
    if args.tree is None:
        progress.step("using the default tree (Debian linux-source-6.1)")
        tree = open_tree(ensure_default_tree(cache_layout()))
    else:
        tree = open_tree(args.tree)
    check_outdir(args.outdir, tree)
    dirs = normalise_dirs(tree.path, args.dirs)
    verdicts = load_verdicts(args.decisions) if args.decisions else []
    series_dir = args.from_series or args.outdir
    if args.from_series:
        read_series(args.from_series)
    identity = "" if args.analyze_only or args.from_series else resolve_identity(args.identity)
    what, problems = supported(tree, args)
    if problems:
        raise TreeUnsupported(problems[0])
    progress.step(f"tree {tree.path}: Linux {tree.version}, API era {tree.api_era.value}; "
                  f"supports {what}")
    return Plan(tree, spatch, series=not args.analyze_only and not args.from_series,
                proof=proof_stages_wanted(args), series_dir=series_dir, identity=identity,
                dirs=dirs, verdicts=verdicts)


def run(args: argparse.Namespace, progress: Progress) -> int:
    plan = plan_run(args, progress)
    if plan.series or args.analyze_only:
        status = audit_and_series(args, plan, progress)
        if status is None:
            return 0
    else:
        status = 0
    stages = {"verify": run_verify, "boot": run_boot, "bench": run_bench}
    return max([status] + [stages[name](args, plan, progress) for name in plan.proof])


def audit_and_series(args: argparse.Namespace, plan: Plan, progress: Progress) -> int | None:
    """The audit, then the series; None when there is nothing further to do."""
    cache = results_cache(args)
    memo = None
    if cache.root is not None:
        with progress.stage("snapshot of the tree"):
            memo = GrepMemo(cache, TreeSnapshot.take(plan.tree.path, skip=NON_KERNEL_TOP_DIRS))
    audit = analyse(AnalysisRequest(plan.tree, plan.spatch, plan.dirs, plan.verdicts, args.jobs,
                                    cache, memo), progress)
    maintainers = Maintainers.load(plan.tree.path)
    written = write_reports(audit, args.outdir, maintainers)
    counts = ", ".join(f"{c}: {sum(1 for i in audit.instances if i.sem_class.value == c)}"
                       for c in ("mutex", "counting", "signal", "ambiguous"))
    progress.step(f"{len(audit.instances)} instances ({counts}) in {audit.seconds:.1f}s; "
                  f"wrote {', '.join(str(p) for p in written)}")
    if args.analyze_only:
        return None
    return write_series(args, plan, audit, progress, cache, memo, maintainers)


def write_series(args: argparse.Namespace, plan: Plan, audit, progress: Progress,
                 cache: ResultCache, memo: GrepMemo | None,
                 maintainers: Maintainers) -> int | None:
    """Write the series; None when there is nothing to convert."""
    result = generate_series(SeriesRequest(plan.tree.path, audit, args.outdir, plan.spatch,
                                           args.mode, plan.identity, args.jobs,
                                           cache, memo, maintainers), progress)
    if result.nothing_to_convert:
        progress.step("nothing to convert: the tree already carries the series "
                      "(the down_sem() API exists and no old-API user is left)")
        if plan.proof:
            progress.step("no series, so nothing to verify, boot or benchmark")
        return None
    errors = [(p.file, e) for p in result.patches if p.checkpatch for e in p.checkpatch.errors]
    progress.step(f"wrote {len(result.patches)} patches and a cover letter to {args.outdir} "
                  f"({result.shortstat})")
    for patch, error in errors:
        progress.warn(f"checkpatch ERROR in {patch}: {error}")
    return EXIT_TOOL_FAILURE if errors else 0


def run_verify(args: argparse.Namespace, plan: Plan, progress: Progress) -> int:
    result = verify_series(VerifyRequest(tree=plan.tree.path, series_dir=plan.series_dir,
                                         out_dir=args.outdir, spatch=plan.spatch,
                                         jobs=args.jobs), progress)
    counts = result.counts
    progress.step(f"verify: applied={result.applied}, old-API users left: "
                  f"{counts.get('old_api_left')}, compiled {counts.get('compiled')} files, "
                  f"{counts.get('compile_failures')} failed, "
                  f"{counts.get('not_buildable')} not buildable on x86_64")
    return 0 if result.passed else EXIT_TOOL_FAILURE


def boot_request(args: argparse.Namespace, plan: Plan, simple_mutex: bool) -> BootStageRequest:
    return BootStageRequest(tree=plan.tree.path, series_dir=plan.series_dir,
                            out_dir=args.outdir, spatch=plan.spatch, jobs=args.jobs,
                            accel=args.accel, timeout_s=args.boot_timeout,
                            simple_mutex=simple_mutex,
                            name=args.boot_name)


def run_boot(args: argparse.Namespace, plan: Plan, progress: Progress) -> int:
    status = 0
    for simple_mutex in (False, True):
        outcome = boot_series(boot_request(args, plan, simple_mutex), progress)
        if not outcome.passed:
            progress.warn(f"boot of the {outcome.variant} kernel failed: "
                          f"{'; '.join(outcome.reasons)} (see {outcome.boot_log})")
            status = EXIT_TOOL_FAILURE
    return status


def run_bench(args: argparse.Namespace, plan: Plan, progress: Progress) -> int:
    bench_series(boot_request(args, plan, simple_mutex=False), progress)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    progress = Progress(quiet=args.quiet, verbose=args.verbose)
    raise_stack_limit()
    try:
        status = run(args, progress)
        progress.breakdown()
        return status
    except Sem2mutexError as err:
        print(f"convert.py: error: {err.one_line()}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("convert.py: interrupted", file=sys.stderr)
        return 130


__all__ = ["main", "build_parser", "EXIT_BAD_INPUT", "EXIT_TOOL_FAILURE"]
