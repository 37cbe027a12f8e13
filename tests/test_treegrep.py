"""grep_sources: the whole-tree grep split per top-level directory."""
from __future__ import annotations

import os

import pytest

from sem2mutex.tools.cache import ResultCache
from sem2mutex.tools.grep import (MAX_ALTERNATION, GrepError, GrepMemo, files_mentioning,
                                  files_with_patterns, files_with_words, grep_by_unit,
                                  grep_entry, grep_sources, top_level_entries, unit_batches,
                                  word_lines, word_options)
from sem2mutex.tools.snapshot import TreeSnapshot


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


@pytest.fixture
def memo(tree, tmp_path_factory):
    (tree / "kernel" / "odd:name.c").write_text("down(&s); /* up: */\n")
    (tree / "kernel" / "feed.c").write_text("down\fup(&s);\n")
    snapshot = TreeSnapshot.take(tree)
    # drivers/ split the way a big top-level directory is
    units = {u: snapshot.digest_of([f for f in snapshot.files if f.startswith(u)])
             for u in ("drivers/a", "drivers/b.h", "kernel", "tools", "top.c")}
    return GrepMemo(ResultCache(tmp_path_factory.mktemp("cache")),
                    TreeSnapshot(tree, snapshot.files, units))


@pytest.mark.parametrize("options", [["-l", "-e", "down"], ["-o", "-w", "-e", "down", "-e", "up"],
                                     ["-n", "-e", "-l", "-e", "up"], ["-c", "-e", "up"],
                                     ["-o", "-e", "down.up"]])
def test_units_grepped_in_batches_give_each_unit_its_own_grep(tree, memo, options):
    units = sorted(memo.snapshot.units)
    batched = grep_by_unit(tree, options, units, 2, memo)
    assert batched == {u: grep_entry(tree, options, u) for u in units}
    assert batched["kernel"]  # the name with a colon came back to its unit
    assert grep_by_unit(tree, options, units, 2, memo) == batched  # from the cache


def test_batches_cover_every_unit_once(memo):
    units = sorted(memo.snapshot.units)
    batches = unit_batches(units, memo.snapshot, jobs=2)
    assert sorted(u for batch in batches for u in batch) == units
    assert unit_batches([], memo.snapshot, jobs=2) == []


# A Latin-1 name in a comment on the line of the call: in a UTF-8 locale
# grep -I drops that line (the file "is binary") and prints nothing.
LATIN1_LINE = b"static void f(void)\n{\n\tdown(&s); /* J\xf6rg */\n}\n"


@pytest.fixture
def latin1_tree(tmp_path, monkeypatch):
    monkeypatch.setenv("LC_ALL", "C.UTF-8")  # the user's locale does not matter
    (tmp_path / "drivers").mkdir()
    (tmp_path / "drivers" / "old.c").write_bytes(LATIN1_LINE)
    return tmp_path


def test_a_line_in_another_encoding_is_still_found(latin1_tree, tmp_path_factory):
    expected = ["drivers/old.c:\tdown(&s); /* J\ufffdrg */"]
    assert grep_sources(latin1_tree, ["-E", "-e", r"\bdown\b"], jobs=2) == expected
    snapshot = TreeSnapshot.take(latin1_tree)
    memo = GrepMemo(ResultCache(tmp_path_factory.mktemp("cache")), snapshot)
    assert grep_sources(latin1_tree, ["-E", "-e", r"\bdown\b"], jobs=2, memo=memo) == expected
    assert word_lines(latin1_tree, ["drivers/old.c"], {"s"}) == {"drivers/old.c": {"s": {3}}}
    assert files_with_patterns(latin1_tree, ["drivers/old.c"], [r"J.rg"]) == {"drivers/old.c"}


WORDS_TEXT = ("lock_kernel();\nunlock_kernel(); /* lock */\nxlock_kernel(lock);\n"
              "lock_kernel_x(); a->lock_kernel = lock_kernel_interruptible;\n")


def test_identifiers_are_looked_for_in_one_alternation():
    assert word_options({"up", "down", "up"}) == ["-w", "-E", "-e", "down|up"]
    # not an identifier: a pattern of its own, as grep -w -e always read it
    assert word_options(["down", "a.b"]) == ["-w", "-e", "a.b", "-e", "down"]
    # too many for one alternation: a pattern each
    many = [f"name_{i}" for i in range(MAX_ALTERNATION + 1)]
    assert word_options(many) == ["-w", *[a for w in sorted(many) for a in ("-e", w)]]
    assert word_options(many[:MAX_ALTERNATION])[:2] == ["-w", "-E"]


def test_one_alternation_finds_what_a_pattern_per_word_finds(tmp_path):
    (tmp_path / "drivers").mkdir()
    (tmp_path / "drivers" / "w.c").write_text(WORDS_TEXT)
    (tmp_path / "top.h").write_text(WORDS_TEXT.replace("\n", " ") + "\n")
    words = {"lock", "lock_kernel", "lock_kernel_interruptible", "unlock_kernel", "never"}
    per_word = ["-o", "-w", *[a for w in sorted(words) for a in ("-e", w)]]
    expected = sorted(grep_sources(tmp_path, per_word, jobs=1))
    assert sorted(grep_sources(tmp_path, ["-o", *word_options(words)], jobs=1)) == expected
    assert "drivers/w.c:lock_kernel_interruptible" in expected  # the longest at its place
    assert files_mentioning(tmp_path, words, jobs=2) == {
        "lock": {"drivers/w.c", "top.h"}, "lock_kernel": {"drivers/w.c", "top.h"},
        "unlock_kernel": {"drivers/w.c", "top.h"},
        "lock_kernel_interruptible": {"drivers/w.c", "top.h"}}
    assert word_lines(tmp_path, ["drivers/w.c"], words) == {"drivers/w.c": {
        "lock_kernel": {1, 4}, "unlock_kernel": {2}, "lock": {2, 3},
        "lock_kernel_interruptible": {4}}}
    assert files_with_words(tmp_path, ["drivers/w.c", "top.h"], ["xlock"]) == []
    assert files_with_words(tmp_path, ["drivers/w.c", "top.h"], []) == []
