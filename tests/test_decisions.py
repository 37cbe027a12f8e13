"""Reviewer verdicts: reading the file, and the guard on mutex verdicts.

A mutex verdict on an instance the audit found in IRQ, timer, tasklet or
softirq context, or whose address escapes, is refused with the evidence
unless it says override = true; the refusal is listed with the stale
verdicts and warned about, and the run goes on.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURE_TREE, load_json, run_convert
from sem2mutex.audit.decisions import (REFUSED, VerdictApplier, forbidding_evidence,
                                       load_verdicts)
from sem2mutex.errors import BadDecisions
from sem2mutex.model import Instance, Location, Reason, SemClass, Verdict

ADA = "Ada Reviewer <ada@example.org>"


def verdict_file(tmp_path: Path, *entries: dict) -> Path:
    lines = []
    for e in entries:
        lines.append("[[verdict]]")
        for key, value in e.items():
            lines.append(f"{key} = {str(value).lower() if isinstance(value, bool) else repr(value)}")
        lines.append("")
    path = tmp_path / "decisions.toml"
    path.write_text("\n".join(lines).replace("'", '"'))
    return path


def entry(instance: str, cls: str = "mutex", **extra) -> dict:
    return {"instance": instance, "class": cls, "reviewer": ADA, "reason": "checked by hand",
            **extra}


def ambiguous(iid: str, *codes: str) -> Instance:
    return Instance(id=iid, kind="field", name=iid.split(".")[-1], struct="struct d",
                    file="d.c", sem_class=SemClass.AMBIGUOUS,
                    reasons=[Reason(c, c, (Location("d.c", 10 + n),)) for n, c in
                             enumerate(codes)])


def test_override_is_read_and_defaults_to_false(tmp_path):
    verdicts = load_verdicts(verdict_file(tmp_path, entry("a"), entry("b", override=True)))
    assert [v.override for v in verdicts] == [False, True]


@pytest.mark.parametrize("extra, message", [
    ({"override": "yes"}, "override must be true or false"),
    ({"overide": True}, "unknown key overide"),
])
def test_a_malformed_override_is_bad_input(tmp_path, extra, message):
    with pytest.raises(BadDecisions, match=message):
        load_verdicts(verdict_file(tmp_path, entry("a", **extra)))


@pytest.mark.parametrize("code", ["irq-context", "timer-context", "tasklet-context",
                                  "softirq-context", "address-escapes", "symbol-alias"])
def test_a_mutex_verdict_against_the_evidence_is_refused(code):
    inst = ambiguous("field:struct d.lock", "unpaired-up", code)
    stale = VerdictApplier([Verdict(inst.id, SemClass.MUTEX, ADA, "fine")]).apply([inst])
    assert len(stale) == 1 and stale[0].why.startswith(REFUSED)
    assert f"{code} (d.c:11)" in stale[0].why and "override = true" in stale[0].why
    assert inst.sem_class is SemClass.AMBIGUOUS and inst.pinned is None


def test_an_override_pins_it_anyway():
    inst = ambiguous("field:struct d.lock", "irq-context")
    verdict = Verdict(inst.id, SemClass.MUTEX, ADA, "the handler only wakes a thread", True)
    assert VerdictApplier([verdict]).apply([inst]) == []
    assert inst.sem_class is SemClass.MUTEX and inst.pinned is verdict
    assert inst.classified_as is SemClass.AMBIGUOUS
    assert [r.code for r in forbidding_evidence(inst)] == ["irq-context"]


def test_other_verdicts_need_no_override():
    unknown = ambiguous("field:struct d.try", "trylock-context-unknown")
    irq = ambiguous("field:struct d.irq", "irq-context")
    stale = VerdictApplier([Verdict(unknown.id, SemClass.MUTEX, ADA, "process context"),
                            Verdict(irq.id, SemClass.COUNTING, ADA, "keep it")]
                           ).apply([unknown, irq])
    assert stale == []
    assert (unknown.sem_class, irq.sem_class) == (SemClass.MUTEX, SemClass.COUNTING)


def test_refusals_and_overrides_in_the_audit(tmp_path):
    napi = "field:drivers/fixture/more.c:struct more_dev.napi_sem"
    irq = "field:struct shared_irq_dev.busy"
    trylock = "field:drivers/fixture/more.c:struct more_dev.exported_try"
    decisions = verdict_file(tmp_path, entry(napi), entry(irq, override=True), entry(trylock))
    done = run_convert(str(FIXTURE_TREE), "--analyze-only", "-q", "-o", str(tmp_path / "o"),
                       "--decisions", str(decisions))
    assert f"verdict for {napi} {REFUSED}:" in done.stderr
    assert "stale verdict" not in done.stderr
    audit = load_json(tmp_path / "o" / "audit.json")
    stale = {s["instance"]: s["why"] for s in audit["stale_verdicts"]}
    assert list(stale) == [napi] and "softirq-context (drivers/fixture/more.c:" in stale[napi]
    classes = {i["id"]: (i["class"], i["pinned"]) for i in audit["instances"]}
    assert classes[napi] == ("ambiguous", None)
    assert classes[irq][0] == "mutex" and classes[irq][1]["classified_as"] == "ambiguous"
    assert classes[trylock][0] == "mutex" and classes[trylock][1]["reviewer"] == ADA
    report = (tmp_path / "o" / "audit.md").read_text()
    assert "## Refused reviewer verdicts" in report and "## Stale reviewer verdicts" not in report
    assert f"`{napi}`" in report.split("## Refused reviewer verdicts")[1].split("##")[0]
