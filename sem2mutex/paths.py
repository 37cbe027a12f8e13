"""Where sem2mutex keeps things that must live outside the repository.

Kernel trees, scratch copies and kernel build directories are large and
contain kernel code, so they go to a per-user cache, never into the
repository or into the tree being analysed.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
COCCI_DIR = REPO_ROOT / "cocci"
QEMU_DIR = REPO_ROOT / "qemu"
CORE_DIR = REPO_ROOT / "core"

DEBIAN_SOURCE_TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
DEBIAN_SOURCE_DIRNAME = "linux-source-6.1"


@dataclass(frozen=True)
class CacheLayout:
    """Directories under the sem2mutex cache root."""

    root: Path

    @property
    def default_tree(self) -> Path:
        return self.root / DEBIAN_SOURCE_DIRNAME

    def scratch(self, name: str) -> Path:
        """A scratch copy of a tree (series applied, test code added)."""
        return self.root / "scratch" / name

    @property
    def results(self) -> Path:
        """Per-input results kept between runs (tools/cache.py)."""
        return self.root / "results"

    def build(self, name: str) -> Path:
        """A kernel build directory (make O=...), reused across runs."""
        return self.root / "build" / name


def cache_root(environ: dict[str, str] | None = None) -> Path:
    """$SEM2MUTEX_CACHE, else $XDG_CACHE_HOME/sem2mutex, else ~/.cache/sem2mutex."""
    env = os.environ if environ is None else environ
    if env.get("SEM2MUTEX_CACHE"):
        return Path(env["SEM2MUTEX_CACHE"])
    xdg = env.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "sem2mutex"


def cache_layout(environ: dict[str, str] | None = None) -> CacheLayout:
    return CacheLayout(cache_root(environ))
