"""The --verify stage: apply the series to a scratch copy and check it.

1. Apply.  A scratch git repository in the cache holds a hard-linked copy
   of the pristine tree as its base commit; the series is applied there with
   `git am`, in the order of the series file.  The repository is kept: a
   rerun resets it to the base commit instead of copying and hashing 78k
   files again, and it is made anew when the pristine tree changed.
2. Old API.  old_api_callers.cocci (core_api.find_old_api_callers) over
   every file of the patched tree that may still call down() ... up().
3. Compile.  x86_64 allmodconfig in a build directory kept in the cache
   (make O=...), every touched .c file and every .c file that includes a
   touched header.  A file that fails is compiled again without the series
   (a second build directory fed by the pristine tree): if it fails there
   too it cannot be built on x86_64 at all and goes to not_buildable.
4. verify.json in the output directory.

Hard links: the scratch copy shares inodes with the pristine tree, so a
tool that edits a file in place would edit the pristine tree too.  git am,
git reset --hard and git clean replace or delete files, never rewrite them,
and every file a patch names is unshared before git am all the same; after
git am each touched file is checked to have its own inode.

Incremental builds: make decides by mtime.  git rewrites every file the
previous or the current series touched, so the files whose content is the
same as at the end of the last run get that run's mtime back; a rerun of an
unchanged series recompiles nothing, a changed series recompiles only the
objects of the files that changed.

Python only orchestrates: spatch decides which calls are old-API calls,
git applies the patches, the compiler decides what compiles and which
headers a file includes (its dependency list in .cmd files).  The grep of
#include lines only picks the files worth compiling.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

from sem2mutex.series import core_api
from sem2mutex.tools.fs import locked, write_json_atomic
from sem2mutex.audit.intake import NON_KERNEL_DIRS, read_version, split_by_mentions
from sem2mutex.paths import CacheLayout, cache_layout
from sem2mutex.progress import Progress

SCRATCH_NAME = "verify"
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

# Prefilter for the old-API check (PCRE, for git grep -P); spatch decides.
OLD_API_CALL = r"\b(" + "|".join(core_api.OLD_NAMES) + r")\s*\("
# Prefilter for #include lines naming one of some basenames.
INCLUDE_LINE = r'^\s*#\s*include\s*[<"]([^>"]*/)?({names})[>"]'
INCLUDE_DIRECTIVE = re.compile(r'#\s*include\s*([<"])([^>"]+)[>"]')

# Kept in the scratch repository's .git, so git reset/clean leave them.
STATE_FILE = "sem2mutex-verify.json"
MTIMES_FILE = "sem2mutex-verify-mtimes.json"
OLD_API_CACHE_FILE = "sem2mutex-old-api-cache.json"
BUILD_STAMP = ".sem2mutex-verify-stamp.json"

GIT_IDENTITY = {"GIT_AUTHOR_NAME": "sem2mutex verify",
                "GIT_AUTHOR_EMAIL": "verify@sem2mutex.invalid",
                "GIT_COMMITTER_NAME": "sem2mutex verify",
                "GIT_COMMITTER_EMAIL": "verify@sem2mutex.invalid"}

# make's report of a failed target, and kbuild's "not a target here".
FAILED_TARGET = re.compile(
    r"^make(?:\[\d+\])?: \*\*\* \[[^\]]*?:\d+: (?P<target>[^\]\s]+)\] Error \d+", re.M)
NO_RULE = re.compile(r"No rule to make target '(?P<target>[^']+)'")
ERROR_LINE = re.compile(r"error|No rule to make target", re.I)
# kbuild's short command lines: "  CC [M]  drivers/foo/bar.o".
KBUILD_QUIET_LINE = re.compile(r"^  [A-Z][A-Z0-9_]*(?: \[M\])?\s+\S+\s*$")
ERROR_EXCERPT_LINES = 12


class VerifyError(RuntimeError):
    """The verification could not run (bad input, git or make broken)."""


# --------------------------------------------------------------------------
# Records


@dataclass
class VerifyRequest:
    tree: Path                 # pristine kernel tree, read only
    series_dir: Path
    out_dir: Path              # verify.json goes here
    jobs: int = 2
    build_name: str = "verify-allmodconfig"
    files: list[str] | None = None   # limit compile checks; None = everything touched
    max_includers: int = MAX_INCLUDERS
    layout: CacheLayout = field(default_factory=cache_layout)


@dataclass(frozen=True)
class OldApiLeft:
    file: str
    line: int
    function: str | None   # None: in a macro body or an initialiser
    op: str                # down, down_interruptible, ..., up
    type: str              # "semaphore", or "unknown type"

    @property
    def context(self) -> str:
        return "function" if self.function else "macro body or initialiser"


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
# Small helpers


def _git_env() -> dict[str, str]:
    # The user's own git configuration (signing, hooks, templates) has no
    # business in the scratch repository.
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               LC_ALL="C")
    env.update(GIT_IDENTITY)
    return env


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["git", *args], cwd=repo, env=_git_env(), capture_output=True,
                          text=True, errors="replace", stdin=subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise VerifyError(f"git {' '.join(args[:3])} failed in {repo}: "
                          f"{(done.stderr or done.stdout).strip()[:2000]}")
    return done


def _nul_split(text: str) -> list[str]:
    return [item for item in text.split("\0") if item]


@contextmanager
def _timed(timings: dict[str, float], name: str) -> Iterator[None]:
    start = time.monotonic()
    try:
        yield
    finally:
        timings[name] = timings.get(name, 0.0) + time.monotonic() - start


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def is_other_arch(rel: str) -> str | None:
    """The architecture of arch/<name>/... when it is not x86, else None."""
    parts = rel.split("/")
    if len(parts) > 2 and parts[0] == "arch" and parts[1] != SRCARCH:
        return parts[1]
    return None


def outside_kernel_build(rel: str) -> bool:
    return rel.startswith(NON_KERNEL_DIRS)


# --------------------------------------------------------------------------
# The series


def read_series(series_dir: Path) -> list[Path]:
    """The patch files in the order of series_dir/series (quilt format)."""
    listing = series_dir / "series"
    if not listing.is_file():
        raise VerifyError(f"{series_dir}: no series file listing the patches")
    names = []
    for line in listing.read_text().splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            names.append(name.split()[0])
    if not names:
        raise VerifyError(f"{listing} lists no patch")
    patches = [series_dir / name for name in names]
    missing = [p.name for p in patches if not p.is_file()]
    if missing:
        raise VerifyError(f"{listing} names missing patch files: {missing}")
    return patches


# --------------------------------------------------------------------------
# Step 1: the scratch repository and git am


def tree_stamp(tree: Path) -> dict:
    """What identifies one unpacking of the pristine tree.

    A re-unpacked tree has new inodes; an edited one a new Makefile or top
    directory.  Both make a new scratch copy and wipe the build dirs: tar
    restores old mtimes, so make alone would miss the change.
    """
    makefile = (tree / "Makefile").stat()
    top = tree.stat()
    return {"tree": str(tree.resolve()), "version": read_version(tree),
            "makefile": [makefile.st_ino, makefile.st_size, makefile.st_mtime_ns],
            "top": [top.st_ino, top.st_mtime_ns]}


@dataclass(frozen=True)
class ScratchRepo:
    path: Path
    base: str
    created: bool


def ensure_scratch_repo(tree: Path, scratch: Path, stamp: dict,
                        progress: Progress) -> ScratchRepo:
    """The scratch repository at its base commit, made anew if needed."""
    state = _read_json(scratch / ".git" / STATE_FILE)
    if state and state.get("stamp") == stamp and _has_commit(scratch, state.get("base", "")):
        progress.step(f"verify: resetting {scratch} to the pristine base commit")
        reset_to_base(scratch, state["base"])
        return ScratchRepo(scratch, state["base"], created=False)
    progress.step(f"verify: making the scratch repository {scratch} "
                  "(hard-linked copy, git add of the whole tree: about a minute)")
    base = _create_scratch_repo(tree, scratch, stamp)
    return ScratchRepo(scratch, base, created=True)


def _has_commit(repo: Path, rev: str) -> bool:
    return bool(rev) and git(repo, "cat-file", "-e", f"{rev}^{{commit}}",
                             check=False).returncode == 0


def _create_scratch_repo(tree: Path, scratch: Path, stamp: dict) -> str:
    partial = scratch.with_name(scratch.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    # Hard links: a second and no disk space.  Removing a link (rmtree of
    # an input tree's .git copy, of the old scratch) never touches the tree.
    subprocess.run(["cp", "-al", str(tree), str(partial)], check=True)
    shutil.rmtree(partial / ".git", ignore_errors=True)
    git(partial, "init", "-q")
    for key, value in (("gc.auto", "0"), ("core.autocrlf", "false"),
                       # Other scratch copies linking the same inodes change
                       # their ctime; only content and mtime matter here.
                       ("core.trustctime", "false"), ("core.checkStat", "minimal"),
                       ("am.threeWay", "false")):
        git(partial, "config", key, value)
    # -f: files a .gitignore names are part of the pristine tree too.
    git(partial, "add", "-A", "-f")
    git(partial, "commit", "-q", "--no-verify", "-m",
        f"pristine {stamp['version']} from {stamp['tree']}")
    base = git(partial, "rev-parse", "HEAD").stdout.strip()
    (partial / ".git" / STATE_FILE).write_text(json.dumps({"stamp": stamp, "base": base}))
    shutil.rmtree(scratch, ignore_errors=True)
    os.rename(partial, scratch)
    return base


def reset_to_base(repo: Path, base: str) -> None:
    if (repo / ".git" / "rebase-apply").exists():
        git(repo, "am", "--abort", check=False)
        shutil.rmtree(repo / ".git" / "rebase-apply", ignore_errors=True)
    git(repo, "reset", "-q", "--hard", base)
    git(repo, "clean", "-q", "-ffdx")


def changed_paths(repo: Path, base: str, rev: str = "HEAD") -> list[tuple[str, str]]:
    """(status letter, path) of every file that differs from the base."""
    out = git(repo, "diff", "--no-renames", "--name-status", "-z", base, rev).stdout
    items = _nul_split(out)
    return [(items[i][0], items[i + 1]) for i in range(0, len(items) - 1, 2)]


def paths_named_in(repo: Path, patches: list[Path]) -> set[str]:
    """Every path the patches name, as git apply reads them."""
    done = git(repo, "apply", "--numstat", "-z", *map(str, patches), check=False)
    names: set[str] = set()
    for record in done.stdout.split("\0"):
        fields = record.split("\t")
        if len(fields) == 3 and fields[2]:
            names.add(fields[2])
        elif fields and len(fields) == 1 and fields[0] and "\t" not in fields[0]:
            names.add(fields[0])   # the two names of a rename record
    return names


def unshare(path: Path) -> None:
    """Give a hard-linked file its own inode (same content and mtime)."""
    if not path.is_file() or path.is_symlink() or path.stat().st_nlink <= 1:
        return
    private = path.with_name(path.name + ".sem2mutex-unshare")
    shutil.copy2(path, private)
    os.replace(private, path)


@dataclass(frozen=True)
class ApplyOutcome:
    applied: bool
    failed_patch: str | None
    error: str | None
    changes: list[tuple[str, str]]   # (status, path) against the base
    mtimes_kept: int


def apply_series(scratch: ScratchRepo, tree: Path, patches: list[Path],
                 previous: list[str]) -> ApplyOutcome:
    """git am the patches on the base; never writes through a hard link."""
    repo = scratch.path
    for rel in paths_named_in(repo, patches):
        unshare(repo / rel)
    done = git(repo, "am", "--quiet", *map(str, patches), check=False)
    failed_patch = error = None
    if done.returncode != 0:
        failed_patch = _failing_patch(repo, patches)
        error = "\n".join(part.strip() for part in (done.stdout, done.stderr)
                          if part.strip())
        git(repo, "am", "--abort", check=False)
        reset_to_base(repo, scratch.base)
    changes = changed_paths(repo, scratch.base)
    _check_own_inodes(repo, tree, [path for status, path in changes if status != "D"])
    kept = keep_mtimes(repo, sorted(set(previous) | {p for _, p in changes}))
    return ApplyOutcome(done.returncode == 0, failed_patch, error, changes, kept)


def _failing_patch(repo: Path, patches: list[Path]) -> str | None:
    """The series file git am stopped at (format-patch: one mail per file)."""
    apply_dir = repo / ".git" / "rebase-apply"
    try:
        number = int((apply_dir / "next").read_text())
        last = int((apply_dir / "last").read_text())
    except (OSError, ValueError):
        return None
    if last == len(patches) and 1 <= number <= len(patches):
        return patches[number - 1].name
    info = apply_dir / "info"
    subject = next((line[len("Subject: "):] for line in
                    (info.read_text(errors="replace").splitlines() if info.is_file() else [])
                    if line.startswith("Subject: ")), "?")
    return f"mail {number} of {last}: {subject}"


def _check_own_inodes(repo: Path, tree: Path, paths: list[str]) -> None:
    def same_inode(rel: str) -> bool:
        try:
            mine, theirs = (repo / rel).lstat(), (tree / rel).lstat()
        except FileNotFoundError:
            return False
        return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)

    shared = [rel for rel in paths if same_inode(rel)]
    if shared:
        raise VerifyError(
            f"{len(shared)} file(s) changed by the series still share an inode with "
            f"the pristine tree, which may have been edited too: {shared[:5]}")


def keep_mtimes(repo: Path, paths: list[str]) -> int:
    """Give back last run's mtime to files whose content is the same.

    ``paths``: every file git may have rewritten in this run (touched by
    the previous or by this series).  Only the last run's record counts: a
    content seen two runs ago may not be what the build dir holds.
    """
    record_path = repo / ".git" / MTIMES_FILE
    record = (_read_json(record_path) or {}).get("files", {})
    existing = [rel for rel in paths if (repo / rel).is_file()]
    blobs = _hash_objects(repo, existing)
    kept = 0
    new_record = {}
    for rel in existing:
        old = record.get(rel)
        if old and old["blob"] == blobs[rel]:
            stat = (repo / rel).stat()
            os.utime(repo / rel, ns=(stat.st_atime_ns, old["mtime_ns"]))
            kept += 1
        new_record[rel] = {"blob": blobs[rel], "mtime_ns": (repo / rel).stat().st_mtime_ns}
    record_path.write_text(json.dumps({"files": new_record}))
    return kept


def _hash_objects(repo: Path, paths: list[str]) -> dict[str, str]:
    if not paths:
        return {}
    done = subprocess.run(["git", "hash-object", "--stdin-paths"], cwd=repo, env=_git_env(),
                          input="\n".join(paths) + "\n", capture_output=True, text=True,
                          check=True)
    return dict(zip(paths, done.stdout.split()))


# --------------------------------------------------------------------------
# Step 2: old-API callers


def old_api_candidates(repo: Path) -> list[str]:
    """Kernel .c/.h files whose text may call down() ... up()."""
    done = git(repo, "grep", "-l", "-I", "-z", "-P", "-e", OLD_API_CALL, "--", "*.c", "*.h",
               check=False)
    if done.returncode not in (0, 1):
        raise VerifyError(f"git grep failed in {repo}: {done.stderr.strip()}")
    return sorted(rel for rel in _nul_split(done.stdout) if not outside_kernel_build(rel))


def _index_blobs(repo: Path, paths: list[str]) -> dict[str, str]:
    if not paths:
        return {}
    out = git(repo, "--literal-pathspecs", "ls-files", "-s", "-z", "--", *paths).stdout
    blobs = {}
    for record in _nul_split(out):
        meta, rel = record.split("\t", 1)
        blobs[rel] = meta.split()[1]
    return blobs


def _old_api_cache_key() -> str:
    spatch = subprocess.run(["spatch", "--version"], capture_output=True, text=True,
                            check=False).stdout.splitlines()[:1]
    return json.dumps([core_api.OLD_API_CALLERS_COCCI.read_text(), spatch, OLD_API_CALL])


def find_old_api_left(repo: Path, progress: Progress) -> tuple[list[OldApiLeft], dict]:
    """Old-API callers in the patched tree, and how the search went.

    spatch reads each file on its own (--no-includes, one file group per
    file), so a file's callers depend on its content only: they are cached
    per git blob, and a rerun only parses the files that changed.
    """
    candidates = old_api_candidates(repo)
    blobs = _index_blobs(repo, candidates)
    cache_path = repo / ".git" / OLD_API_CACHE_FILE
    key = _old_api_cache_key()
    cache = _read_json(cache_path) or {}
    cached = cache.get("blobs", {}) if cache.get("key") == key else {}
    unknown = [rel for rel in candidates if blobs.get(rel) not in cached]
    # Files whose only mention of up( or down( is in a comment: no call.
    _, calling = split_by_mentions(repo, set(unknown)) if unknown else (set(), set())
    to_parse = sorted(calling)
    progress.step(f"verify: old-API check: {len(candidates)} files mention down()/up(), "
                  f"{len(candidates) - len(unknown)} known from the last run, "
                  f"spatch parses {len(to_parse)}")
    found: dict[str, list[dict]] = {rel: [] for rel in unknown}
    for caller in core_api.find_old_api_callers(repo, to_parse):
        found[caller.file].append({"line": caller.line, "function": caller.function,
                                   "op": caller.op, "type": caller.arg_type})
    fresh = {blobs[rel]: found[rel] for rel in unknown if rel in blobs}
    keep = {blobs[rel]: cached[blobs[rel]] for rel in candidates if blobs.get(rel) in cached}
    write_json_atomic(cache_path, {"key": key, "blobs": keep | fresh})
    left = []
    for rel in candidates:
        records = found[rel] if rel in found else cached.get(blobs.get(rel, ""), [])
        left += [OldApiLeft(file=rel, **r) for r in records]
    left.sort(key=lambda c: (c.file, c.line, c.op))
    stats = {"old_api_candidates": len(candidates), "old_api_parsed": len(to_parse),
             "old_api_cached": len(candidates) - len(unknown)}
    return left, stats


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
        recorded = _read_json(self.path / BUILD_STAMP)
        wanted = {"source": str(self.source), "tree": self.stamp, "config": KCONFIG_TARGET}
        if recorded != wanted and self.path.exists():
            progress.step(f"verify: {self.path} was built from another tree: starting afresh")
            shutil.rmtree(self.path)
        if not (self.path / BUILD_STAMP).is_file():
            self.path.mkdir(parents=True, exist_ok=True)
            progress.step(f"verify: make {KCONFIG_TARGET} in {self.path}")
            with _timed(timings, f"{label}_config"):
                self._make_or_fail(KCONFIG_TARGET)
            progress.step(f"verify: make prepare ({label}; about a minute on 2 cores)")
            with _timed(timings, f"{label}_prepare"):
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
    with _timed(timings, "compile"):
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
    with _timed(timings, "baseline"):
        baseline.ensure_prepared(progress, timings, "baseline")
        base_failures = baseline.compile(rels)
    return {rel: base_failures.get(rel) for rel in rels}


def _first_error(excerpt: str) -> str:
    return next((line.strip() for line in excerpt.splitlines() if ERROR_LINE.search(line)),
                excerpt.strip()[:200])


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
        with _timed(timings, "scratch"):
            previous = _previous_changes(scratch_path)
            scratch = ensure_scratch_repo(tree, scratch_path, stamp, progress)
        timings["scratch_created" if scratch.created else "scratch_reset"] = timings.pop("scratch")
        result.base = scratch.base
        progress.step(f"verify: git am of {len(patches)} patches")
        with _timed(timings, "git_am"):
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


def _previous_changes(scratch: Path) -> list[str]:
    """Files the last run left different from the base: git rewrites them."""
    state = _read_json(scratch / ".git" / STATE_FILE)
    if not state or not _has_commit(scratch, state.get("base", "")):
        return []
    return [rel for _, rel in changed_paths(scratch, state["base"])]


def _check_and_compile(req: VerifyRequest, tree: Path, stamp: dict, scratch: ScratchRepo,
                       outcome: ApplyOutcome, result: VerifyResult,
                       progress: Progress) -> None:
    timings = result.timings
    with _timed(timings, "old_api_check"):
        try:
            left, stats = find_old_api_left(scratch.path, progress)
            result.old_api_left = left
            result.counts.update(stats)
        except core_api.SpatchError as err:
            result.errors.append(f"old-API check: {err}")
            result.skipped["old_api_left"] = "spatch failed"
    with _timed(timings, "plan"):
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


# --------------------------------------------------------------------------
# Stand-alone use (benchmarks/verify.sh): python3 -m sem2mutex.verify


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m sem2mutex.verify",
        description="Apply a git format-patch series to a scratch copy of a kernel tree, "
                    "check that no old-API caller is left and compile what it touches "
                    "(x86_64 allmodconfig).  Writes OUTDIR/verify.json.")
    parser.add_argument("series_dir", type=Path)
    parser.add_argument("--tree", type=Path, help="pristine tree (default: linux-source-6.1)")
    parser.add_argument("-o", "--outdir", type=Path, help="default: SERIES_DIR")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--file", dest="files", action="append",
                        help="only compile this file (repeatable)")
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args(argv)
    layout = cache_layout()
    if args.tree is None:
        from sem2mutex.audit.intake import ensure_default_tree
        args.tree = ensure_default_tree(layout)
    req = VerifyRequest(tree=args.tree, series_dir=args.series_dir,
                        out_dir=args.outdir or args.series_dir, jobs=args.jobs,
                        files=args.files, layout=layout)
    try:
        result = verify_series(req, Progress(quiet=args.quiet))
    except VerifyError as err:
        print(f"verify: error: {err}", file=sys.stderr)
        return 2
    summary = {k: result.counts[k] for k in ("touched", "old_api_left", "compiled",
                                              "compile_failures", "not_buildable")}
    print(json.dumps({"applied": result.applied, "passed": result.passed} | summary))
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
