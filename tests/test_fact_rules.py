"""Each fact rule of cocci/facts/, run alone the way `make coccicheck`
would, on the fixture C files: its JSON lines must match the golden file.

Regenerate after a deliberate change with SEM2MUTEX_REGEN_GOLDEN=1 and
review the diff of tests/fixtures/facts/ by eye.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import FIXTURE_TREE, REPO
from sem2mutex.audit.facts import TYPEDEF_RULES, typedef_program
from sem2mutex.tools.spatch import PYTHON

RULES = sorted((REPO / "cocci" / "facts").glob("*.cocci"))
GOLDEN = REPO / "tests" / "fixtures" / "facts"
SOURCES = sorted(str(p.relative_to(FIXTURE_TREE)) for p in FIXTURE_TREE.rglob("*.[ch]")
                 if p.parent.name in ("fixture", "typed"))
MACRO_FILE = REPO / "cocci" / "kernel-macros.h"
ENV = {
    # what sem2mutex passes to wrapper_pairing.cocci
    "SEM2MUTEX_LOCK_WRAPPERS": ("wrap_lock,cfg_lock,res_lock,drop_lock,mcons_down,noreturn_lock,"
                                "failed_lock,OBJ_LOCK,OBJ_BAD_LOCK,OBJ_MIXED_LOCK,"
                                "fallible_dropped_lock,fallible_stored_lock,fallible_tested_lock,"
                                "FALLIBLE_VALUE_LOCK,FALLIBLE_RETURN_LOCK,assigned_lock,snw_rx_lock,"
                                "snw_tx_lock,wp_lock,wpx_lock,skip_cond_lock,skip_early_lock,"
                                "skip_bus_lock"),
    "SEM2MUTEX_UNLOCK_WRAPPERS": ("wrap_unlock,cfg_unlock,res_unlock,drop_unlock,__mcons_up,"
                                  "noreturn_unlock,failed_unlock,OBJ_UNLOCK,OBJ_BAD_UNLOCK,"
                                  "obj_mixed_unlock,fallible_dropped_unlock,"
                                  "fallible_stored_unlock,fallible_tested_unlock,"
                                  "FALLIBLE_VALUE_UNLOCK,FALLIBLE_RETURN_UNLOCK,assigned_unlock,"
                                  "snw_rx_unlock,snw_tx_unlock,wp_unlock,wpx_unlock,"
                                  "skip_cond_unlock,skip_early_unlock,skip_bus_unlock"),
    "SEM2MUTEX_OBJECT_LOCK_WRAPPERS": "OBJ_LOCK,OBJ_BAD_LOCK,OBJ_MIXED_LOCK",
    "SEM2MUTEX_OBJECT_UNLOCK_WRAPPERS": "OBJ_UNLOCK,OBJ_BAD_UNLOCK",
    "SEM2MUTEX_FALLIBLE_LOCK_WRAPPERS": ("failed_lock,fallible_dropped_lock,"
                                         "fallible_stored_lock,fallible_tested_lock,"
                                         "FALLIBLE_VALUE_LOCK,assigned_lock"),
    # and to seq_file_pairing.cocci
    "SEM2MUTEX_SEQ_STARTS": "list_start,cond_start,stopif_start",
    "SEM2MUTEX_SEQ_STOPS": "list_stop,cond_stop,stopif_stop",
}


def run_rule(rule: Path) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="sem2mutex-test-") as tmp:
        if rule == TYPEDEF_RULES:
            # what sem2mutex runs: the rules once per typedef of the fixtures
            rule = Path(tmp) / rule.name
            rule.write_text(typedef_program(["tsem_t", "tsem_alias_t"]))
        group_file = Path(tmp) / "groups"
        group_file.write_text("".join(f"{s}\n\n" for s in SOURCES))
        done = subprocess.run(
            ["spatch", *PYTHON, "--very-quiet", "--no-includes", "--no-scanner", "--no-show-diff",
             "-D", "report",
             "--macro-file", str(MACRO_FILE),
             "--sp-file", str(rule), "--file-groups", str(group_file)],
            cwd=FIXTURE_TREE, capture_output=True, text=True, env=dict(os.environ, **ENV))
    assert done.returncode == 0, done.stderr
    # with --file-groups spatch reports a rule that raised and exits 0
    assert "EXN:" not in done.stderr, done.stderr
    lines = [json.dumps(json.loads(l), sort_keys=True) for l in done.stdout.splitlines()
             if l.startswith("{")]
    return sorted(lines)


@pytest.mark.parametrize("rule", RULES, ids=[r.stem for r in RULES])
def test_rule_facts_match_golden(rule):
    golden = GOLDEN / f"{rule.stem}.jsonl"
    facts = run_rule(rule)
    if os.environ.get("SEM2MUTEX_REGEN_GOLDEN"):
        golden.write_text("".join(f"{l}\n" for l in facts))
    assert facts, f"{rule.name} reports nothing on the fixtures"
    assert facts == golden.read_text().splitlines()


@pytest.mark.parametrize("rule", RULES, ids=[r.stem for r in RULES])
def test_rule_follows_kernel_cocci_conventions(rule):
    text = rule.read_text()
    assert text.startswith("// SPDX-License-Identifier: GPL-2.0-only\n///")
    for header in ("// Confidence:", "// Options:", "virtual report"):
        assert header in text, f"{rule.name} lacks {header}"
