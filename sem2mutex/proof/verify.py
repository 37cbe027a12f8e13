"""The --verify stage: apply the series to a scratch copy and check it.

1. Apply the series in the proof workspace (workspace.py).
2. Old API: no caller of down() ... up() is left (old_api.py).
3. Compile every touched file and every includer of a touched header,
   x86_64 allmodconfig (compile.py).
4. verify.json in the output directory.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from sem2mutex.errors import SpatchError, VerifyError
from sem2mutex.paths import CacheLayout, cache_layout
from sem2mutex.progress import Progress
from sem2mutex.proof.compile import (MAX_INCLUDERS, BuildDir, CompiledFile, HeaderNotFollowed,
                                     NotBuildable, compile_plan, plan_compiles, timed)
from sem2mutex.proof.old_api import OldApiLeft, find_old_api_left
from sem2mutex.proof.workspace import (SCRATCH_NAME, ApplyOutcome, ScratchRepo, apply_series,
                                       ensure_scratch_repo, previous_changes, read_series,
                                       tree_stamp)
from sem2mutex.tools.fs import locked, write_json_atomic



@dataclass
class VerifyRequest:
    tree: Path                 # pristine kernel tree, read only
    series_dir: Path
    out_dir: Path              # verify.json goes here
    spatch: Path
    jobs: int = 2
    build_name: str = "verify-allmodconfig"
    files: list[str] | None = None   # limit compile checks; None = everything touched
    max_includers: int = MAX_INCLUDERS
    layout: CacheLayout = field(default_factory=cache_layout)



@dataclass
class VerifyResult:
    applied: bool
    tree: str
    version: str
    base: str | None
    series: list[str]
    failed_patch: str | None = None
    apply_error: str | None = None
    touched: list[str] = field(default_factory=list)
    old_api_left: list[OldApiLeft] | None = None   # None: not checked
    compiled: list[CompiledFile] = field(default_factory=list)
    not_buildable: list[NotBuildable] = field(default_factory=list)
    headers_not_followed: list[HeaderNotFollowed] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)   # left out by files=
    other_files: list[str] = field(default_factory=list)   # touched, not C
    skipped: dict[str, str] = field(default_factory=dict)  # check -> why
    errors: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return (self.applied and self.old_api_left == [] and not self.errors
                and all(c.ok for c in self.compiled))

    def to_json(self) -> dict:
        old = None if self.old_api_left is None else [
            asdict(c) | {"context": c.context} for c in self.old_api_left]
        return {
            "applied": self.applied,
            "old_api_left": old,
            "compiled": [asdict(c) for c in self.compiled],
            "not_buildable": [asdict(n) for n in self.not_buildable],
            "passed": self.passed,
            "tree": self.tree,
            "version": self.version,
            "base": self.base,
            "series": self.series,
            "failed_patch": self.failed_patch,
            "apply_error": self.apply_error,
            "touched": self.touched,
            "headers_not_followed": [asdict(h) for h in self.headers_not_followed],
            "not_checked": self.not_checked,
            "other_files": self.other_files,
            "skipped": self.skipped,
            "errors": self.errors,
            "counts": self.counts,
            "timings": {k: round(v, 2) for k, v in self.timings.items()},
        }


# --------------------------------------------------------------------------
# The stage


def verify_series(req: VerifyRequest, progress: Progress) -> VerifyResult:
    """Apply, check and compile the series; write verify.json; return it."""
    tree = req.tree.resolve()
    patches = read_series(req.series_dir)
    stamp = tree_stamp(tree)
    scratch_path = req.layout.scratch(SCRATCH_NAME)
    result = VerifyResult(applied=False, tree=str(tree), version=stamp["version"], base=None,
                          series=[p.name for p in patches])
    timings = result.timings
    with locked(scratch_path.parent / f".{SCRATCH_NAME}.lock"):
        with timed(timings, "scratch"):
            previous = previous_changes(scratch_path)
            scratch = ensure_scratch_repo(tree, scratch_path, stamp, progress)
        timings["scratch_created" if scratch.created else "scratch_reset"] = timings.pop("scratch")
        result.base = scratch.base
        progress.step(f"verify: git am of {len(patches)} patches")
        with timed(timings, "git_am"):
            outcome = apply_series(scratch, tree, patches, previous)
        result.applied = outcome.applied
        result.failed_patch, result.apply_error = outcome.failed_patch, outcome.error
        result.touched = [rel for _, rel in outcome.changes]
        result.counts["mtimes_kept"] = outcome.mtimes_kept
        if not outcome.applied:
            why = f"the series does not apply (at {outcome.failed_patch})"
            result.skipped = {"old_api_left": why, "compile": why}
        else:
            _check_and_compile(req, tree, stamp, scratch, outcome, result, progress)
    _count(result)
    write_json_atomic(req.out_dir / "verify.json", result.to_json())
    progress.step(f"verify: {'passed' if result.passed else 'FAILED'}, "
                  f"wrote {req.out_dir / 'verify.json'}")
    return result


def _check_and_compile(req: VerifyRequest, tree: Path, stamp: dict, scratch: ScratchRepo,
                       outcome: ApplyOutcome, result: VerifyResult,
                       progress: Progress) -> None:
    timings = result.timings
    with timed(timings, "old_api_check"):
        try:
            left, stats = find_old_api_left(scratch.path, req.spatch, progress)
            result.old_api_left = left
            result.counts.update(stats)
        except SpatchError as err:
            result.errors.append(f"old-API check: {err}")
            result.skipped["old_api_left"] = "spatch failed"
    with timed(timings, "plan"):
        plan = plan_compiles(scratch.path, outcome.changes, req.files, req.max_includers)
    result.not_buildable += plan.not_buildable
    result.headers_not_followed = plan.headers_not_followed
    result.not_checked = plan.not_checked
    result.other_files = plan.other_files
    result.counts["includer_candidates"] = plan.includer_candidates
    build = BuildDir(scratch.path, req.layout.build(req.build_name), stamp, req.jobs)
    baseline = BuildDir(tree, req.layout.build(req.build_name + "-base"), stamp, req.jobs)
    try:
        compiled, unbuildable, unconfirmed = compile_plan(plan, build, baseline, progress,
                                                          timings)
    except VerifyError as err:
        result.errors.append(str(err))
        result.skipped["compile"] = "the build could not be prepared"
        return
    result.compiled = compiled
    result.not_buildable += unbuildable
    result.counts["includers_not_including"] = unconfirmed


def _count(result: VerifyResult) -> None:
    result.counts.update({
        "patches": len(result.series),
        "touched": len(result.touched),
        "old_api_left": len(result.old_api_left or []),
        "compiled": len(result.compiled),
        "compile_failures": sum(not c.ok for c in result.compiled),
        "not_buildable": len(result.not_buildable),
        "not_checked": len(result.not_checked),
    })
    if result.compiled and "compile" in result.timings:
        result.timings["compile_per_file"] = result.timings["compile"] / len(result.compiled)


