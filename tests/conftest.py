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


def run_convert(*args: str, env: dict[str, str] | None = None,
                check: bool = True) -> subprocess.CompletedProcess:
    """Run ./convert.py with this interpreter; return the finished process."""
    done = subprocess.run([sys.executable, str(CONVERT), *args], capture_output=True,
                          text=True, env=env)
    if check and done.returncode != 0:
        raise AssertionError(f"convert.py {' '.join(args)} exited {done.returncode}:\n"
                             f"{done.stderr}")
    return done


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
