"""The rewrite stage: plan from a real analysis, apply with spatch, diff.

Golden diffs live in tests/rewrite/golden/.  After a deliberate change (to
the rewrite, the classifier or tests/fixtures/tree), regenerate them with
SEM2MUTEX_REGEN_GOLDEN=1 and read the diff of tests/rewrite/golden/ before
committing it: every hunk is a lock changing or keeping its semantics.
"""
from __future__ import annotations

import difflib
from dataclasses import replace
import os
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURE_TREE, REPO, check_golden, default_tree_path
from sem2mutex.audit.pipeline import AnalysisRequest, analyse
from sem2mutex.audit.decisions import load_verdicts
from sem2mutex.audit.intake import open_tree
from sem2mutex.tools.spatch import find_spatch
from sem2mutex.tools.cache import ResultCache
from sem2mutex.tools.linediff import changed_blocks
from sem2mutex.model import Init, Instance, Location, Reason, SemClass, Site, Verdict
from sem2mutex.progress import Progress
from sem2mutex.series.rewrite import (ADDED, ALREADY, COUNTING, CONVERTED, DROPPED, KEPT, MUTEX,
                                      NOT_ADDED, NOT_CONVERTED, NOT_WANTED, PRESENT, REPLACED,
                                      SEMAPHORE_LEFT, Edit, EditOutcome, FileState, RewritePlan,
                                      TreeState,
                                      apply_rewrite, includes_semaphore_h, line_changed,
                                      not_seen_rewritten, plan_rewrite)

REWRITE_DIR = REPO / "tests" / "rewrite"
OWN_TREE = REWRITE_DIR / "tree"
OWN_VERDICTS = REWRITE_DIR / "verdicts.toml"
GOLDEN = REWRITE_DIR / "golden"
JOBS = 2


# ---------------------------------------------------------------- helpers


def tree_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def tree_diff(before: Path, after: Path) -> str:
    """A unified diff of two trees, stable across machines (no timestamps)."""
    old, new = tree_files(before), tree_files(after)
    out = []
    for name in sorted(set(old) | set(new)):
        a = old.get(name, b"").decode().splitlines(keepends=True)
        b = new.get(name, b"").decode().splitlines(keepends=True)
        out += difflib.unified_diff(a, b, f"a/{name}", f"b/{name}")
    return "".join(out)




def line_of(path: Path, needle: str) -> str:
    found = [line.strip() for line in path.read_text().splitlines() if needle in line]
    assert len(found) == 1, f"{needle!r} found {len(found)} times in {path}"
    return found[0]


def function_body(path: Path, signature: str) -> str:
    """The text from a function's signature line to its closing brace."""
    lines = path.read_text().splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(signature))
    end = next(n for n in range(start, len(lines)) if lines[n] == "}")
    return "\n".join(lines[start:end + 1])


class Run:
    """A tree analysed, planned and rewritten, with a pristine copy next to it."""

    def __init__(self, root: Path, source: Path, verdicts: Path | None = None):
        self.pristine = root / "pristine"
        self.tree = root / "rewritten"
        shutil.copytree(source, self.pristine)
        shutil.copytree(source, self.tree)
        self.spatch = find_spatch()
        self.audit = analyse(AnalysisRequest(
            open_tree(self.pristine), self.spatch,
            verdicts=load_verdicts(verdicts) if verdicts else []), Progress(quiet=True))
        self.plan = plan_rewrite(self.audit.instances)
        self.result = apply_rewrite(self.tree, self.plan, self.spatch, JOBS)

    def instance(self, iid: str):
        found = [i for i in self.result.instances if i.instance == iid]
        assert found, f"no instance {iid}"
        return found[0]

    def include(self, file: str):
        return next(i for i in self.result.includes if i.file == file)


@pytest.fixture(scope="module")
def fixture_run(tmp_path_factory) -> Run:
    return Run(tmp_path_factory.mktemp("rewrite-fixture"), FIXTURE_TREE)


@pytest.fixture(scope="module")
def own_run(tmp_path_factory) -> Run:
    return Run(tmp_path_factory.mktemp("rewrite-own"), OWN_TREE, OWN_VERDICTS)


# ------------------------------------------------- tests/fixtures/tree


def test_fixture_tree_golden_diff(fixture_run):
    check_golden(GOLDEN / "fixtures_tree.diff", tree_diff(fixture_run.pristine, fixture_run.tree))
    check_golden(GOLDEN / "fixtures_tree.summary", fixture_run.result.summary() + "\n")


def test_fixture_tree_every_planned_position_rewritten(fixture_run):
    result = fixture_run.result
    assert result.not_converted() == []
    assert result.unplanned_changes == []
    outcomes = [o for i in result.instances for o in i.outcomes]
    assert outcomes and all(o.status == CONVERTED for o in outcomes)
    # every class of the audit reached the rewrite
    classes = {i.sem_class for i in fixture_run.audit.instances}
    assert classes == set(SemClass)


def test_fixture_tree_files_left_with_semaphores_keep_semaphore_h(fixture_run):
    """Files whose semaphores all stay (counting, signal, ambiguous) keep
    <linux/semaphore.h> for that reason, and want no <linux/mutex.h>: the
    include step reads that off spatch's state, without the lexer."""
    for f in ("drivers/fixture/counts.c", "drivers/typed/helpers.c", "include/fixture/tdef.h",
              "fs/fixture/broken.c"):
        inc = fixture_run.include(f)
        assert (inc.status, inc.semaphore_h, inc.semaphore_why) == \
            (NOT_WANTED, KEPT, SEMAPHORE_LEFT), f
        assert "#include <linux/semaphore.h>" in (fixture_run.tree / f).read_text()


def test_fixture_tree_targets_follow_classes(fixture_run):
    by_id = {i.id: i for i in fixture_run.audit.instances}
    for inst in fixture_run.result.instances:
        cls = by_id[inst.instance].sem_class
        if cls != SemClass.MUTEX:
            assert inst.target == COUNTING, inst.instance
        elif not inst.demoted:
            assert inst.target == MUTEX, inst.instance


def test_fixture_tree_header_struct_used_by_two_files(fixture_run):
    tree = fixture_run.tree / "drivers" / "fixture"
    assert line_of(tree / "shared.h", "lock;") == "struct mutex lock;"
    assert "mutex_lock(&dev->lock);" in (tree / "shared_a.c").read_text()
    assert "mutex_lock_interruptible(&dev->lock)" in (tree / "shared_b.c").read_text()
    assert fixture_run.include("drivers/fixture/shared.h").status == ADDED
    # the other struct of the header stays a semaphore (released in an IRQ)
    assert line_of(tree / "shared.h", "busy;") == "struct semaphore busy;"
    assert "down_sem_trylock(&dev->busy)" in (tree / "irq_b.c").read_text()


def test_fixture_tree_static_initialisers_and_define(fixture_run):
    paired = fixture_run.tree / "drivers" / "fixture" / "paired.c"
    assert line_of(paired, "DEFINE_MUTEX(") == "static DEFINE_MUTEX(paired_global);"
    assert "DEFINE_SEMAPHORE" not in paired.read_text()
    assert line_of(paired, "paired_static =") == \
        "static struct mutex paired_static = __MUTEX_INITIALIZER(paired_static);"
    assert line_of(paired, "struct mutex local;") == "struct mutex local;"
    assert line_of(paired, "init(&local);") == "mutex_init(&local);"


def test_fixture_tree_pointer_and_macro_sites_rewritten(fixture_run):
    tree = fixture_run.tree
    pointer = (tree / "fs" / "fixture" / "pointer.c").read_text()
    assert "down_sem(sem);" in pointer and "up_sem((struct semaphore *)handle);" in pointer
    assert "sema_init(sem, initial);" in pointer  # initialisers stay
    # a lock macro whose every call pairs makes a mutex, its body rewritten
    macro = tree / "drivers" / "fixture" / "macro.c"
    assert line_of(macro, "#define macro_lock()") == "#define macro_lock()\tmutex_lock(&macro_sem)"
    lockmacro = tree / "drivers" / "fixture" / "lockmacro.c"
    assert line_of(lockmacro, "#define MLOG_LOCK_INIT(log)") == \
        "#define MLOG_LOCK_INIT(log)\tmutex_init(&(log)->loglock)"
    # one whose unlock macro is called unpaired stays a semaphore
    assert line_of(lockmacro, "#define MLOG_BUSY(log)") == \
        "#define MLOG_BUSY(log)\t\tdown_sem(&(log)->busylock)"


def test_fixture_tree_rerun_has_nothing_to_do(fixture_run, tmp_path):
    before = tree_files(fixture_run.tree)
    again = apply_rewrite(fixture_run.tree, fixture_run.plan, fixture_run.spatch, JOBS)
    assert again.nothing_to_do, again.summary()
    assert again.summary().startswith("nothing to do")
    assert tree_files(fixture_run.tree) == before
    # a fresh plan from the same audit finds everything done too
    fresh = apply_rewrite(fixture_run.tree, plan_rewrite(fixture_run.audit.instances),
                          fixture_run.spatch, JOBS)
    assert fresh.nothing_to_do, fresh.summary()
    assert tree_files(fixture_run.tree) == before


def test_hard_linked_scratch_leaves_the_original_alone(fixture_run, tmp_path):
    """spatch --in-place writes through hard links; the rewrite breaks them."""
    original = tmp_path / "original"
    shutil.copytree(FIXTURE_TREE, original)
    linked = tmp_path / "linked"
    shutil.copytree(original, linked, copy_function=os.link)
    before = tree_files(original)
    plan = plan_rewrite(fixture_run.audit.instances)
    ids = {i.id for i in fixture_run.audit.instances
           if i.file.startswith("drivers/fixture/paired")}
    result = apply_rewrite(linked, plan, fixture_run.spatch, JOBS, ids)
    assert result.files_changed == ["drivers/fixture/paired.c"]
    assert tree_files(original) == before
    assert (linked / "drivers/fixture/paired.c").read_bytes() != \
        before["drivers/fixture/paired.c"]


# ------------------------------------------------------- tests/rewrite/tree


def test_own_tree_golden_diff(own_run):
    check_golden(GOLDEN / "own_tree.diff", tree_diff(own_run.pristine, own_run.tree))
    check_golden(GOLDEN / "own_tree.summary", own_run.result.summary() + "\n")


def test_own_tree_every_kept_position_rewritten(own_run):
    assert own_run.result.not_converted() == []
    assert own_run.result.unplanned_changes == []


# (function, the line before, the line after): getting one wrong inverts a lock
TRYLOCK_FORMS = [
    ("int tl_if(", "if (down_trylock(&try_if))", "if (!mutex_trylock(&try_if))"),
    ("int tl_if_not(", "if (!down_trylock(&try_if_not)) {",
     "if (mutex_trylock(&try_if_not)) {"),
    ("int tl_assign(", "busy = down_trylock(&try_assign);",
     "busy = !mutex_trylock(&try_assign);"),
    ("void tl_while(", "while (down_trylock(&try_while))",
     "while (!mutex_trylock(&try_while))"),
    ("int tl_return(", "return down_trylock(&try_return);",
     "return !mutex_trylock(&try_return);"),
    ("int tl_and(", "if (fast && down_trylock(&try_and))",
     "if (fast && !mutex_trylock(&try_and))"),
    ("int tl_or_not(", "if (skip || !down_trylock(&try_or_not))",
     "if (skip || mutex_trylock(&try_or_not))"),
    ("int tl_eq(", "if (down_trylock(&try_eq) == 0) {", "if (mutex_trylock(&try_eq)) {"),
    ("int tl_ne(", "if (down_trylock(&try_ne) != 0)", "if (!mutex_trylock(&try_ne))"),
    ("int tl_zero_eq(", "if (0 == down_trylock(&try_zero_eq)) {",
     "if (mutex_trylock(&try_zero_eq)) {"),
    ("int tl_paren(", "if (!(down_trylock(&try_paren)))", "if (mutex_trylock(&try_paren))"),
    ("void tl_unused(", "down_trylock(&try_unused);", "mutex_trylock(&try_unused);"),
    ("int tl_bool(", "int locked = !down_trylock(&try_bool);",
     "int locked = mutex_trylock(&try_bool);"),
    ("int tl_cond(", "int busy = wait ? 0 : down_trylock(&try_cond);",
     "int busy = wait ? 0 : !mutex_trylock(&try_cond);"),
    # a counting semaphore keeps the semaphore meaning: renamed, not inverted
    ("int tl_counting(", "if (!down_trylock(&try_counting)) {",
     "if (!down_sem_trylock(&try_counting)) {"),
]


@pytest.mark.parametrize("function, before, after", TRYLOCK_FORMS,
                         ids=[f[0].split()[-1].rstrip("(") for f in TRYLOCK_FORMS])
def test_trylock_forms(own_run, function, before, after):
    rel = "drivers/rw/trylock.c"
    old = function_body(own_run.pristine / rel, function)
    new = function_body(own_run.tree / rel, function)
    assert before in old
    assert after in new, new
    assert old.replace(before, after).replace("up(&", "mutex_unlock(&") == new or \
        old.replace(before, after).replace("up(&", "up_sem(&") == new


def test_trylock_forms_reported(own_run):
    forms = {o.edit.name: o.form for i in own_run.result.instances for o in i.outcomes
             if o.edit.op == "down_trylock" and o.edit.to == MUTEX}
    assert forms["try_if_not"] == "!down_trylock(E) -> mutex_trylock(E)"
    assert forms["try_eq"] == "down_trylock(E) == 0 -> mutex_trylock(E)"
    assert forms["try_assign"] == "down_trylock(E) as a value -> !mutex_trylock(E)"
    assert forms["try_unused"] == "down_trylock(E); -> mutex_trylock(E);"
    assert forms["try_if"].endswith("-> !mutex_trylock(E)")


def test_own_tree_declarations(own_run):
    rw = own_run.tree / "drivers" / "rw"
    assert line_of(rw / "rw.h", "lock;") == "struct mutex\t\tlock;\t/* protects users */"
    assert line_of(rw / "rw.h", "slots[2];") == "struct mutex slots[2];"
    assert line_of(rw / "rw.h", "poll_sem;") == "struct mutex poll_sem;"
    assert line_of(rw / "rw.h", "extern struct") == "extern struct mutex rw_global_sem;"
    assert line_of(rw / "decls.c", "DEFINE_") == "DEFINE_MUTEX(rw_global_sem);"
    assert "mutex_lock_killable(&dev->cmd.poll_sem)" in (rw / "decls.c").read_text()
    assert "mutex_lock(&dev->slots[i]);" in (rw / "decls.c").read_text()
    assert line_of(rw / "decls.c", "reg_lock;") == "struct mutex reg_lock;"
    assert line_of(rw / "decls.c", "anon_lock;") == "struct mutex anon_lock;"
    assert "mutex_lock(&rw_anon.anon_lock);" in (rw / "decls.c").read_text()
    # a member of an anonymous union shares its storage: it stays a semaphore
    assert line_of(rw / "rw.h", "u_sem;") == "struct semaphore u_sem;"
    assert "down_sem(&dev->u_sem);" in (rw / "decls.c").read_text()


def test_own_tree_includes(own_run):
    rw = own_run.tree / "drivers" / "rw"
    # an alphabetical block: <linux/mutex.h> at its place; the file still
    # has a semaphore (u_sem), so <linux/semaphore.h> stays
    rw_h = own_run.include("drivers/rw/rw.h")
    assert (rw_h.status, rw_h.semaphore_h) == (ADDED, KEPT)
    assert rw_h.semaphore_why == "the file still uses a semaphore"
    text = (rw / "rw.h").read_text()
    assert "#include <linux/mutex.h>\n#include <linux/semaphore.h>\n#include <linux/types.h>\n" \
        in text
    # the block of <linux/...> includes, never the <asm/...> one further down
    assert own_run.include("drivers/rw/edge.c").status == ADDED
    assert "#include <linux/errno.h>\n#include <linux/mutex.h>\n#include <linux/semaphore.h>\n" \
        in (rw / "edge.c").read_text()
    # already there: not added twice
    assert own_run.include("drivers/rw/decls.c").status == PRESENT
    assert (rw / "decls.c").read_text().count("#include <linux/mutex.h>") == 1
    # nothing to stand next to: reported, not guessed
    bare = own_run.include("drivers/rw/bare.h")
    assert bare.status == NOT_ADDED and "no #include" in bare.why
    assert line_of(rw / "bare.h", "bare_lock;") == "struct mutex bare_lock;"
    # files that only use the mutex get it through the header
    assert "mutex.h" not in (rw / "user.c").read_text()
    assert "drivers/rw/user.c" not in {i.file for i in own_run.result.includes}


def includes_of(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.startswith("#include")]


def test_own_tree_unused_semaphore_h_goes(own_run):
    tidy = own_run.tree / "drivers" / "tidy"
    # an unsorted block: <linux/mutex.h> takes the place of the include it replaces
    assert own_run.include("drivers/tidy/tidy.h").semaphore_h == REPLACED
    assert includes_of(tidy / "tidy.h") == ["#include <linux/types.h>",
                                            "#include <linux/mutex.h>",
                                            "#include <linux/list.h>"]
    # an alphabetical block: dropped, and <linux/mutex.h> at its place in it
    assert own_run.include("drivers/tidy/tidy_main.c").status == ADDED
    assert includes_of(tidy / "tidy_main.c") == ["#include <linux/errno.h>",
                                                 "#include <linux/module.h>",
                                                 "#include <linux/mutex.h>",
                                                 "#include <linux/slab.h>",
                                                 '#include "tidy.h"']
    # <linux/mutex.h> there already: <linux/semaphore.h> just goes
    extra = own_run.include("drivers/tidy/tidy_extra.c")
    assert (extra.status, extra.semaphore_h) == (PRESENT, DROPPED)
    assert includes_of(tidy / "tidy_extra.c") == ["#include <linux/mutex.h>",
                                                  '#include "tidy.h"']
    # a header keep.c gets struct semaphore through keeps it
    keep = own_run.include("drivers/tidy/keep.h")
    assert (keep.status, keep.semaphore_h) == (ADDED, KEPT)
    assert keep.semaphore_why.startswith("drivers/tidy/keep.c uses a semaphore")
    assert includes_of(tidy / "keep.h") == ["#include <linux/semaphore.h>",
                                            "#include <linux/mutex.h>"]
    # every include spatch found where the step put it
    assert own_run.result.unconfirmed == []


def test_own_tree_padded_members_keep_their_column(own_run):
    tidy = own_run.tree / "drivers" / "tidy"
    lines = (tidy / "tidy.h").read_text().splitlines()
    member = {line.split()[-1]: line for line in lines if line.endswith(";")}
    # spaces stay spaces, tabs stay tabs, a single space stays one space
    assert member["cmd_lock;"] == "\tstruct mutex                    cmd_lock;"
    assert member["io_lock;"] == "\tstruct mutex\t\tio_lock;"
    assert member["slot_lock;"] == "\tstruct mutex slot_lock;"
    columns = {name: len(line.expandtabs(8)) - len(name) for name, line in member.items()}
    assert columns["cmd_lock;"] == columns["flags;"] == columns["list;"] == 40
    assert columns["io_lock;"] == columns["users;"] == 32
    assert line_of(tidy / "tidy_main.c", "tidy_local_lock;") == \
        "static struct mutex      tidy_local_lock;"
    assert line_of(own_run.tree / "drivers/rw/rw.h", "lock;\t") == \
        "struct mutex\t\tlock;\t/* protects users */"
    realigned = {(r.file, r.name) for r in own_run.result.realigned}
    assert realigned == {("drivers/tidy/tidy.h", "cmd_lock"), ("drivers/tidy/tidy.h", "io_lock"),
                         ("drivers/tidy/tidy_main.c", "tidy_local_lock"),
                         ("drivers/rw/rw.h", "lock")}


def test_own_tree_demotions_keep_semaphores(own_run):
    edge = own_run.tree / "drivers" / "rw" / "edge.c"
    for iid in ("static:drivers/rw/edge.c:md_a", "static:drivers/rw/edge.c:md_b"):
        inst = own_run.instance(iid)
        assert inst.target == COUNTING
        assert any("several variables" in why for why in inst.demoted)
    assert line_of(edge, "md_a, md_b;") == "static struct semaphore md_a, md_b;"
    assert "down_sem(&md_a);" in edge.read_text()
    clash = own_run.instance("static:drivers/rw/edge.c:clash_mutex")
    assert clash.target == COUNTING and "shared with" in clash.demoted[0]
    assert line_of(edge, "; down_sem(") == "down_sem(&clash_mutex); down_sem(&clash_count);"
    assert own_run.instance("static:drivers/rw/edge.c:edge_lock").target == MUTEX


def test_own_tree_long_line_and_macros(own_run):
    edge = own_run.tree / "drivers" / "rw" / "edge.c"
    body = function_body(edge, "int edge_long(")
    assert "down_sem_timeout(&device_with_long_name->semaphore_with_a_long_name,\n" in body
    assert "up_sem(&device_with_long_name->semaphore_with_a_long_name);" in body
    assert line_of(edge, "down_sem(sem);") == "down_sem(sem);\t\t\\"
    assert line_of(edge, "#define edge_release()") == \
        "#define edge_release()\tup_sem(&clash_count)"


def test_one_call_per_instance_group_gives_the_same_tree(own_run, tmp_path):
    """The series applies the plan one subsystem at a time on one tree.

    The long line of edge_long() is broken over two lines first, so every
    later call must find its positions one line further down."""
    tree = tmp_path / "tree"
    shutil.copytree(own_run.pristine, tree)
    plan = plan_rewrite(own_run.audit.instances)
    long_one = {i for i in plan.targets if "semaphore_with_a_long_name" in i}
    rest = set(plan.targets) - long_one
    first = apply_rewrite(tree, plan, own_run.spatch, JOBS, long_one)
    assert [o.status for i in first.instances for o in i.outcomes] == [CONVERTED] * 2
    assert plan.line_shifts["drivers/rw/edge.c"] == [(44, 1)]
    second = apply_rewrite(tree, plan, own_run.spatch, JOBS, rest)
    assert second.not_converted() == [] and second.unplanned_changes == []
    assert tree_files(tree) == tree_files(own_run.tree)
    again = apply_rewrite(tree, plan, own_run.spatch, JOBS)
    assert again.nothing_to_do, again.summary()


def test_own_tree_rerun_and_stale_plan_change_nothing(own_run):
    before = tree_files(own_run.tree)
    again = apply_rewrite(own_run.tree, own_run.plan, own_run.spatch, JOBS)
    assert again.nothing_to_do, again.summary()
    # A plan made for the pristine tree does not know the lines that moved:
    # it may fail to find positions, but it must never rewrite a neighbour.
    stale = apply_rewrite(own_run.tree, plan_rewrite(own_run.audit.instances),
                          own_run.spatch, JOBS)
    assert stale.files_changed == []
    assert tree_files(own_run.tree) == before
    assert {o.status for i in stale.instances for o in i.outcomes} <= {ALREADY, NOT_CONVERTED}


def test_a_plan_naming_another_semaphore_never_rewrites_the_neighbour(tmp_path):
    # The transform rules find a planned call by file, line and call only;
    # the name check comes from reading the file first.  The first transform
    # run reads and rewrites in one go, so its rewrite of a position the file
    # does not hold as planned (up(&a) where the plan says b) must be undone.
    source = ("#include <linux/semaphore.h>\n"
              "\n"
              "static struct semaphore a, b;\n"
              "\n"
              "void f(void)\n"
              "{\n"
              "\tup(&a);\n"
              "\tup(&b);\n"
              "}\n")
    (tmp_path / "n.c").write_text(source)
    plan = RewritePlan(edits=[Edit("static:n.c:b", "n.c", 7, "up", COUNTING, "b"),
                              Edit("static:n.c:b", "n.c", 8, "up", COUNTING, "b")],
                       targets={"static:n.c:b": COUNTING})
    result = apply_rewrite(tmp_path, plan, find_spatch(), JOBS)
    assert (tmp_path / "n.c").read_text() == source.replace("\tup(&b);", "\tup_sem(&b);")
    status = {o.edit.line: o.status for i in result.instances for o in i.outcomes}
    assert status == {7: NOT_CONVERTED, 8: CONVERTED}
    assert result.unplanned_changes == []


# ------------------------------------------------------------ plan, pure


def site(file, line, op, function="f", macro=None, via=None):
    return Site(Location(file, line), function, op, True, macro, via)


def instance(iid, cls, sites, inits=((10, "sema_init", 1),), kind="static", decls=((5,),)):
    return Instance(id=iid, kind=kind, name=iid.split(":")[-1], struct=None, file="a.c",
                    decls=[Location("a.c", d[0]) for d in decls],
                    inits=[Init(Location("a.c", n), op, c, str(c)) for n, op, c in inits],
                    sites=list(sites), sem_class=cls)


def test_plan_maps_every_op():
    mutex = instance("static:a.c:m", SemClass.MUTEX,
                     [site("a.c", 20, "down"), site("a.c", 21, "up"),
                      site("a.c", 22, "down_trylock"), site("a.c", 23, "down_killable"),
                      site("a.c", 24, "lock-wrapper", via="m_lock")])
    counting = instance("static:a.c:c", SemClass.COUNTING,
                        [site("a.c", 30, "down_timeout"), site("a.c", 31, "up", macro="C_UP")],
                        inits=((11, "sema_init", 4),), decls=((6,),))
    plan = plan_rewrite([mutex, counting])
    got = {(e.line, e.op, e.to, e.new) for e in plan.edits}
    assert got == {
        (5, "declaration", MUTEX, "struct mutex"),
        (10, "sema_init", MUTEX, "mutex_init"),
        (20, "down", MUTEX, "mutex_lock"),
        (21, "up", MUTEX, "mutex_unlock"),
        (22, "down_trylock", MUTEX, "mutex_trylock"),
        (23, "down_killable", MUTEX, "mutex_lock_killable"),
        (30, "down_timeout", COUNTING, "down_sem_timeout"),
        (31, "up", COUNTING, "up_sem"),
    }
    assert plan.targets == {"static:a.c:m": MUTEX, "static:a.c:c": COUNTING}
    assert plan.demoted == {}


@pytest.mark.parametrize("sites, inits, kind, why", [
    ([site("a.c", 20, "down", macro="LOCK")], ((10, "sema_init", 1),), "static",
     "a macro site never makes a mutex"),
    ([site("a.c", 20, "down_timeout")], ((10, "sema_init", 1),), "static",
     "no mutex equivalent"),
    ([site("a.c", 20, "down")], ((10, "sema_init", 2),), "static", "not 1"),
    ([site("a.c", 20, "down")], (), "static", "no initialiser"),
    ([site("a.c", 20, "down")], ((10, "init_MUTEX", 1),), "static", "no mutex rewrite"),
    ([site("a.c", 20, "down")], ((10, "sema_init", 1),), "pointer", "pointer instance"),
])
def test_plan_keeps_unsafe_mutexes_as_semaphores(sites, inits, kind, why):
    inst = instance("static:a.c:m", SemClass.MUTEX, sites, inits=inits, kind=kind)
    plan = plan_rewrite([inst])
    assert plan.targets["static:a.c:m"] == COUNTING
    assert any(why in w for w in plan.demoted["static:a.c:m"]), plan.demoted
    assert all(e.to == COUNTING and e.op not in ("declaration", "sema_init")
               for e in plan.edits)


def test_plan_keeps_an_aliased_mutex_and_edits_the_alias_by_its_name():
    # a reviewer pinned mutex on a semaphore declared again with __alias()
    alias = Reason("symbol-alias", "also declared as `m_alias` with __alias() at a.c:7",
                   (Location("a.c", 7),))
    inst = instance("static:a.c:m", SemClass.MUTEX,
                    [site("a.c", 20, "down"), replace(site("b.c", 30, "up"), spelled="m_alias")])
    inst.notes.append(alias)
    plan = plan_rewrite([inst])
    assert plan.targets["static:a.c:m"] == COUNTING
    assert any("m_alias" in w and "symbol-alias" in w for w in plan.demoted["static:a.c:m"])
    assert {(e.file, e.name) for e in plan.edits} == {("a.c", "m"), ("b.c", "m_alias")}


def test_plan_demotes_a_mutex_sharing_a_line_with_a_semaphore():
    mutex = instance("static:a.c:m", SemClass.MUTEX, [site("a.c", 20, "down")])
    other = instance("static:a.c:c", SemClass.SIGNAL, [site("a.c", 20, "down")],
                     inits=((11, "sema_init", 0),), decls=((6,),))
    plan = plan_rewrite([mutex, other])
    assert plan.targets["static:a.c:m"] == COUNTING
    assert "shared with static:a.c:c" in plan.demoted["static:a.c:m"][0]
    # two mutexes on one line are fine
    both = plan_rewrite([mutex, instance("static:a.c:n", SemClass.MUTEX,
                                         [site("a.c", 20, "down")], decls=((7,),))])
    assert set(both.targets.values()) == {MUTEX}


def test_plan_line_shifts_map_both_ways():
    plan = plan_rewrite([])
    plan.record_changes("f.c", changed_blocks(b"a\nb\nc\nd\n", b"a\nb1\nb2\nc\nd\n"))
    assert plan.line_shifts == {"f.c": [(2, 1)]}
    assert [plan.current_line("f.c", n) for n in (1, 2, 3, 4)] == [1, 2, 4, 5]
    assert plan.audit_line("f.c", 4) == 3
    plan.record_changes("f.c", changed_blocks(b"a\nb1\nb2\nc\nd\n", b"i\na\nb1\nb2\nc\nd\n"))
    assert [plan.current_line("f.c", n) for n in (1, 2, 3, 4)] == [2, 3, 5, 6]


def test_a_rewritten_line_is_one_a_changed_block_covers():
    # line 2 rewritten in place, a line added after line 4: the transform
    # takes spatch's record of line 2 as done, and re-reads for line 3
    blocks = changed_blocks(b"a\nb\nc\nd\n", b"a\nB\nc\nd\n#include\n")
    assert [line_changed(n, blocks) for n in (1, 2, 3, 4, 5)] == \
        [False, True, False, False, False]
    grown = changed_blocks(b"a\nb\nc\n", b"a\nb1\n  b2\nc\n")  # broken over two lines
    assert [line_changed(n, grown) for n in (1, 2, 3)] == [False, True, False]
    assert not line_changed(1, [])


def test_includes_semaphore_h_as_the_state_before_says():
    with_h, without = FileState(), FileState()
    with_h.includes[3].add("semaphore")
    without.includes[3].add("linux")
    before = TreeState({"a.c": with_h, "b.c": without}, {})
    assert [includes_semaphore_h(f, before) for f in ("a.c", "b.c", "c.c")] == \
        [True, False, True]                    # a file the state did not read may
    assert includes_semaphore_h("b.c", None)   # no state read before: any file may


def test_a_converted_edit_the_read_after_does_not_show_is_unconfirmed():
    plan = plan_rewrite([instance("static:a.c:n", SemClass.MUTEX, [site("a.c", 20, "down")])])
    call = next(e for e in plan.edits if e.op == "down")
    done, left = FileState(), FileState()
    done.add(20, "mutex_lock", 9, "n")
    left.add(20, "down", 9, "n")
    outcomes = {call: EditOutcome(call, CONVERTED)}
    assert not_seen_rewritten(plan, outcomes, TreeState({"a.c": done}, {})) == []
    assert not_seen_rewritten(plan, outcomes, TreeState({"a.c": left}, {})) == [
        "a.c:20 down() on n -> mutex_lock(): not seen rewritten by the read after the transform"]
    assert not_seen_rewritten(plan, outcomes, TreeState({}, {})) == []  # a file not read
    # an edit not converted is reported as such, not here
    assert not_seen_rewritten(plan, {call: EditOutcome(call, NOT_CONVERTED)},
                              TreeState({"a.c": left}, {})) == []


def test_changed_blocks_are_minimal_and_rebuild_the_new_file(tmp_path):
    old = [f"line {n}" for n in range(1, 2001)] + ["}", "", "}", ""] * 500
    new = list(old)
    new[10:11] = ["line 11 broken", "  over two lines"]   # replace, grows
    new.insert(1500, "#include <linux/mutex.h>")           # insertion
    del new[2600]                                          # deletion of a "}"
    before, after = ("\n".join(old) + "\n").encode(), ("\n".join(new) + "\n").encode()
    blocks = changed_blocks(before, after)
    assert [(b.old_end - b.old_start, b.new_end - b.new_start) for b in blocks] == \
        [(1, 2), (0, 1), (1, 0)]
    assert (blocks[0].old_start, blocks[1].old_start, blocks[1].new_start) == (10, 1499, 1500)
    rebuilt, at = [], 0
    for b in blocks:
        rebuilt += old[at:b.old_start] + new[b.new_start:b.new_end]
        at = b.old_end
    assert rebuilt + old[at:] == new
    assert changed_blocks(before, before) == []
    cache = ResultCache(tmp_path / "cache")
    assert changed_blocks(before, after, cache) == blocks      # computed, then kept
    assert list((tmp_path / "cache" / "linediff").rglob("*.json"))
    assert changed_blocks(before, after, cache) == blocks      # read back


# ------------------------------------------------------------ real tree


def instances_from_audit(audit: dict) -> list[Instance]:
    """audit.json back into the Instance records plan_rewrite takes."""
    return [Instance(
        id=i["id"], kind=i["kind"], name=i["name"], struct=i["struct"], file=i["file"],
        decl_line=i["line"], decls=[Location(d["file"], d["line"]) for d in i["decls"]],
        inits=[Init(Location(x["file"], x["line"]), x["op"], x["count"], x["count_text"])
               for x in i["inits"]],
        sites=[Site(Location(s["file"], s["line"]), s["function"], s["op"], s["paired"],
                    s["macro"], s["via_wrapper"]) for s in i["sites"]],
        sem_class=SemClass(i["class"]),
        reasons=[Reason(r["code"], r["detail"],
                        tuple(Location(x["file"], x["line"]) for x in r["locations"]))
                 for r in i["reasons"]]) for i in audit["instances"]]


CONSOLE_SEM = "static:kernel/printk/printk.c:console_sem"


@pytest.fixture(scope="module")
def real_run(default_audit, tmp_path_factory):
    """The mutex instances of the default tree and console_sem, rewritten in
    copies of their files (the tree itself is only read)."""
    instances = instances_from_audit(default_audit)
    plan = plan_rewrite(instances)
    ids = {i.id for i in instances if i.sem_class == SemClass.MUTEX} | {CONSOLE_SEM}
    files = sorted({e.file for e in plan.edits if e.instance in ids})
    root = tmp_path_factory.mktemp("rewrite-real")
    for rel in files:
        for side in ("pristine", "rewritten"):
            (root / side / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(default_tree_path() / rel, root / side / rel)
    result = apply_rewrite(root / "rewritten", plan, find_spatch(), JOBS, ids)
    return plan, ids, root, result


def test_real_tree_conversions(real_run):
    plan, ids, root, result = real_run
    assert {i.instance for i in result.instances} == ids
    assert result.not_converted() == [], result.summary()
    assert result.unplanned_changes == []
    assert sum(1 for i in result.instances if i.target == MUTEX) >= 5
    for inst in result.instances:
        if inst.target == MUTEX:
            ops = {o.edit.op for o in inst.outcomes}
            assert ops & {"declaration", "DEFINE_SEMAPHORE"} and ops & {"sema_init",
                                                                       "DEFINE_SEMAPHORE",
                                                                       "__SEMAPHORE_INITIALIZER"}


def test_real_tree_console_sem_moves_to_the_counting_api(real_run):
    _, _, root, result = real_run
    console = next(i for i in result.instances if i.instance == CONSOLE_SEM)
    assert console.target == COUNTING and console.outcomes
    printk = root / "rewritten" / "kernel" / "printk" / "printk.c"
    text = printk.read_text()
    assert "static DEFINE_SEMAPHORE(console_sem);" in text
    assert "\tdown_sem(&console_sem);\\" in text  # inside the down_console_sem() macro
    assert "down_sem_trylock(&console_sem)" in text
    assert "up_sem(&console_sem);" in text
    for old in ("down(&console_sem)", "down_trylock(&console_sem)", "up(&console_sem)"):
        assert old not in text


def test_real_tree_trylocks_keep_their_meaning(real_run):
    """Every down_trylock() rewritten, checked against its source line."""
    plan, _, root, result = real_run
    checked = set()
    for inst in result.instances:
        for o in inst.outcomes:
            if o.edit.op != "down_trylock":
                continue
            old = (root / "pristine" / o.edit.file).read_text().splitlines()
            new = (root / "rewritten" / o.edit.file).read_text().splitlines()
            before = old[plan.audit_line(o.edit.file, o.edit.line) - 1]
            after = new[o.edit.line - 1]
            if o.edit.to == COUNTING:
                assert after == before.replace("down_trylock(", "down_sem_trylock(")
            elif "!down_trylock(" in before:
                assert after == before.replace("!down_trylock(", "mutex_trylock(")
            else:
                assert after == before.replace("down_trylock(", "!mutex_trylock(")
            checked.add(o.edit.to)
    assert COUNTING in checked  # console_sem's, at least


def test_real_tree_global_with_extern_declaration(real_run):
    _, _, root, result = real_run
    if not any(i.instance == "global:ifs_sem" and i.target == MUTEX for i in result.instances):
        pytest.skip("the analysis no longer classes ifs_sem as a mutex")
    ifs = root / "rewritten" / "drivers" / "platform" / "x86" / "intel" / "ifs"
    assert "extern struct mutex ifs_sem;" in (ifs / "ifs.h").read_text()
    assert "\nDEFINE_MUTEX(ifs_sem);\n" in (ifs / "sysfs.c").read_text()
    assert "mutex_lock(&ifs_sem);" in (ifs / "core.c").read_text()
    assert "#include <linux/mutex.h>" in (ifs / "sysfs.c").read_text()


def test_real_tree_rerun_has_nothing_to_do(real_run):
    plan, ids, root, _ = real_run
    before = tree_files(root / "rewritten")
    again = apply_rewrite(root / "rewritten", plan, find_spatch(), JOBS, ids)
    assert again.nothing_to_do, again.summary()
    assert tree_files(root / "rewritten") == before


# ------------------------------------------------------------ the rules themselves

OWN_RULES = sorted((REPO / "cocci" / "rewrite").glob("*.cocci")) + \
    sorted((REPO / "cocci" / "check").glob("*.cocci"))


@pytest.mark.parametrize("rule", OWN_RULES, ids=[r.stem for r in OWN_RULES])
def test_rewrite_and_check_rules_follow_kernel_cocci_conventions(rule):
    text = rule.read_text()
    assert text.startswith("// SPDX-License-Identifier: GPL-2.0-only\n///")
    for header in ("// Confidence:", "// Options:", "// Keywords:", "virtual "):
        assert header in text, f"{rule.name} lacks {header}"


def test_include_rules_parse_with_their_named_anchors(tmp_path):
    """mutex_include.cocci followed by one copy of the template per anchor,
    as update_includes() runs them, is a valid semantic patch."""
    import subprocess
    from sem2mutex.series.rewrite import REWRITE_DIR, next_to_rules
    program = tmp_path / "includes.cocci"
    program.write_text("\n\n".join([(REWRITE_DIR / "mutex_include.cocci").read_text(),
                                    *next_to_rules(["<linux/slab.h>", '"esas2r.h"'])]))
    done = subprocess.run([str(find_spatch()), "--parse-cocci", str(program), "-D", "patch"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "after_include_1" in done.stdout and '#include "esas2r.h"' in program.read_text()


RECLAIM_SEM = "field:struct xenbus_device.reclaim_sem"


def test_real_tree_pinned_reclaim_sem_becomes_a_mutex_credited_to_its_reviewer(
        default_audit, tmp_path):
    """The issue's example: ambiguous only for trylock-context-unknown, pinned
    mutex by a reviewer, converted, and the patch names the reviewer."""
    from sem2mutex.audit.decisions import VerdictApplier
    from sem2mutex.series.messages import conversion_message
    from sem2mutex.series.units import ConversionUnit
    inst = next(i for i in instances_from_audit(default_audit) if i.id == RECLAIM_SEM)
    assert (inst.sem_class, [r.code for r in inst.reasons]) == \
        (SemClass.AMBIGUOUS, ["trylock-context-unknown"])
    verdict = Verdict(RECLAIM_SEM, SemClass.MUTEX, "Ada Reviewer <ada@example.org>",
                      "probe, remove and reclaim all run in process context")
    assert VerdictApplier([verdict]).apply([inst]) == []
    plan = plan_rewrite([inst])
    assert plan.targets == {RECLAIM_SEM: MUTEX}, plan.demoted
    for rel in plan.files():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(default_tree_path() / rel, tmp_path / rel)
    result = apply_rewrite(tmp_path, plan, find_spatch(), JOBS)
    assert result.not_converted() == [] and result.unconfirmed == [], result.summary()
    backend = (tmp_path / "drivers/xen/xenbus/xenbus_probe_backend.c").read_text()
    assert "if (!mutex_trylock(&xdev->reclaim_sem))" in backend
    _, body = conversion_message(ConversionUnit("XEN", "xen/xenbus", [inst]), result, [],
                                 "T <t@example.org>")
    flat = " ".join(body.split())
    assert ("pinned mutex by Ada Reviewer <ada@example.org>, who wrote: \"probe, remove and "
            "reclaim all run in process context\"") in flat


@pytest.mark.parametrize("table, old, new", [("mutex", "up", "mutex_release"),
                                             ("counting", "down_timeout", "down_wait")])
def test_api_calls_rule_refuses_a_table_it_does_not_spell(tmp_path, table, old, new):
    """api_calls.cocci spells the new names in its branches (a disjunction
    cannot take a constraint that depends on the call's name): a plan whose
    table says otherwise stops spatch instead of writing the old names."""
    import json
    import subprocess
    from sem2mutex.tools.api import api_table
    source = tmp_path / "f.c"
    source.write_text("void f(void)\n{\n\tup(&lock);\n}\n")
    api = api_table()
    api[table] = {**api[table], old: new}
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"schema": 1, "api": api, "includes": [], "edits": [
        {"file": str(source), "line": 3, "op": "up", "to": "mutex", "name": "lock"}]}))
    rule = REPO / "cocci" / "rewrite" / "api_calls.cocci"
    done = subprocess.run([str(find_spatch()), "--sp-file", str(rule), "-D", "patch",
                           str(source)], capture_output=True, text=True,
                          env=dict(os.environ, SEM2MUTEX_REWRITE_PLAN=str(plan)))
    assert "otherwise than the plan's table" in done.stderr
    assert "mutex_unlock" not in done.stdout
    # and with the table as it is, the call is rewritten
    plan.write_text(json.dumps({"schema": 1, "api": api_table(), "includes": [], "edits": [
        {"file": str(source), "line": 3, "op": "up", "to": "mutex", "name": "lock"}]}))
    done = subprocess.run([str(find_spatch()), "--sp-file", str(rule), "-D", "patch",
                           str(source)], capture_output=True, text=True,
                          env=dict(os.environ, SEM2MUTEX_REWRITE_PLAN=str(plan)))
    assert "+\tmutex_unlock(&lock);" in done.stdout, done.stderr[-1000:]


def test_split_after_line_keeps_every_byte():
    from sem2mutex.series.rewrite import split_after_line
    data = b"#include <a.h>\n#include <b.h>\r\nint x;\n\x0cint y;"
    assert split_after_line(data, 2) == (b"#include <a.h>\n#include <b.h>\r\n",
                                         b"int x;\n\x0cint y;")
    assert split_after_line(data, 0) == (b"", data)
    assert split_after_line(data, 10) == (data, b"")


def test_last_include_line_takes_the_lexer_and_spatch_lines():
    from sem2mutex.series.includes import IncludeLine
    from sem2mutex.series.rewrite import FileState, last_include_line
    state = FileState()
    state.includes[40].add("linux")
    assert last_include_line([IncludeLine(3, "<linux/a.h>")], state) == 40
    assert last_include_line([IncludeLine(3, "<linux/a.h>")], None) == 3
    assert last_include_line([], None) == 0
