"""Every error a user can meet reaches the command line as one line on
stderr and its documented exit status, never a traceback; a tree that
cannot take what was asked is refused before any long work."""
from __future__ import annotations

import io
import shutil
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from conftest import FIXTURE_TREE, LEGACY_TREE, default_tree_path, run_convert
from sem2mutex import cli, errors


def all_error_classes() -> list[type[errors.Sem2mutexError]]:
    found, todo = [], [errors.Sem2mutexError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return sorted(found, key=lambda c: c.__name__)


def test_error_classes_have_one_base_and_documented_exit_codes():
    classes = all_error_classes()
    assert len(classes) > 15
    assert {c.exit_code for c in classes} == {errors.EXIT_BAD_INPUT, errors.EXIT_TOOL_FAILURE}
    for cls in classes:
        expected = (errors.EXIT_BAD_INPUT if issubclass(cls, errors.BadInput)
                    else errors.EXIT_TOOL_FAILURE)
        assert cls.exit_code == expected, cls


@pytest.mark.parametrize("cls", all_error_classes(), ids=lambda c: c.__name__)
def test_each_error_class_is_one_line_and_its_exit_status(cls, monkeypatch, tmp_path):
    def fail(args, progress):
        raise cls(f"{cls.__name__} happened\n  in detail:\n    line three")
    monkeypatch.setattr(cli, "run", fail)
    stderr = io.StringIO()
    with redirect_stderr(stderr):
        status = cli.main([str(FIXTURE_TREE), "-o", str(tmp_path / "o")])
    assert status == cls.exit_code
    lines = stderr.getvalue().splitlines()
    assert lines == [f"convert.py: error: {cls.__name__} happened in detail: line three"]


def refused_early(done, outdir: Path) -> str:
    """The one error line of a run that stopped before analysing anything."""
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert not (outdir / "audit.json").exists()
    return lines[0]


def test_a_tree_without_the_core_files_is_refused_without_analyze_only(tmp_path):
    tree = tmp_path / "linux"
    shutil.copytree(FIXTURE_TREE, tree)
    out = tmp_path / "o"
    line = refused_early(run_convert(str(tree), "-o", str(out), "--identity", "T <t@t.t>",
                                     check=False), out)
    assert "include/linux/mutex.h" in line and "--analyze-only" in line


def test_a_2_6_tree_is_refused_without_analyze_only(tmp_path):
    out = tmp_path / "o"
    line = refused_early(run_convert(str(LEGACY_TREE), "-o", str(out), "--identity", "T <t@t.t>",
                                     check=False), out)
    assert "predates struct mutex" in line and "--analyze-only" in line
    # the audit itself is what such a tree supports
    done = run_convert(str(LEGACY_TREE), "--analyze-only", "-o", str(out))
    assert "supports the audit only" in done.stderr


def test_proof_stages_on_a_tree_that_cannot_take_the_series(tmp_path):
    out = tmp_path / "o"
    line = refused_early(run_convert(str(LEGACY_TREE), "-o", str(out), "--verify",
                                     "--identity", "T <t@t.t>", check=False), out)
    assert "predates struct mutex" in line


def test_from_series_needs_a_series(tmp_path):
    out = tmp_path / "o"
    line = refused_early(run_convert(str(FIXTURE_TREE), "--from-series", str(tmp_path),
                                     "--verify", "-o", str(out), check=False), out)
    assert "no series file" in line


@pytest.fixture
def default_tree(tmp_path) -> Path:
    tree = default_tree_path()
    if not (tree / "Makefile").is_file():
        pytest.skip("the default tree is not unpacked")
    return tree


def test_a_6_1_tree_without_mutex_h_is_refused_before_analysis(tmp_path, default_tree):
    from sem2mutex.proof.workspace import hardlinked_scratch
    copy = hardlinked_scratch(default_tree, tmp_path / "linux")
    (copy / "include/linux/mutex.h").unlink()  # removes the link, not the tree's file
    assert (default_tree / "include/linux/mutex.h").is_file()
    out = tmp_path / "o"
    line = refused_early(run_convert(str(copy), "-o", str(out), "--identity", "T <t@t.t>",
                                     check=False), out)
    assert "include/linux/mutex.h" in line
