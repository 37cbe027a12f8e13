"""The --boot and --bench stages: the converted kernel, built and booted in QEMU.

    OUTDIR/series --git am (sem2mutex.verify's scratch repo)--> changed files
    tests/kernel/ --analyse + apply_rewrite, like any driver--> converted fixtures
    boot tree = hard-linked copy of the pristine tree + those files
    qemu.harness.build_and_boot(KUnit suites, lock debugging) --> boot.json

Three kernels, each with a scratch tree and a build directory of its own
in the cache (named after BootStageRequest.name), so that a rerun only
rebuilds what changed:

- ``default``: lock debugging (qemu/debug.config), the converted files that
  are cheap to build in (qemu/boot-converted.config), the semaphore_api
  suite (the counting API of patch 1) and the converted_fixtures suite;
- ``simple-mutex`` (``simple_mutex=True``): the same on CONFIG_MUTEX_SIMPLE
  (qemu/simple-mutex.config), on 4 CPUs, with the simple mutex's own KUnit
  suite, which patch 2 carries (CONFIG_SIMPLE_MUTEX_KUNIT_TEST);
- ``bench``: the mutex_bench suite on the benchmark config (generic mutex,
  no lock debugging, 4 CPUs) -> bench.json.

The whole series is applied: after a flag day down() and up() no longer
exist, so every kernel here is built without them.  Suites that call the
old names are either left out (the harness self-tests) or converted by the
tool like the fixtures (mutex_bench, whose semaphore a verdict file keeps a
semaphore: it is what the benchmark measures).

The fixtures are converted in a scratch tree of their own (pristine tree +
fixture sources, restored after each run) and only their converted text
goes into the boot trees, so a rerun with the same result touches nothing
and the build stays warm; a verdict file (``decisions``) that changes one
fixture rebuilds that file only.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from qemu import intree
from qemu.harness import BOOT_JSON, BOOT_LOG, BootRequest, BootResult, build_and_boot

from sem2mutex.audit.decisions import load_verdicts
from sem2mutex.audit.intake import open_tree
from sem2mutex.audit.pipeline import AnalysisRequest, analyse
from sem2mutex.errors import BadDecisions, BootError, SeriesDoesNotApply
from sem2mutex.model import Verdict
from sem2mutex.paths import COCCI_DIR, QEMU_DIR, REPO_ROOT, cache_layout
from sem2mutex.progress import Progress
from sem2mutex.proof.workspace import applied_series, hardlinked_scratch, read_series, tree_stamp
from sem2mutex.series.rewrite import MUTEX, apply_rewrite, plan_rewrite
from sem2mutex.tools.fs import locked, write_atomic, write_if_changed

FIXTURE_SOURCES = REPO_ROOT / "tests" / "kernel"
FIXTURE_TREE_DIR = "drivers/sem2mutex_fixtures"
KUNIT_DIR = QEMU_DIR / "kunit"
SEMAPHORE_API_SUITE = KUNIT_DIR / "semaphore_api"
CONVERTED_FIXTURES_SUITE = KUNIT_DIR / "converted_fixtures"
MUTEX_BENCH_SUITE = KUNIT_DIR / "mutex_bench"
BOOT_FRAGMENT = QEMU_DIR / "boot-converted.config"
SIMPLE_MUTEX_FRAGMENT = QEMU_DIR / "simple-mutex.config"
BENCH_FRAGMENT = MUTEX_BENCH_SUITE / "bench.config"
BENCH_VERDICTS = QEMU_DIR / "bench-verdicts.toml"

ANALYSIS_TREE = "boot-analysis"
CONVERSION_CACHE = "boot-conversions"
SERIES_CACHE = "boot-series"
TREE_MANIFEST = ".sem2mutex-boot-files"
SOURCES_MANIFEST = ".sem2mutex-boot-sources"
# What a fixture or suite directory may hold, as qemu.intree copies it.
SOURCE_SUFFIXES = {".c", ".h", ".S"}
SOURCE_NAMES = {"Makefile", "Kbuild"}
DRIVERS_MAKEFILE = "drivers/Makefile"
FIXTURE_HOOK = ("# sem2mutex boot stage: the fixtures sem2mutex converted",
                "obj-y += sem2mutex_fixtures/")
# The lines qemu.intree would append; written here so that it finds them.
HARNESS_HOOK = ("# sem2mutex QEMU harness: KUnit suites", intree.HOOK_LINE)
BENCH_JSON = "bench.json"
MULTI_CPU = 4  # ACPI in the fragment makes -smp 4 four CPUs


@dataclass
class BootStageRequest:
    tree: Path            # pristine default tree (read only)
    series_dir: Path      # OUTDIR holding `series` and the patches
    out_dir: Path         # boot.log, boot.json (and bench.json) go here
    spatch: Path
    jobs: int = 2
    accel: str = "tcg"
    timeout_s: int = 300
    decisions: Path | None = None   # extra verdicts for the fixture code
    simple_mutex: bool = False      # boot with CONFIG_MUTEX_SIMPLE=y
    name: str = "boot"              # cache scratch/build dir names start with it


@dataclass(frozen=True)
class Variant:
    """One kernel the stage builds: config, suites, machine."""

    label: str
    fragments: tuple[Path, ...]
    suites: tuple[Path, ...]             # KUnit dirs built in as they are
    converted_suites: tuple[Path, ...]   # KUnit dirs sem2mutex converts first
    with_fixtures: bool
    verdict_files: tuple[Path, ...]
    cpus: int
    out_subdir: str                      # under OUTDIR, "" for OUTDIR itself


DEFAULT = Variant("default", (BOOT_FRAGMENT,),
                  (SEMAPHORE_API_SUITE, CONVERTED_FIXTURES_SUITE), (), True, (), 1, "")
SIMPLE_MUTEX = Variant("simple-mutex", (BOOT_FRAGMENT, SIMPLE_MUTEX_FRAGMENT),
                       (SEMAPHORE_API_SUITE, CONVERTED_FIXTURES_SUITE),
                       (), True, (), MULTI_CPU, "simple-mutex")
BENCH = Variant("bench", (BENCH_FRAGMENT,), (), (MUTEX_BENCH_SUITE,), False,
                (BENCH_VERDICTS,), MULTI_CPU, "bench")


@dataclass(frozen=True)
class ConvertedInstance:
    """What sem2mutex made of one semaphore of the fixtures (or a suite)."""

    instance: str
    file: str
    sem_class: str
    reasons: list[str]
    became: str                 # "mutex" or "counting API"
    demoted: list[str]          # why a mutex-class instance stayed a semaphore
    pinned_by: str | None       # reviewer of a verdict that pinned the class


@dataclass
class ToolConversion:
    files: dict[str, bytes]     # tree-relative -> converted content
    instances: list[ConvertedInstance]
    stale_verdicts: list[str]


@dataclass
class BootOutcome:
    passed: bool
    variant: str
    reasons: list[str]
    boot_json: Path
    boot_log: Path
    result: BootResult | None   # None when the stage failed before the harness
    conversions: list[ConvertedInstance] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


# --------------------------------------------------------------------------
# Small helpers


def source_files(source_dir: Path) -> dict[str, bytes]:
    """The files of a fixture or suite directory that belong in a tree."""
    return {p.name: p.read_bytes() for p in sorted(source_dir.iterdir())
            if p.is_file() and (p.suffix in SOURCE_SUFFIXES or p.name in SOURCE_NAMES)}


def read_manifest(path: Path) -> set[str]:
    return set(path.read_text().split()) if path.is_file() else set()


def write_manifest(path: Path, entries) -> None:
    write_if_changed(path, "".join(f"{e}\n" for e in sorted(entries)))


# --------------------------------------------------------------------------
# The series, applied by sem2mutex.verify


def series_changes(tree: Path, series_dir: Path, progress: Progress
                   ) -> tuple[list[str], dict[str, bytes | None]]:
    """The patch names and every file the series changes: its new content,
    None for a file it deletes.

    The series is applied with `git am` in the scratch repository that
    --verify keeps (one git copy of the tree in the cache, not two); the
    result is kept under a hash of the patches and the tree, so the same
    series is applied once (verify holds that repository while it compiles).
    """
    patches = read_series(series_dir)
    layout = cache_layout()
    cache = FileSetCache(layout.scratch(SERIES_CACHE), series_key(tree, patches))
    with locked(layout.scratch(f".{SERIES_CACHE}.lock")):
        cached = cache.load()
        if cached:
            files, record = cached
            progress.step(f"boot: series applied before ({cache.path})")
            return record["patches"], files | {rel: None for rel in record["deleted"]}
        changes = apply_with_git_am(tree, patches, progress)
        cache.store({rel: data for rel, data in changes.items() if data is not None},
                    {"patches": [p.name for p in patches],
                     "deleted": sorted(rel for rel, data in changes.items() if data is None)})
    return [p.name for p in patches], changes


def series_key(tree: Path, patches: list[Path]) -> str:
    digest = hashlib.sha256(json.dumps(tree_stamp(tree), sort_keys=True).encode())
    for patch in patches:
        data = patch.read_bytes()
        digest.update(f"\0{patch.name}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()[:32]


def apply_with_git_am(tree: Path, patches: list[Path], progress: Progress
                      ) -> dict[str, bytes | None]:
    with applied_series(tree, patches, cache_layout(), progress, "boot") as (repo, outcome):
        if not outcome.applied:
            raise SeriesDoesNotApply(f"the series does not apply at {outcome.failed_patch}: "
                                     f"{(outcome.error or '').strip()[:500]}")
        return {rel: None if status == "D" else (repo.path / rel).read_bytes()
                for status, rel in outcome.changes}


# --------------------------------------------------------------------------
# Code converted by the tool itself: the fixtures, the benchmark suite


def install_sources(tree: Path, sources: dict[str, Path]) -> dict[str, bytes]:
    """Make each tree dir hold exactly its source dir; returns rel -> content.

    Directories a previous run installed and this one does not want go.
    """
    manifest = tree / SOURCES_MANIFEST
    for old in read_manifest(manifest) - set(sources):
        shutil.rmtree(tree / old, ignore_errors=True)
    installed: dict[str, bytes] = {}
    for tree_dir, source_dir in sources.items():
        wanted = source_files(source_dir)
        target = tree / tree_dir
        target.mkdir(parents=True, exist_ok=True)
        for stale in target.iterdir():
            if stale.is_file() and stale.name not in wanted:
                stale.unlink()
        for name, data in wanted.items():
            write_if_changed(target / name, data)
            installed[f"{tree_dir}/{name}"] = data
    write_manifest(manifest, sources)
    return installed


def describe_conversion(audit, rewrite) -> list[ConvertedInstance]:
    targets = {r.instance: r for r in rewrite.instances}
    described = []
    for inst in audit.instances:
        done = targets.get(inst.id)
        became = "mutex" if done and done.target == MUTEX else "counting API"
        described.append(ConvertedInstance(
            instance=inst.id, file=inst.file, sem_class=inst.sem_class.value,
            reasons=[r.code for r in inst.reasons], became=became,
            demoted=list(done.demoted) if done else [],
            pinned_by=inst.pinned.reviewer if inst.pinned else None))
    return sorted(described, key=lambda c: c.instance)


def convert_with_tool(pristine: Path, sources: dict[str, Path], verdicts: list[Verdict],
                      spatch: Path, jobs: int, progress: Progress,
                      use_cache: bool = True) -> ToolConversion:
    """Analyse and rewrite SOURCES (tree dir -> source dir) as sem2mutex
    does any driver: in a scratch copy of the pristine tree, which gets the
    original sources back afterwards.

    The result is kept in the cache under a hash of everything it depends
    on (the sources, the verdicts, the pristine tree, spatch and the tool's
    own code and semantic patches); use_cache=False runs the tool anyway.
    """
    layout = cache_layout()
    cache = FileSetCache(layout.scratch(CONVERSION_CACHE),
                         conversion_key(pristine, sources, verdicts, spatch))
    with locked(layout.scratch(f".{ANALYSIS_TREE}.convert.lock")):
        cached = cache.load() if use_cache else None
        if cached:
            progress.step(f"boot: conversion unchanged since the last run ({cache.path})")
            files, record = cached
            return ToolConversion(files, [ConvertedInstance(**i) for i in record["instances"]],
                                  record["stale_verdicts"])
        conversion = run_conversion(pristine, sources, verdicts, spatch, jobs, progress)
        cache.store(conversion.files, {
            "instances": [asdict(i) for i in conversion.instances],
            "stale_verdicts": conversion.stale_verdicts})
    return conversion


def run_conversion(pristine: Path, sources: dict[str, Path], verdicts: list[Verdict],
                   spatch: Path, jobs: int, progress: Progress) -> ToolConversion:
    """The analysis and the rewrite, in the scratch tree; the caller locks it."""
    tree = hardlinked_scratch(pristine, cache_layout().scratch(ANALYSIS_TREE))
    originals = install_sources(tree, sources)
    try:
        audit = analyse(AnalysisRequest(open_tree(tree), spatch, sorted(sources),
                                        verdicts, jobs), progress)
        rewrite = apply_rewrite(tree, plan_rewrite(audit.instances), spatch, jobs)
        converted = {rel: (tree / rel).read_bytes() for rel in originals}
    finally:
        for rel, data in originals.items():
            write_if_changed(tree / rel, data)
    stale = [f"{s.verdict.instance}: {s.why}" for s in audit.stale_verdicts]
    return ToolConversion(converted, describe_conversion(audit, rewrite), stale)


def conversion_key(pristine: Path, sources: dict[str, Path], verdicts: list[Verdict],
                   spatch: Path) -> str:
    digest = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        digest.update(f"{label}\0{len(data)}\0".encode())
        digest.update(data)

    add("tree", json.dumps(tree_stamp(pristine), sort_keys=True).encode())
    spatch_stat = Path(spatch).resolve().stat()
    add("spatch", f"{Path(spatch).resolve()} {spatch_stat.st_size} "
                  f"{spatch_stat.st_mtime_ns}".encode())
    for tree_dir, source_dir in sorted(sources.items()):
        for name, data in source_files(source_dir).items():
            add(f"source {tree_dir}/{name}", data)
    for v in verdicts:
        add("verdict", json.dumps([v.instance, v.sem_class.value, v.reviewer,
                                   v.reason, v.override]).encode())
    tool = sorted(Path(__file__).parents[1].rglob("*.py")) + sorted(COCCI_DIR.rglob("*.cocci"))
    for path in tool:
        add(f"tool {path.name}", path.read_bytes())
    return digest.hexdigest()[:32]


@dataclass
class FileSetCache:
    """A set of files and a JSON record, kept in the cache under a key that
    hashes everything they were made from; the least recently used go."""

    root: Path
    key: str
    keep: int = 8

    @property
    def path(self) -> Path:
        return self.root / self.key

    def load(self) -> tuple[dict[str, bytes], dict] | None:
        record = self.path / "record.json"
        if not record.is_file():
            return None
        data = json.loads(record.read_text())
        files = {rel: (self.path / "files" / rel).read_bytes() for rel in data["files"]}
        os.utime(record)  # most recently used
        return files, data["record"]

    def store(self, files: dict[str, bytes], record: dict) -> None:
        partial = self.path.with_name(self.key + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        for rel, data in files.items():
            write_atomic(partial / "files" / rel, data)
        write_atomic(partial / "record.json", json.dumps(
            {"files": sorted(files), "record": record}, indent=1))
        shutil.rmtree(self.path, ignore_errors=True)
        os.rename(partial, self.path)
        entries = sorted((p for p in self.root.iterdir() if (p / "record.json").is_file()),
                         key=lambda p: (p / "record.json").stat().st_mtime, reverse=True)
        for old in entries[self.keep:]:
            shutil.rmtree(old, ignore_errors=True)


def load_all_verdicts(paths: list[Path]) -> list[Verdict]:
    return [v for path in paths for v in load_verdicts(path)]


def stage_converted_suites(suites: tuple[Path, ...], converted: dict[str, bytes],
                           staging: Path) -> list[Path]:
    """Directories holding the converted copies of SUITES, for the harness.

    Same names as the originals (the harness names the tree dirs after
    them), rewritten only when their content changes.
    """
    dirs = []
    for suite in suites:
        tree_dir = suite_tree_dir(suite)
        target = staging / suite.name
        target.mkdir(parents=True, exist_ok=True)
        wanted = {rel.rsplit("/", 1)[1]: data for rel, data in converted.items()
                  if rel.startswith(tree_dir + "/")}
        for stale in target.iterdir():
            if stale.is_file() and stale.name not in wanted:
                stale.unlink()
        for name, data in wanted.items():
            write_if_changed(target / name, data)
        dirs.append(target)
    return dirs


def suite_tree_dir(suite: Path) -> str:
    """Where the harness installs a suite, hence where the tool converts it."""
    return f"{intree.HOOK_DIR}/{suite.name}"


# --------------------------------------------------------------------------
# The boot tree


def drivers_makefile(pristine_text: str, with_fixtures: bool) -> str:
    text = pristine_text if pristine_text.endswith("\n") else pristine_text + "\n"
    hooks = (FIXTURE_HOOK if with_fixtures else ()) + HARNESS_HOOK
    return text + "".join(f"{line}\n" for line in hooks)


def sync_boot_tree(pristine: Path, tree: Path, wanted: dict[str, bytes | None]) -> int:
    """Make TREE = pristine + WANTED (None: deleted); returns files rewritten.

    Only files whose content differs are rewritten, and always as new
    inodes (qemu.files): the tree is a hard-linked copy of the pristine
    one, and unchanged files keep their mtimes, so make rebuilds only what
    changed.  Files an earlier run changed and this one does not go back to
    their pristine content.
    """
    manifest = tree / TREE_MANIFEST
    rewritten = 0
    for rel, data in wanted.items():
        if data is None:
            if (tree / rel).exists():
                (tree / rel).unlink()
                rewritten += 1
        else:
            rewritten += write_if_changed(tree / rel, data)
    for rel in read_manifest(manifest) - set(wanted):
        if (pristine / rel).is_file():
            rewritten += write_if_changed(tree / rel, (pristine / rel).read_bytes())
        elif (tree / rel).exists():
            (tree / rel).unlink()
            rewritten += 1
    write_manifest(manifest, wanted)
    return rewritten


# --------------------------------------------------------------------------
# The stage


@dataclass
class Prepared:
    tree: Path
    kunit_dirs: list[Path]
    watch_files: list[str]
    patches: list[str]
    conversions: list[ConvertedInstance]
    stale_verdicts: list[str]
    seconds: dict[str, float]


def prepare(req: BootStageRequest, variant: Variant, progress: Progress) -> Prepared:
    pristine = req.tree.resolve()
    seconds: dict[str, float] = {}
    start = time.monotonic()
    patches, changes = series_changes(pristine, req.series_dir, progress)
    seconds["series"] = time.monotonic() - start

    start = time.monotonic()
    sources = {suite_tree_dir(s): s for s in variant.converted_suites}
    verdict_files = list(variant.verdict_files)
    if variant.with_fixtures:
        sources[FIXTURE_TREE_DIR] = FIXTURE_SOURCES
        verdict_files += [req.decisions] if req.decisions else []
    progress.step(f"boot: sem2mutex converts {', '.join(sorted(sources))}")
    conversion = convert_with_tool(pristine, sources, load_all_verdicts(verdict_files),
                                   req.spatch, req.jobs, progress)
    seconds["convert"] = time.monotonic() - start

    layout = cache_layout()
    prefix = f"{req.name}-{variant.label}"
    fixtures = {rel: data for rel, data in conversion.files.items()
                if rel.startswith(FIXTURE_TREE_DIR + "/")}
    makefile = changes.get(DRIVERS_MAKEFILE) or (pristine / DRIVERS_MAKEFILE).read_bytes()
    wanted = dict(changes) | fixtures | {
        DRIVERS_MAKEFILE: drivers_makefile(makefile.decode(), variant.with_fixtures).encode()}
    tree = hardlinked_scratch(pristine, layout.scratch(f"{prefix}-tree"))
    rewritten = sync_boot_tree(pristine, tree, wanted)
    progress.step(f"boot: {tree} holds the series ({len(changes)} files, "
                  f"{rewritten} rewritten since the last run)")
    kunit_dirs = list(variant.suites) + stage_converted_suites(
        variant.converted_suites, conversion.files, layout.scratch(f"{prefix}-suites"))
    watch = sorted(rel for rel, data in changes.items() if data is not None
                   and rel.endswith(".c")) + sorted(r for r in fixtures if r.endswith(".c"))
    return Prepared(tree, kunit_dirs, watch, patches, conversion.instances,
                    conversion.stale_verdicts, seconds)


# What a tree needs for --boot and --bench, besides taking the series: an
# x86 kernel to build, and the kernel's own KTAP parser.
BOOT_NEEDS = ("arch/x86/Kconfig", "tools/testing/kunit/kunit.py", DRIVERS_MAKEFILE)


def boot_problem(tree: Path) -> str | None:
    """Why TREE cannot be booted by this stage, or None."""
    missing = [rel for rel in BOOT_NEEDS if not (tree / rel).is_file()]
    if missing:
        return f"{tree} lacks {', '.join(missing)}, which the boot stage needs"
    return None


def check_request(req: BootStageRequest) -> None:
    """Bad input fails before anything is written."""
    read_series(Path(req.series_dir))
    if req.decisions and not Path(req.decisions).is_file():
        raise BadDecisions(f"--decisions {req.decisions}: no such file")
    if not (Path(req.tree) / "Makefile").is_file():
        raise BootError(f"{req.tree} is not a kernel tree")


def run_variant(req: BootStageRequest, variant: Variant, progress: Progress) -> BootOutcome:
    check_request(req)
    out_dir = Path(req.out_dir) / variant.out_subdir if variant.out_subdir else Path(req.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    boot_json, boot_log = out_dir / BOOT_JSON, out_dir / BOOT_LOG
    prefix = f"{req.name}-{variant.label}"
    with locked(cache_layout().scratch(f".{prefix}.lock")):
        try:
            prepared = prepare(req, variant, progress)
        except SeriesDoesNotApply as err:
            return failed_before_harness(variant, boot_json, boot_log, "series", str(err))
        progress.step(f"boot: building and booting the {variant.label} kernel "
                      f"({prefix}; a cold build takes several minutes)")
        result = build_and_boot(BootRequest(
            tree=prepared.tree, out_dir=out_dir, build_dir=cache_layout().build(prefix),
            fragments=list(variant.fragments), kunit_dirs=prepared.kunit_dirs,
            watch_files=prepared.watch_files, accel=req.accel, timeout_s=req.timeout_s,
            cpus=variant.cpus, jobs=req.jobs))
    seconds = {k: round(v, 1) for k, v in prepared.seconds.items()} | result.seconds
    report = json.loads(result.to_json())
    report["seconds"] = seconds
    report["variant"] = variant.label
    report["series"] = {"dir": str(req.series_dir), "patches": prepared.patches,
                        "tree": str(prepared.tree)}
    report["conversions"] = conversion_report(prepared.conversions, prepared.stale_verdicts)
    write_atomic(boot_json, json.dumps(report, indent=2) + "\n")
    progress.step(f"boot: {variant.label} {'passed' if result.passed else 'FAILED'}: "
                  f"{result.tests.passed}/{result.tests.total} KUnit tests, "
                  f"{len(result.splats)} kernel report(s); wrote {boot_json}")
    return BootOutcome(result.passed, variant.label, result.reasons, boot_json, boot_log,
                       result, prepared.conversions, seconds)


def conversion_report(conversions: list[ConvertedInstance], stale: list[str]) -> dict:
    return {
        "became_mutex": [c.instance for c in conversions if c.became == "mutex"],
        "kept_counting_api": [c.instance for c in conversions if c.became != "mutex"],
        "instances": [asdict(c) for c in conversions],
        "stale_verdicts": stale,
    }


def failed_before_harness(variant: Variant, boot_json: Path, boot_log: Path,
                          stage: str, why: str) -> BootOutcome:
    write_atomic(boot_log, f"sem2mutex boot stage: no boot, {stage} failed:\n{why}\n")
    report = {"passed": False, "reasons": [f"{stage} failed: {why}"], "failed_stage": stage,
              "tests": {"total": 0, "passed": 0, "failed": 0, "skipped": 0}, "splats": [],
              "converted_files_booted": [], "seconds": {}, "variant": variant.label}
    write_atomic(boot_json, json.dumps(report, indent=2) + "\n")
    return BootOutcome(False, variant.label, report["reasons"], boot_json, boot_log, None)


def boot_series(req: BootStageRequest, progress: Progress) -> BootOutcome:
    """Build the converted kernel with lock debugging and boot it in QEMU.

    Writes OUTDIR/boot.log and OUTDIR/boot.json; with simple_mutex=True the
    CONFIG_MUTEX_SIMPLE kernel's go to OUTDIR/simple-mutex/ instead.
    """
    return run_variant(req, SIMPLE_MUTEX if req.simple_mutex else DEFAULT, progress)
