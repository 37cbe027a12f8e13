"""What the paths of a kernel tree are: kernel code, or something else."""
from __future__ import annotations

from fnmatch import fnmatchcase

# Directories that hold no kernel code (user space tools, docs, build helpers).
NON_KERNEL_DIRS = ("tools/", "scripts/", "Documentation/", "usr/")
NON_KERNEL_TOP_DIRS = tuple(d.rstrip("/") for d in NON_KERNEL_DIRS)

# The semaphore implementation itself defines the API rather than using it:
# 6.x keeps it in two files, 2.6.x in every architecture's semaphore.h and
# semaphore.c (init_MUTEX() is an inline function there).
API_IMPLEMENTATION = ("include/linux/semaphore.h", "kernel/locking/semaphore.c",
                      "include/asm-*/semaphore.h", "arch/*/kernel/semaphore.c",
                      "arch/*/include/asm/semaphore.h")


def is_api_implementation(rel: str) -> bool:
    return any(fnmatchcase(rel, pattern) for pattern in API_IMPLEMENTATION)


def is_kernel_source(rel: str) -> bool:
    return not rel.startswith(NON_KERNEL_DIRS) and not is_api_implementation(rel)
