"""Command line: parse options, run the stages, map failures to exit codes."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .analysis import AnalysisRequest, analyse
from .decisions import load_verdicts
from .fsutil import check_writable_dir, is_within
from .intake import IntakeError, ensure_default_tree, find_spatch, normalise_dirs, open_tree
from .maintainers import Maintainers
from .paths import REPO_ROOT, cache_layout
from .progress import Progress
from .report import write_reports
from .series import (MODES, SeriesError, SeriesRequest, default_identity, generate_series,
                     split_identity)
from .spatch import SpatchError

EXIT_BAD_INPUT = 2
EXIT_TOOL_FAILURE = 1

DESCRIPTION = """\
Audit every struct semaphore of a Linux kernel tree with Coccinelle and
classify each one: mutex (binary, released by its owner), counting,
signal (starts at 0), or ambiguous (needs a human).  Then write the patch
series that converts the binary ones to struct mutex and moves the others
to the down_sem() counting API.  Writes into OUTDIR: audit.json, audit.md,
the series (0000-cover-letter.patch, 0001-...patch, series), scope.md and
scope.json.  The tree is only read, never written."""


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


def run(args: argparse.Namespace, progress: Progress) -> int:
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
    if args.jobs < 1:
        raise IntakeError("--jobs must be at least 1")
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
    return write_series(args, tree, audit, spatch, identity, progress)


def write_series(args, tree, audit, spatch, identity: str, progress: Progress) -> int:
    result = generate_series(SeriesRequest(tree.path, audit, args.outdir, spatch, args.mode,
                                           identity, args.jobs), progress)
    if result.nothing_to_convert:
        progress.step("nothing to convert: the tree already carries the series "
                      "(the down_sem() API exists and no old-API user is left)")
        return 0
    errors = [(p.file, e) for p in result.patches if p.checkpatch for e in p.checkpatch.errors]
    progress.step(f"wrote {len(result.patches)} patches and a cover letter to {args.outdir} "
                  f"({result.shortstat})")
    for patch, error in errors:
        progress.warn(f"checkpatch ERROR in {patch}: {error}")
    return EXIT_TOOL_FAILURE if errors else 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    progress = Progress(quiet=args.quiet)
    try:
        return run(args, progress)
    except IntakeError as err:
        print(f"convert.py: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (SpatchError, SeriesError) as err:
        print(f"convert.py: error: {err}", file=sys.stderr)
        return EXIT_TOOL_FAILURE
    except KeyboardInterrupt:
        print("convert.py: interrupted", file=sys.stderr)
        return 130
