"""Scope report and cover letter: what the flag day changes, for the
maintainers who judge it (scope.md, scope.json, 0000-cover-letter.patch)."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from sem2mutex.tools.fs import write_json_atomic, write_text_atomic
from sem2mutex.model import Instance, SemClass
from sem2mutex.paths import COCCI_DIR
from sem2mutex.progress import Progress
from sem2mutex.series.rewrite import MUTEX
from sem2mutex.tools.api import COUNTING_NAMES, MUTEX_SPELLING
from sem2mutex.tools.grep import files_with_words
from sem2mutex.tools.spatch import SpatchRunner

EXPORTS_RULE = COCCI_DIR / "check" / "exports.cocci"
OLD_TO_NEW = tuple((f"{old}()", MUTEX_SPELLING[old], f"{new}()")
                   for old, new in COUNTING_NAMES.items())


def exported_symbols(spatch: Path, root: Path, files: list[str]) -> set[str]:
    c_files = files_with_words(root, [f for f in files if f.endswith(".c")
                                      and (root / f).is_file()],
                               ["EXPORT_SYMBOL", "EXPORT_SYMBOL_GPL"])
    runner = SpatchRunner(spatch, root, 2, Progress(quiet=True))
    out = runner.run("exports", [EXPORTS_RULE], c_files)
    return {r["name"] for r in out.records if r["kind"] == "export"}


@dataclass
class Scope:
    data: dict
    markdown: str


def shortstat_numbers(shortstat: str) -> dict[str, int]:
    """'12 files changed, 30 insertions(+), 9 deletions(-)' -> numbers (git's output)."""
    found = {"files": 0, "insertions": 0, "deletions": 0}
    for number, word in re.findall(r"(\d+) (file|insertion|deletion)", shortstat):
        found[{"file": "files", "insertion": "insertions", "deletion": "deletions"}[word]] = \
            int(number)
    return found


def final_targets(result) -> dict[str, str]:
    return {r.instance: r.target for rr in result.rewrite for r in rr.instances}


def build_scope(req, result, exports_before: set[str], exports_after: set[str]) -> Scope:
    instances: list[Instance] = req.audit.instances
    targets = final_targets(result)
    counts = Counter(i.sem_class.value for i in instances)
    to_mutex = sorted(i for i, t in targets.items() if t == MUTEX)
    files = sorted({f for p in result.patches for f in p.files})
    sections = sorted({u.section for u in result.units})
    ambiguous = [i for i in instances if i.sem_class is SemClass.AMBIGUOUS]
    warnings = [{"patch": p.file, "warning": w}
                for p in result.patches if p.checkpatch for w in p.checkpatch.warnings]
    errors = [{"patch": p.file, "error": e}
              for p in result.patches if p.checkpatch for e in p.checkpatch.errors]
    data = {
        "mode": req.mode,
        "instances": {"total": len(instances), **{c.value: counts.get(c.value, 0)
                                                  for c in SemClass}},
        "converted_to_mutex": to_mutex,
        "renamed_to_counting_api": sorted(i for i, t in targets.items() if t != MUTEX),
        "demoted": {r.instance: r.demoted for rr in result.rewrite for r in rr.instances
                    if r.demoted},
        "not_converted": [{"instance": o.edit.instance, "file": o.edit.file,
                           "line": o.edit.line, "op": o.edit.op, "why": o.why}
                          for rr in result.rewrite for o in rr.not_converted()],
        "patches": [{"file": p.file, "subject": p.subject, "kind": p.kind,
                     "files": p.files, "instances": p.instances} for p in result.patches],
        "files_touched": files,
        "subsystems": sections,
        "diffstat": shortstat_numbers(result.shortstat),
        "exports_added": sorted(exports_after - exports_before),
        "exports_removed": sorted(exports_before - exports_after),
        "ambiguous": [{"id": i.id, "file": i.file,
                       "reasons": [r.code for r in i.reasons]} for i in ambiguous],
        "checkpatch": {"errors": errors, "warnings": warnings,
                       "not_checked": [p.file for p in result.patches if p.checkpatch is None]},
    }
    return Scope(data, scope_markdown(data))


def scope_markdown(d: dict) -> str:
    inst = d["instances"]
    out = ["# Scope of the semaphore flag day", "",
           f"Mode: **{d['mode']}**"
           + (" (the last patch removes down()/up() and friends)" if d["mode"] == "flag-day"
              else " (the old names stay, as wrappers)"), "",
           "| | |", "|---|---|",
           f"| semaphore instances | {inst['total']} |",
           f"| converted to struct mutex | {len(d['converted_to_mutex'])} |",
           f"| moved to the down_sem() API | {len(d['renamed_to_counting_api'])} |",
           f"| ambiguous (a human must look) | {inst['ambiguous']} |",
           f"| patches | {len(d['patches'])} |",
           f"| files touched | {len(d['files_touched'])} |",
           f"| subsystems (MAINTAINERS sections) | {len(d['subsystems'])} |",
           f"| insertions / deletions | +{d['diffstat']['insertions']} / "
           f"-{d['diffstat']['deletions']} |",
           f"| checkpatch errors / warnings | {len(d['checkpatch']['errors'])} / "
           f"{len(d['checkpatch']['warnings'])} |", "",
           "## Exported symbols", "",
           "Added: " + (", ".join(f"`{s}`" for s in d["exports_added"]) or "none"), "",
           "Removed: " + (", ".join(f"`{s}`" for s in d["exports_removed"]) or "none"), "",
           "## What out-of-tree code must change", ""]
    if d["mode"] == "flag-day":
        out += ["After the last patch the old names are gone: a module that still calls "
                "them fails to build. For each struct semaphore it uses, decide what it is:",
                "", "| old | binary lock (same task locks and unlocks) | anything else |",
                "|---|---|---|"]
        out += [f"| `{o}` | `{m}` + `struct mutex`, `DEFINE_MUTEX()`, `mutex_init()` | `{c}` |"
                for o, m, c in OLD_TO_NEW]
    else:
        out += ["Nothing yet: the old names remain as wrappers of the down_sem() API. "
                "Out-of-tree code should still move to struct mutex or down_sem()."]
    out += ["", "## Subsystems", ""] + [f"- {s}" for s in d["subsystems"]]
    out += ["", f"## Ambiguous instances a human still has to look at ({inst['ambiguous']})", "",
            "They are moved to the down_sem() API, which keeps their semantics; "
            "audit.md says why each is ambiguous. Pin a verdict with --decisions "
            "once checked.", ""]
    out += [f"- `{a['id']}`: {', '.join(a['reasons'])}" for a in d["ambiguous"]]
    if d["demoted"] or d["not_converted"]:
        out += ["", "## Left as they were", ""]
        out += [f"- `{i}` stays a semaphore: {'; '.join(w)}" for i, w in d["demoted"].items()]
        out += [f"- {n['file']}:{n['line']} {n['op']}() ({n['instance']}): {n['why']}"
                for n in d["not_converted"]]
    out += ["", "## checkpatch", ""]
    if d["checkpatch"]["not_checked"]:
        out += ["The tree has no scripts/checkpatch.pl: "
                f"{len(d['checkpatch']['not_checked'])} patches were not checked.", ""]
    if not any(d["checkpatch"][k] for k in ("errors", "warnings", "not_checked")):
        out.append("No errors, no warnings.")
    out += [f"- ERROR {e['patch']}: {e['error']}" for e in d["checkpatch"]["errors"]]
    out += [f"- WARNING {w['patch']}: {w['warning']}" for w in d["checkpatch"]["warnings"]]
    return "\n".join(out) + "\n"


def write_scope(outdir: Path, scope: Scope) -> None:
    write_json_atomic(outdir / "scope.json", scope.data)
    write_text_atomic(outdir / "scope.md", scope.markdown)


def cover_text(scope: Scope) -> tuple[str, str]:
    d = scope.data
    subject = ("Convert binary semaphores to struct mutex, rename the counting API"
               + (" (flag day)" if d["mode"] == "flag-day" else ""))
    inst = d["instances"]
    body = [
        "Most struct semaphore users are mutexes: count 1, released by the task that",
        "took it. This series converts those to struct mutex and moves every other",
        "semaphore to a counting API of its own, down_sem()/up_sem(), as proposed",
        "for 2.6.16 (\"MUTEX: Introduce simple mutex implementation\", D. Howells).",
        "",
        "Patch 1 adds the down_sem() family and keeps the old names as wrappers, so",
        "that every commit builds. Patch 2 adds CONFIG_MUTEX_SIMPLE, the original",
        "xchg()-based mutex ported to this tree (default n). The conversion patches",
        "follow, one per MAINTAINERS section."
        + (" The last patch removes down(), up() and friends." if d["mode"] == "flag-day"
           else ""),
        "",
        f"Of {inst['total']} semaphore instances, {len(d['converted_to_mutex'])} become "
        f"mutexes and {len(d['renamed_to_counting_api'])} move to down_sem():",
        f"{inst['counting']} counting, {inst['signal']} signalling (count 0), "
        f"{inst['ambiguous']} ambiguous.",
        "The classification is conservative: a semaphore only becomes a mutex when",
        "every initialisation is 1 and every up() provably releases the same task's",
        "down() in process context. The ambiguous ones keep their semantics and are",
        "listed in scope.md for review.",
        "",
        f"{len(d['files_touched'])} files in {len(d['subsystems'])} subsystems, "
        f"+{d['diffstat']['insertions']}/-{d['diffstat']['deletions']} lines.",
        "Exported symbols added: " + (", ".join(d["exports_added"]) or "none") + ".",
        "Exported symbols removed: " + (", ".join(d["exports_removed"]) or "none") + ".",
    ]
    return subject, "\n".join(body)


def write_cover_letter(path: Path, scope: Scope) -> None:
    """Fill git format-patch's cover letter placeholders."""
    subject, body = cover_text(scope)
    text = path.read_text()
    text = text.replace("*** SUBJECT HERE ***", subject, 1)
    text = text.replace("*** BLURB HERE ***", body, 1)
    path.write_text(text)
