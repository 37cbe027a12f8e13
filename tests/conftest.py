"""Shared test helpers: paths, running convert.py, the default tree."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURE_TREE = REPO / "tests" / "fixtures" / "tree"
LEGACY_TREE = REPO / "tests" / "fixtures" / "legacy"
CONVERT = REPO / "convert.py"

sys.path.insert(0, str(REPO))


# Fixtures that need a whole kernel tree, and those that build or boot a
# kernel: a test using one is marked `tree` or `kernel`; every other test
# is `fast` (pytest -m fast: developers run it on every change).
TREE_FIXTURES = {"default_run", "default_audit", "default_tree", "default_6_1", "pristine",
                 "pristine_tree",
                 "real_tree", "real_run", "by_id", "tree_2_6", "audit_2_6"}
KERNEL_FIXTURES = {"good_boot", "wrong_boot", "simple_mutex_boot", "proof_boot", "bench_boot",
                   "proof_tree", "scratch_tree", "good_result", "good_series"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        names = set(item.fixturenames)
        if names & KERNEL_FIXTURES:
            item.add_marker(pytest.mark.kernel)
        elif names & TREE_FIXTURES:
            item.add_marker(pytest.mark.tree)
        if not any(item.get_closest_marker(m) for m in ("tree", "kernel")):
            item.add_marker(pytest.mark.fast)


def run_convert(*args: str, env: dict[str, str] | None = None,
                check: bool = True) -> subprocess.CompletedProcess:
    """Run ./convert.py with this interpreter; return the finished process."""
    done = subprocess.run([sys.executable, str(CONVERT), *args], capture_output=True,
                          text=True, env=env)
    if check and done.returncode != 0:
        raise AssertionError(f"convert.py {' '.join(args)} exited {done.returncode}:\n"
                             f"{done.stderr}")
    return done


def check_golden(golden: Path, text: str) -> None:
    """TEXT must equal the golden file; SEM2MUTEX_REGEN_GOLDEN=1 rewrites it
    (a developer's step, reviewed in the diff; tests never write it)."""
    if os.environ.get("SEM2MUTEX_REGEN_GOLDEN") == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert golden.is_file(), f"missing golden file {golden}; run with SEM2MUTEX_REGEN_GOLDEN=1"
    assert text == golden.read_text(), f"output differs from {golden}"


def load_json(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.fixture(scope="session")
def fixture_tree_copy(tmp_path_factory) -> Path:
    """A copy of the fixture tree the tests may make read-only or git-init."""
    dest = tmp_path_factory.mktemp("tree") / "linux"
    shutil.copytree(FIXTURE_TREE, dest)
    return dest


@pytest.fixture(scope="session")
def fixture_audit(tmp_path_factory, fixture_tree_copy) -> dict:
    out = tmp_path_factory.mktemp("fixture-audit")
    run_convert(str(fixture_tree_copy), "--analyze-only", "-q", "-o", str(out))
    return load_json(out / "audit.json") | {"_outdir": str(out)}


def default_tree() -> Path:
    from sem2mutex.audit.intake import ensure_default_tree
    from sem2mutex.paths import cache_layout
    return ensure_default_tree(cache_layout())


@pytest.fixture(scope="session")
def default_run(tmp_path_factory) -> Path:
    """./convert.py on the whole default tree (audit and series), once per session."""
    if not Path("/usr/src/linux-source-6.1.tar.xz").exists() and \
            not (default_tree_path() / "Makefile").exists():
        pytest.skip("linux-source-6.1 is not installed")
    out = tmp_path_factory.mktemp("default-run")
    run_convert("-q", "-o", str(out), "--identity", "sem2mutex tests <tests@sem2mutex.invalid>")
    return out


@pytest.fixture(scope="session")
def default_audit(default_run) -> dict:
    """The analysis of the whole default tree."""
    return load_json(default_run / "audit.json")


def default_tree_path() -> Path:
    from sem2mutex.paths import cache_layout
    return cache_layout().default_tree


def without_spatch_path() -> dict[str, str]:
    """An environment whose PATH has no spatch (but still has python, grep, gcc)."""
    env = dict(os.environ)
    dirs = [d for d in env.get("PATH", "").split(os.pathsep)
            if d and not (Path(d) / "spatch").exists()]
    env["PATH"] = os.pathsep.join(dirs)
    return env
