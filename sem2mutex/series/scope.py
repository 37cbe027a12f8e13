"""Scope report and cover letter: what the flag day changes, for the
maintainers who judge it (scope.md, scope.json, 0000-cover-letter.patch)."""
from __future__ import annotations

import re
import textwrap
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from sem2mutex.tools.fs import write_json_atomic, write_text_atomic
from sem2mutex.audit.decisions import REFUSED, evidence_text, forbidding_evidence
from sem2mutex.model import Instance, SemClass
from sem2mutex.series.exports import ExportDiff
from sem2mutex.series.rewrite import MUTEX
from sem2mutex.tools.api import COUNTING_NAMES, MUTEX_SPELLING

OLD_TO_NEW = tuple((f"{old}()", MUTEX_SPELLING[old], f"{new}()")
                   for old, new in COUNTING_NAMES.items())

# What CONFIG_MUTEX_SIMPLE changes for modules.  Checked against the code
# of core/simple-mutex and the generic mutex by tests/test_scope.py
# (test_simple_mutex_exports_*): simple_mutex.c exports, under
# CONFIG_MUTEX_SIMPLE, every mutex_*() symbol kernel/locking/mutex.c
# exports, with the same EXPORT_SYMBOL/EXPORT_SYMBOL_GPL licence, except
# mutex_is_locked(), which <linux/mutex-simple.h> makes an inline as
# PREEMPT_RT's <linux/mutex.h> does.
MUTEX_SIMPLE_EXPORTS = (
    "CONFIG_MUTEX_SIMPLE provides the same mutex_* exports as the generic "
    "mutex: kernel/locking/simple_mutex.c exports mutex_lock*(), "
    "mutex_trylock(), mutex_unlock() and __mutex_init() (and mutex_destroy() "
    "with its owner debugging) with the licences of kernel/locking/mutex.c; "
    "mutex_is_locked() becomes an inline of <linux/mutex.h> and ww_mutex "
    "comes from ww_rt_mutex.c, as under PREEMPT_RT. Modules are unaffected "
    "by that choice.")

WIDTH = 72  # commit message bodies, cover letter included


def wrap(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, width=WIDTH, initial_indent=indent,
                         subsequent_indent=indent + "  " if indent else "",
                         break_on_hyphens=False, break_long_words=False)


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


def export_data(exports: ExportDiff) -> dict:
    return {
        "lines_added": [s.as_dict() for s in exports.lines_added],
        "lines_removed": [s.as_dict() for s in exports.lines_removed],
        "conditions_changed": [{"name": c.after.name, "macro": c.after.macro,
                                "file": c.after.file, "before": c.before.when(),
                                "after": c.after.when()}
                               for c in exports.conditions_changed],
    }


def verdict_data(audit) -> tuple[list[dict], list[dict]]:
    """The reviewers' verdicts the series follows, and those it refused."""
    pinned = []
    for inst in audit.instances:
        v = inst.pinned
        if v is None:
            continue
        overridden = evidence_text(forbidding_evidence(inst)) if v.override else ""
        pinned.append({"instance": inst.id, "class": v.sem_class.value,
                       "classified_as": inst.classified_as.value if inst.classified_as
                       else None, "reviewer": v.reviewer, "reason": v.reason,
                       "override": v.override, "overridden": overridden})
    refused = [{"instance": s.verdict.instance, "class": s.verdict.sem_class.value,
                "reviewer": s.verdict.reviewer, "why": s.why}
               for s in audit.stale_verdicts if s.why.startswith(REFUSED)]
    return pinned, refused


def build_scope(req, result) -> Scope:
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
    pinned, refused = verdict_data(req.audit)
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
        "exports_added": list(result.exports.added),
        "exports_removed": list(result.exports.removed),
        "export_changes": export_data(result.exports),
        "mutex_simple_exports": MUTEX_SIMPLE_EXPORTS,
        "reviewer_verdicts": pinned,
        "refused_verdicts": refused,
        "ambiguous": [{"id": i.id, "file": i.file,
                       "reasons": [r.code for r in i.reasons]} for i in ambiguous],
        "checkpatch": {"errors": errors, "warnings": warnings,
                       "not_checked": [p.file for p in result.patches if p.checkpatch is None]},
    }
    return Scope(data, scope_markdown(data))


def added_line(d: dict, name: str) -> str:
    site = next((s for s in d["export_changes"]["lines_added"] if s["name"] == name), None)
    if site is None:
        return f"- `{name}`"
    when = " && ".join(([f"IS_ENABLED({site['built_if']})"] if site["built_if"] else [])
                       + site["conditions"])
    return (f"- `{name}` ({site['macro']}, {site['file']})"
            + (f", when `{when}`" if when else ""))


def export_markdown(d: dict) -> list[str]:
    changes = d["export_changes"]
    out = ["## Exported symbols", "",
           "Every EXPORT_SYMBOL*() of the files the series changes, before and after it; "
           "a symbol counts as added or removed only when no other file of the tree "
           "exports it. `when` is the configuration the export needs: the "
           "preprocessor conditions around it and the Kconfig symbol of its "
           "Makefile line.", "",
           f"Removed ({len(d['exports_removed'])}): "
           + (", ".join(f"`{s}`" for s in d["exports_removed"]) or "none"), "",
           f"Added ({len(d['exports_added'])})" + (":" if d["exports_added"] else ": none"), ""]
    out += [added_line(d, name) for name in d["exports_added"]]
    again = [s for s in changes["lines_added"] if s["name"] not in d["exports_added"]]
    if again or changes["conditions_changed"]:
        out += ["", "Exported already, from a new place or under new conditions:", ""]
        for s in again:
            when = " && ".join(([f"IS_ENABLED({s['built_if']})"] if s["built_if"] else [])
                               + s["conditions"])
            out.append(f"- `{s['name']}` ({s['macro']}) also from {s['file']}"
                       + (f" when `{when}`" if when else ""))
        groups: dict[tuple[str, str, str], list[str]] = {}
        for c in changes["conditions_changed"]:
            groups.setdefault((c["file"], c["before"], c["after"]), []).append(c["name"])
        for (file, before, after), names in groups.items():
            out.append(f"- {file}: {', '.join(f'`{n}`' for n in sorted(set(names)))} now "
                       f"when `{after or 'always'}` (was `{before or 'always'}`)")
    gone = [s for s in changes["lines_removed"] if s["name"] not in d["exports_removed"]]
    if gone:
        out += ["", "No longer exported from these files (another file still exports them):",
                ""]
        out += [f"- `{s['name']}` ({s['macro']}, {s['file']})" for s in gone]
    out += ["", d["mutex_simple_exports"], ""]
    return out


def verdict_markdown(d: dict) -> list[str]:
    if not d["reviewer_verdicts"] and not d["refused_verdicts"]:
        return []
    out = ["## Reviewer verdicts", ""]
    for v in d["reviewer_verdicts"]:
        line = (f"- `{v['instance']}`: pinned {v['class']} by {v['reviewer']} "
                f"(the audit said {v['classified_as']}): \"{v['reason']}\"")
        if v["override"]:
            line += f"; overrides the audit's evidence: {v['overridden']}"
        out.append(line)
    out += [f"- `{v['instance']}`: {v['class']} by {v['reviewer']} {v['why']}"
            for v in d["refused_verdicts"]]
    return out + [""]


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
           f"{len(d['checkpatch']['warnings'])} |", ""]
    out += export_markdown(d)
    out += verdict_markdown(d)
    out += ["## What out-of-tree code must change", ""]
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
    paragraphs = [
        "Most struct semaphore users are mutexes: count 1, released by the task "
        "that took it. This series converts those to struct mutex and moves every "
        "other semaphore to a counting API of its own, down_sem()/up_sem(), as "
        "proposed for 2.6.16 (\"MUTEX: Introduce simple mutex implementation\", "
        "D. Howells).",
        "Patch 1 adds the down_sem() family and keeps the old names as wrappers, so "
        "that every commit builds. Patch 2 adds CONFIG_MUTEX_SIMPLE, the original "
        "xchg()-based mutex ported to this tree (default n). The conversion patches "
        "follow, one per MAINTAINERS section."
        + (" The last patch removes down(), up() and friends." if d["mode"] == "flag-day"
           else ""),
        f"Of {inst['total']} semaphore instances, {len(d['converted_to_mutex'])} become "
        f"mutexes and {len(d['renamed_to_counting_api'])} move to down_sem(): "
        f"{inst['counting']} counting, {inst['signal']} signalling (count 0), "
        f"{inst['ambiguous']} ambiguous. The classification is conservative: a "
        "semaphore only becomes a mutex when every initialisation is 1 and every "
        "up() provably releases the same task's down() in process context. The "
        "ambiguous ones keep their semantics and are listed in scope.md for review.",
    ]
    paragraphs += [cover_verdict_text(v) for v in d["reviewer_verdicts"]]
    paragraphs += [
        f"{len(d['files_touched'])} files in {len(d['subsystems'])} subsystems, "
        f"+{d['diffstat']['insertions']}/-{d['diffstat']['deletions']} lines.",
        "Exported symbols removed: " + (", ".join(d["exports_removed"]) or "none") + ".",
        "Exported symbols added: " + (", ".join(added_with_config(d)) or "none") + ".",
        d["mutex_simple_exports"],
    ]
    body = []
    for paragraph in paragraphs:
        body += wrap(paragraph) + [""]
    return subject, "\n".join(body).rstrip()


def added_with_config(d: dict) -> list[str]:
    """The added exports, each with the Kconfig symbol that builds it."""
    built = {s["name"]: s["built_if"] for s in d["export_changes"]["lines_added"]}
    return [f"{n} ({built[n]})" if built.get(n) else n for n in d["exports_added"]]


def cover_verdict_text(v: dict) -> str:
    if v["override"]:
        return (f"{v['instance']} becomes a {v['class']} because a reviewer overrode the "
                f"audit: {v['reviewer']} set aside {v['overridden']}, saying "
                f"\"{v['reason']}\".")
    return (f"{v['instance']} is a {v['class']} by a reviewer's verdict ({v['reviewer']}; "
            f"the audit said {v['classified_as']}): \"{v['reason']}\".")


def write_cover_letter(path: Path, scope: Scope) -> None:
    """Fill git format-patch's cover letter placeholders."""
    subject, body = cover_text(scope)
    text = path.read_text()
    text = text.replace("*** SUBJECT HERE ***", subject, 1)
    text = text.replace("*** BLURB HERE ***", body, 1)
    path.write_text(text)
