"""grep_sources: the whole-tree grep split per top-level directory."""
from __future__ import annotations

import os

import pytest

from sem2mutex.tools.grep import GrepError, grep_sources, top_level_entries


@pytest.fixture
def tree(tmp_path):
    for rel, text in {"drivers/a/x.c": "down(&s);\n", "drivers/b.h": "up(&s);\n",
                      "kernel/k.c": "down(&s);\n", "kernel/notes.txt": "down(&s);\n",
                      "tools/t.c": "down(&s);\n", "top.c": "down(&s);\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    os.symlink(tmp_path / "kernel", tmp_path / "linked")
    return tmp_path


def test_same_lines_as_one_grep_over_the_sources(tree):
    found = grep_sources(tree, ["-l", "-e", "down", "-e", "up"], jobs=2)
    assert sorted(found) == ["drivers/a/x.c", "drivers/b.h", "kernel/k.c", "tools/t.c", "top.c"]


def test_skipped_directories_and_symlinks_are_not_read(tree):
    assert "linked" not in top_level_entries(tree)
    found = grep_sources(tree, ["-o", "-w", "-e", "down"], jobs=1, skip=("tools",))
    assert sorted(found) == ["drivers/a/x.c:down", "kernel/k.c:down", "top.c:down"]


def test_a_grep_failure_is_an_error_not_an_empty_result(tree):
    with pytest.raises(GrepError, match="grep failed"):
        grep_sources(tree, ["-E", "-e", "("], jobs=2)
