"""No run and no test writes inside the repository: outputs go to OUTDIR,
scratch copies and builds to the cache."""
from __future__ import annotations

import subprocess

from conftest import FIXTURE_TREE, REPO, run_convert


def repo_state() -> set[str]:
    """Every path git sees as changed, new or ignored, Python's bytecode aside."""
    done = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
                          cwd=REPO, capture_output=True, text=True, check=True)
    return {line for line in done.stdout.splitlines() if "__pycache__" not in line}


def test_a_run_writes_nothing_into_the_repository(tmp_path):
    before = repo_state()
    run_convert(str(FIXTURE_TREE), "--analyze-only", "-q", "-o", str(tmp_path / "out"))
    assert (tmp_path / "out" / "audit.json").is_file()
    assert repo_state() == before
