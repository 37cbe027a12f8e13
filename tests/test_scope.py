"""The scope report's exported symbols and the cover letter.

Exports are computed from the tree before and after the series; these
tests check the computation on small trees of their own (every #if form,
a Makefile's obj-$(CONFIG_X) line, an export that moves to a file the
series does not touch), the claim scope.md makes about CONFIG_MUTEX_SIMPLE
against core/simple-mutex and the generic mutex, and, on the default tree,
the lists against the series' own -EXPORT_SYMBOL/+EXPORT_SYMBOL lines.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, default_tree_path, load_json
from sem2mutex.series.exports import built_if, conditions_at, diff_exports, export_sites
from sem2mutex.series.scope import MUTEX_SIMPLE_EXPORTS, Scope, cover_text, scope_markdown
from sem2mutex.tools.lexer import Directive
from sem2mutex.tools.spatch import find_spatch

SIMPLE_MUTEX_C = REPO / "core" / "simple-mutex" / "tree"
CONDITIONAL = """\
#include <linux/export.h>

int a;
EXPORT_SYMBOL(a);
#ifdef CONFIG_FOO
int b;
EXPORT_SYMBOL_GPL(b);
#else /* !CONFIG_FOO */
int c;
EXPORT_SYMBOL(c);
#endif
#if defined(CONFIG_BAR) && \\
	!defined(CONFIG_BAZ)
# ifndef CONFIG_QUX
int d;
EXPORT_SYMBOL_NS_GPL(d, TEST);
# endif
#elif CONFIG_LEVEL > 2
int e;
EXPORT_SYMBOL(e);
#endif
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


# ------------------------------------------------------------- conditions


def test_conditions_follow_if_elif_else_and_nesting():
    d = [Directive("ifdef", "CONFIG_A", 1), Directive("ifndef", "CONFIG_B", 2),
         Directive("endif", "", 4), Directive("elif", "X > 1", 5), Directive("else", "", 7),
         Directive("endif", "", 9), Directive("if", "0", 10), Directive("endif", "", 12)]
    at = conditions_at(d, [3, 6, 8, 11, 13])
    assert at[3] == ("defined(CONFIG_A)", "!defined(CONFIG_B)")
    assert at[6] == ("!defined(CONFIG_A)", "X > 1")
    assert at[8] == ("!defined(CONFIG_A)", "!(X > 1)")
    assert at[11] == ("0",)
    assert at[13] == ()


def test_every_export_with_its_conditions(tmp_path):
    root = write(tmp_path, {"lib/cond.c": CONDITIONAL,
                            "lib/Makefile": "obj-$(CONFIG_COND) += cond.o\n"})
    sites = {s.name: s for s in export_sites(find_spatch(), root, ["lib/cond.c"], 1)}
    assert {n: (s.macro, s.conditions) for n, s in sites.items()} == {
        "a": ("EXPORT_SYMBOL", ()),
        "b": ("EXPORT_SYMBOL_GPL", ("defined(CONFIG_FOO)",)),
        "c": ("EXPORT_SYMBOL", ("!defined(CONFIG_FOO)",)),
        "d": ("EXPORT_SYMBOL_NS_GPL", ("defined(CONFIG_BAR) && !defined(CONFIG_BAZ)",
                                       "!defined(CONFIG_QUX)")),
        "e": ("EXPORT_SYMBOL", ("!(defined(CONFIG_BAR) && !defined(CONFIG_BAZ))",
                                "CONFIG_LEVEL > 2")),
    }
    assert {s.built_if for s in sites.values()} == {"CONFIG_COND"}
    assert sites["b"].when() == "IS_ENABLED(CONFIG_COND) && defined(CONFIG_FOO)"


@pytest.mark.parametrize("makefile, expected", [
    ("obj-y += mutex.o semaphore.o\n", None),
    ("obj-$(CONFIG_SIMPLE_MUTEX) += simple_mutex.o\n", "CONFIG_SIMPLE_MUTEX"),
    ("obj-$(CONFIG_HINIC) += hinic.o\n\nhinic-y := hinic_main.o \\\n\t   simple_mutex.o\n",
     "CONFIG_HINIC"),
    ("obj-$(CONFIG_OTHER) += other.o\n", None),
])
def test_the_kconfig_symbol_that_builds_a_file(tmp_path, makefile, expected):
    write(tmp_path, {"kernel/locking/Makefile": makefile})
    assert built_if([tmp_path], "kernel/locking/simple_mutex.c") == expected


def test_added_and_removed_against_the_rest_of_the_tree(tmp_path):
    """The series stops exporting old_one and moved_one from api.c; another
    file still exports moved_one, so only old_one is removed.  It adds
    new_one and again_one; other.c exported again_one already."""
    tree = write(tmp_path / "tree", {
        "Makefile": "VERSION = 6\n",
        "kernel/api.c": "int old_one, moved_one, kept;\nEXPORT_SYMBOL(old_one);\n"
                        "EXPORT_SYMBOL(moved_one);\nEXPORT_SYMBOL(kept);\n",
        "kernel/other.c": "int moved_one, again_one;\nEXPORT_SYMBOL_GPL(moved_one);\n"
                          "EXPORT_SYMBOL(again_one);\n",
    })
    after = write(tmp_path / "after", {
        "kernel/api.c": "int kept, new_one, again_one;\nEXPORT_SYMBOL(kept);\n"
                        "EXPORT_SYMBOL(new_one);\n#ifdef CONFIG_AGAIN\n"
                        "EXPORT_SYMBOL(again_one);\n#endif\n",
    })
    diff = diff_exports(find_spatch(), tree, after, ["kernel/api.c"], 1)
    assert (diff.added, diff.removed) == (["new_one"], ["old_one"])
    assert {s.name for s in diff.lines_removed} == {"old_one", "moved_one"}
    assert {(s.name, s.conditions) for s in diff.lines_added} == \
        {("new_one", ()), ("again_one", ("defined(CONFIG_AGAIN)",))}
    assert diff.conditions_changed == []


# --------------------------------------------------- CONFIG_MUTEX_SIMPLE


def mutex_api(sites, condition: str) -> dict[str, str]:
    """name -> macro of the mutex_*() exports under CONDITION."""
    return {s.name: s.macro for s in sites
            if condition in s.conditions and "mutex" in s.name
            and not s.name.startswith(("simple_mutex", "__simple_mutex"))}


SIMPLE_MUTEX_EXPORTS = {
    "__mutex_init": "EXPORT_SYMBOL", "mutex_lock": "EXPORT_SYMBOL",
    "mutex_lock_interruptible": "EXPORT_SYMBOL", "mutex_lock_killable": "EXPORT_SYMBOL",
    "mutex_trylock": "EXPORT_SYMBOL", "mutex_unlock": "EXPORT_SYMBOL",
    "mutex_lock_io": "EXPORT_SYMBOL_GPL", "mutex_lock_nested": "EXPORT_SYMBOL_GPL",
    "_mutex_lock_nest_lock": "EXPORT_SYMBOL_GPL",
    "mutex_lock_interruptible_nested": "EXPORT_SYMBOL_GPL",
    "mutex_lock_killable_nested": "EXPORT_SYMBOL_GPL",
    "mutex_lock_io_nested": "EXPORT_SYMBOL_GPL", "mutex_destroy": "EXPORT_SYMBOL_GPL",
}


def test_simple_mutex_exports_the_mutex_api():
    sites = export_sites(find_spatch(), SIMPLE_MUTEX_C, ["kernel/locking/simple_mutex.c"], 1)
    assert mutex_api(sites, "defined(CONFIG_MUTEX_SIMPLE)") == SIMPLE_MUTEX_EXPORTS
    assert "CONFIG_MUTEX_SIMPLE provides the same mutex_* exports" in MUTEX_SIMPLE_EXPORTS


@pytest.mark.tree
def test_simple_mutex_exports_match_the_generic_mutex():
    """What scope.md says: the same mutex_*() exports with the same licences,
    mutex_is_locked() aside (an inline of <linux/mutex-simple.h>), and
    mutex_destroy(), which the generic mutex exports from mutex-debug.c."""
    tree = default_tree_path()
    if not (tree / "kernel/locking/mutex.c").is_file():
        pytest.skip("the default tree is not unpacked")
    generic = export_sites(find_spatch(), tree, ["kernel/locking/mutex.c",
                                                 "kernel/locking/mutex-debug.c"], 1)
    by_name = mutex_api(generic, "!defined(CONFIG_PREEMPT_RT)")
    by_name |= {s.name: s.macro for s in generic
                if s.file.endswith("mutex-debug.c") and s.name == "mutex_destroy"}
    by_name = {n: m for n, m in by_name.items() if not n.startswith("ww_")}
    assert set(by_name) - set(SIMPLE_MUTEX_EXPORTS) == {"mutex_is_locked"}
    assert {n: m for n, m in by_name.items() if n != "mutex_is_locked"} == SIMPLE_MUTEX_EXPORTS
    header = (SIMPLE_MUTEX_C / "include/linux/mutex-simple.h").read_text()
    assert "static inline bool mutex_is_locked(struct mutex *lock)" in header


# ------------------------------------------------------------- the reports


def scope_data(**changes) -> dict:
    data = {
        "mode": "flag-day", "instances": {"total": 3, "mutex": 1, "counting": 1, "signal": 0,
                                          "ambiguous": 1},
        "converted_to_mutex": ["a"], "renamed_to_counting_api": ["b", "c"], "demoted": {},
        "not_converted": [], "patches": [], "files_touched": ["x.c"], "subsystems": ["X"],
        "diffstat": {"files": 1, "insertions": 2, "deletions": 2},
        "exports_added": ["down_sem", "simple_mutex_lock_nested"],
        "exports_removed": ["down", "up"],
        "export_changes": {"lines_added": [
            {"name": "down_sem", "macro": "EXPORT_SYMBOL", "file": "kernel/locking/semaphore.c",
             "line": 1, "conditions": [], "built_if": None},
            {"name": "simple_mutex_lock_nested", "macro": "EXPORT_SYMBOL_GPL",
             "file": "kernel/locking/simple_mutex.c", "line": 2, "conditions": [],
             "built_if": "CONFIG_SIMPLE_MUTEX"}], "lines_removed": [], "conditions_changed": []},
        "mutex_simple_exports": MUTEX_SIMPLE_EXPORTS,
        "reviewer_verdicts": [
            {"instance": "field:struct d.irq", "class": "mutex", "classified_as": "ambiguous",
             "reviewer": "Ada Reviewer <ada@example.org>", "reason": "only wakes a thread",
             "override": True, "overridden": "irq-context (d.c:10)"}],
        "refused_verdicts": [], "ambiguous": [],
        "checkpatch": {"errors": [], "warnings": [], "not_checked": []},
    }
    return data | changes


def test_cover_letter_lists_exports_and_overrides_within_72_columns():
    d = scope_data()
    subject, body = cover_text(Scope(d, scope_markdown(d)))
    assert all(len(line) <= 72 for line in body.splitlines()), body
    flat = " ".join(body.split())
    assert "Exported symbols removed: down, up." in flat
    assert "simple_mutex_lock_nested (CONFIG_SIMPLE_MUTEX)" in flat
    assert "CONFIG_MUTEX_SIMPLE provides the same mutex_* exports" in flat
    assert ("field:struct d.irq becomes a mutex because a reviewer overrode the audit: "
            "Ada Reviewer <ada@example.org> set aside irq-context (d.c:10), saying "
            "\"only wakes a thread\"") in flat


def test_scope_markdown_says_under_which_configuration():
    md = scope_markdown(scope_data())
    assert "Removed (2): `down`, `up`" in md
    assert ("- `simple_mutex_lock_nested` (EXPORT_SYMBOL_GPL, kernel/locking/simple_mutex.c), "
            "when `IS_ENABLED(CONFIG_SIMPLE_MUTEX)`") in md
    assert "- `down_sem` (EXPORT_SYMBOL, kernel/locking/semaphore.c)\n" in md
    assert "overrides the audit's evidence: irq-context (d.c:10)" in md


# ------------------------------------------------------------- the default tree


EXPORT_LINE = re.compile(r"^([-+])EXPORT_[A-Z_]*SYMBOL[A-Z_]*\((\w+)", re.M)
KERNEL_DIRS_SKIPPED = ("tools", "scripts", "Documentation", "usr")


def series_patches(series_dir: Path) -> list[Path]:
    return [series_dir / n for n in (series_dir / "series").read_text().split()]


def touched_copy(tree: Path, series_dir: Path, dest: Path) -> tuple[Path, list[str]]:
    """The files the series touches, copied from TREE and patched with git
    apply: the tree after the series is TREE with these files replaced."""
    touched = load_json(series_dir / "scope.json")["files_touched"]
    for rel in touched:
        if (tree / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(tree / rel, dest / rel)
    dest.mkdir(parents=True, exist_ok=True)
    for patch in series_patches(series_dir):
        done = subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], cwd=dest,
                              capture_output=True, text=True)
        assert done.returncode == 0, f"{patch.name}: {done.stderr}"
    return dest, touched


def grep_exports(root: Path, name: str, exclude: set[str] = frozenset()) -> bool:
    done = subprocess.run(["grep", "-r", "-l", "-E", "--include=*.c", "--include=*.h",
                           *[f"--exclude-dir={d}" for d in KERNEL_DIRS_SKIPPED],
                           rf"^EXPORT_[A-Z_]*SYMBOL[A-Z_]*\({name}\b", "."],
                          cwd=root, capture_output=True, text=True)
    return any(f.removeprefix("./") not in exclude for f in done.stdout.split())


def diff_oracle(tree: Path, series_dir: Path, after: Path, touched: list[str]
                ) -> tuple[list[str], list[str]]:
    """Exports added and removed, read from the patches' own export lines and
    checked with grep in the tree before and after the series."""
    text = "".join(p.read_text() for p in series_patches(series_dir))
    plus = {n for sign, n in EXPORT_LINE.findall(text) if sign == "+"}
    minus = {n for sign, n in EXPORT_LINE.findall(text) if sign == "-"}
    added = sorted(n for n in plus if not grep_exports(tree, n))
    removed = sorted(n for n in minus if not grep_exports(after, n)
                     and not grep_exports(tree, n, exclude=set(touched)))
    return added, removed


def test_default_tree_exports_equal_the_diff(default_run, tmp_path):
    tree = default_tree_path()
    scope = load_json(default_run / "scope.json")
    after, touched = touched_copy(tree, default_run, tmp_path / "after")
    added, removed = diff_oracle(tree, default_run, after, touched)
    assert scope["exports_removed"] == removed
    assert scope["exports_added"] == added
    assert removed == ["down", "down_interruptible", "down_killable", "down_timeout",
                       "down_trylock", "up"]
    md = (default_run / "scope.md").read_text()
    cover = " ".join((default_run / "0000-cover-letter.patch").read_text().split())
    assert f"Removed ({len(removed)}): " + ", ".join(f"`{n}`" for n in removed) in md
    assert "Exported symbols removed: " + ", ".join(removed) + "." in cover
    for name in added:
        assert f"- `{name}` (" in md and name in cover
    assert "CONFIG_MUTEX_SIMPLE provides the same mutex_* exports" in cover
