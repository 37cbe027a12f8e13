"""Reviewer verdicts: a TOML file that pins an instance's class.

    [[verdict]]
    instance = "static:kernel/printk/printk.c:console_sem"
    class = "counting"
    reviewer = "Ada Reviewer <ada@example.org>"
    reason = "console_unlock() may run in another task than console_lock()"

A verdict that matches no instance is reported as stale, never ignored.

Pinning `mutex` is the one verdict that can make the kernel wrong: a mutex
taken in IRQ, timer, tasklet or softirq context, or one whose address is
handed to code that may release it from another task, is a bug lockdep
only finds at run time.  So a mutex verdict on an instance the audit found
such evidence for is refused, with that evidence, unless it also says
`override = true`; the refusal is listed with the stale verdicts (audit.json
`stale_verdicts`, audit.md) and warned about, and the run goes on with the
audit's own class, since one verdict must not cost the reviewer the rest
of the run.  An overriding verdict is honoured and the series says so: the
patch message and the cover letter name the reviewer, the evidence
overridden and the reason.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from sem2mutex.errors import BadDecisions
from sem2mutex.model import Instance, Reason, SemClass, StaleVerdict, Verdict

REQUIRED = ("instance", "class", "reviewer", "reason")
OPTIONAL = ("override",)
UNCONVERTIBLE_KINDS = ("pointer", "unresolved")

# Evidence that a mutex would be wrong, not merely unproven (classify.py).
MUTEX_FORBIDDING_CODES = ("irq-context", "timer-context", "tasklet-context", "softirq-context",
                          "address-escapes", "symbol-alias")
REFUSED = "refused"  # how a refusal's why starts, in audit.json and on stderr


def load_verdicts(path: Path) -> list[Verdict]:
    try:
        data = tomllib.loads(path.read_text())
    except OSError as err:
        raise BadDecisions(f"--decisions {path}: {err.strerror}") from None
    except tomllib.TOMLDecodeError as err:
        raise BadDecisions(f"--decisions {path}: not valid TOML: {err}") from None
    entries = data.get("verdict", [])
    if not isinstance(entries, list):
        raise BadDecisions(f"--decisions {path}: expected [[verdict]] tables")
    verdicts = []
    classes = {c.value for c in SemClass}
    for n, entry in enumerate(entries, 1):
        missing = [k for k in REQUIRED if not str(entry.get(k, "")).strip()]
        if missing:
            raise BadDecisions(f"--decisions {path}: verdict {n} lacks {', '.join(missing)}")
        if entry["class"] not in classes:
            raise BadDecisions(f"--decisions {path}: verdict {n}: class must be one of "
                               f"{', '.join(sorted(classes))}, not {entry['class']!r}")
        unknown = sorted(set(entry) - set(REQUIRED) - set(OPTIONAL))
        if unknown:
            raise BadDecisions(f"--decisions {path}: verdict {n}: unknown key "
                               f"{', '.join(unknown)} (keys: "
                               f"{', '.join(REQUIRED + OPTIONAL)})")
        override = entry.get("override", False)
        if not isinstance(override, bool):
            raise BadDecisions(f"--decisions {path}: verdict {n}: override must be true or "
                               f"false, not {override!r}")
        verdicts.append(Verdict(entry["instance"], SemClass(entry["class"]),
                                entry["reviewer"].strip(), entry["reason"].strip(),
                                override))
    return verdicts


def forbidding_evidence(inst: Instance) -> list[Reason]:
    """The audit's evidence that INST must not be a mutex (atomic context,
    an escaped address), however a reviewer judges the rest."""
    found = [r for r in inst.reasons if r.code in MUTEX_FORBIDDING_CODES]
    if inst.escapes and not any(r.code == "address-escapes" for r in found):
        # The classifier only looks for obstacles on count-1 instances; the
        # escape facts are there whatever the count.
        found.append(Reason("address-escapes", "its address leaves the semaphore API",
                            tuple(e.pos.location for e in inst.escapes)))
    return found


def evidence_text(reasons: list[Reason], locations: int = 2) -> str:
    """'irq-context (drivers/x.c:10, drivers/x.c:40); address-escapes (...)'."""
    parts = []
    for r in reasons:
        where = ", ".join(str(l) for l in r.locations[:locations])
        more = len(r.locations) - locations
        where += f", +{more} more" if more > 0 else ""
        parts.append(f"{r.code} ({where})" if where else r.code)
    return "; ".join(parts)


@dataclass
class VerdictApplier:
    verdicts: list[Verdict]

    def apply(self, instances: list[Instance]) -> list[StaleVerdict]:
        by_id = {inst.id: inst for inst in instances}
        stale = []
        for v in self.verdicts:
            inst = by_id.get(v.instance)
            if inst is None:
                stale.append(StaleVerdict(v, "no such instance in this tree"))
                continue
            if v.sem_class is SemClass.MUTEX and inst.kind in UNCONVERTIBLE_KINDS:
                stale.append(StaleVerdict(v, f"a {inst.kind} instance cannot become a mutex"))
                continue
            forbidding = forbidding_evidence(inst) if v.sem_class is SemClass.MUTEX else []
            if forbidding and not v.override:
                stale.append(StaleVerdict(
                    v, f"{REFUSED}: the audit found evidence against a mutex: "
                    f"{evidence_text(forbidding)}; it stays {inst.sem_class.value} unless "
                    "the verdict says override = true"))
                continue
            inst.classified_as = inst.sem_class
            inst.sem_class = v.sem_class
            inst.pinned = v
        return stale
