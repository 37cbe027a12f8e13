"""Series stage: the reviewable patch series in OUTDIR.

    0001 locking/semaphore: the down_sem() counting API (old names kept)
    0002 locking/mutex: CONFIG_MUTEX_SIMPLE, the seed's xchg() mutex
    0003.. one conversion patch per MAINTAINERS section
    last   locking/semaphore: remove the old names (flag day; not in gradual mode)

The commits are made in a small git repository holding only the files the
series touches (copied from the tree, which is never written), then
exported with `git format-patch`; `git am` applies them to the full tree
because patches only carry the files they change.
"""
from __future__ import annotations

import hashlib
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from sem2mutex.errors import CoreApiError, SeriesError
from sem2mutex.model import ApiEra, Audit, CoreChange, KernelTree
from sem2mutex.progress import Progress
from sem2mutex.series import core_api, simple_mutex
from sem2mutex.series.messages import conversion_message, core_message
from sem2mutex.series.minirepo import BASE_TAG, MiniRepo, default_identity, split_identity
from sem2mutex.series.prefixes import subject_prefix
from sem2mutex.series.rewrite import RewritePlan, RewriteResult, apply_rewrite, plan_rewrite
from sem2mutex.series.exports import ExportDiff, diff_exports
from sem2mutex.series.scope import build_scope, write_cover_letter, write_scope
from sem2mutex.series.units import (ConversionUnit, conversion_units, file_owners, mutex_in,
                                    unit_view)
from sem2mutex.series.unparsed import rename_calls, unparsed_old_api_calls
from sem2mutex.tools.api import COUNTING_NAMES
from sem2mutex.paths import REPO_ROOT
from sem2mutex.tools.cache import ResultCache, file_digest, no_cache
from sem2mutex.tools.grep import GrepMemo
from sem2mutex.tools.kernel_scripts import CheckpatchReport, checkpatch_all, get_maintainer
from sem2mutex.tools.maintainers import Maintainers, MaintainersFile

MODES = ("flag-day", "gradual")
__all__ = ["MODES", "SeriesRequest", "SeriesResult", "generate_series", "series_problem",
           "default_identity", "split_identity", "core_files"]


# ----------------------------------------------------------------- stage


@dataclass
class SeriesRequest:
    tree: Path
    audit: Audit
    outdir: Path
    spatch: Path
    mode: str = "flag-day"
    identity: str = ""
    jobs: int = 2
    cache: ResultCache = field(default_factory=no_cache)  # spatch, checkpatch, get_maintainer
    memo: GrepMemo | None = None  # the tree's snapshot, for its greps
    maintainers: Maintainers | None = None  # the tree's MAINTAINERS, if read already


@dataclass
class PatchInfo:
    file: str
    subject: str
    kind: str  # core, conversion, flag-day
    files: list[str]
    instances: list[str]
    checkpatch: CheckpatchReport | None = None


@dataclass
class SeriesResult:
    patches: list[PatchInfo]
    rewrite: list[RewriteResult]
    units: list[ConversionUnit]
    plan: RewritePlan
    base_files: list[str]
    repo: Path
    nothing_to_convert: bool = False
    shortstat: str = ""
    exports: ExportDiff = field(default_factory=ExportDiff)


def core_files() -> list[str]:
    files = set(core_api.CORE_FILES)
    files |= {e.path for e in simple_mutex.simple_mutex_edits()}
    files.add("kernel/locking/rtmutex.c")
    return sorted(files)


def series_files(plan: RewritePlan, audit: Audit) -> list[str]:
    # files spatch could not parse may hold old-API calls only the lexer sees
    failed = {p.file for p in audit.parse_failures}
    return sorted(set(core_files()) | set(plan.files()) | failed)


def already_converted(tree: Path, spatch: Path, cache: ResultCache | None = None) -> bool:
    """The tree carries patch 1 already (the down_sem() API exists)."""
    try:
        return core_api.has_counting_api(core_api.api_state(tree, spatch, cache))
    except CoreApiError:
        return False


def series_problem(tree: KernelTree) -> str | None:
    """Why TREE cannot take the series, or None: read before any long work.

    The core patches edit these files at known anchors; a tree without them
    (a 2.6 tree, a trimmed copy) can still be audited.
    """
    if tree.api_era is not ApiEra.MODERN:
        return (f"Linux {tree.version} predates struct mutex (API era {tree.api_era.value}): "
                "the series is for 6.x trees; use --analyze-only for the audit")
    missing = [rel for rel in core_files() if not (tree.path / rel).is_file()]
    if missing:
        return (f"the core patches edit {', '.join(missing[:3])}"
                f"{' ...' if len(missing) > 3 else ''}, which {tree.path} lacks; "
                "use --analyze-only for the audit")
    # A tree that carries patch 2 already has no anchors left to find.
    carried = all((tree.path / rel).is_file() for rel in simple_mutex.new_files())
    anchor = None if carried else simple_mutex.missing_anchor(tree.path)
    if anchor:
        return f"{anchor}; use --analyze-only for the audit"
    return None


# Changed lines that can change what a file exports: an export, a
# preprocessor conditional around one.  A prefilter for git diff -G (git
# picks the files; spatch and its lexer read them).
EXPORT_CHANGE = r"EXPORT_|^[[:space:]]*#[[:space:]]*(if|ifdef|ifndef|elif|else|endif)\b"


def planned_files(plan: RewritePlan, units: list[ConversionUnit]) -> list[list[str]]:
    """The files each unit's patch will hold if the rewrite changes every
    file the plan names (as SeriesBuilder.convert assigns them)."""
    owners = file_owners(plan, units)
    return [[f for f in sorted(owners) if min(owners[f]) == n] for n in range(len(units))]


class MaintainersAhead:
    """get_maintainer.pl asked, on a thread of its own, about file lists a
    later step will ask about: the answers land in the cache under the key
    get_maintainer() looks up, so they change no result.  Without a cache
    it does nothing."""

    def __init__(self, tree: Path, cache: ResultCache | None, file_lists: list[list[str]],
                 maintainers: MaintainersFile | None = None):
        self.pool: ThreadPoolExecutor | None = None
        if cache is None or cache.root is None:
            return
        self.pool = ThreadPoolExecutor(max_workers=1)
        for files in file_lists:
            # a failure (no perl) is for the real question to meet and report
            self.pool.submit(get_maintainer, tree, files, cache, maintainers)

    def stop(self) -> None:
        """Drop the questions not started; wait for the one running."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def export_candidates(repo: MiniRepo) -> list[str]:
    """The files of the series whose exports may differ before and after
    it: those whose diff adds or removes an export line or a conditional,
    and the C files next to a Makefile it changes (obj-$(CONFIG_X) lines
    decide whether a file, and so its exports, is built)."""
    changed = repo.git("diff", "--name-only", BASE_TAG, "HEAD").split()
    picked = set(repo.git("diff", "--name-only", "-G", EXPORT_CHANGE, BASE_TAG, "HEAD").split())
    makefile_dirs = {str(Path(f).parent) for f in changed if Path(f).name == "Makefile"}
    picked |= {f for f in changed if f.endswith(".c") and str(Path(f).parent) in makefile_dirs}
    return sorted(f for f in picked if f.endswith((".c", ".h")))


class SeriesBuilder:
    def __init__(self, req: SeriesRequest, progress: Progress, workdir: Path):
        self.req = req
        self.progress = progress
        self.workdir = workdir
        self.maintainers = req.maintainers or Maintainers.load(req.tree)

    def build(self) -> SeriesResult:
        plan = plan_rewrite(self.req.audit.instances)
        if already_converted(self.req.tree, self.req.spatch, self.req.cache) and not plan.edits:
            return SeriesResult([], [], [], plan, [], self.workdir, nothing_to_convert=True)
        files = series_files(plan, self.req.audit)
        with self.progress.stage("series: scratch repository"):
            repo = MiniRepo.create(self.workdir / "repo", self.req.tree, files,
                                   self.req.identity)
        self.progress.step(f"series: {len(files)} files copied into a scratch repository")
        patches: list[PatchInfo] = []
        units = conversion_units(self.req.audit.instances, plan, self.maintainers)
        # the core patches run one spatch at a time: the other core asks
        # get_maintainer.pl about the files each unit is to change
        warming = MaintainersAhead(self.req.tree, self.req.cache, planned_files(plan, units),
                                   self.maintainers.file)
        try:
            with self.progress.stage("series: core patches"):
                patches += self.core_patch(repo, core_api.counting_api_change(),
                                           partial(core_api.apply_counting_api,
                                                   spatch=self.req.spatch))
                patches += self.core_patch(repo, simple_mutex.simple_mutex_change(),
                                           partial(simple_mutex.apply_simple_mutex,
                                                   spatch=self.req.spatch))
            with self.progress.stage("series: rewrite and conversion patches"):
                results, units = self.convert(repo, plan, units, patches, warming)
        finally:
            warming.stop()
        if self.req.mode == "flag-day":
            with self.progress.stage("series: core patches"):
                patches += self.core_patch(repo, core_api.flag_day_change(),
                                           partial(core_api.apply_flag_day,
                                                   spatch=self.req.spatch),
                                           kind="flag-day")
        repo.flush()
        return SeriesResult(patches, results, units, plan, files, repo.path)

    def export_series(self, result: SeriesResult, staging: Path
                      ) -> tuple[list[Path], list[CheckpatchReport | None]]:
        """git format-patch RESULT into STAGING, and the exported symbols
        before and after it into RESULT; returns the patch files and
        checkpatch.pl's report on each patch (cover letter aside).  git
        formats the patches, checkpatch.pl reads them and git diffs the
        whole series while the export check reads it: the check's spatch
        runs are short and leave a core idle."""
        repo = MiniRepo(result.repo, self.req.identity)
        self.progress.step("series: exported symbols before and after")
        with ThreadPoolExecutor(max_workers=1) as background:
            shortstat = background.submit(repo.git, "diff", "--shortstat", BASE_TAG, "HEAD")
            checked = background.submit(self.format_and_check, result, staging)
            with self.progress.stage("series: exported symbols"):
                result.exports = diff_exports(self.req.spatch, self.req.tree, repo.path,
                                              export_candidates(repo), self.req.jobs,
                                              cache=self.req.cache, memo=self.req.memo)
            with self.progress.stage("series: git format-patch, checkpatch"):
                result.shortstat = shortstat.result().strip()
                return checked.result()

    def format_and_check(self, result: SeriesResult, staging: Path
                         ) -> tuple[list[Path], list[CheckpatchReport | None]]:
        files = export_patches(result.repo, result, staging, self.req.identity)
        return files, checkpatch_all(self.req.tree, files[1:], self.req.cache, self.req.jobs)

    def convert(self, repo: MiniRepo, plan: RewritePlan, units: list[ConversionUnit],
                patches: list[PatchInfo], warming: MaintainersAhead
                ) -> tuple[list[RewriteResult], list[ConversionUnit]]:
        """Rewrite every instance in one spatch pass, then commit each
        subsystem's files as its own patch.

        One pass costs a minute on the whole tree where one pass per
        subsystem costs several.  It is only correct when every changed
        file belongs to one subsystem's instances; a file shared by two
        subsystems is allowed when it only gets counting-API renames (both
        spellings build until the flag day).  Otherwise, or if the pass
        changed a file no subsystem owns, fall back to one pass per unit.
        """
        owners = file_owners(plan, units)
        if any(len(us) > 1 and mutex_in(plan, f) for f, us in owners.items()):
            return self.convert_unit_by_unit(repo, plan, units, patches), units
        self.progress.step(f"series: rewriting {len(owners)} files in one spatch pass")
        with self.progress.stage("series: rewrite (spatch)"):
            whole = apply_rewrite(repo.path, plan, self.req.spatch, self.req.jobs,
                                  source=self.req.tree, cache=self.req.cache,
                                  memo=self.req.memo)
        self.warn_unconfirmed(whole)
        with self.progress.stage("series: unparsed code"):
            units, owners = self.rename_unparsed(repo, units, owners)
        self.progress.step(f"series: committing {len(units)} subsystems "
                           "(get_maintainer.pl for each)")
        whole.files_changed = sorted(set(whole.files_changed)
                                     | {c.file for u in units for c in u.unparsed})
        unowned = [f for f in whole.files_changed if f not in owners]
        if unowned:
            raise SeriesError(f"the rewrite changed files no instance owns: {unowned[:5]}")
        results = []
        unit_files = [[f for f in whole.files_changed if min(owners[f]) == n]
                      for n in range(len(units))]
        views = [unit_view(whole, unit, files) for unit, files in zip(units, unit_files)]
        warming.stop()  # what it has not asked yet is asked here, once
        with self.progress.stage("series: get_maintainer"), \
                ThreadPoolExecutor(max_workers=max(1, self.req.jobs)) as pool:
            ccs = list(pool.map(lambda view: get_maintainer(self.req.tree, view.files_changed,
                                                            self.req.cache,
                                                            self.maintainers.file), views))
        for unit, result, files, cc in zip(units, views, unit_files, ccs):
            results.append(result)
            self.commit_unit(repo, unit, result, files, patches, cc)
        self.progress.step(f"series: {len(units)} conversion patches")
        return results, units

    def rename_unparsed(self, repo: MiniRepo, units: list[ConversionUnit],
                        owners: dict[str, set[int]]
                        ) -> tuple[list[ConversionUnit], dict[str, set[int]]]:
        """Rename the old-API calls of unparsable code (see unparsed.py);
        each file's calls go with the unit that owns the file, or with a
        unit of their own per MAINTAINERS section."""
        # Only files whose skipped lines name an old-API function (the
        # analysis lexed them) can hold such a call.
        failed = [p.file for p in self.req.audit.parse_failures
                  if p.identifiers & COUNTING_NAMES.keys() and (repo.path / p.file).is_file()]
        calls = unparsed_old_api_calls(self.req.spatch, repo.path, failed, self.req.jobs)
        changed, problems = rename_calls(repo.path, calls)
        for problem in problems:
            self.progress.warn(f"unparsed code: {problem}")
        units = list(units)
        extra: dict[str, ConversionUnit] = {}
        for c in calls:
            if c.file not in changed:
                continue
            if c.file in owners:
                units[min(owners[c.file])].unparsed.append(c)
                continue
            section = self.maintainers.section_for(c.file)
            if section not in extra:
                extra[section] = ConversionUnit(section, subject_prefix(c.file))
                units.append(extra[section])
            owners.setdefault(c.file, {units.index(extra[section])})
            extra[section].unparsed.append(c)
        if calls:
            self.progress.step(f"series: {len(calls)} old-API calls in unparsable code renamed "
                               f"in {len(changed)} files")
        return units, owners

    def convert_unit_by_unit(self, repo: MiniRepo, plan: RewritePlan,
                             units: list[ConversionUnit],
                             patches: list[PatchInfo]) -> list[RewriteResult]:
        results = []
        for n, unit in enumerate(units, 1):
            result = apply_rewrite(repo.path, plan, self.req.spatch, self.req.jobs, unit.ids,
                                   source=self.req.tree, cache=self.req.cache,
                                   memo=self.req.memo)
            self.warn_unconfirmed(result)
            results.append(result)
            # the files it says it changed, queued: one git run for all units
            self.commit_unit(repo, unit, result, result.files_changed, patches)
            self.progress.step(f"series: converted {unit.section} ({n}/{len(units)})")
        stray = repo.uncommitted()
        if stray:
            raise SeriesError(f"the rewrite changed files it did not report: {stray[:5]}")
        return results

    def warn_unconfirmed(self, result: RewriteResult) -> None:
        """What spatch did not find as the include and alignment steps left
        it: never expected, so said loudly rather than committed quietly."""
        for problem in result.unconfirmed:
            self.progress.warn(f"rewrite not confirmed by spatch: {problem}")

    def commit_unit(self, repo: MiniRepo, unit: ConversionUnit, result: RewriteResult,
                    files: list[str] | None, patches: list[PatchInfo],
                    cc: list[str] | None = None) -> None:
        if cc is None:
            cc = get_maintainer(self.req.tree, result.files_changed, self.req.cache,
                                self.maintainers.file)
        subject, body = conversion_message(unit, result, cc, self.req.identity)
        if repo.commit(subject, body, files):
            patches.append(PatchInfo("", subject, "conversion", result.files_changed,
                                     sorted(unit.ids)))

    def core_patch(self, repo: MiniRepo, change: CoreChange, apply, kind: str = "core"
                   ) -> list[PatchInfo]:
        touched = cached_core_change(self.req.cache, repo.path, change, apply)
        cc = get_maintainer(self.req.tree, touched, self.req.cache, self.maintainers.file)
        subject, body = core_message(change, self.req.identity, cc)
        if not repo.commit(subject, body):
            return []
        return [PatchInfo("", subject, kind, touched, [])]


# What a core patch's result depends on besides the files it edits.
CORE_INPUTS = ("cocci/core", "core", "sem2mutex/series/core_api.py",
               "sem2mutex/series/simple_mutex.py")


def cached_core_change(cache: ResultCache, root: Path, change: CoreChange, apply) -> list[str]:
    """APPLY (a core patch) to the scratch repository ROOT, or the files it
    left last time from the same repository, change and code."""
    if cache.root is None:
        return [str(t) for t in apply(root)]
    # the files a core patch edits or adds, as they are now
    edited = {str(f) for f in core_files()} | {str(f) for f in simple_mutex.new_files()}
    files = sorted(f for f in edited if (root / f).is_file())
    before = {f: (root / f).read_bytes() for f in files}
    code = [str(p.relative_to(REPO_ROOT)) + ":" + file_digest(p)
            for name in CORE_INPUTS for p in sorted((REPO_ROOT / name).rglob("*"))
            + ([REPO_ROOT / name] if (REPO_ROOT / name).is_file() else []) if p.is_file()]
    key = cache.key("core-change", change.subject, *code,
                    *[f"{f}:{hashlib.sha256(before[f]).hexdigest()}" for f in files])
    kept = cache.get("core-change", key)
    if isinstance(kept, dict):
        for f, text in kept["files"].items():
            (root / f).parent.mkdir(parents=True, exist_ok=True)
            (root / f).write_text(text, errors="surrogateescape")
        return kept["touched"]
    touched = [str(t) for t in apply(root)]
    after = {f: root / f for f in edited | {str(t) for t in touched} if (root / f).is_file()}
    changed = {f: p.read_text(errors="surrogateescape") for f, p in after.items()
               if before.get(f) != p.read_bytes()}
    cache.put("core-change", key, {"touched": touched, "files": changed})
    return touched


def export_patches(repo: Path, series: SeriesResult, staging: Path, identity: str) -> list[Path]:
    """git format-patch into STAGING; returns the patch files, cover letter first."""
    mini = MiniRepo(repo, identity)
    mini.git("format-patch", "-q", "--cover-letter", "--no-signature", "--numbered",
             "--thread=shallow", "-o", str(staging), f"{BASE_TAG}..HEAD")
    files = sorted(staging.glob("[0-9][0-9][0-9][0-9]-*.patch"))
    for info, path in zip(series.patches, files[1:]):
        info.file = path.name
    return files


def install_outputs(staging: Path, outdir: Path) -> None:
    """Replace the series files of OUTDIR with STAGING's, one rename each."""
    outdir.mkdir(parents=True, exist_ok=True)
    stale = list(outdir.glob("[0-9][0-9][0-9][0-9]-*.patch")) + \
        [outdir / n for n in ("series", "scope.md", "scope.json")]
    for old in stale:
        if old.exists() and not (staging / old.name).exists():
            old.unlink()
    for new in sorted(staging.iterdir()):
        new.replace(outdir / new.name)


def generate_series(req: SeriesRequest, progress: Progress) -> SeriesResult:
    if req.mode not in MODES:
        raise SeriesError(f"--mode must be one of {', '.join(MODES)}")
    workdir = Path(tempfile.mkdtemp(prefix="sem2mutex-series-"))
    try:
        builder = SeriesBuilder(req, progress, workdir)
        result = builder.build()
        if result.nothing_to_convert:
            return result
        staging = req.outdir / ".series-staging"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        files, reports = builder.export_series(result, staging)
        for info, report in zip(result.patches, reports):
            info.checkpatch = report
        if None in reports:
            progress.warn(f"{req.tree}/scripts/checkpatch.pl is missing: "
                          "the patches were not checked")
        scope = build_scope(req, result)
        write_cover_letter(files[0], scope)
        (staging / "series").write_text("".join(f"{p.name}\n" for p in files[1:]))
        write_scope(staging, scope)
        install_outputs(staging, req.outdir)
        staging.rmdir()
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

