"""The isomorphisms sem2mutex turns off (tools/isos.py) apply to no rule of
any program it runs: spatch --parse-cocci expands every program to the
same text with them as without them."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO
from sem2mutex.audit.facts import FACT_RULES, typedef_program
from sem2mutex.audit.wrappers import CONTEXT_RULES, WRAPPER_RULES, WrapperNames, wrapper_program
from sem2mutex.series.rewrite import INCLUDE_TEMPLATE, STATE_COCCI, TRANSFORM_COCCI, include_program
from sem2mutex.tools.isos import UNUSED_ISOS
from sem2mutex.tools.spatch import combine_rules, expanded_rules, find_spatch, launch

COCCI = REPO / "cocci"


def programs() -> dict[str, str]:
    """Every rule file (the include template through include_program())
    and the programs sem2mutex makes of them."""
    found = {str(p.relative_to(REPO)): p.read_text() for p in sorted(COCCI.glob("*/*.cocci"))
             if p != INCLUDE_TEMPLATE}
    names = WrapperNames(["dev_lock"], ["dev_unlock"], ["DEV_LOCK"], ["DEV_UNLOCK"],
                         ["dev_lock"])
    found.update({
        "fact program": combine_rules(FACT_RULES),
        "wrapper program": wrapper_program(WRAPPER_RULES + CONTEXT_RULES, names),
        "typedef program": typedef_program(["mutex_t", "sem_t"]),
        "rewrite program": combine_rules(STATE_COCCI + TRANSFORM_COCCI),
        "include program": include_program(["<linux/slab.h>", '"local.h"']),
    })
    return found


PROGRAMS = programs()
RULE_HEADER = re.compile(r"^@\s*(\w+)[\s@]", re.M)


def rule_names(text: str) -> set[str]:
    return set(RULE_HEADER.findall(text)) - {"script", "initialize", "finalize"}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_isomorphisms_turned_off_apply_to_no_rule(name, tmp_path):
    text = PROGRAMS[name]
    spatch = find_spatch()
    standard = expanded_rules(spatch, text, tmp_path, isos_off=())
    # the expansion shows every rule: an empty one would compare equal
    assert rule_names(text) <= rule_names(standard)
    assert expanded_rules(spatch, text, tmp_path, isos_off=UNUSED_ISOS) == standard


def test_an_isomorphism_a_rule_uses_changes_its_expansion(tmp_path):
    """The comparison can fail: escapes.cocci's &e->fld also matches
    &e[i].fld through ptr_to_array."""
    text = (COCCI / "facts" / "escapes.cocci").read_text()
    spatch = find_spatch()
    assert "ptr_to_array" not in UNUSED_ISOS
    with_it = expanded_rules(spatch, text, tmp_path, isos_off=())
    without = expanded_rules(spatch, text, tmp_path, isos_off=("ptr_to_array",))
    assert re.search(r"&e\[\w+\]\.fld", with_it)
    assert not re.search(r"&e\[\w+\]\.fld", without)


def test_launch_turns_them_off_when_spatch_reads_a_semantic_patch():
    calls = str(COCCI / "facts" / "calls.cocci")
    read = launch(find_spatch(), ["--parse-cocci", calls, "-D", "report"], Path("/"))
    assert read.returncode == 0
    assert read.args.count("--disable-iso") == len(UNUSED_ISOS)
    assert "--disable-iso" not in launch(find_spatch(), ["--version"], Path("/")).args
