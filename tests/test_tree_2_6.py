"""The audit on a Linux 2.6.x tree, the era of the original flag day: the
strongest test of the classifier.  Needs SEM2MUTEX_TREE_2_6 to name the
tree (README: how to fetch 2.6.11); skipped otherwise."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import load_json, run_convert

UNSEEN_AT_MOST = 60
UNRESOLVED_AT_MOST = 10


@pytest.fixture(scope="session")
def tree_2_6() -> Path:
    named = os.environ.get("SEM2MUTEX_TREE_2_6")
    if not named:
        pytest.skip("SEM2MUTEX_TREE_2_6 does not name a 2.6.x tree (README: 'The 2.6.11 tree')")
    tree = Path(named)
    if not (tree / "Makefile").is_file():
        pytest.skip(f"SEM2MUTEX_TREE_2_6={named} is not a kernel tree")
    return tree


@pytest.fixture(scope="session")
def audit_2_6(tree_2_6, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("audit-2-6")
    run_convert(str(tree_2_6), "--analyze-only", "-q", "-o", str(out))
    return load_json(out / "audit.json")


def test_the_ambiguous_list_is_mostly_doubtful_code(audit_2_6):
    summary = audit_2_6["summary"]
    unseen = [i for i in audit_2_6["instances"] if i["ambiguity"] == "unseen"]
    assert summary["ambiguous_unseen"] == len(unseen)
    assert len(unseen) <= UNSEEN_AT_MOST, [i["id"] for i in unseen]
    assert summary["ambiguous_doubtful"] > summary["ambiguous_unseen"]


def test_few_calls_stay_unresolved_and_each_says_why(audit_2_6):
    unresolved = [i for i in audit_2_6["instances"] if i["kind"] == "unresolved"]
    assert len(unresolved) <= UNRESOLVED_AT_MOST, [i["id"] for i in unresolved]
    for inst in unresolved:
        (reason,) = [r for r in inst["reasons"] if r["code"] == "unresolved-target"]
        assert "could not be told: " in reason["detail"], inst["id"]


def test_every_init_site_belongs_to_a_declared_instance_unless_a_macro_defines_it(audit_2_6):
    for inst in audit_2_6["instances"]:
        if inst["kind"] != "unresolved":
            continue
        for init in inst["inits"]:
            assert init["macro"], f"{init['op']} at {init['file']}:{init['line']} is in " \
                                  f"{inst['id']}"


def test_no_api_implementation_is_audited(audit_2_6):
    for inst in audit_2_6["instances"]:
        assert not (inst["file"].startswith("include/asm-") and
                    inst["file"].endswith("/semaphore.h")), inst["id"]
        assert not inst["file"].endswith("kernel/semaphore.c"), inst["id"]


def test_seeing_more_never_makes_a_mutex_of_a_release_in_atomic_context(audit_2_6):
    atomic = {"irq-context", "timer-context", "tasklet-context", "softirq-context"}
    for inst in audit_2_6["instances"]:
        codes = {r["code"] for r in inst["reasons"]}
        assert not (inst["class"] == "mutex" and codes & atomic), inst["id"]
        if inst["class"] == "mutex":
            assert all(s["paired"] for s in inst["sites"] if s["op"] == "up"), inst["id"]
            assert not inst["escapes"], inst["id"]
