"""The kernel's own scripts: checkpatch.pl and get_maintainer.pl."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from sem2mutex.tools.cache import ResultCache, file_digest


def get_maintainer(tree: Path, files: list[str], cache: ResultCache | None = None
                   ) -> list[str]:
    """Recipients for FILES, by the tree's own scripts/get_maintainer.pl.
    CACHE keeps the answer under the script, MAINTAINERS and the files."""
    script = tree / "scripts" / "get_maintainer.pl"
    existing = [f for f in files if (tree / f).exists()]
    if not script.is_file() or not existing:
        return []
    key = ""
    if cache is not None and cache.root is not None:
        key = cache.key("get_maintainer", file_digest(script),
                        file_digest(tree / "MAINTAINERS") if (tree / "MAINTAINERS").is_file()
                        else "", *[f"{f}:{file_digest(tree / f)}" for f in existing])
        kept = cache.get("get_maintainer", key)
        if isinstance(kept, list):
            return kept
    done = subprocess.run(["perl", str(script), "--no-git", "--no-git-fallback",
                           "--no-rolestats", "--no-tree", "-f", *existing],
                          cwd=tree, capture_output=True, text=True)
    found = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    if key:
        cache.put("get_maintainer", key, found)
    return found


@dataclass(frozen=True)
class CheckpatchReport:
    patch: str
    errors: list[str]
    warnings: list[str]
    checks: list[str]


# What checkpatch.pl reads besides the patch.
CHECKPATCH_DATA = ("checkpatch.pl", "spelling.txt", "const_structs.checkpatch")
# Header lines of a format-patch file that change from one run to the next.
VOLATILE_PATCH_LINES = ("From ", "Date: ", "Message-Id: ", "In-Reply-To: ", "References: ")


def checkpatch(tree: Path, patch: Path, cache: ResultCache | None = None
               ) -> CheckpatchReport | None:
    """The tree's own checkpatch.pl on PATCH; None when the tree has none.
    CACHE keeps the report under the script and the patch (its date and
    message id aside)."""
    script = tree / "scripts" / "checkpatch.pl"
    if not script.is_file():
        return None
    key = ""
    if cache is not None and cache.root is not None:
        lines = [l for l in patch.read_text(errors="replace").splitlines(keepends=True)
                 if not l.startswith(VOLATILE_PATCH_LINES)]
        key = cache.key("checkpatch", *[file_digest(tree / "scripts" / n)
                                        for n in CHECKPATCH_DATA
                                        if (tree / "scripts" / n).is_file()], "".join(lines))
        kept = cache.get("checkpatch", key)
        if isinstance(kept, dict):
            return CheckpatchReport(patch.name, kept["errors"], kept["warnings"],
                                    kept["checks"])
    done = subprocess.run(["perl", str(script), "--no-tree", "--terse", "--show-types",
                           "--no-summary", str(patch)], cwd=tree, capture_output=True,
                          text=True)
    lines = done.stdout.splitlines()
    pick = lambda kind: [l.split(": ", 1)[-1] for l in lines if f": {kind}:" in l]
    report = CheckpatchReport(patch.name, pick("ERROR"), pick("WARNING"), pick("CHECK"))
    if key:
        cache.put("checkpatch", key, {"errors": report.errors, "warnings": report.warnings,
                                      "checks": report.checks})
    return report
