"""Tests of the counting-API core patch, the flag day and the old-API check.

The first part runs the semantic patches on small fixtures of our own
(tests/core_api/) and compares with golden diffs; it takes seconds.  The
second part applies both patches to a hard-linked scratch copy of the real
6.1 tree, checks the result with the tree's own checkpatch.pl and
kernel-doc, and compiles kernel/locking/semaphore.o in a tinyconfig build
directory kept in the cache (about 30 s cold, a few seconds warm).

Regenerate the golden files after a deliberate change to a .cocci file with
SEM2MUTEX_REGEN_GOLDEN=1, then read the diff of tests/core_api/ before
committing it.
"""
from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from conftest import check_golden
from sem2mutex.audit.intake import ensure_default_tree
from sem2mutex.proof.workspace import hardlinked_scratch
from sem2mutex.series import core_api
from sem2mutex.series.core_api import (CORE_FILES, NEW_NAMES, OLD_NAMES,
                                SEMAPHORE_SOURCE,
                                OldApiCaller)
from sem2mutex.errors import AlreadyApplied, AnchorError, CoreApiError
from sem2mutex.paths import cache_layout
from sem2mutex.tools.spatch import find_spatch

SPATCH = find_spatch()

FIXTURES = Path(__file__).resolve().parent / "core_api"
FIXTURE_TREE = FIXTURES / "tree"
COCCI_FIXTURES = FIXTURES / "cocci"
GOLDEN = FIXTURES / "golden"

SCRATCH_NAME = "core-api"
BUILD_NAME = "core-api"


# --- helpers ------------------------------------------------------------------

def unified_diff(before_root: Path, after_root: Path, paths) -> str:
    """A git-style diff (a/, b/ labels) of ``paths`` between two trees."""
    chunks = []
    for rel in paths:
        before = (before_root / rel).read_text().splitlines(keepends=True)
        after = (after_root / rel).read_text().splitlines(keepends=True)
        chunks.extend(difflib.unified_diff(before, after, f"a/{rel}", f"b/{rel}"))
    return "".join(chunks)




def fixture_tree_copy(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE_TREE, tree)
    return tree


def kinds(symbols) -> dict[str, set[str]]:
    table: dict[str, set[str]] = {}
    for symbol in symbols:
        table.setdefault(symbol.kind, set()).add(symbol.name)
    return table


def digest(paths) -> dict[Path, str]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


# --- commit messages ----------------------------------------------------------

@pytest.mark.parametrize("change", [core_api.counting_api_change(),
                                    core_api.flag_day_change()])
def test_commit_messages_are_kernel_style(change):
    assert change.subject.startswith("locking/semaphore: ")
    assert len(change.subject) <= 75
    assert change.body.strip()
    for line in change.body.splitlines():
        assert len(line) <= 72, line
    for name in OLD_NAMES:
        assert f"{name}()" in change.body


def test_counting_api_message_names_the_new_api():
    body = core_api.counting_api_change().body
    for name in NEW_NAMES.values():
        assert f"{name}()" in body
    assert "No functional change." in body


# --- kerneldoc rewriting ------------------------------------------------------

def test_kerneldoc_name_reads_both_spellings():
    assert core_api.kerneldoc_name("/**\n * down - take it\n */") == "down"
    assert core_api.kerneldoc_name("/**\n * up() - give it\n */") == "up"
    assert core_api.kerneldoc_name("/*\n * down - not kerneldoc\n */") is None
    assert core_api.kerneldoc_name("") is None


def test_renamed_kerneldoc_renames_name_line_and_whole_word_references():
    comment = textwrap.dedent("""\
        /**
         * up - release the semaphore
         * @sem: the semaphore
         *
         * Unlike mutexes, up() may be called by tasks that never called down();
         * setup() and __up() are other functions.
         */""")
    renamed = core_api.renamed_kerneldoc(comment, "up", "up_sem")
    assert renamed.splitlines()[1] == " * up_sem - release the semaphore"
    assert "up_sem() may be called" in renamed
    assert "never called down_sem();" in renamed
    assert "setup() and __up() are other functions." in renamed
    assert renamed.count("\n") == comment.count("\n")


def test_renamed_kerneldoc_refuses_a_comment_for_another_function():
    with pytest.raises(AnchorError):
        core_api.renamed_kerneldoc("/**\n * down - x\n */", "up", "up_sem")


# --- semantic patches on fixtures (golden diffs) -------------------------------

def test_counting_api_cocci_golden(tmp_path):
    tree = fixture_tree_copy(tmp_path)
    core_api.run_spatch(SPATCH, core_api.COUNTING_API_COCCI,
                        [tree / p for p in CORE_FILES], virtual="patch", in_place=True)
    check_golden(GOLDEN / "counting_api.cocci.diff", unified_diff(FIXTURE_TREE, tree, CORE_FILES))


def test_kerneldoc_report_finds_the_stale_comments(tmp_path):
    tree = fixture_tree_copy(tmp_path)
    core_api.run_spatch(SPATCH, core_api.COUNTING_API_COCCI,
                        [tree / p for p in CORE_FILES], virtual="patch", in_place=True)
    stale = core_api.stale_kerneldoc(tree, SPATCH)
    assert {doc.function for doc in stale} == set(NEW_NAMES.values())
    for doc in stale:
        assert core_api.kerneldoc_name(doc.comment) in OLD_NAMES
        assert doc.file == SEMAPHORE_SOURCE


def test_apply_counting_api_golden(tmp_path):
    tree = fixture_tree_copy(tmp_path)
    touched = core_api.apply_counting_api(tree, SPATCH)
    assert touched == sorted(CORE_FILES)
    check_golden(GOLDEN / "counting_api.applied.diff", unified_diff(FIXTURE_TREE, tree, CORE_FILES))
    assert core_api.stale_kerneldoc(tree, SPATCH) == []


def test_state_before_and_after_patch_one(tmp_path):
    tree = fixture_tree_copy(tmp_path)
    before = kinds(core_api.api_state(tree, SPATCH))
    assert before == {"definition": set(OLD_NAMES), "prototype": set(OLD_NAMES),
                      "export": set(OLD_NAMES)}
    core_api.apply_counting_api(tree, SPATCH)
    after = kinds(core_api.api_state(tree, SPATCH))
    both = set(OLD_NAMES) | set(NEW_NAMES.values())
    assert after == {"definition": set(NEW_NAMES.values()), "wrapper": set(OLD_NAMES),
                     "prototype": both, "export": both}


def test_counting_api_cocci_leaves_a_patched_tree_alone(tmp_path):
    tree = fixture_tree_copy(tmp_path)
    core_api.apply_counting_api(tree, SPATCH)
    before = digest([tree / p for p in CORE_FILES])
    out = core_api.run_spatch(SPATCH, core_api.COUNTING_API_COCCI,
                              [tree / p for p in CORE_FILES], virtual="patch")
    assert out == ""
    assert digest([tree / p for p in CORE_FILES]) == before


def test_apply_counting_api_twice_says_already_applied(tmp_path):
    tree = fixture_tree_copy(tmp_path)
    core_api.apply_counting_api(tree, SPATCH)
    before = digest([tree / p for p in CORE_FILES])
    with pytest.raises(AlreadyApplied, match="down_sem"):
        core_api.apply_counting_api(tree, SPATCH)
    assert digest([tree / p for p in CORE_FILES]) == before


def test_flag_day_cocci_golden(tmp_path):
    tree = fixture_tree_copy(tmp_path)
    core_api.apply_counting_api(tree, SPATCH)
    patched = tmp_path / "patched"
    shutil.copytree(tree, patched)
    core_api.run_spatch(SPATCH, core_api.FLAG_DAY_COCCI,
                        [tree / p for p in CORE_FILES], virtual="patch", in_place=True)
    check_golden(GOLDEN / "flag_day.cocci.diff", unified_diff(patched, tree, CORE_FILES))


def test_apply_flag_day_removes_every_old_name(tmp_path):
    tree = fixture_tree_copy(tmp_path)
    core_api.apply_counting_api(tree, SPATCH)
    touched = core_api.apply_flag_day(tree, SPATCH)
    assert touched == sorted(CORE_FILES)
    state = kinds(core_api.api_state(tree, SPATCH))
    new = set(NEW_NAMES.values())
    assert state == {"definition": new, "prototype": new, "export": new}
    assert core_api.find_old_api_callers(tree, SPATCH, list(CORE_FILES)) == []
    with pytest.raises(AlreadyApplied):
        core_api.apply_flag_day(tree, SPATCH)


def test_flag_day_keeps_real_implementations(tmp_path):
    """On a tree without patch 1 the old names are no wrappers: untouched."""
    tree = fixture_tree_copy(tmp_path)
    out = core_api.run_spatch(SPATCH, core_api.FLAG_DAY_COCCI,
                              [tree / p for p in CORE_FILES], virtual="patch")
    assert out == ""
    with pytest.raises(CoreApiError, match="counting API patch first"):
        core_api.apply_flag_day(tree, SPATCH)
    assert unified_diff(FIXTURE_TREE, tree, CORE_FILES) == ""


@pytest.mark.parametrize("cocci", [core_api.COUNTING_API_COCCI, core_api.FLAG_DAY_COCCI])
def test_semantic_patches_leave_unrelated_up_and_down_alone(cocci):
    out = core_api.run_spatch(SPATCH, cocci, [COCCI_FIXTURES / "unrelated.c"], virtual="patch")
    assert out == ""


def test_old_api_callers_golden():
    callers = core_api.find_old_api_callers(COCCI_FIXTURES, SPATCH, ["callers.c", "unrelated.c"])
    lines = "".join(json.dumps(c.__dict__, sort_keys=True) + "\n" for c in callers)
    check_golden(GOLDEN / "old_api_callers.jsonl", lines)
    assert not any(c.file == "unrelated.c" for c in callers)
    by_line = {c.line: c for c in callers}
    assert by_line[27] == OldApiCaller("callers.c", 27, "take_everything", "down", "semaphore")
    assert by_line[34].arg_type == "unknown type"          # struct opaque is not known


def test_failed_apply_restores_both_files(tmp_path):
    """A kerneldoc comment that is not where spatch says stops the patch."""
    tree = fixture_tree_copy(tmp_path)
    source = tree / SEMAPHORE_SOURCE
    # The same comment twice: the anchored edit cannot tell which to rename.
    text = source.read_text()
    doc_start = text.index("/**\n * up - release")
    doc_end = text.index("*/", doc_start) + 2
    source.write_text(text + "\n" + text[doc_start:doc_end] + "\n")
    before = digest([tree / p for p in CORE_FILES])
    with pytest.raises(AnchorError, match="occurs 2 times"):
        core_api.apply_counting_api(tree, SPATCH)
    assert digest([tree / p for p in CORE_FILES]) == before


def test_apply_on_a_hard_linked_copy_leaves_the_source_alone(tmp_path):
    source = fixture_tree_copy(tmp_path)
    linked = tmp_path / "linked"
    subprocess.run(["cp", "-al", str(source), str(linked)], check=True)
    before = digest([source / p for p in CORE_FILES])
    core_api.apply_counting_api(linked, SPATCH)
    assert digest([source / p for p in CORE_FILES]) == before
    assert unified_diff(source, linked, CORE_FILES) != ""


def test_apply_refuses_a_tree_without_the_core_files(tmp_path):
    with pytest.raises(CoreApiError, match="missing"):
        core_api.apply_counting_api(tmp_path, SPATCH)


# --- the real 6.1 tree ----------------------------------------------------------

@pytest.fixture(scope="module")
def pristine_tree() -> Path:
    return ensure_default_tree(cache_layout())


def reset_core_files(scratch: Path, pristine: Path) -> None:
    """Give the scratch tree fresh copies of the two 6.1 core files.

    Copied, not linked back, so they get a new mtime and make rebuilds
    semaphore.o from them.
    """
    for rel in CORE_FILES:
        target = scratch / rel
        fresh = target.with_name(target.name + ".sem2mutex-reset")
        shutil.copyfile(pristine / rel, fresh)
        os.replace(fresh, target)


@pytest.fixture(scope="module")
def real_tree(pristine_tree) -> Path:
    """A hard-linked scratch copy of the 6.1 tree, core files reset."""
    scratch = hardlinked_scratch(pristine_tree, cache_layout().scratch(SCRATCH_NAME))
    reset_core_files(scratch, pristine_tree)
    return scratch


def make_semaphore_o(tree: Path) -> subprocess.CompletedProcess:
    """Compile kernel/locking/semaphore.o in a tinyconfig build dir."""
    build_dir = cache_layout().build(BUILD_NAME)
    build_dir.mkdir(parents=True, exist_ok=True)
    make = ["make", "-s", f"O={build_dir}", "ARCH=x86_64"]
    if not (build_dir / ".config").is_file():
        subprocess.run(make + ["tinyconfig"], cwd=tree, check=True, capture_output=True)
    return subprocess.run(make + ["-j2", "kernel/locking/semaphore.o"], cwd=tree,
                          capture_output=True, text=True)


def global_text_symbols(tree: Path) -> set[str]:
    obj = cache_layout().build(BUILD_NAME) / "kernel/locking/semaphore.o"
    nm = subprocess.run(["nm", "--defined-only", str(obj)], check=True,
                        capture_output=True, text=True).stdout
    return {fields[2] for fields in (line.split() for line in nm.splitlines())
            if len(fields) == 3 and fields[1] == "T"}


def kernel_doc_warnings(tree: Path) -> list[str]:
    done = subprocess.run(["scripts/kernel-doc", "-none", *CORE_FILES], cwd=tree,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stderr.splitlines() if line.strip()]


def checkpatch(tree: Path, change, diff: str) -> str:
    mbox = (f"From: sem2mutex test <test@example.org>\n"
            f"Subject: [PATCH] {change.subject}\n\n{change.body}\n\n"
            f"Signed-off-by: sem2mutex test <test@example.org>\n---\n{diff}")
    done = subprocess.run(["scripts/checkpatch.pl", "--no-tree", "--no-signoff", "-"],
                          cwd=tree, input=mbox, capture_output=True, text=True)
    return done.stdout


def test_old_api_check_finds_printk_console_sem(pristine_tree):
    callers = core_api.find_old_api_callers(pristine_tree, SPATCH, ["kernel/printk/printk.c"])
    seen = {(c.op, c.function, c.arg_type) for c in callers}
    # down_console_sem() is a macro: no enclosing function.
    assert ("down", None, "semaphore") in seen
    assert ("down_trylock", "__down_trylock_console_sem", "semaphore") in seen
    assert ("up", "__up_console_sem", "semaphore") in seen
    assert all(c.file == "kernel/printk/printk.c" for c in callers)


def test_real_tree_series_ends(real_tree, pristine_tree):
    """Patch 1 and the flag day on 6.1: checked, compiled, idempotent."""
    pristine_digest = digest([pristine_tree / p for p in CORE_FILES])
    assert kernel_doc_warnings(pristine_tree) == []

    # Patch 1: new names real, old names wrappers, docs and style clean.
    touched = core_api.apply_counting_api(real_tree, SPATCH)
    assert touched == sorted(CORE_FILES)
    state = kinds(core_api.api_state(real_tree, SPATCH))
    assert state["definition"] == set(NEW_NAMES.values())
    assert state["wrapper"] == set(OLD_NAMES)
    assert core_api.stale_kerneldoc(real_tree, SPATCH) == []
    assert kernel_doc_warnings(real_tree) == []
    patch_one = unified_diff(pristine_tree, real_tree, CORE_FILES)
    report = checkpatch(real_tree, core_api.counting_api_change(), patch_one)
    assert "total: 0 errors" in report, report
    built = make_semaphore_o(real_tree)
    assert built.returncode == 0, built.stderr
    symbols = global_text_symbols(real_tree)
    assert set(NEW_NAMES.values()) | set(OLD_NAMES) <= symbols
    with pytest.raises(AlreadyApplied):
        core_api.apply_counting_api(real_tree, SPATCH)
    assert unified_diff(pristine_tree, real_tree, CORE_FILES) == patch_one

    # The flag day: the old names are gone, semaphore.o still builds.
    before_flag_day = {p: (real_tree / p).read_text() for p in CORE_FILES}
    assert core_api.apply_flag_day(real_tree, SPATCH) == sorted(CORE_FILES)
    state = kinds(core_api.api_state(real_tree, SPATCH))
    assert not any(name in OLD_NAMES for names in state.values() for name in names)
    assert core_api.find_old_api_callers(real_tree, SPATCH, list(CORE_FILES)) == []
    assert kernel_doc_warnings(real_tree) == []
    flag_day = "".join(
        "".join(difflib.unified_diff(before_flag_day[p].splitlines(keepends=True),
                                     (real_tree / p).read_text().splitlines(keepends=True),
                                     f"a/{p}", f"b/{p}"))
        for p in CORE_FILES)
    report = checkpatch(real_tree, core_api.flag_day_change(), flag_day)
    assert "total: 0 errors" in report, report
    built = make_semaphore_o(real_tree)
    assert built.returncode == 0, built.stderr
    symbols = global_text_symbols(real_tree)
    assert set(NEW_NAMES.values()) <= symbols
    assert not set(OLD_NAMES) & symbols
    with pytest.raises(AlreadyApplied):
        core_api.apply_flag_day(real_tree, SPATCH)

    # The scratch copy is hard-linked: the pristine tree must not have moved.
    assert digest([pristine_tree / p for p in CORE_FILES]) == pristine_digest


# --- KUnit suite 1 of the QEMU proof, booted ------------------------------------

KUNIT_DIR = Path(__file__).resolve().parent.parent / "qemu" / "kunit" / "semaphore_api"
KUNIT_SOURCE = KUNIT_DIR / "semaphore_api_kunit.c"
BOOT_BUILD_NAME = "core-api-kunit"


def kunit_case_count() -> int:
    return KUNIT_SOURCE.read_text().count("\tKUNIT_CASE(")


def test_kunit_suite_is_checkpatch_clean(pristine_tree):
    done = subprocess.run(["scripts/checkpatch.pl", "--no-tree", "-f", str(KUNIT_SOURCE)],
                          cwd=pristine_tree, capture_output=True, text=True)
    assert "total: 0 errors, 0 warnings" in done.stdout, done.stdout


def with_counting_api(scratch: Path, pristine: Path, work: Path) -> None:
    """Put patch 1 into ``scratch``, rewriting only files whose text changes.

    semaphore.h is included by most of the kernel: rewriting it with the
    same text would still make the next build recompile nearly everything.
    """
    staging = work / "staging"
    for rel in CORE_FILES:
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pristine / rel, staging / rel)
    core_api.apply_counting_api(staging, SPATCH)
    for rel in CORE_FILES:
        wanted = (staging / rel).read_bytes()
        if (scratch / rel).read_bytes() != wanted:
            fresh = scratch / (rel + ".sem2mutex-new")
            fresh.write_bytes(wanted)
            os.replace(fresh, scratch / rel)


@pytest.mark.skipif(os.environ.get("SEM2MUTEX_CORE_API_BOOT") != "1",
                    reason="builds and boots a kernel of its own (about 5 min cold, "
                           "30 s warm); convert.py --boot runs this suite in the "
                           "converted kernel")
def test_kunit_suite_passes_in_qemu(pristine_tree, tmp_path):
    from qemu.harness import BootRequest, build_and_boot

    # Its own scratch copy, left with patch 1 applied, so a rerun is warm.
    scratch = hardlinked_scratch(pristine_tree, cache_layout().scratch(BOOT_BUILD_NAME))
    with_counting_api(scratch, pristine_tree, tmp_path)
    result = build_and_boot(BootRequest(tree=scratch, out_dir=tmp_path / "boot",
                                        build_dir=cache_layout().build(BOOT_BUILD_NAME), kunit_dirs=[KUNIT_DIR]))
    assert result.passed, result.reasons
    assert result.tests.total == kunit_case_count() == 10
    assert result.tests.failed == 0
    assert any(src.endswith("semaphore_api_kunit.c") for src in result.kunit_sources_booted)
