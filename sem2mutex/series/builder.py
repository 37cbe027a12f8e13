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

import shutil
import subprocess
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from sem2mutex.series import core_api

from sem2mutex.series import simple_mutex
from sem2mutex.tools.maintainers import Maintainers
from sem2mutex.model import Audit, CoreChange, Instance
from sem2mutex.series.prefixes import subject_prefix
from sem2mutex.progress import Progress
from sem2mutex.series.rewrite import MUTEX, RewritePlan, RewriteResult, apply_rewrite, plan_rewrite
from sem2mutex.series.unparsed import COUNTING_NAMES, UnparsedCall, rename_calls, unparsed_old_api_calls
from sem2mutex.series.scope import build_scope, exported_symbols, write_cover_letter, write_scope

MODES = ("flag-day", "gradual")
BASE_TAG = "sem2mutex-base"
PSEUDO_KINDS = ("pointer", "unresolved")


class SeriesError(Exception):
    """The series cannot be produced; the message says why, in one line."""


# ------------------------------------------------------------------ units


@dataclass
class ConversionUnit:
    """The instances one conversion patch converts: one MAINTAINERS section."""

    section: str
    prefix: str
    instances: list[Instance] = field(default_factory=list)
    # old-API calls in code spatch cannot parse, renamed by the lexer
    unparsed: list[UnparsedCall] = field(default_factory=list)

    @property
    def ids(self) -> set[str]:
        return {i.id for i in self.instances}


def home_file(inst: Instance) -> str:
    """The file that decides where an instance's patch goes: its declaration."""
    if inst.decls and inst.kind not in PSEUDO_KINDS:
        return inst.decls[0].file
    return inst.file


def prefix_file(inst: Instance) -> str:
    """The file whose subsystem names the patch: a struct declared in a
    shared header is named after the code that uses it."""
    home = home_file(inst)
    if not home.startswith("include/"):
        return home
    users = Counter(s.location.file for s in inst.sites if not s.location.file.endswith(".h"))
    return users.most_common(1)[0][0] if users else home


def conversion_units(instances: list[Instance], plan: RewritePlan,
                     maintainers: Maintainers) -> list[ConversionUnit]:
    planned = {e.instance for e in plan.edits}
    units: dict[str, ConversionUnit] = {}
    for inst in instances:
        if inst.id not in planned:
            continue
        section = maintainers.section_for(home_file(inst))
        unit = units.setdefault(section, ConversionUnit(section,
                                                        subject_prefix(prefix_file(inst))))
        unit.instances.append(inst)
    return sorted(units.values(), key=lambda u: (u.prefix, u.section))


# -------------------------------------------------------------- git repo


@dataclass
class MiniRepo:
    """A git repository of the files the series touches."""

    path: Path
    identity: str

    def git(self, *args: str, input_text: str | None = None) -> str:
        name, email = split_identity(self.identity)
        env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
               "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email,
               "HOME": str(self.path), "GIT_CONFIG_NOSYSTEM": "1",
               "PATH": "/usr/local/bin:/usr/bin:/bin"}
        done = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True,
                              text=True, input=input_text, env=env)
        if done.returncode != 0:
            raise SeriesError(f"git {' '.join(args[:2])} failed: {done.stderr.strip()}")
        return done.stdout

    @classmethod
    def create(cls, path: Path, tree: Path, files: list[str], identity: str) -> "MiniRepo":
        for rel in files:
            dest = path / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(tree / rel, dest)
        repo = cls(path, identity)
        repo.git("init", "-q")
        repo.git("add", "-A")
        repo.git("commit", "-q", "-m", "base: the files the series touches, as in the tree")
        repo.git("tag", BASE_TAG)
        return repo

    def commit(self, subject: str, body: str, files: list[str] | None = None) -> bool:
        """Commit FILES (default: every change); False if there was nothing."""
        self.git("add", "-A", "--", *(files or ["."]))
        if not self.git("diff", "--cached", "--name-only").strip():
            return False
        self.git("commit", "-q", "-F", "-", input_text=f"{subject}\n\n{body}\n")
        return True


def split_identity(identity: str) -> tuple[str, str]:
    name, _, rest = identity.partition("<")
    email = rest.rstrip(">").strip()
    if not name.strip() or "@" not in email:
        raise SeriesError(f"identity {identity!r} is not of the form 'Name <email>'")
    return name.strip(), email


def default_identity() -> str | None:
    def config(key: str) -> str:
        done = subprocess.run(["git", "config", "--get", key], capture_output=True, text=True)
        return done.stdout.strip()
    name, email = config("user.name"), config("user.email")
    return f"{name} <{email}>" if name and email else None


# ------------------------------------------------------------- messages


def wrap(text: str, width: int = 72, indent: str = "") -> list[str]:
    import textwrap
    return textwrap.wrap(text, width=width, initial_indent=indent,
                         subsequent_indent=indent + "  " if indent else "",
                         break_on_hyphens=False, break_long_words=False)


def evidence(inst: Instance) -> str:
    shown = []
    for r in inst.reasons[:4]:
        where = f" ({r.locations[0]})" if r.locations else ""
        shown.append(f"{r.code}{where}")
    return ", ".join(shown)


def describe_instance(inst: Instance) -> str:
    if inst.kind.startswith("field"):
        return f"{inst.struct}.{inst.name}"
    if inst.kind == "pointer":
        return f"{inst.name} (a struct semaphore pointer in {inst.file})"
    return f"{inst.name} ({inst.file})"


def conversion_message(unit: ConversionUnit, result: RewriteResult,
                       cc: list[str], identity: str) -> tuple[str, str]:
    targets = {r.instance: r for r in result.instances}
    to_mutex = [i for i in unit.instances if targets.get(i.id) and targets[i.id].target == MUTEX]
    others = [i for i in unit.instances if i not in to_mutex]
    if not unit.instances:
        return (f"{unit.prefix}: Use the down_sem() API in code Coccinelle cannot parse",
                unparsed_body(unit, cc, identity))
    if to_mutex and others:
        subject = (f"{unit.prefix}: Convert binary semaphores to mutexes, "
                   "use down_sem() for the others")
    elif to_mutex:
        what = "semaphore" if len(to_mutex) == 1 else "semaphores"
        subject = f"{unit.prefix}: Convert binary {what} to struct mutex"
    else:
        subject = f"{unit.prefix}: Use the down_sem() counting semaphore API"
    body: list[str] = []
    if to_mutex:
        body += wrap("These semaphores are mutexes in all but name: every initialisation "
                     "sets the count to 1, and every up() releases a down() taken by the "
                     "same task in the same function (or through its lock/unlock "
                     "wrappers), never from interrupt, timer or tasklet context. "
                     "struct mutex states that, is cheaper, and lets lockdep and "
                     "CONFIG_DEBUG_MUTEXES check it. Convert:")
        body.append("")
        for inst in to_mutex:
            body += wrap(f"- {describe_instance(inst)}: {evidence(inst)}", indent="  ")
        body.append("")
    if others:
        body += wrap("These stay semaphores, so that their behaviour does not change; "
                     "switch them to the down_sem() API, which names what they are:")
        body.append("")
        for inst in others:
            demoted = targets[inst.id].demoted if inst.id in targets else []
            why = (f"kept: {'; '.join(demoted)}" if demoted
                   else f"{inst.sem_class.value}: {evidence(inst)}")
            if inst.pinned:
                why = f"{inst.sem_class.value} (reviewed by {inst.pinned.reviewer}: " \
                      f"{inst.pinned.reason})"
            body += wrap(f"- {describe_instance(inst)}: {why}", indent="  ")
        body.append("")
    if unit.unparsed:
        body += wrap("Coccinelle cannot parse the code around these calls (function-"
                     "defining macros); the semaphores they name are ambiguous, so they "
                     "move to the down_sem() API too:")
        body.append("")
        for c in unit.unparsed:
            body += wrap(f"- {c.file}:{c.line}: {c.op}() -> {c.new}()", indent="  ")
        body.append("")
    body += wrap("Generated by sem2mutex with Coccinelle; the audit report lists the "
                 "code locations behind each verdict.")
    body.append("")
    body += [f"Cc: {c}" for c in cc]
    body.append(f"Signed-off-by: {identity}")
    return subject, "\n".join(body)


def file_owners(plan: RewritePlan, units: list[ConversionUnit]) -> dict[str, set[int]]:
    """file -> indexes of the units whose instances have edits in it."""
    unit_of = {iid: n for n, u in enumerate(units) for iid in u.ids}
    owners: dict[str, set[int]] = {}
    for e in plan.edits:
        if e.instance in unit_of:
            owners.setdefault(e.file, set()).add(unit_of[e.instance])
    return owners


def mutex_in(plan: RewritePlan, file: str) -> bool:
    return any(plan.targets.get(e.instance) == MUTEX for e in plan.edits if e.file == file)


def unit_view(whole: RewriteResult, unit: ConversionUnit, files: list[str]) -> RewriteResult:
    """The part of a whole-tree rewrite result that one unit commits."""
    return RewriteResult(
        files_changed=files,
        instances=[r for r in whole.instances if r.instance in unit.ids],
        includes=[inc for inc in whole.includes if inc.file in files],
        parse_errors={f: e for f, e in whole.parse_errors.items() if f in files},
        unplanned_changes=[l for l in whole.unplanned_changes if l.file in files])


def unparsed_body(unit: ConversionUnit, cc: list[str], identity: str) -> str:
    body = wrap("The semaphore calls below sit in code Coccinelle cannot parse "
                "(function-defining macros), so the audit could not classify what they "
                "lock. Keep their semantics: move them to the down_sem() counting API, "
                "so that they still build once the old names are gone.")
    body.append("")
    for c in unit.unparsed:
        body += wrap(f"- {c.file}:{c.line}: {c.op}() -> {c.new}()", indent="  ")
    body += ["", *[f"Cc: {c}" for c in cc], f"Signed-off-by: {identity}"]
    return "\n".join(body)


def core_message(change: CoreChange, identity: str, cc: list[str]) -> tuple[str, str]:
    trailer = [f"Cc: {c}" for c in cc] + [f"Signed-off-by: {identity}"]
    return change.subject, change.body.rstrip() + "\n\n" + "\n".join(trailer)


# ------------------------------------------------------- kernel's scripts


def get_maintainer(tree: Path, files: list[str]) -> list[str]:
    """Recipients for FILES, by the tree's own scripts/get_maintainer.pl."""
    script = tree / "scripts" / "get_maintainer.pl"
    existing = [f for f in files if (tree / f).exists()]
    if not script.is_file() or not existing:
        return []
    done = subprocess.run(["perl", str(script), "--no-git", "--no-git-fallback",
                           "--no-rolestats", "--no-tree", "-f", *existing],
                          cwd=tree, capture_output=True, text=True)
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


@dataclass(frozen=True)
class CheckpatchReport:
    patch: str
    errors: list[str]
    warnings: list[str]
    checks: list[str]


def checkpatch(tree: Path, patch: Path) -> CheckpatchReport | None:
    """The tree's own checkpatch.pl on PATCH; None when the tree has none."""
    script = tree / "scripts" / "checkpatch.pl"
    if not script.is_file():
        return None
    done = subprocess.run(["perl", str(script), "--no-tree", "--terse", "--show-types",
                           "--no-summary", str(patch)], cwd=tree, capture_output=True,
                          text=True)
    lines = done.stdout.splitlines()
    pick = lambda kind: [l.split(": ", 1)[-1] for l in lines if f": {kind}:" in l]
    return CheckpatchReport(patch.name, pick("ERROR"), pick("WARNING"), pick("CHECK"))


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
    exports_before: set[str] = field(default_factory=set)
    exports_after: set[str] = field(default_factory=set)


def core_files() -> list[str]:
    files = set(core_api.CORE_FILES)
    files |= {e.path for e in simple_mutex.simple_mutex_edits()}
    files.add("kernel/locking/rtmutex.c")
    return sorted(files)


def series_files(plan: RewritePlan, audit: Audit) -> list[str]:
    # files spatch could not parse may hold old-API calls only the lexer sees
    failed = {p.file for p in audit.parse_failures}
    return sorted(set(core_files()) | set(plan.files()) | failed)


def already_converted(tree: Path) -> bool:
    """The tree carries patch 1 already (the down_sem() API exists)."""
    try:
        return core_api._has_counting_api(core_api.api_state(tree))
    except core_api.CoreApiStateError:
        return False


class SeriesBuilder:
    def __init__(self, req: SeriesRequest, progress: Progress, workdir: Path):
        self.req = req
        self.progress = progress
        self.workdir = workdir
        self.maintainers = Maintainers.load(req.tree)

    def build(self) -> SeriesResult:
        plan = plan_rewrite(self.req.audit.instances)
        if already_converted(self.req.tree) and not plan.edits:
            return SeriesResult([], [], [], plan, [], self.workdir, nothing_to_convert=True)
        files = series_files(plan, self.req.audit)
        repo = MiniRepo.create(self.workdir / "repo", self.req.tree, files, self.req.identity)
        self.progress.step(f"series: {len(files)} files copied into a scratch repository")
        exports_before = exported_symbols(self.req.spatch, repo.path, files)
        patches: list[PatchInfo] = []
        patches += self.core_patch(repo, core_api.counting_api_change(),
                                   core_api.apply_counting_api)
        patches += self.core_patch(repo, simple_mutex.simple_mutex_change(),
                                   simple_mutex.apply_simple_mutex)
        units = conversion_units(self.req.audit.instances, plan, self.maintainers)
        results, units = self.convert(repo, plan, units, patches)
        if self.req.mode == "flag-day":
            patches += self.core_patch(repo, core_api.flag_day_change(), core_api.apply_flag_day,
                                       kind="flag-day")
        shortstat = repo.git("diff", "--shortstat", BASE_TAG, "HEAD").strip()
        touched = repo.git("diff", "--name-only", BASE_TAG, "HEAD").split()
        exports_after = exported_symbols(self.req.spatch, repo.path, touched)
        return SeriesResult(patches, results, units, plan, files, repo.path, shortstat=shortstat,
                            exports_before=exports_before, exports_after=exports_after)

    def convert(self, repo: MiniRepo, plan: RewritePlan, units: list[ConversionUnit],
                patches: list[PatchInfo]) -> tuple[list[RewriteResult], list[ConversionUnit]]:
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
        whole = apply_rewrite(repo.path, plan, self.req.spatch, self.req.jobs)
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
        with ThreadPoolExecutor(max_workers=max(1, self.req.jobs)) as pool:
            ccs = list(pool.map(lambda view: get_maintainer(self.req.tree, view.files_changed),
                                views))
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
            result = apply_rewrite(repo.path, plan, self.req.spatch, self.req.jobs, unit.ids)
            results.append(result)
            self.commit_unit(repo, unit, result, None, patches)
            self.progress.step(f"series: converted {unit.section} ({n}/{len(units)})")
        return results

    def commit_unit(self, repo: MiniRepo, unit: ConversionUnit, result: RewriteResult,
                    files: list[str] | None, patches: list[PatchInfo],
                    cc: list[str] | None = None) -> None:
        if cc is None:
            cc = get_maintainer(self.req.tree, result.files_changed)
        subject, body = conversion_message(unit, result, cc, self.req.identity)
        if repo.commit(subject, body, files):
            patches.append(PatchInfo("", subject, "conversion", result.files_changed,
                                     sorted(unit.ids)))

    def core_patch(self, repo: MiniRepo, change: CoreChange, apply, kind: str = "core"
                   ) -> list[PatchInfo]:
        touched = apply(repo.path)
        cc = get_maintainer(self.req.tree, touched)
        subject, body = core_message(change, self.req.identity, cc)
        if not repo.commit(subject, body):
            return []
        return [PatchInfo("", subject, kind, touched, [])]


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
        files = export_patches(result.repo, result, staging, req.identity)
        with ThreadPoolExecutor(max_workers=max(1, req.jobs)) as pool:
            reports = list(pool.map(lambda path: checkpatch(req.tree, path), files[1:]))
        for info, report in zip(result.patches, reports):
            info.checkpatch = report
        if None in reports:
            progress.warn(f"{req.tree}/scripts/checkpatch.pl is missing: "
                          "the patches were not checked")
        scope = build_scope(req, result, result.exports_before, result.exports_after)
        write_cover_letter(files[0], scope)
        (staging / "series").write_text("".join(f"{p.name}\n" for p in files[1:]))
        write_scope(staging, scope)
        install_outputs(staging, req.outdir)
        staging.rmdir()
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
