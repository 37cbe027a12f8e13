"""The workspace of the proof stages: a scratch git copy of the tree with
the series applied.

A scratch git repository in the cache holds a hard-linked copy of the
pristine tree as its base commit; the series is applied there with `git
am`, in the order of the series file.  The repository is kept: a rerun
resets it to the base commit instead of copying and hashing 78k files
again, and it is made anew when the pristine tree changed.  --verify
compiles in it; --boot reads the files the series changed from it.

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
"""
from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from sem2mutex.audit.intake import read_version
from sem2mutex.errors import BadSeries, VerifyError
from sem2mutex.paths import CacheLayout
from sem2mutex.progress import Progress
from sem2mutex.tools import git as gitcmd
from sem2mutex.tools.fs import hardlink_copy, locked, read_json, unshare

SCRATCH_NAME = "verify"
# Kept in the scratch repository's .git, so git reset/clean leave them.
STATE_FILE = "sem2mutex-verify.json"
MTIMES_FILE = "sem2mutex-verify-mtimes.json"
IDENTITY = ("sem2mutex verify", "verify@sem2mutex.invalid")


def git(repo: Path, *args: str, check: bool = True):
    return gitcmd.git(repo, *args, check=check, identity=IDENTITY)



def read_series(series_dir: Path) -> list[Path]:
    """The patch files in the order of series_dir/series (quilt format)."""
    listing = series_dir / "series"
    if not listing.is_file():
        raise BadSeries(f"{series_dir}: no series file listing the patches")
    names = []
    for line in listing.read_text().splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            names.append(name.split()[0])
    if not names:
        raise BadSeries(f"{listing} lists no patch")
    patches = [series_dir / name for name in names]
    missing = [p.name for p in patches if not p.is_file()]
    if missing:
        raise BadSeries(f"{listing} names missing patch files: {missing}")
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
    state = read_json(scratch / ".git" / STATE_FILE)
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
    hardlink_copy(tree, partial)
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
    items = gitcmd.nul_split(out)
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
    record = (read_json(record_path) or {}).get("files", {})
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
    return dict(zip(paths, gitcmd.hash_objects(repo, paths))) if paths else {}


def previous_changes(scratch: Path) -> list[str]:
    """Files the last run left different from the base: git rewrites them."""
    state = read_json(scratch / ".git" / STATE_FILE)
    if not state or not _has_commit(scratch, state.get("base", "")):
        return []
    return [rel for _, rel in changed_paths(scratch, state["base"])]


@contextmanager
def applied_series(tree: Path, patches: list[Path], layout: CacheLayout,
                   progress: Progress, label: str) -> Iterator[tuple[ScratchRepo, "ApplyOutcome"]]:
    """The scratch repository with PATCHES applied, held for the caller."""
    scratch_path = layout.scratch(SCRATCH_NAME)
    with locked(scratch_path.parent / f".{SCRATCH_NAME}.lock"):
        previous = previous_changes(scratch_path)
        scratch = ensure_scratch_repo(tree, scratch_path, tree_stamp(tree), progress)
        progress.step(f"{label}: git am of {len(patches)} patches")
        yield scratch, apply_series(scratch, tree, patches, previous)


SCRATCH_MARKER = ".sem2mutex-scratch-of"


def hardlinked_scratch(source: Path, dest: Path) -> Path:
    """A scratch copy of source made of hard links, reused when present.

    Cheap (about a second for a whole tree) and it keeps the source's mtimes,
    so a build dir fed from it stays incremental even if the copy is redone.
    The price: a file edited *in place* in the copy would change the source.
    Everything writing into such a copy replaces files (tools.fs).
    """
    source = source.resolve()
    marker = dest / SCRATCH_MARKER
    with locked(dest.parent / f".{dest.name}.lock"):
        if marker.is_file() and marker.read_text() == str(source):
            return dest
        partial = dest.with_name(dest.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        hardlink_copy(source, partial)
        (partial / SCRATCH_MARKER).write_text(str(source))
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(partial, dest)
    return dest
