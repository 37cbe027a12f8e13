"""The series' scratch repository commits through one `git fast-import`
and keeps no index: what it commits must still be exactly the working
tree, file for file, and what it has not committed must be seen."""
from __future__ import annotations

import subprocess

from sem2mutex.series.minirepo import BASE_TAG, MiniRepo

IDENTITY = "A Tester <tester@example.invalid>"


def git(repo, *args):
    repo.flush()  # the queued commits, as the series' own git() does
    return subprocess.run(["git", *args], cwd=repo.path, capture_output=True, text=True,
                          check=True).stdout


def make_tree(root):
    (root / "drivers/x").mkdir(parents=True)
    (root / "drivers/x/x.c").write_text("int x;\n")
    (root / "drivers/x/x.h").write_text("extern int x;\n")
    (root / "kernel").mkdir()
    (root / "kernel/k.c").write_text("int k;\n")
    (root / "kernel/k.c").chmod(0o755)


def test_commits_hold_the_working_tree(tmp_path):
    make_tree(tmp_path / "tree")
    repo = MiniRepo.create(tmp_path / "repo", tmp_path / "tree",
                           ["drivers/x/x.c", "drivers/x/x.h", "kernel/k.c"], IDENTITY)
    assert git(repo, "ls-tree", "-r", "--name-only", BASE_TAG).split() == \
        ["drivers/x/x.c", "drivers/x/x.h", "kernel/k.c"]
    assert "100755 blob" in git(repo, "ls-tree", BASE_TAG, "kernel/k.c")
    assert repo.uncommitted() == []

    # a change of every kind, committed as "every change"
    (repo.path / "drivers/x/x.c").write_text("int x = 1;\n")
    (repo.path / "drivers/x/new.c").write_text("int n;\n")
    (repo.path / "drivers/x/x.h").unlink()
    assert repo.uncommitted() == ["drivers/x/new.c", "drivers/x/x.c", "drivers/x/x.h"]
    assert repo.commit("core: everything", "Body.")
    # named files only: the other change stays uncommitted
    (repo.path / "kernel/k.c").write_text("int k = 2;\n")
    (repo.path / "drivers/x/x.c").write_text("int x = 2;\n")
    assert repo.commit("unit: kernel", "Body.", ["kernel/k.c"])
    assert not repo.commit("unit: nothing new", "Body.", ["kernel/k.c"])
    assert repo.uncommitted() == ["drivers/x/x.c"]

    log = git(repo, "log", "--format=%s|%an <%ae>", f"{BASE_TAG}..HEAD").splitlines()
    assert log == [f"unit: kernel|{IDENTITY}", f"core: everything|{IDENTITY}"]
    assert git(repo, "show", "HEAD:kernel/k.c") == "int k = 2;\n"
    assert git(repo, "show", "HEAD~1:drivers/x/x.c") == "int x = 1;\n"
    assert git(repo, "ls-tree", "-r", "--name-only", "HEAD").split() == \
        ["drivers/x/new.c", "drivers/x/x.c", "kernel/k.c"]
    assert git(repo, "log", "-1", "--format=%B", "HEAD~1") == "core: everything\n\nBody.\n\n"
