"""The kernel's own scripts: checkpatch.pl and get_maintainer.pl."""
from __future__ import annotations

import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from sem2mutex.errors import ToolFailure
from sem2mutex.tools.batches import heaviest_first
from sem2mutex.tools.cache import ResultCache, file_digest
from sem2mutex.tools.maintainers import MaintainersFile


def get_maintainer(tree: Path, files: list[str], cache: ResultCache | None = None,
                   maintainers: MaintainersFile | None = None) -> list[str]:
    """Recipients for FILES, by the tree's own scripts/get_maintainer.pl.
    CACHE keeps the answer under the script, MAINTAINERS and the files.
    With MAINTAINERS (the tree's, read), the script reads the excerpt of it
    that can concern FILES (MaintainersFile.excerpt): the same answer, at
    0.07 s a run on 6.1 instead of 0.16 s."""
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
    args = ["perl", str(script), "--no-git", "--no-git-fallback", "--no-rolestats", "--no-tree"]
    done = None
    if maintainers is not None:
        with tempfile.NamedTemporaryFile(prefix="sem2mutex-MAINTAINERS-") as part:
            part.write(maintainers.excerpt(existing))
            part.flush()
            done = subprocess.run([*args, "--mpath", part.name, "-f", *existing],
                                  cwd=tree, capture_output=True, text=True)
    if done is None or done.returncode != 0:  # a script that has no --mpath
        done = subprocess.run([*args, "-f", *existing], cwd=tree, capture_output=True,
                              text=True)
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


def checkpatch_all(tree: Path, patches: list[Path], cache: ResultCache | None = None,
                   jobs: int = 1) -> list[CheckpatchReport | None]:
    """checkpatch.pl on each of PATCHES, in order; Nones when the tree has none.

    checkpatch.pl checks every file it is given on its own, and it spends
    most of a run starting (0.26 s a patch one by one, 2.2 s for the 72 of
    the default tree's series in one run), so the patches not in CACHE go
    to at most JOBS runs.  CACHE keeps each report under the script and the
    patch (its date and message id aside).
    """
    script = tree / "scripts" / "checkpatch.pl"
    if not script.is_file():
        return [None] * len(patches)
    keys = {p: checkpatch_key(tree, p) for p in patches} \
        if cache is not None and cache.root is not None else {}
    reports: dict[Path, CheckpatchReport] = {}
    for p, key in keys.items():
        kept = cache.get("checkpatch", key)
        if isinstance(kept, dict):
            reports[p] = CheckpatchReport(p.name, kept["errors"], kept["warnings"],
                                          kept["checks"])
    todo = [p for p in patches if p not in reports]
    batches = checkpatch_batches(todo, jobs)
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(batches)))) as pool:
        for found in pool.map(lambda batch: run_checkpatch(tree, batch), batches):
            reports.update(found)
    for p in todo:
        if p in keys:
            r = reports[p]
            cache.put("checkpatch", keys[p], {"errors": r.errors, "warnings": r.warnings,
                                              "checks": r.checks})
    return [reports[p] for p in patches]


def checkpatch_batches(patches: list[Path], jobs: int) -> list[list[Path]]:
    """PATCHES in about JOBS runs of about the same work, the heaviest
    first.  checkpatch.pl's time goes with the lines a patch adds: the
    simple mutex's core patch (1,608 added lines) took 0.96 s alone, the
    other 70 of the default tree's series (934) 1.35 s in one run, and
    every other patch in one run (0.83 s, and 1.60 s with the core
    patch) left a core idle for 0.8 s."""
    by_name = {str(p): p for p in patches}
    work = {name: float(PATCH_OVERHEAD_LINES + added_lines(p)) for name, p in by_name.items()}
    return [[by_name[name] for name in batch]
            for batch in heaviest_first(work, max(1, jobs), least=float("inf"))]


# What checkpatch.pl spends on a patch besides its added lines, in added
# lines (about 10 ms a patch, 0.5 ms a line, in the runs above).
PATCH_OVERHEAD_LINES = 20


def added_lines(patch: Path) -> int:
    return sum(1 for line in patch.read_bytes().splitlines()
               if line.startswith(b"+") and not line.startswith(b"+++"))


def checkpatch_key(tree: Path, patch: Path) -> str:
    lines = [l for l in patch.read_text(errors="replace").splitlines(keepends=True)
             if not l.startswith(VOLATILE_PATCH_LINES)]
    return ResultCache.key("checkpatch", *[file_digest(tree / "scripts" / n)
                                           for n in CHECKPATCH_DATA
                                           if (tree / "scripts" / n).is_file()], "".join(lines))


def run_checkpatch(tree: Path, patches: list[Path]) -> dict[Path, CheckpatchReport]:
    """One checkpatch.pl run on PATCHES; --terse puts the patch's path
    in front of each of its lines."""
    done = subprocess.run(["perl", str(tree / "scripts" / "checkpatch.pl"), "--no-tree",
                           "--terse", "--show-types", "--no-summary", *map(str, patches)],
                          cwd=tree, capture_output=True, text=True)
    # 0: nothing to report, 1: something reported; anything else (no perl,
    # the script died) must not pass for clean patches
    if done.returncode not in (0, 1):
        tail = "\n".join(done.stderr.strip().splitlines()[-3:])
        raise ToolFailure(f"checkpatch.pl exited {done.returncode} on {len(patches)} "
                          f"patch(es): {tail}")
    lines = done.stdout.splitlines()
    found = {}
    for p in patches:
        mine = [l[len(str(p)) + 1:] for l in lines if l.startswith(f"{p}:")]
        pick = lambda kind: [l.split(": ", 1)[-1] for l in mine if f": {kind}:" in l]
        found[p] = CheckpatchReport(p.name, pick("ERROR"), pick("WARNING"), pick("CHECK"))
    return found
