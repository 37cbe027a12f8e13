"""Report stage: audit.json (machine-readable) and audit.md (for reviewers).

The schema is documented in audit/README.md; bump SCHEMA_VERSION when it
changes incompatibly.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from sem2mutex.tools.fs import write_json_atomic, write_text_atomic
from sem2mutex.audit.classify import ambiguity, merge_by_code
from sem2mutex.tools.maintainers import Maintainers
from sem2mutex.audit.decisions import REFUSED
from sem2mutex.model import Audit, Instance, Reason, SemClass

SCHEMA_VERSION = 1
CLASS_ORDER = (SemClass.MUTEX, SemClass.COUNTING, SemClass.SIGNAL, SemClass.AMBIGUOUS)


def through_json(macro: str | None) -> dict:
    """The accessor macro a call goes through, only where there is one."""
    return {"through": macro} if macro else {}


def failed_acquire_json(acquire: tuple[str, int] | None) -> dict:
    """The conditional down whose failure leads to an up(), only where
    there is one."""
    return {"failed_acquire": {"op": acquire[0], "line": acquire[1]}} if acquire else {}


def reason_json(r: Reason) -> dict:
    return {"code": r.code, "detail": r.detail,
            "locations": [{"file": l.file, "line": l.line} for l in r.locations]}


def instance_json(inst: Instance) -> dict:
    return {
        "id": inst.id,
        "kind": inst.kind,
        "name": inst.name,
        "struct": inst.struct,
        "file": inst.file,
        "line": inst.decl_line,
        "decls": [{"file": l.file, "line": l.line} for l in inst.decls],
        "class": inst.sem_class.value,
        "reasons": [reason_json(r) for r in inst.reasons],
        "notes": [reason_json(r) for r in merge_by_code(inst.notes)
                  if r.code not in {x.code for x in inst.reasons}],
        "inits": [{"file": i.location.file, "line": i.location.line, "count": i.count,
                   "count_text": i.count_text, "op": i.op, "macro": i.macro,
                   **through_json(i.through)}
                  for i in inst.inits],
        "sites": [{"file": s.location.file, "line": s.location.line, "function": s.function,
                   "op": s.op, "paired": s.paired, "macro": s.macro,
                   "via_wrapper": s.via_wrapper, "via_helper": s.via_helper,
                   "released_after": s.released_after, **through_json(s.through),
                   **failed_acquire_json(s.failed_acquire),
                   **({"spelled": s.spelled} if s.spelled else {})}
                  for s in inst.sites],
        "escapes": [{"file": e.pos.file, "line": e.pos.line, "function": e.pos.function,
                     "via": e.via, "callee": e.callee} for e in inst.escapes],
        "ambiguity": ambiguity(inst),
        "pinned": None if inst.pinned is None else {
            "class": inst.pinned.sem_class.value, "reviewer": inst.pinned.reviewer,
            "reason": inst.pinned.reason,
            "classified_as": inst.classified_as.value if inst.classified_as else None},
    }


def audit_json(audit: Audit) -> dict:
    counts = Counter(i.sem_class.value for i in audit.instances)
    return {
        "schema": SCHEMA_VERSION,
        "tree": {"path": str(audit.tree.path), "version": audit.tree.version,
                 "api_era": audit.tree.api_era.value},
        "scope": audit.scope,
        "summary": {"instances": len(audit.instances),
                    **{c.value: counts.get(c.value, 0) for c in CLASS_ORDER},
                    "ambiguous_doubtful": sum(1 for i in audit.instances
                                              if ambiguity(i) == "doubtful"),
                    "ambiguous_unseen": sum(1 for i in audit.instances
                                            if ambiguity(i) == "unseen"),
                    "pinned": sum(1 for i in audit.instances if i.pinned),
                    "files_scanned": audit.files_scanned,
                    "parse_failures": len(audit.parse_failures),
                    "seconds": round(audit.seconds, 1)},
        "timings": audit.timings,
        "instances": [instance_json(i) for i in audit.instances],
        "parse_failures": [{"file": p.file, "error": p.error} for p in audit.parse_failures],
        "other_type_calls": [{"file": c.location.file, "line": c.location.line, "op": c.op,
                              "argument": c.text, "why": c.why}
                             for c in audit.other_type_calls],
        "stale_verdicts": [{"instance": s.verdict.instance, "class": s.verdict.sem_class.value,
                            "reviewer": s.verdict.reviewer, "why": s.why}
                           for s in audit.stale_verdicts],
    }


# ---------------------------------------------------------------- markdown


def describe(inst: Instance) -> str:
    if inst.kind.startswith("field") or (inst.kind == "pointer" and inst.struct):
        what = f"`{inst.struct}.{inst.name}`"
    else:
        what = f"`{inst.name}`"
    where = f"{inst.file}:{inst.decl_line}" if inst.decl_line else inst.file
    return f"{what} ({inst.kind}, {where})"


def reason_lines(reasons: list[Reason], limit: int = 6) -> list[str]:
    lines = []
    for r in reasons:
        shown = ", ".join(str(l) for l in r.locations[:limit])
        more = f" (+{len(r.locations) - limit} more)" if len(r.locations) > limit else ""
        lines.append(f"  - **{r.code}**: {r.detail}" + (f" — {shown}{more}" if shown else ""))
    return lines


def pinned_line(inst: Instance) -> list[str]:
    if not inst.pinned:
        return []
    return [f"  - pinned to **{inst.pinned.sem_class.value}** by {inst.pinned.reviewer} "
            f"(tool said {inst.classified_as.value}): {inst.pinned.reason}"]


AMBIGUITY_SECTIONS = (
    ("doubtful", "Ambiguous, doubtful code: start here",
     "The code itself is unsafe or unproven for a mutex (a release in another task or "
     "in atomic context, an escaping address, an unpaired up(), ...)."),
    ("unseen", "Ambiguous, not all uses seen",
     "Nothing doubtful was found, but the analysis could not see every use (a call it "
     "could not tie to one semaphore, code spatch could not parse, no initialisation "
     "found): check the uses it lists, then pin a verdict."),
)


def ambiguous_section(title: str, intro: str, members: list[Instance],
                      maintainers: Maintainers) -> list[str]:
    out = [f"## {title} ({len(members)})", "", intro, ""]
    by_subsystem: dict[str, list[Instance]] = defaultdict(list)
    for inst in members:
        by_subsystem[maintainers.section_for(inst.file)].append(inst)
    for subsystem in sorted(by_subsystem):
        out += [f"### {subsystem}", ""]
        for inst in by_subsystem[subsystem]:
            out.append(f"- {describe(inst)} — id `{inst.id}`")
            out += pinned_line(inst) + reason_lines(inst.reasons)
        out.append("")
    return out


def audit_markdown(audit: Audit, maintainers: Maintainers) -> str:
    counts = Counter(i.sem_class for i in audit.instances)
    kinds = Counter(ambiguity(i) for i in audit.instances)
    out = [f"# Semaphore audit: Linux {audit.tree.version}", "",
           f"Tree `{audit.tree.path}` (API era {audit.tree.api_era.value}); "
           f"{audit.files_scanned} files scanned"
           + (f" under {', '.join(audit.scope)}" if audit.scope else "") + ".", "",
           "| class | instances |", "|---|---|"]
    for c in CLASS_ORDER:
        out.append(f"| {c.value} | {counts.get(c, 0)} |")
        if c is SemClass.AMBIGUOUS:
            out += [f"| ambiguous: doubtful code | {kinds.get('doubtful', 0)} |",
                    f"| ambiguous: not all uses seen | {kinds.get('unseen', 0)} |"]
    out += [f"| **total** | {len(audit.instances)} |", ""]
    refused = [s for s in audit.stale_verdicts if s.why.startswith(REFUSED)]
    stale = [s for s in audit.stale_verdicts if not s.why.startswith(REFUSED)]
    for title, verdicts in (("Refused reviewer verdicts", refused),
                            ("Stale reviewer verdicts", stale)):
        if verdicts:
            out += [f"## {title}", ""]
            out += [f"- `{s.verdict.instance}` ({s.verdict.sem_class.value}, "
                    f"{s.verdict.reviewer}): {s.why}" for s in verdicts]
            out.append("")
    for kind, title, intro in AMBIGUITY_SECTIONS:
        members = [i for i in audit.instances if ambiguity(i) == kind]
        out += ambiguous_section(title, intro, members, maintainers)
    for cls in (SemClass.MUTEX, SemClass.COUNTING, SemClass.SIGNAL):
        members = [i for i in audit.instances if i.sem_class is cls]
        out += [f"## {cls.value.capitalize()} ({len(members)})", ""]
        for inst in members:
            out.append(f"- {describe(inst)} — id `{inst.id}`")
            out += pinned_line(inst) + reason_lines(inst.reasons, limit=3)
        out.append("")
    if audit.other_type_calls:
        out += ["## Appendix: semaphore calls on something else", "",
                "These calls are no semaphore operations: they resolve to an object that is "
                "not a struct semaphore (code under an #if that is never compiled), or have a "
                "number of arguments the API does not take (a function or macro of the same "
                "name): no instance.", ""]
        out += [f"- {c.op}() on `{c.text}` at {c.location}: {c.why}"
                for c in audit.other_type_calls]
        out.append("")
    if audit.parse_failures:
        out += ["## Appendix: files spatch could not parse", "",
                "The skipped lines of each file were still read with Coccinelle's lexer: a "
                "semaphore they name that the file can see carries `parse-failure`.", ""]
        out += [f"- `{p.file}`: {p.error}" for p in audit.parse_failures]
        out.append("")
    return "\n".join(out)


def write_reports(audit: Audit, outdir: Path, maintainers: Maintainers) -> list[Path]:
    json_path, md_path = outdir / "audit.json", outdir / "audit.md"
    write_json_atomic(json_path, audit_json(audit))
    write_text_atomic(md_path, audit_markdown(audit, maintainers))
    return [json_path, md_path]
