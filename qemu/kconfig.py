"""Kernel configuration for the QEMU boot: tinyconfig plus our fragments.

Kconfig silently drops an option whose dependencies are not met, so after
merging we check that every value a fragment of ours asked for is in the
final .config and fail naming the ones that are not.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from qemu.errors import ConfigError

QEMU_DIR = Path(__file__).resolve().parent
BASE_FRAGMENT = QEMU_DIR / "base.config"
DEBUG_FRAGMENT = QEMU_DIR / "debug.config"

# What `make tinyconfig` merges on x86_64 (see scripts/kconfig/Makefile);
# tree-relative.  Their 32-bit-only options never reach a 64-bit .config,
# so they are merged but not verified.
TINY_FRAGMENTS = (
    "kernel/configs/tiny-base.config",
    "kernel/configs/tiny.config",
    "arch/x86/configs/tiny.config",
)

NOT_SET = None  # requested value of a "# CONFIG_FOO is not set" line


@dataclass(frozen=True)
class MissingOption:
    name: str
    requested: str | None
    actual: str | None
    fragment: Path

    def describe(self) -> str:
        want = "not set" if self.requested is NOT_SET else self.requested
        got = "not set" if self.actual is None else self.actual
        return f"{self.name}: requested {want} (by {self.fragment.name}), got {got}"


@dataclass(frozen=True)
class ConfigResult:
    config_path: Path
    fragments: list[Path]
    changed: bool  # False: the .config kept its content and its mtime


def parse_config_text(text: str) -> dict[str, str | None]:
    """Values set by a .config or fragment: name -> value, None if not set.

    Later lines win, as they do when Kconfig reads a merged fragment.
    """
    values: dict[str, str | None] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("CONFIG_") and "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
        elif line.startswith("# CONFIG_") and line.endswith(" is not set"):
            values[line[2:-len(" is not set")]] = NOT_SET
    return values


def requested_values(fragments: list[Path]) -> dict[str, tuple[str | None, Path]]:
    """name -> (value, fragment that asked last) over fragments in order."""
    requested: dict[str, tuple[str | None, Path]] = {}
    for fragment in fragments:
        for name, value in parse_config_text(fragment.read_text()).items():
            requested[name] = (value, fragment)
    return requested


def missing_options(requested: dict[str, tuple[str | None, Path]],
                    final: dict[str, str | None]) -> list[MissingOption]:
    """Requested values the final .config does not carry."""
    missing = []
    for name, (want, fragment) in sorted(requested.items()):
        got = final.get(name)
        if want is NOT_SET:
            ok = got is None
        else:
            ok = got == want
        if not ok:
            missing.append(MissingOption(name, want, got, fragment))
    return missing


def default_fragments() -> list[Path]:
    return [BASE_FRAGMENT, DEBUG_FRAGMENT]


def configure(tree: Path, build_dir: Path, extra_fragments: list[Path],
              log_path: Path) -> ConfigResult:
    """Write build_dir/.config = allnoconfig + tiny + ours + extra, verified.

    If the result equals the previous .config, its old mtime is put back so
    that make does not even rerun syncconfig: a no-change rebuild stays a
    no-op instead of re-descending with a fresh auto.conf.
    """
    fragments = default_fragments() + [Path(f).resolve() for f in extra_fragments]
    for fragment in fragments:
        if not fragment.is_file():
            raise ConfigError(f"config fragment not found: {fragment}")
    build_dir.mkdir(parents=True, exist_ok=True)
    config_path = build_dir / ".config"
    previous = _snapshot(config_path)

    _run_merge_config(tree, build_dir, fragments, log_path)

    final_text = config_path.read_text()
    missing = missing_options(requested_values(fragments), parse_config_text(final_text))
    if missing:
        details = "\n  ".join(m.describe() for m in missing)
        raise ConfigError(
            f"{len(missing)} requested config option(s) did not survive Kconfig "
            f"(unmet dependencies?):\n  {details}")

    changed = previous is None or previous[0] != final_text
    if not changed:
        os.utime(config_path, ns=previous[1])
    return ConfigResult(config_path, fragments, changed)


def _snapshot(config_path: Path) -> tuple[str, tuple[int, int]] | None:
    if not config_path.exists():
        return None
    stat = config_path.stat()
    return config_path.read_text(), (stat.st_atime_ns, stat.st_mtime_ns)


def _run_merge_config(tree: Path, build_dir: Path, fragments: list[Path],
                      log_path: Path) -> None:
    # merge_config.sh runs `make` in its working directory, so it must be
    # the tree's top; -n gives allnoconfig semantics like tinyconfig.
    tiny = [t for t in TINY_FRAGMENTS if (tree / t).is_file()]
    cmd = ["sh", "scripts/kconfig/merge_config.sh", "-n", "-O", str(build_dir),
           *tiny, *(str(f) for f in fragments)]
    with open(log_path, "a") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.run(cmd, cwd=tree, stdout=log, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise ConfigError(f"merge_config.sh failed ({proc.returncode}); see {log_path}")
