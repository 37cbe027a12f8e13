"""Build the kernel out of tree (make O=...) and say what went into it."""
from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from qemu.errors import BuildError

KERNEL_IMAGE = "arch/x86/boot/bzImage"
# 6.1 links vmlinux from vmlinux.a (a thin archive of every built-in
# object) plus the lib.a archives.  A lib-y member of lib.a is only pulled
# in when something references it; we count it as built in all the same.
LINKED_ARCHIVES = ("vmlinux.a",)
LIBRARY_ARCHIVES = ("lib/lib.a", "arch/x86/lib/lib.a")
LOG_TAIL_LINES = 40


@dataclass(frozen=True)
class BuildResult:
    image: Path
    seconds: float
    log_path: Path


def build_kernel(tree: Path, build_dir: Path, log_path: Path, jobs: int = 2) -> BuildResult:
    """make -C tree O=build_dir -jN; incremental when build_dir is reused."""
    cmd = ["make", "-C", str(tree), f"O={build_dir}", f"-j{jobs}"]
    start = time.monotonic()
    with open(log_path, "a") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        raise BuildError(f"kernel build failed ({proc.returncode}), see {log_path}:\n"
                         + log_tail(log_path))
    image = build_dir / KERNEL_IMAGE
    if not image.is_file():
        raise BuildError(f"build succeeded but {image} is missing")
    return BuildResult(image, seconds, log_path)


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def linked_objects(build_dir: Path) -> set[str]:
    """Build-dir-relative .o files that the last vmlinux link consumed.

    In 6.1 a built-in composite object (foo-y := a.o b.o) is not linked as
    foo.o: kbuild puts a.o and b.o in built-in.a themselves, so archive
    membership answers for every source file.  A stale .o left by an
    earlier config is not a member, so it does not count.
    """
    members: set[str] = set()
    for archive in LINKED_ARCHIVES + LIBRARY_ARCHIVES:
        path = build_dir / archive
        if path.is_file():
            members.update(_archive_members(path, build_dir))
    return members


def built_in_sources(watch_files: list[str], build_dir: Path) -> list[str]:
    """The tree-relative .c files of watch_files whose object is linked in."""
    linked = linked_objects(build_dir)
    return [c for c in watch_files if str(Path(c).with_suffix(".o")) in linked]


def _archive_members(archive: Path, build_dir: Path) -> list[str]:
    # GNU ar prints a thin archive's members relative to the archive's own
    # directory when called from there (and prefixed with that directory
    # otherwise), so ask from there and rebase onto the build dir.
    proc = subprocess.run(["ar", "t", archive.name], cwd=archive.parent,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(f"ar t {archive} failed: {proc.stderr.strip()}")
    return [_relative_to_build(archive.parent / line.strip(), build_dir)
            for line in proc.stdout.splitlines() if line.strip()]


def _relative_to_build(path: Path, build_dir: Path) -> str:
    return os.path.relpath(os.path.normpath(path), os.path.normpath(build_dir))
