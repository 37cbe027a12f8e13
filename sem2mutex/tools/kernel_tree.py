"""What the paths of a kernel tree are: kernel code, or something else."""
from __future__ import annotations

# Directories that hold no kernel code (user space tools, docs, build helpers).
NON_KERNEL_DIRS = ("tools/", "scripts/", "Documentation/", "usr/")
NON_KERNEL_TOP_DIRS = tuple(d.rstrip("/") for d in NON_KERNEL_DIRS)

# The semaphore implementation itself defines the API rather than using it.
API_IMPLEMENTATION = ("include/linux/semaphore.h", "kernel/locking/semaphore.c")


def is_kernel_source(rel: str) -> bool:
    return not rel.startswith(NON_KERNEL_DIRS) and rel not in API_IMPLEMENTATION
