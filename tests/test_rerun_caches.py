"""What a rerun reads from the cache instead of recomputing: the lexer's
tokens, its per-file answers, and the include graph, unit by unit of the
tree.  Each kept answer must equal the one computed afresh."""
from __future__ import annotations

import os
import textwrap

from sem2mutex.audit.intake import NON_KERNEL_TOP_DIRS, include_graph
from sem2mutex.audit.visibility import HeaderPaths, IncludeGraph
from sem2mutex.tools.cache import ResultCache
from sem2mutex.tools.grep import GrepMemo, include_directives
from sem2mutex.tools.lexer import Lexer, lex, packed, unpacked
from sem2mutex.tools.snapshot import TreeSnapshot
from sem2mutex.tools.spatch import find_spatch

SOURCE = textwrap.dedent("""\
    #include <linux/semaphore.h>
    static struct semaphore lock;
    void f(struct dev *d) { down(&d->lock); up(&lock); }
    """)


def test_token_columns_give_back_the_same_tokens(tmp_path):
    (tmp_path / "f.c").write_text(SOURCE)
    tokens = lex(find_spatch(), tmp_path, "f.c")
    # identifiers and the punctuation the analysis reads (keywords are not listed)
    assert [(t.text, t.identifier) for t in tokens[:4]] == \
        [("semaphore", True), ("lock", True), (";", False), ("f", True)]
    assert tokens[1].line == 2 and tokens[3].line == 3
    assert unpacked(packed(tokens)) == tokens
    assert unpacked(packed([])) == []


def count_entries(cache_root, namespace):
    return sum(len(names) for _, _, names in os.walk(cache_root / namespace))


def test_a_lexer_summary_is_kept_and_not_lexed_again(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f.c").write_text(SOURCE)
    cache = ResultCache(tmp_path / "cache")

    def idents(tokens):
        return sorted({t.text for t in tokens if t.identifier})
    first = Lexer(find_spatch(), tree, cache=cache)
    answer = first.summaries(["f.c"], "identifiers", idents)
    assert answer == {"f.c": ["d", "dev", "down", "f", "lock", "semaphore", "up"]}
    assert set(first.seconds_by_file) == {"f.c"}
    again = Lexer(find_spatch(), tree, cache=cache)
    assert again.summaries(["f.c"], "identifiers", idents) == answer
    assert again.seconds_by_file == {}  # nothing lexed
    # another question about the same file is another entry
    assert again.summaries(["f.c"], "count", len) == {"f.c": len(lex(find_spatch(), tree, "f.c"))}
    assert count_entries(tmp_path / "cache", "lexer-summary") == 2


def test_files_lexed_ahead_are_lexed_once_and_read_the_same(tmp_path, monkeypatch):
    for name in ("a.c", "b.c", "c.c"):
        (tmp_path / name).write_text(SOURCE.replace("lock", name[0] + "_lock"))
    lexed = []
    real_lex = lex

    def counting_lex(spatch, tree, rel):
        lexed.append(rel)
        return real_lex(spatch, tree, rel)
    monkeypatch.setattr("sem2mutex.tools.lexer.lex", counting_lex)
    lexer = Lexer(find_spatch(), tmp_path)
    lexer.lex_ahead(["a.c", "b.c"])
    got = lexer.tokens_of(["b.c", "a.c", "c.c"])
    lexer.close()
    assert sorted(lexed) == ["a.c", "b.c", "c.c"]  # each once, ahead or not
    for name in ("a.c", "b.c", "c.c"):
        assert got[name] == real_lex(find_spatch(), tmp_path, name)
    assert "b_lock" in {t.text for t in got["b.c"]}
    # what was never asked for is dropped, not waited for
    idle = Lexer(find_spatch(), tmp_path)
    idle.lex_ahead(["a.c", "b.c", "c.c"])
    idle.close()
    assert idle.tokens_of([]) == {}


def write(root, rel, text):
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def fresh_graph(tree):
    snapshot = TreeSnapshot.take(tree, skip=NON_KERNEL_TOP_DIRS)
    directives = include_directives(tree, 2, skip=NON_KERNEL_TOP_DIRS)
    return IncludeGraph.build(directives, HeaderPaths.of_files(set(snapshot.files)))


def test_the_include_graph_is_kept_unit_by_unit(tmp_path):
    tree = tmp_path / "linux"
    write(tree, "include/linux/a.h", "#include <linux/b.h>\n")
    write(tree, "include/linux/b.h", "int b;\n")
    write(tree, "drivers/x/x.c", '#include <linux/a.h>\n#include "x.h"\n')
    write(tree, "drivers/x/x.h", "int x;\n")
    write(tree, "kernel/k.c", "#include <linux/b.h>\n")
    cache = ResultCache(tmp_path / "cache")
    kept = include_graph(tree, 2, GrepMemo(cache, TreeSnapshot.take(tree, NON_KERNEL_TOP_DIRS)))
    assert kept.edges == fresh_graph(tree).edges
    assert kept.edges["drivers/x/x.c"] == {"include/linux/a.h", "drivers/x/x.h"}
    units = count_entries(tmp_path / "cache", "include-edges")
    assert units == 3  # drivers, include, kernel

    # an edit: only its unit is resolved again, and the graph follows it
    write(tree, "kernel/k.c", "#include <linux/b.h>\n#include <linux/a.h>\n")
    os.utime(tree / "kernel/k.c", ns=(1, 1))
    after = include_graph(tree, 2, GrepMemo(cache, TreeSnapshot.take(tree, NON_KERNEL_TOP_DIRS)))
    assert after.edges == fresh_graph(tree).edges
    assert after.edges["kernel/k.c"] == {"include/linux/a.h", "include/linux/b.h"}
    assert count_entries(tmp_path / "cache", "include-edges") == units + 1

    # a new file changes what directives resolve to: every unit again
    write(tree, "include/linux/x.h", "int y;\n")
    write(tree, "drivers/x/y.c", "#include <linux/x.h>\n")
    grown = include_graph(tree, 2, GrepMemo(cache, TreeSnapshot.take(tree, NON_KERNEL_TOP_DIRS)))
    assert grown.edges == fresh_graph(tree).edges
    assert grown.edges["drivers/x/y.c"] == {"include/linux/x.h"}
    assert count_entries(tmp_path / "cache", "include-edges") == units + 1 + 3


def test_lexing_ahead_fills_the_entry_include_lines_reads(tmp_path):
    from sem2mutex.series.rewrite import LexAhead, lexed_include_lines
    tree = tmp_path / "tree"
    write(tree, "drivers/x/x.c", "#include <linux/module.h>\n#include \"x.h\"\nint x;\n")
    cache = ResultCache(tmp_path / "cache")
    ahead = LexAhead(find_spatch(), tree, cache)
    ahead.files(["drivers/x/x.c"])
    ahead.finish()
    assert count_entries(tmp_path / "cache", "directives") == 1
    kept = lexed_include_lines(find_spatch(), tree, "drivers/x/x.c", cache)
    assert count_entries(tmp_path / "cache", "directives") == 1  # the entry LexAhead left
    fresh = lexed_include_lines(find_spatch(), tree, "drivers/x/x.c", None)
    assert kept == fresh
    assert [(i.line, i.header) for i in fresh] == [(1, "<linux/module.h>"), (2, '"x.h"')]

    idle = LexAhead(find_spatch(), tree, None)  # no cache: nothing to fill
    idle.files(["drivers/x/x.c"])
    assert idle.pending == []
    idle.finish()
