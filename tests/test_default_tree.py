"""The analysis of Debian's linux-source-6.1, the tool's default tree."""
from __future__ import annotations

import re
import subprocess
from collections import Counter

import pytest

from conftest import default_tree_path

INIT_CALL = re.compile(r"\b(sema_init|DEFINE_SEMAPHORE)\s*\(")
LINE_MARKER = re.compile(r'^# (\d+) "')
IMPLEMENTATION = ("include/linux/semaphore.h", "kernel/locking/semaphore.c")


def init_sites_outside_comments(tree, files) -> set[tuple[str, int]]:
    """(file, line) of every sema_init()/DEFINE_SEMAPHORE() in code, found
    independently of the tool: comments stripped by gcc, then a regex."""
    sites = set()
    for rel in files:
        out = subprocess.run(["gcc", "-x", "c", "-fpreprocessed", "-dD", "-E", rel], cwd=tree,
                             capture_output=True, text=True, errors="replace").stdout
        line = 0
        for text in out.splitlines():
            marker = LINE_MARKER.match(text)
            if marker:
                line = int(marker.group(1))
                continue
            if INIT_CALL.search(text) and not text.lstrip().startswith("#define"):
                sites.add((rel, line))
            line += 1
    return sites


@pytest.fixture(scope="module")
def by_id(default_audit) -> dict[str, dict]:
    return {i["id"]: i for i in default_audit["instances"]}


def test_tree_metadata(default_audit):
    assert default_audit["tree"]["version"].startswith("6.1.")
    assert default_audit["tree"]["api_era"] == "6.x"
    summary = default_audit["summary"]
    assert 100 <= summary["instances"] <= 200, summary
    assert all(summary[c] > 0 for c in ("mutex", "counting", "signal", "ambiguous"))


def test_every_init_site_is_in_some_instance(default_audit):
    tree = default_tree_path()
    grep = subprocess.run(["grep", "-rlE", "--include=*.c", "--include=*.h",
                           r"sema_init|DEFINE_SEMAPHORE", "."], cwd=tree,
                          capture_output=True, text=True).stdout.split()
    files = sorted(f[2:] for f in grep if not f.startswith(("./tools/", "./Documentation/"))
                   and f[2:] not in IMPLEMENTATION)
    expected = init_sites_outside_comments(tree, files)
    found = {(i["file"], i["line"]) for inst in default_audit["instances"]
             for i in inst["inits"] if i["op"] in ("sema_init", "DEFINE_SEMAPHORE")}
    assert len(expected) > 100
    assert expected - found == set()


def test_console_sem_is_not_a_mutex(by_id):
    console = by_id["static:kernel/printk/printk.c:console_sem"]
    assert console["class"] == "ambiguous"
    codes = {r["code"] for r in console["reasons"]}
    assert "macro-use" in codes
    # down_console_sem() is a lock macro, but __up_console_sem() is only
    # called from the body of up_console_sem(), whose expansions are not
    # followed: that call stays unpaired
    unpaired = {(s["op"], s["function"]) for s in console["sites"] if not s["paired"]}
    assert ("unlock-wrapper", "macro up_console_sem") in unpaired


@pytest.mark.parametrize("instance, klass", [
    # XFS buffer lock: initialised held and released by I/O completion.
    ("field:struct xfs_buf.b_sema", "signal"),
    ("field:drivers/md/dm-region-hash.c:struct dm_region_hash.recovery_count", "signal"),
    # command slots sized at run time
    ("field:struct mlx5_cmd.vars.sem", "counting"),
    ("field:struct mlx4_cmd.event_sem", "counting"),
    # HID input reports take it with down_trylock() in interrupt context
    ("field:struct hid_device.driver_input_lock", "ambiguous"),
    # EFI pstore may call SetVariable in atomic context; UV aliases the lock
    ("static:drivers/firmware/efi/runtime-wrappers.c:efi_runtime_lock", "ambiguous"),
    ("field:struct netpoll_info.dev_lock", "ambiguous"),
    # only paired down()/up() in process context
    ("field:struct hinic_wqs.alloc_blocks_lock", "mutex"),
])
def test_well_understood_instances(by_id, instance, klass):
    assert by_id[instance]["class"] == klass, by_id[instance]["reasons"]


def test_every_mutex_has_positive_evidence(by_id):
    for inst in by_id.values():
        if inst["class"] == "mutex":
            codes = [r["code"] for r in inst["reasons"]]
            # A semaphore nothing takes is a mutex only through its type:
            # the conversion changes a declaration and its initialisation.
            if codes == ["unused"]:
                assert not inst["sites"], inst["id"]
                continue
            assert codes[:2] == ["count-one", "paired-release"], inst["id"]
            assert all(i["count"] == 1 for i in inst["inits"])
            assert all(s["paired"] for s in inst["sites"])


def test_pseudo_instances_keep_what_cannot_be_attributed(by_id):
    kinds = Counter(i["kind"] for i in by_id.values())
    assert kinds["pointer"] > 0
    # Judged on their own code, they may count (a counting API called on
    # them) but never become a mutex: there is no declaration to convert.
    assert all(i["class"] != "mutex" for i in by_id.values()
               if i["kind"] in ("pointer", "unresolved"))
    assert any(i["class"] == "ambiguous" for i in by_id.values()
               if i["kind"] in ("pointer", "unresolved"))
