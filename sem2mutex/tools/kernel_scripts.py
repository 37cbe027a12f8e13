"""The kernel's own scripts: checkpatch.pl and get_maintainer.pl."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


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
