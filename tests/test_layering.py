"""The shape of the code: who may import whom, and who starts which program.

    qemu/                 a leaf: imports nothing of sem2mutex
    sem2mutex/tools/      the tools layer: imports no stage package
    sem2mutex/{audit,series,proof}/   the stages, over the tools layer

spatch, git and grep are each started from exactly one module of the
tools layer, so their flags, environment and error handling are decided
in one place.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO

STAGES = ("sem2mutex.audit", "sem2mutex.series", "sem2mutex.proof", "sem2mutex.cli")
LAUNCHERS = {"spatch": "sem2mutex/tools/spatch.py", "git": "sem2mutex/tools/git.py",
             "grep": "sem2mutex/tools/grep.py"}
SUBPROCESS_CALLS = ("run", "Popen", "call", "check_call", "check_output")


def python_files(*dirs: str) -> list[Path]:
    return sorted(p for d in dirs for p in (REPO / d).rglob("*.py"))


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def test_qemu_imports_nothing_of_sem2mutex():
    files = python_files("qemu")
    assert files
    leaks = {rel(p): sorted(m for m in imported_modules(p) if m.split(".")[0] == "sem2mutex")
             for p in files}
    assert {f: m for f, m in leaks.items() if m} == {}


def test_tools_layer_imports_no_stage_package():
    files = python_files("sem2mutex/tools")
    assert len(files) > 5
    leaks = {rel(p): sorted(m for m in imported_modules(p) if m.startswith(STAGES))
             for p in files}
    assert {f: m for f, m in leaks.items() if m} == {}


def program_started(call: ast.Call) -> str | None:
    """The program a subprocess call starts, when its argv is a list literal:
    a string literal, or the name of the variable holding the path."""
    if not call.args or not isinstance(call.args[0], ast.List) or not call.args[0].elts:
        return None
    first = call.args[0].elts[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return Path(first.value).name
    text = ast.unparse(first)
    return "spatch" if "spatch" in text else text


def subprocess_calls(path: Path) -> list[tuple[str, int]]:
    """(program, line) of every subprocess call in PATH; "?" when the argv is
    not a list literal (then it must be a module allowed to start anything)."""
    tree = ast.parse(path.read_text(), str(path))
    calls = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in SUBPROCESS_CALLS
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "subprocess"):
            calls.append((program_started(node) or "?", node.lineno))
    return calls


@pytest.mark.parametrize("program", sorted(LAUNCHERS))
def test_each_program_is_started_from_one_module(program):
    starters = {rel(p) for p in python_files("sem2mutex", "qemu")
                for name, _ in subprocess_calls(p) if name == program}
    assert starters == {LAUNCHERS[program]}


def test_every_subprocess_call_names_its_program():
    # a call whose program the scan cannot see could start spatch, git or grep
    unknown = {rel(p): [line for name, line in subprocess_calls(p) if name == "?"]
               for p in python_files("sem2mutex", "qemu")}
    allowed = {"qemu/boot.py", "qemu/build.py", "qemu/initramfs.py", "qemu/kconfig.py",
               "qemu/verdict.py", "sem2mutex/proof/compile.py"}  # make, qemu, kunit.py
    assert {f: lines for f, lines in unknown.items() if lines and f not in allowed} == {}


def test_the_scan_sees_each_launch():
    # the checks above are only worth something if the scan finds the calls
    for program, module in LAUNCHERS.items():
        assert program in {name for name, _ in subprocess_calls(REPO / module)}
