"""The type index, the include graph and the argument trees, on hand-built
facts (no spatch): how a call's argument is tied to its semaphore when
spatch alone cannot type it, and when it must not be."""
from __future__ import annotations

import random

from sem2mutex.audit.access import ArgumentTree
from sem2mutex.audit.typeindex import CType, TypeIndex
from sem2mutex.audit.visibility import (HeaderPaths, IncludeGraph, Visibility,
                                        parse_directive)

C_FILE = "drivers/x/x.c"


def member(container, fld, type_text, file="include/x/x.h", line=1):
    return {"kind": "member", "file": file, "line": line, "col": 0, "container": container,
            "field": fld, "type": type_text}


def index_with(*records, visibility=None) -> TypeIndex:
    index = TypeIndex(visibility or Visibility.everything())
    index.add_records(list(records))
    return index


def tree(*records, arg=(1, 5, 1, 40)) -> ArgumentTree:
    recs = [{"kind": "acc_arg", "at": list(arg)}] + list(records)
    return ArgumentTree.from_records(C_FILE, recs)


def member_rec(base, end, fld, arrow=True):
    return {"kind": "acc_member", "at": list(base), "end": list(end), "field": fld,
            "arrow": arrow}


def pointer_member(ptr_type, name, fld):
    """The argument tree of `&NAME->FLD`, NAME a local of type PTR_TYPE."""
    return tree(typed((1, 7, 1, 10), ptr_type), ident((1, 7, 1, 10), name),
                member_rec((1, 7, 1, 10), (1, 20), fld), arg=(1, 6, 1, 20))


def typed(at, type_text):
    return {"kind": "acc_type", "at": list(at), "type": type_text}


def ident(at, name, local=True):
    return {"kind": "acc_ident", "at": list(at), "name": name, "local": local}


# ---------------------------------------------------------------- CType


def test_ctype_reads_spatch_printed_types():
    assert CType.parse("struct foo *") == CType("struct foo", 1)
    assert CType.parse("const struct foo * *") == CType("struct foo", 2)
    assert CType.parse("struct semaphore [ 4 ]") == CType("struct semaphore", 0, True)
    fn = CType.parse("struct mthca_dev * ( struct ib_device * ibdev )")
    assert fn.function and fn.result() == CType("struct mthca_dev", 1)
    assert CType.parse("struct semaphore").is_semaphore
    assert not CType.parse("struct semaphore *").is_semaphore
    assert CType.parse("struct foo [ ]").deref() == CType("struct foo")


def test_typedefs_are_followed_to_the_struct():
    index = index_with({"kind": "typedef", "file": "include/sound/core.h", "line": 1,
                        "name": "snd_pcm_t", "type": "struct _snd_pcm"},
                       {"kind": "typedef", "file": "include/sound/core.h", "line": 2,
                        "name": "snd_pcm_p", "type": "snd_pcm_t *"})
    assert index.canonical(CType("snd_pcm_t", 1), C_FILE) == CType("struct _snd_pcm", 1)
    assert index.canonical(CType("snd_pcm_p"), C_FILE) == CType("struct _snd_pcm", 1)
    assert index.canonical(CType("unknown_t"), C_FILE) is None


# ---------------------------------------------------------------- trees


def test_a_member_of_a_member_is_typed_from_the_header():
    # down(&dev->sub.lock), dev typed by spatch, struct dev in a header
    t = tree(ident((1, 7, 1, 10), "dev"), typed((1, 7, 1, 10), "struct dev *"),
             member_rec((1, 7, 1, 10), (1, 15), "sub"),
             member_rec((1, 7, 1, 15), (1, 20), "lock", arrow=False), arg=(1, 6, 1, 20))
    index = index_with(member("struct dev", "sub", "struct sub"),
                       member("struct sub", "lock", "struct semaphore"))
    (d,) = t.denote(index, by_address=True)
    assert (d.kind, d.container, d.field) == ("field", "struct sub", "lock")


def test_an_accessors_result_and_a_typedef_on_the_way():
    # down(&to_dev(x)->lock): to_dev returns dev_t *, a typedef of struct dev
    t = tree({"kind": "acc_call", "at": [1, 7, 1, 16], "callee": "to_dev"},
             ident((1, 14, 1, 15), "x"), member_rec((1, 7, 1, 16), (1, 22), "lock"),
             arg=(1, 6, 1, 22))
    index = index_with({"kind": "returns", "file": "include/x/x.h", "line": 3,
                        "name": "to_dev", "type": "dev_t *"},
                       {"kind": "typedef", "file": "include/x/x.h", "line": 2,
                        "name": "dev_t", "type": "struct dev"},
                       member("struct dev", "lock", "struct semaphore"))
    (d,) = t.denote(index, by_address=True)
    assert (d.kind, d.container, d.field) == ("field", "struct dev", "lock")


def test_a_member_that_is_not_a_semaphore_is_said_so():
    t = pointer_member("struct mm *", "mm", "mmap_sem")
    index = index_with(member("struct mm", "mmap_sem", "struct rw_semaphore"))
    (d,) = t.denote(index, by_address=True)
    assert d.kind == "other-type" and "rw_semaphore" in d.why


def test_an_unknown_struct_is_unknown_not_guessed():
    t = pointer_member("struct nowhere *", "p", "lock")
    (d,) = t.denote(index_with(), by_address=True)
    assert d.kind == "unknown" and d.untyped_field == "lock"
    assert "no definition of struct nowhere" in d.why


def test_definitions_that_disagree_leave_it_unknown():
    t = pointer_member("struct twin *", "p", "lock")
    index = index_with(member("struct twin", "lock", "struct semaphore", "include/a.h"),
                       member("struct twin", "lock", "spinlock_t", "include/b.h"))
    (d,) = t.denote(index, by_address=True)
    assert d.kind == "unknown" and "disagree" in d.why


def test_both_branches_of_a_conditional_are_named():
    # up(c ? &d->a : &d->b)
    t = tree({"kind": "acc_cond", "at": [1, 4, 1, 30], "then": [1, 8, 1, 14],
              "otherwise": [1, 17, 1, 30]},
             typed((1, 9, 1, 10), "struct d *"), ident((1, 9, 1, 10), "d"),
             member_rec((1, 9, 1, 10), (1, 14), "a"),
             typed((1, 18, 1, 19), "struct d *"), ident((1, 18, 1, 19), "d"),
             member_rec((1, 18, 1, 19), (1, 30), "b"), arg=(1, 4, 1, 30))
    index = index_with(member("struct d", "a", "struct semaphore"),
                       member("struct d", "b", "struct semaphore"))
    found = t.denote(index, by_address=False)
    assert [(d.kind, d.field) for d in found] == [("field", "a"), ("field", "b")]


def test_a_pointer_argument_is_a_pointer():
    t = tree(ident((1, 5, 1, 8), "sem"), typed((1, 5, 1, 8), "struct semaphore *"),
             arg=(1, 5, 1, 8))
    (d,) = t.denote(index_with(), by_address=False)
    assert d.kind == "pointer"


# ---------------------------------------------------------- visibility


def paths_of(files: list[str]) -> HeaderPaths:
    by_path: dict[str, list[str]] = {}
    by_name: dict[str, list[str]] = {}
    from sem2mutex.audit.visibility import include_roots
    for f in files:
        if f.endswith(".h"):
            by_name.setdefault(f.rsplit("/", 1)[-1], []).append(f)
            for root in include_roots(f):
                by_path.setdefault(f[len(root):], []).append(f)
    return HeaderPaths(set(files), by_path, by_name)


def test_include_graph_resolves_quotes_angles_and_asm():
    files = ["drivers/x/x.c", "drivers/x/x.h", "include/linux/fs.h", "include/asm-i386/sem.h",
             "include/asm-ppc/sem.h", "drivers/y/y.c", "drivers/y/private.h"]
    graph = IncludeGraph.build({
        "drivers/x/x.c": ['#include "x.h"', "#include <linux/fs.h>", "#include <asm/sem.h>"],
        "drivers/y/y.c": ['#include "private.h"']}, paths_of(files))
    assert graph.edges["drivers/x/x.c"] == {"drivers/x/x.h", "include/linux/fs.h",
                                            "include/asm-i386/sem.h", "include/asm-ppc/sem.h"}
    seen = Visibility(graph)
    assert seen.sees("drivers/x/x.c", "include/asm-ppc/sem.h")
    assert not seen.sees("drivers/x/x.c", "drivers/y/private.h")
    assert not seen.sees("drivers/x/x.c", "drivers/y/y.c")  # a .c file's own struct


def walked(edges: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_reach_bits_equal_a_walk_of_the_graph_through_include_cycles():
    rng = random.Random(11)
    names = [f"include/h{i}.h" for i in range(60)] + [f"drivers/c{i}.c" for i in range(30)]
    edges = {n: set(rng.sample(names[:60], rng.randint(0, 4))) for n in names}
    edges["include/h1.h"] |= {"include/h2.h"}
    edges["include/h2.h"] |= {"include/h1.h"}  # headers including each other
    seen = Visibility(IncludeGraph(edges))
    for file in rng.sample(names, len(names)):  # any order: what one walk leaves, the next uses
        # what the file includes, and what the .c files including it include
        view = walked(edges, file).union(*[walked(edges, c) for c in names
                                           if c.endswith(".c") and c != file
                                           and file in walked(edges, c)])
        assert seen.closure({file}) == view
        for other in names + ["include/nowhere.h"]:
            assert seen.sees(file, other) == (other in view or other == file), (file, other)
    assert seen.closure({"drivers/c1.c", "drivers/c2.c"}) == \
        walked(edges, "drivers/c1.c") | walked(edges, "drivers/c2.c")


def test_a_c_file_another_includes_sees_what_that_one_includes():
    # 2.6's ohci-hcd.c: #include "ohci.h", then #include "ohci-omap.c"
    files = ["drivers/usb/host/ohci-hcd.c", "drivers/usb/host/ohci.h",
             "drivers/usb/host/ohci-omap.c", "drivers/usb/host/ehci-hcd.c",
             "drivers/usb/host/ehci.h"]
    graph = IncludeGraph.build({
        "drivers/usb/host/ohci-hcd.c": ['#include "ohci.h"', '#include "ohci-omap.c"'],
        "drivers/usb/host/ehci-hcd.c": ['#include "ehci.h"']}, paths_of(files))
    seen = Visibility(graph)
    assert seen.sees("drivers/usb/host/ohci-omap.c", "drivers/usb/host/ohci.h")
    assert "drivers/usb/host/ohci.h" in seen.closure({"drivers/usb/host/ohci-omap.c"})
    assert not seen.sees("drivers/usb/host/ohci-omap.c", "drivers/usb/host/ehci.h")
    assert not seen.sees("drivers/usb/host/ehci-hcd.c", "drivers/usb/host/ohci.h")


def test_an_include_no_usual_path_resolves_names_every_header_ending_so():
    files = ["drivers/x/x.c", "drivers/x/include/regs.h", "drivers/z/regs.h"]
    graph = IncludeGraph.build({"drivers/x/x.c": ['#include "include/regs.h"',
                                                  "#include <regs.h>"]}, paths_of(files))
    assert graph.edges["drivers/x/x.c"] == {"drivers/x/include/regs.h", "drivers/z/regs.h"}


def test_parse_directive():
    assert parse_directive('#include "a/b.h"') == (True, "a/b.h")
    assert parse_directive("#  include <linux/x.h>") == (False, "linux/x.h")
    assert parse_directive("#include UCODE(x)") is None


def test_a_struct_named_by_its_typedef_and_a_pointer_typedef():
    # typedef struct st { ... } st_t;  typedef st_t *st_p;  down(&p->sem), p an st_p
    t = pointer_member("st_p", "p", "sem")
    index = index_with(member("st_t", "sem", "struct semaphore"),
                       {"kind": "typedef", "file": "include/x/x.h", "line": 1, "name": "st_t",
                        "type": "struct st {  struct semaphore sem ; }"},
                       {"kind": "typedef", "file": "include/x/x.h", "line": 2, "name": "st_p",
                        "type": "struct st *"})
    (d,) = t.denote(index, by_address=True)
    assert (d.kind, d.container, d.field) == ("field", "st_t", "sem")


def test_the_pointer_name_of_an_anonymous_struct_typedef_of_two_names():
    # typedef struct { struct semaphore mutex; } dabusb_t, *pdabusb_t; (2.6's dabusb.h)
    body = "struct {  struct semaphore mutex ; }"
    t = pointer_member("pdabusb_t", "s", "mutex")
    index = index_with(member("dabusb_t", "mutex", "struct semaphore"),
                       {"kind": "typedef", "file": "include/x/x.h", "line": 3,
                        "name": "dabusb_t", "type": body},
                       {"kind": "typedef", "file": "include/x/x.h", "line": 3,
                        "name": "pdabusb_t", "type": body + " *"})
    (d,) = t.denote(index, by_address=True)
    assert (d.kind, d.container, d.field) == ("field", "dabusb_t", "mutex")
    assert index.canonical(CType("pdabusb_t"), C_FILE) == CType("dabusb_t", 1)
    # another file's struct of the same body is not this one's name
    elsewhere = index_with({"kind": "typedef", "file": "include/y/y.h", "line": 1,
                            "name": "other_t", "type": body},
                           {"kind": "typedef", "file": "include/x/x.h", "line": 3,
                            "name": "pdabusb_t", "type": body + " *"})
    assert elsewhere.canonical(CType("pdabusb_t"), C_FILE) is None


def test_a_member_no_definition_has_is_code_never_compiled():
    t = pointer_member("struct gs *", "p", "gone_sem")
    index = index_with(member("struct gs", "kept", "int"))
    (d,) = t.denote(index, by_address=True)
    assert d.kind == "other-type" and "never compiled" in d.why


def test_a_struct_of_the_same_name_in_another_c_file_is_not_this_one():
    index = index_with(member("cs_t", "open_mutex", "struct semaphore", "sound/sparc/cs.c"),
                       {"kind": "typedef", "file": "include/sound/cs.h", "line": 1,
                        "name": "cs_t", "type": "struct _cs"},
                       member("struct _cs", "open_mutex", "struct semaphore",
                              "include/sound/cs.h"))
    assert index.canonical(CType("cs_t", 1), "sound/isa/cs_lib.c") == CType("struct _cs", 1)


def test_wrapper_groups_never_share_a_file():
    from sem2mutex.audit.wrappers import Wrappers, disjoint_groups, wrapper_sets
    a = Wrappers("a", ("a_lock",), ("a_unlock",), ("x.c",))
    b = Wrappers("b", ("b_lock",), ("b_unlock",), ("x.c",))
    c = Wrappers("c", ("c_lock",), ("c_unlock",), ("y.c",))
    twin = Wrappers("a2", ("a_lock",), ("a_unlock",), ("w.c",))  # same names: one set
    sets = wrapper_sets([a, b, c, twin], {"a": {"x.c"}, "b": {"x.c", "z.c"}, "c": {"y.c"},
                                          "a2": {"w.c"}})
    assert len(sets) == 3
    groups = disjoint_groups(sets)
    for group in groups:
        used = [f for ws in group for f in ws.files]
        assert len(used) == len(set(used))
    assert sorted(len(g) for g in groups) == [1, 2]


def test_a_static_wrapper_of_a_header_is_looked_for_where_it_is_named():
    from sem2mutex.audit.wrappers import WrapperAnalysis, Wrappers
    mentions = {"affs_lock_ext": {"fs/affs/affs.h", "fs/affs/file.c"},
                "affs_unlock_ext": {"fs/affs/affs.h", "fs/affs/file.c"},
                "probe_on": {"kernel/irq.c", "drivers/other.c"}, "probe_off": {"kernel/irq.c"}}
    header = Wrappers("i", ("affs_lock_ext",), ("affs_unlock_ext",), ("fs/affs/affs.h",))
    static = {("fs/affs/affs.h", "affs_lock_ext"), ("fs/affs/affs.h", "affs_unlock_ext"),
              ("kernel/irq.c", "probe_on"), ("kernel/irq.c", "probe_off")}
    assert WrapperAnalysis.files_of(header, static, mentions) == \
        {"fs/affs/affs.h", "fs/affs/file.c"}
    # static in a .c file: only that file can call it (drivers/other.c has its own)
    own = Wrappers("p", ("probe_on",), ("probe_off",), ("kernel/irq.c",))
    assert WrapperAnalysis.files_of(own, static, mentions) == {"kernel/irq.c"}


def test_an_address_given_to_another_lock_types_function_is_no_escape():
    from sem2mutex.audit.facts import escapes

    def escape(line, callee):
        return {"kind": "escape", "file": "drivers/x/x.c", "line": line, "col": 1,
                "function": "f", "shape": "field", "field": "lock", "container": None,
                "via": "call", "callee": callee}
    recs = [escape(1, "spin_lock"), escape(2, "write_lock_irq"), escape(3, "atomic_read"),
            escape(4, "my_helper"),
            escape(5, "mutex_lock"),  # 2.6's XFS: a macro over a semaphore
            escape(6, "down_write")]  # i810_dma.c: #define down_write down
    kept = escapes({"escape": recs}, {"lock"})
    assert [(e.pos.line, e.callee) for e in kept] == \
        [(4, "my_helper"), (5, "mutex_lock"), (6, "down_write")]


def test_a_file_naming_another_sets_wrappers_is_not_in_its_group():
    from sem2mutex.audit.wrappers import Wrappers, disjoint_groups, wrapper_sets
    # a.c's static lock_dev()/unlock_dev() are looked for in a.c only;
    # b.c, a file of the i2c wrappers, has a static lock_dev() of its own:
    # a run naming both sets would report b.c's lock_dev() calls, taken
    # there for the i2c set's
    own = Wrappers("a", ("lock_dev",), ("unlock_dev",), ("drivers/a.c",))
    i2c = Wrappers("p", ("i2c_lock",), ("i2c_unlock",), ("arch/low_i2c.c",))
    mentions = {"lock_dev": {"drivers/a.c", "drivers/b.c"},
                "unlock_dev": {"drivers/a.c", "drivers/b.c"},
                "i2c_lock": {"arch/low_i2c.c", "drivers/b.c"},
                "i2c_unlock": {"arch/low_i2c.c", "drivers/b.c"}}
    sets = wrapper_sets([own, i2c], {"a": {"drivers/a.c"},
                                     "p": {"arch/low_i2c.c", "drivers/b.c"}}, mentions)
    assert sorted(len(g) for g in disjoint_groups(sets)) == [1, 1]
    # sets whose files name neither's wrappers share a run
    other = Wrappers("o", ("o_lock",), ("o_unlock",), ("fs/o.c",))
    sets = wrapper_sets([own, other], {"a": {"drivers/a.c"}, "o": {"fs/o.c"}},
                        {**mentions, "o_lock": {"fs/o.c"}, "o_unlock": {"fs/o.c"}})
    assert [len(g) for g in disjoint_groups(sets)] == [2]
