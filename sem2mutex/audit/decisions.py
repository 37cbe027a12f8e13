"""Reviewer verdicts: a TOML file that pins an instance's class.

    [[verdict]]
    instance = "static:kernel/printk/printk.c:console_sem"
    class = "counting"
    reviewer = "Ada Reviewer <ada@example.org>"
    reason = "console_unlock() may run in another task than console_lock()"

A verdict that matches no instance is reported as stale, never ignored.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from sem2mutex.errors import BadDecisions
from sem2mutex.model import Instance, SemClass, StaleVerdict, Verdict

REQUIRED = ("instance", "class", "reviewer", "reason")
UNCONVERTIBLE_KINDS = ("pointer", "unresolved")


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
        verdicts.append(Verdict(entry["instance"], SemClass(entry["class"]),
                                entry["reviewer"].strip(), entry["reason"].strip()))
    return verdicts


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
            inst.classified_as = inst.sem_class
            inst.sem_class = v.sem_class
            inst.pinned = v
        return stale
