"""Typedefs of struct semaphore (2.6's XFS mutex_t, sema_t): which names
are one, and the program that finds their variables (no spatch)."""
from __future__ import annotations

from sem2mutex.audit.facts import field_decls, semaphore_typedefs, typedef_program


def typedef(name: str, target: str) -> dict:
    return {"kind": "typedef", "name": name, "type": target, "file": "fs/xfs/mutex.h",
            "line": 1, "col": 0, "function": name}


def test_typedefs_of_struct_semaphore_through_other_typedefs():
    records = [typedef("mutex_t", "struct semaphore"), typedef("sema_t", "struct semaphore"),
               typedef("lock_t", "mutex_t"), typedef("semp_t", "struct semaphore *"),
               typedef("sems_t", "struct semaphore [ 4 ]"), typedef("count_t", "int")]
    assert semaphore_typedefs(records) == ["lock_t", "mutex_t", "sema_t"]


def test_a_name_also_typedef_to_something_else_is_none():
    records = [typedef("mutex_t", "struct semaphore"), typedef("mutex_t", "struct my_mutex")]
    assert semaphore_typedefs(records) == []


def test_members_of_a_semaphore_typedef_are_semaphores():
    member = {"kind": "member", "container": "xfs_mount_t", "field": "m_ilock",
              "type": "mutex_t", "file": "fs/xfs/xfs_mount.h", "line": 303, "col": 1,
              "function": "something_else"}
    grouped = {"member": [member]}
    assert field_decls(grouped) == []  # the typedef unknown: no semaphore
    grouped["typedef"] = [typedef("mutex_t", "struct semaphore")]
    (decl,) = field_decls(grouped)
    assert (decl.container, decl.field, decl.typedef) == ("xfs_mount_t", "m_ilock", "mutex_t")


def test_the_program_has_the_rules_once_per_name():
    text = typedef_program(["mutex_t", "sema_t"])
    assert "typedef sem_typedef_t;" not in text  # named in the header comment only
    assert text.count("@initialize:python") == 1
    for name in ("mutex_t", "sema_t"):
        assert f"typedef {name};" in text and f"@tdvar_{name} depends on report@" in text
