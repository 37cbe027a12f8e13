"""The compile check of --verify: every file the series touches, and every
includer of a touched header, compiled for x86_64 allmodconfig.

The build directory is kept in the cache (make O=...).  A file that fails
is compiled again without the series (a second build directory fed by the
pristine tree): if it fails there too it cannot be built on x86_64 at all.
The compiler decides what compiles and which headers a file includes (its
dependency list in .cmd files); the grep of #include lines only picks the
files worth compiling.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from sem2mutex.errors import VerifyError
from sem2mutex.progress import Progress
from sem2mutex.tools.fs import read_json
from sem2mutex.tools.kernel_tree import NON_KERNEL_DIRS
from sem2mutex.proof.workspace import git

ARCH = "x86_64"
SRCARCH = "x86"
KCONFIG_TARGET = "allmodconfig"

# Headers that nearly the whole kernel includes: compiling their includers
# would be a full kernel build, and the files the series touches (the core
# patch's semaphore.c, every converted user) already compile them.
CORE_API_HEADERS = ("include/linux/semaphore.h", "include/linux/mutex.h")
# A touched header whose includers (directly or through other headers) are
# more .c files than this is not followed either, and the output says so.
MAX_INCLUDERS = 400

# Prefilter for #include lines naming one of some basenames.
INCLUDE_LINE = r'^\s*#\s*include\s*[<"]([^>"]*/)?({names})[>"]'
INCLUDE_DIRECTIVE = re.compile(r'#\s*include\s*([<"])([^>"]+)[>"]')
BUILD_STAMP = ".sem2mutex-verify-stamp.json"

# make's report of a failed target, and kbuild's "not a target here".
FAILED_TARGET = re.compile(
    r"^make(?:\[\d+\])?: \*\*\* \[[^\]]*?:\d+: (?P<target>[^\]\s]+)\] Error \d+", re.M)
NO_RULE = re.compile(r"No rule to make target '(?P<target>[^']+)'")
ERROR_LINE = re.compile(r"error|No rule to make target", re.I)
# kbuild's short command lines: "  CC [M]  drivers/foo/bar.o".
KBUILD_QUIET_LINE = re.compile(r"^  [A-Z][A-Z0-9_]*(?: \[M\])?\s+\S+\s*$")
ERROR_EXCERPT_LINES = 12


@dataclass(frozen=True)
class CompiledFile:
    file: str
    ok: bool
    error: str | None      # first error lines (tree-relative paths)
    why: str               # "touched", or "includes <header>"
    fails_without_series: bool | None = None  # only known for failures


@dataclass(frozen=True)
class NotBuildable:
    file: str
    reason: str


@dataclass(frozen=True)
class HeaderNotFollowed:
    header: str
    reason: str



@contextmanager
def timed(timings: dict[str, float], name: str) -> Iterator[None]:
    start = time.monotonic()
    try:
        yield
    finally:
        timings[name] = timings.get(name, 0.0) + time.monotonic() - start




def is_other_arch(rel: str) -> str | None:
    """The architecture of arch/<name>/... when it is not x86, else None."""
    parts = rel.split("/")
    if len(parts) > 2 and parts[0] == "arch" and parts[1] != SRCARCH:
        return parts[1]
    return None


def outside_kernel_build(rel: str) -> bool:
    return rel.startswith(NON_KERNEL_DIRS)


# --------------------------------------------------------------------------
# Step 3a: what to compile


@dataclass(frozen=True)
class CompileTarget:
    file: str
    why: str
    header: str | None = None   # for an includer: the header to find in its deps


@dataclass
class CompilePlan:
    targets: list[CompileTarget] = field(default_factory=list)
    not_buildable: list[NotBuildable] = field(default_factory=list)
    headers_not_followed: list[HeaderNotFollowed] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)
    other_files: list[str] = field(default_factory=list)
    includer_candidates: int = 0


def unbuildable_reason(rel: str) -> str | None:
    """Why a path can never be compiled for x86_64, judged by where it is."""
    arch = is_other_arch(rel)
    if arch:
        return f"arch/{arch} code: built only for that architecture, not for {ARCH}"
    if outside_kernel_build(rel):
        return f"{rel.split('/')[0]}/ is user-space or host code, not part of the kernel build"
    return None


def include_directives(repo: Path, basenames: set[str]) -> list[tuple[str, str, str]]:
    """(file, delimiter, text) of #include lines naming one of basenames."""
    names = "|".join(re.escape(name) for name in sorted(basenames))
    done = git(repo, "grep", "-I", "-H", "--no-color", "-P", "-e",
               INCLUDE_LINE.format(names=names), "--", "*.c", "*.h", check=False)
    if done.returncode not in (0, 1):
        raise VerifyError(f"git grep of #include lines failed: {done.stderr.strip()}")
    directives = []
    for line in done.stdout.splitlines():
        rel, _, text = line.partition(":")
        match = INCLUDE_DIRECTIVE.search(text)
        if match:
            directives.append((rel, match.group(1), match.group(2)))
    return directives


def may_include(repo: Path, includer: str, delimiter: str, text: str, header: str) -> bool:
    """Whether this #include line may name header (the compiler confirms).

    A quoted include is looked up next to the including file first; when
    that file exists, that is the one included.  Otherwise the name is
    searched along -I paths we do not model (include/, arch/x86/include/,
    a Makefile's ccflags), so any header whose path ends with it may be it.
    """
    if delimiter == '"':
        local = os.path.normpath(os.path.join(os.path.dirname(includer), text))
        if (repo / local).is_file():
            return local == header
    return header == text or header.endswith("/" + text)


def find_includers(repo: Path, headers: list[str], limit: int
                   ) -> tuple[dict[str, set[str]], list[HeaderNotFollowed]]:
    """The .c files that include each header, directly or through headers.

    One git grep per level of inclusion for all headers together.  A header
    whose includers exceed ``limit`` is not followed further.
    """
    origins: dict[str, set[str]] = {h: {h} for h in headers}   # header -> touched headers
    includers: dict[str, set[str]] = {h: set() for h in headers}
    frontier = set(headers)
    while frontier:
        directives = include_directives(repo, {os.path.basename(h) for h in frontier})
        next_frontier: set[str] = set()
        for rel, delimiter, text in directives:
            if unbuildable_reason(rel):
                continue
            for header in frontier:
                if not may_include(repo, rel, delimiter, text, header):
                    continue
                live = {o for o in origins[header] if len(includers[o]) <= limit}
                if rel.endswith(".c"):
                    for origin in live:
                        includers[origin].add(rel)
                elif rel.endswith(".h") and not live <= origins.setdefault(rel, set()):
                    origins[rel] |= live
                    next_frontier.add(rel)
        frontier = next_frontier
    skipped = [HeaderNotFollowed(h, f"included by more than {limit} .c files (directly or "
                                    "through other headers); not compiled one by one")
               for h in headers if len(includers[h]) > limit]
    for note in skipped:
        includers[note.header] = set()
    return includers, skipped


def plan_compiles(repo: Path, changes: list[tuple[str, str]], files: list[str] | None,
                  limit: int) -> CompilePlan:
    plan = CompilePlan()
    wanted: dict[str, CompileTarget] = {}
    headers = []
    for status, rel in changes:
        if status == "D":
            continue
        if not rel.endswith((".c", ".h")):
            plan.other_files.append(rel)
            continue
        reason = unbuildable_reason(rel)
        if reason:
            plan.not_buildable.append(NotBuildable(rel, reason))
        elif rel in CORE_API_HEADERS:
            plan.headers_not_followed.append(HeaderNotFollowed(
                rel, "core API header included by nearly the whole kernel: its includers "
                     "are not compiled one by one (the touched files that use it are)"))
        elif rel.endswith(".c"):
            wanted[rel] = CompileTarget(rel, "touched")
        else:
            headers.append(rel)
    # Touched .c files may be #included by others (foo_template.c): follow them too.
    followed = headers + [rel for rel in wanted]
    includers, skipped = find_includers(repo, followed, limit) if followed else ({}, [])
    plan.headers_not_followed += skipped
    for header in followed:
        for rel in sorted(includers.get(header, ())):
            plan.includer_candidates += 1
            if rel not in wanted:
                wanted[rel] = CompileTarget(rel, f"includes {header}", header)
    for rel in sorted(wanted):
        if files is not None and rel not in files:
            plan.not_checked.append(rel)
        else:
            plan.targets.append(wanted[rel])
    return plan


# --------------------------------------------------------------------------
# Step 3b: building


def object_of(rel: str) -> str:
    return rel[:-2] + ".o"


def make_command(build: Path, jobs: int, *goals: str, keep_going: bool = False) -> list[str]:
    """make O=build for x86_64; keep_going: -k, and each target's output in one piece."""
    cmd = ["make", f"O={build}", f"ARCH={ARCH}", f"-j{jobs}"]
    if keep_going:
        cmd += ["-k", "--output-sync=target"]
    return cmd + list(goals)


def run_make(source: Path, cmd: list[str], progress: Progress | None = None,
             total: int = 0) -> tuple[int, str]:
    """Run make in the source tree; stream its lines to count compiles."""
    env = dict(os.environ, LC_ALL="C")
    lines = []
    compiled = 0
    last_report = time.monotonic()
    with subprocess.Popen(cmd, cwd=source, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace",
                          stdin=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.lstrip().startswith("CC"):
                compiled += 1
                if progress and time.monotonic() - last_report > 30:
                    progress.step(f"verify: {compiled} compiler runs so far "
                                  f"({total} files to compile)")
                    last_report = time.monotonic()
    return proc.returncode, "".join(lines)


def error_excerpt(output: str, source: Path) -> str:
    """The first error lines of a make run, paths made tree-relative."""
    text = output.replace(f"{source}/", "")
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if ERROR_LINE.search(line)), 0)
    # gcc's "In function 'x':" / "In file included from" lines come first.
    while first > 0 and (lines[first - 1].rstrip().endswith(":")
                         or "included from" in lines[first - 1]):
        first -= 1
    return "\n".join(lines[first:first + ERROR_EXCERPT_LINES])


def failed_targets(output: str) -> set[str]:
    return ({m.group("target") for m in FAILED_TARGET.finditer(output)}
            | {m.group("target") for m in NO_RULE.finditer(output)})


@dataclass
class BuildDir:
    """An out-of-tree allmodconfig build dir for one source tree."""

    source: Path
    path: Path
    stamp: dict
    jobs: int
    prepared: bool = False

    def ensure_prepared(self, progress: Progress, timings: dict[str, float],
                        label: str) -> None:
        """Configure a new build dir and make prepare in it, timed.

        A configured dir is left to the compile itself: kbuild runs
        prepare before any single target anyway, and a second make
        invocation costs seconds on every warm run.
        """
        if self.prepared:
            return
        recorded = read_json(self.path / BUILD_STAMP)
        wanted = {"source": str(self.source), "tree": self.stamp, "config": KCONFIG_TARGET}
        if recorded != wanted and self.path.exists():
            progress.step(f"verify: {self.path} was built from another tree: starting afresh")
            shutil.rmtree(self.path)
        if not (self.path / BUILD_STAMP).is_file():
            self.path.mkdir(parents=True, exist_ok=True)
            progress.step(f"verify: make {KCONFIG_TARGET} in {self.path}")
            with timed(timings, f"{label}_config"):
                self._make_or_fail(KCONFIG_TARGET)
            progress.step(f"verify: make prepare ({label}; about a minute on 2 cores)")
            with timed(timings, f"{label}_prepare"):
                self._make_or_fail("prepare")
            # Written last: a dir without it is configured and prepared afresh.
            (self.path / BUILD_STAMP).write_text(json.dumps(wanted))
        self.prepared = True

    def _make_or_fail(self, goal: str) -> None:
        code, output = run_make(self.source, make_command(self.path, self.jobs, goal))
        if code != 0:
            raise VerifyError(f"make {goal} failed in {self.path}:\n"
                              + error_excerpt(output, self.source))

    def compile(self, rels: list[str], progress: Progress | None = None
                ) -> dict[str, str]:
        """Compile rels in one make -k; return {failed file: first error lines}.

        --output-sync keeps each compiler run's messages together, so the errors
        of one file can be told from another's in a parallel build.
        """
        objects = {object_of(rel): rel for rel in rels}
        code, output = run_make(self.source, make_command(
            self.path, self.jobs, *objects, keep_going=True),
            progress, len(rels))
        failed = {objects[t] for t in failed_targets(output) if t in objects}
        if code != 0 and not failed:
            failed = set(rels)   # make failed before naming a target: blame all
        failed |= {rel for rel in rels if not (self.path / object_of(rel)).is_file()}
        excerpts = {}
        for rel in sorted(failed):
            block = compiler_messages(output, object_of(rel))
            if block is None or not ERROR_LINE.search(block):
                # Not compiled at all (no rule, prepare failed): ask make alone.
                block = self.compile_alone(rel)
            excerpts[rel] = error_excerpt(block, self.source)
        return excerpts

    def compile_alone(self, rel: str) -> str:
        return run_make(self.source, make_command(self.path, 1, object_of(rel)))[1]

    def depends_on(self, rel: str, header: str) -> bool:
        """Whether the compiler read header for rel (kbuild's .cmd file)."""
        obj = Path(object_of(rel))
        cmd = self.path / obj.parent / f".{obj.name}.cmd"
        try:
            deps = cmd.read_text(errors="replace")
        except OSError:
            return False
        return f"{self.source}/{header} " in deps or f"{self.source}/{header}\n" in deps


def compiler_messages(output: str, obj: str) -> str | None:
    """What make printed for the compile of obj (its kbuild "CC" line on).

    kbuild may compile a file twice when both a directory and its parent
    list it (drivers/input/serio/ is in drivers/Makefile and under
    drivers/input/); the first attempt is taken.
    """
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if KBUILD_QUIET_LINE.match(line) and line.split()[-1] == obj), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines) and not (KBUILD_QUIET_LINE.match(lines[end])
                                    or lines[end].startswith("make")):
        end += 1
    return "\n".join(lines[start + 1:end])


def compile_plan(plan: CompilePlan, build: BuildDir, baseline: BuildDir,
                 progress: Progress, timings: dict[str, float]
                 ) -> tuple[list[CompiledFile], list[NotBuildable], int]:
    """Compile the plan's targets; judge failures against the pristine tree."""
    if not plan.targets:
        return [], [], 0
    build.ensure_prepared(progress, timings, "build")
    rels = [t.file for t in plan.targets]
    progress.step(f"verify: compiling {len(rels)} files with make -j{build.jobs}")
    with timed(timings, "compile"):
        failures = build.compile(rels, progress)
    without_series = _compile_without_series(failures, baseline, progress, timings)
    compiled: list[CompiledFile] = []
    not_buildable: list[NotBuildable] = []
    unconfirmed = 0
    # A .c file made to be #included (rtmutex.c in rtmutex_api.c) is
    # compiled by its includer, whatever it does on its own.
    built_inside: dict[str, str] = {}
    for target in plan.targets:
        if target.file not in failures:
            if target.header and not build.depends_on(target.file, target.header):
                unconfirmed += 1   # the grep matched, the compiler read another file
                continue
            compiled.append(CompiledFile(target.file, True, None, target.why))
            if target.header:
                built_inside.setdefault(target.header, target.file)
    for target in plan.targets:
        if target.file not in failures:
            continue
        excerpt = failures[target.file]
        base_error = without_series.get(target.file)
        if target.file in built_inside:
            compiled.append(CompiledFile(
                target.file, True, None,
                f"{target.why}; compiled inside {built_inside[target.file]}, which "
                f"#includes it (on its own: {_first_error(excerpt)})"))
        elif NO_RULE.search(excerpt):
            not_buildable.append(NotBuildable(
                target.file, f"kbuild has no rule to make it for {ARCH}: "
                             + _first_error(excerpt)))
        elif base_error:
            not_buildable.append(NotBuildable(
                target.file, f"does not compile for {ARCH} {KCONFIG_TARGET} without the "
                             f"series either: {_first_error(base_error)}"))
        else:
            known = target.file in without_series
            compiled.append(CompiledFile(target.file, False, excerpt, target.why,
                                         False if known else None))
    compiled.sort(key=lambda c: c.file)
    return compiled, not_buildable, unconfirmed


def _compile_without_series(failures: dict[str, str], baseline: BuildDir,
                            progress: Progress, timings: dict[str, float]
                            ) -> dict[str, str | None]:
    """{file: error lines, or None if it compiles} in the pristine tree.

    Only failures that exist in the pristine tree are tried; a file the
    series adds has nothing to compare with.
    """
    rels = [rel for rel, excerpt in failures.items()
            if not NO_RULE.search(excerpt) and (baseline.source / rel).is_file()]
    if not rels:
        return {}
    progress.step(f"verify: {len(rels)} files fail; compiling them without the series")
    with timed(timings, "baseline"):
        baseline.ensure_prepared(progress, timings, "baseline")
        base_failures = baseline.compile(rels)
    return {rel: base_failures.get(rel) for rel in rels}


def _first_error(excerpt: str) -> str:
    return next((line.strip() for line in excerpt.splitlines() if ERROR_LINE.search(line)),
                excerpt.strip()[:200])


