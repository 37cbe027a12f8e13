"""The commit messages of the series: what a maintainer reads first.

Bodies are wrapped at 72 columns (trailers aside) and name the evidence by
reason code with one location, relative to the patch's own directory: the
audit report has every location, the message only has to say why.  An
instance a reviewer pinned is listed apart, with the reviewer and the
reason quoted, since the audit alone did not decide it; a verdict that
overrode the audit's evidence against a mutex says so.
"""
from __future__ import annotations

import os
import textwrap

from sem2mutex.audit.decisions import evidence_text, forbidding_evidence
from sem2mutex.model import CoreChange, Instance, Location, SemClass
from sem2mutex.series.prefixes import subject_line
from sem2mutex.series.rewrite import MUTEX, RewriteResult
from sem2mutex.series.units import ConversionUnit

WIDTH = 72
SHOWN_REASONS = 3


def wrap(text: str, width: int = WIDTH, indent: str = "") -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=indent,
                         subsequent_indent=indent + "  " if indent else "",
                         break_on_hyphens=False, break_long_words=False)


def common_directory(files: list[str]) -> str:
    dirs = [os.path.dirname(f) for f in files]
    return os.path.commonpath(dirs) if dirs and all(dirs) else ""


def short(location: Location | str, base: str) -> str:
    """A location relative to BASE, the patch's common directory."""
    text = str(location)
    return text[len(base) + 1:] if base and text.startswith(base + "/") else text


def evidence(inst: Instance, base: str = "") -> str:
    """'count-one, paired-release, process-context': the codes, the first
    of an obstacle list with where it is."""
    reasons = inst.reasons[:SHOWN_REASONS]
    shown = [r.code for r in reasons]
    decided = inst.classified_as or inst.sem_class  # the audit's own class
    if reasons and reasons[0].locations and decided is not SemClass.MUTEX:
        shown[0] += f" at {short(reasons[0].locations[0], base)}"
    more = len(inst.reasons) - len(reasons)
    return ", ".join(shown) + (f", +{more} more" if more > 0 else "")


def describe_instance(inst: Instance, base: str = "") -> str:
    if inst.kind.startswith("field"):
        return f"{inst.struct}.{inst.name}"
    if inst.kind == "pointer" and inst.struct:
        return f"{inst.struct}.{inst.name} (a struct semaphore pointer member)"
    if inst.kind == "pointer":
        return f"{inst.name} (a struct semaphore pointer in {short(inst.file, base)})"
    return f"{inst.name} ({short(inst.file, base)})"


def pinned_text(inst: Instance, base: str = "") -> str:
    """Who decided a pinned instance and why, with what the audit said."""
    v = inst.pinned
    said = inst.classified_as.value if inst.classified_as else inst.sem_class.value
    text = f"pinned {v.sem_class.value} by {v.reviewer}, who wrote: \"{v.reason}\""
    if v.override:
        text += (f"; the reviewer overrode the audit's evidence against a mutex: "
                 f"{evidence_text(forbidding_evidence(inst), 1)}")
    elif said != v.sem_class.value:
        text += f" (the audit alone said {said}: {evidence(inst, base)})"
    return text


def conversion_message(unit: ConversionUnit, result: RewriteResult,
                       cc: list[str], identity: str) -> tuple[str, str]:
    targets = {r.instance: r for r in result.instances}
    to_mutex = [i for i in unit.instances if targets.get(i.id) and targets[i.id].target == MUTEX]
    others = [i for i in unit.instances if i not in to_mutex]
    base = common_directory(result.files_changed)
    if not unit.instances:
        return (subject_line(unit.prefix, "Use the down_sem() API in code Coccinelle "
                             "cannot parse"), unparsed_body(unit, cc, identity, base))
    if to_mutex and others:
        summary = "Convert semaphores to struct mutex and down_sem()"
    elif to_mutex:
        summary = ("Convert binary semaphore to struct mutex" if len(to_mutex) == 1
                   else "Convert binary semaphores to struct mutex")
    else:
        summary = "Use the down_sem() counting semaphore API"
    body: list[str] = []
    proven = [i for i in to_mutex if not i.pinned or i.classified_as is SemClass.MUTEX]
    pinned = [i for i in to_mutex if i not in proven]
    if proven:
        one = len(proven) == 1
        body += wrap(("This semaphore is a mutex" if one else "These semaphores are mutexes")
                     + " in all but name: every initialisation sets the count to 1, and "
                     "every up() releases a down() taken by the same task in the same "
                     "function (or through its lock/unlock wrappers), never from "
                     "interrupt, timer or tasklet context. struct mutex states that, is "
                     "cheaper, and lets lockdep and CONFIG_DEBUG_MUTEXES check it. "
                     "Convert " + ("it:" if one else "them:"))
        body.append("")
        for inst in proven:
            why = evidence(inst, base)
            if inst.pinned:
                why += f"; also pinned by {inst.pinned.reviewer}: \"{inst.pinned.reason}\""
            body += wrap(f"- {describe_instance(inst, base)}: {why}", indent="  ")
        body.append("")
    if pinned:
        body += wrap("A reviewer checked " + ("this semaphore" if len(pinned) == 1
                                              else "these semaphores")
                     + " by hand and decided that it is a mutex where the audit could "
                     "not prove it; convert on that verdict:")
        body.append("")
        for inst in pinned:
            body += wrap(f"- {describe_instance(inst, base)}: {pinned_text(inst, base)}",
                         indent="  ")
        body.append("")
    if others:
        body += wrap(("This stays a semaphore" if len(others) == 1
                      else "These stay semaphores")
                     + ", so that the behaviour does not change; switch to the down_sem() "
                     "API, which names what " + ("it is:" if len(others) == 1
                                                 else "they are:"))
        body.append("")
        for inst in others:
            demoted = targets[inst.id].demoted if inst.id in targets else []
            why = (f"kept: {'; '.join(demoted)}" if demoted
                   else f"{inst.sem_class.value}: {evidence(inst, base)}")
            if inst.pinned:
                why = f"{inst.sem_class.value}: {pinned_text(inst, base)}"
            body += wrap(f"- {describe_instance(inst, base)}: {why}", indent="  ")
        body.append("")
    if unit.unparsed:
        body += wrap("Coccinelle cannot parse the code around these calls (function-"
                     "defining macros); the semaphores they name are ambiguous, so they "
                     "move to the down_sem() API too:")
        body.append("")
        for c in unit.unparsed:
            body += wrap(f"- {short(c.file, base)}:{c.line}: {c.op}() -> {c.new}()",
                         indent="  ")
        body.append("")
    body += wrap("Generated by sem2mutex with Coccinelle; the audit report lists the "
                 "code locations behind each verdict.")
    body.append("")
    body += [f"Cc: {c}" for c in cc]
    body.append(f"Signed-off-by: {identity}")
    return subject_line(unit.prefix, summary), "\n".join(body)


def unparsed_body(unit: ConversionUnit, cc: list[str], identity: str, base: str) -> str:
    body = wrap("The semaphore calls below sit in code Coccinelle cannot parse "
                "(function-defining macros), so the audit could not classify what they "
                "lock. Keep their semantics: move them to the down_sem() counting API, "
                "so that they still build once the old names are gone.")
    body.append("")
    for c in unit.unparsed:
        body += wrap(f"- {short(c.file, base)}:{c.line}: {c.op}() -> {c.new}()", indent="  ")
    body += ["", *[f"Cc: {c}" for c in cc], f"Signed-off-by: {identity}"]
    return "\n".join(body)


def core_message(change: CoreChange, identity: str, cc: list[str]) -> tuple[str, str]:
    trailer = [f"Cc: {c}" for c in cc] + [f"Signed-off-by: {identity}"]
    return change.subject, change.body.rstrip() + "\n\n" + "\n".join(trailer)
