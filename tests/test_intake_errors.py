"""Bad input: one line naming the problem, a non-zero exit, nothing lost."""
from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from conftest import FIXTURE_TREE, load_json, run_convert


def error_line(done) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_not_a_directory(tmp_path):
    done = run_convert(str(tmp_path / "nope"), "--analyze-only", "-o", str(tmp_path / "o"),
                       check=False)
    assert done.returncode == 2
    assert "no such directory" in error_line(done)


def test_not_a_kernel_tree(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "Makefile").write_text("all:\n\ttrue\n")
    done = run_convert(str(tmp_path / "src"), "--analyze-only", "-o", str(tmp_path / "o"),
                       check=False)
    assert done.returncode == 2
    assert "is not a kernel tree" in error_line(done)
    assert not (tmp_path / "o" / "audit.json").exists()


def path_without_spatch(tmp_path: Path) -> str:
    """A PATH with every tool of the current one except spatch."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for d in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for tool in os.listdir(d):
            src = Path(d) / tool
            if tool != "spatch" and not (bindir / tool).exists() and os.access(src, os.X_OK):
                (bindir / tool).symlink_to(src)
    return str(bindir)


def test_missing_spatch(tmp_path):
    env = dict(os.environ, PATH=path_without_spatch(tmp_path))
    done = run_convert(str(FIXTURE_TREE), "--analyze-only", "-o", str(tmp_path / "o"),
                       env=env, check=False)
    assert done.returncode == 2
    assert "spatch not found" in error_line(done)


def test_unwritable_outdir(tmp_path):
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o555)
    try:
        if os.access(out, os.W_OK):  # root ignores permissions: use a file instead
            out.chmod(0o755)
            out = tmp_path / "a-file"
            out.write_text("")
        done = run_convert(str(FIXTURE_TREE), "--analyze-only", "-o", str(out / "sub"),
                           check=False)
    finally:
        (tmp_path / "ro").chmod(0o755)
    assert done.returncode == 2
    assert "output" in error_line(done)


def test_outdir_inside_tree_is_refused(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE_TREE, tree)
    done = run_convert(str(tree), "--analyze-only", "-o", str(tree / "out"), check=False)
    assert done.returncode == 2
    assert "inside the tree" in error_line(done)
    assert not (tree / "out").exists()


def snapshot(tree: Path) -> dict[str, tuple[int, float]]:
    return {str(p.relative_to(tree)): (p.stat().st_size, p.stat().st_mtime)
            for p in tree.rglob("*")}


def test_read_only_tree_is_analysed_and_left_untouched(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE_TREE, tree)
    before = snapshot(tree)
    for p in [tree, *tree.rglob("*")]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        run_convert(str(tree), "--analyze-only", "-q", "-o", str(tmp_path / "out"))
    finally:
        for p in [tree, *tree.rglob("*")]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    assert snapshot(tree) == before
    assert load_json(tmp_path / "out" / "audit.json")["instances"]


def test_stale_and_applied_verdicts(tmp_path):
    decisions = tmp_path / "decisions.toml"
    decisions.write_text('''
[[verdict]]
instance = "static:drivers/fixture/chardev.c:chardev_open_sem"
class = "counting"
reviewer = "Ada Reviewer <ada@example.org>"
reason = "open/release may run in different tasks"

[[verdict]]
instance = "static:drivers/fixture/gone.c:renamed_sem"
class = "mutex"
reviewer = "Ada Reviewer <ada@example.org>"
reason = "checked by hand"

[[verdict]]
instance = "pointer:fs/fixture/pointer.c:pointer_wait:sem"
class = "mutex"
reviewer = "Ada Reviewer <ada@example.org>"
reason = "cannot be"
''')
    done = run_convert(str(FIXTURE_TREE), "--analyze-only", "-q", "-o", str(tmp_path / "o"),
                       "--decisions", str(decisions))
    assert "stale verdict for static:drivers/fixture/gone.c:renamed_sem" in done.stderr
    audit = load_json(tmp_path / "o" / "audit.json")
    stale = {s["instance"]: s["why"] for s in audit["stale_verdicts"]}
    assert stale == {"static:drivers/fixture/gone.c:renamed_sem": "no such instance in this tree",
                     "pointer:fs/fixture/pointer.c:pointer_wait:sem":
                         "a pointer instance cannot become a mutex"}
    chardev = next(i for i in audit["instances"]
                   if i["id"] == "static:drivers/fixture/chardev.c:chardev_open_sem")
    assert chardev["class"] == "counting"
    assert chardev["pinned"]["classified_as"] == "ambiguous"
    assert chardev["pinned"]["reviewer"] == "Ada Reviewer <ada@example.org>"
    md = (tmp_path / "o" / "audit.md").read_text()
    assert "Stale reviewer verdicts" in md and "pinned to **counting**" in md


def test_bad_decisions_file(tmp_path):
    decisions = tmp_path / "bad.toml"
    decisions.write_text('[[verdict]]\ninstance = "x"\nclass = "mutexish"\n'
                         'reviewer = "a"\nreason = "b"\n')
    done = run_convert(str(FIXTURE_TREE), "--analyze-only", "-o", str(tmp_path / "o"),
                       "--decisions", str(decisions), check=False)
    assert done.returncode == 2
    assert "class must be one of" in error_line(done)


def test_bad_scope_directory(tmp_path):
    done = run_convert(str(FIXTURE_TREE), "--analyze-only", "-o", str(tmp_path / "o"),
                       "--dir", "no/such/dir", check=False)
    assert done.returncode == 2
    assert "--dir no/such/dir" in error_line(done)


def test_rerun_replaces_reports_atomically(tmp_path):
    out = tmp_path / "o"
    run_convert(str(FIXTURE_TREE), "--analyze-only", "-q", "-o", str(out))
    first = (out / "audit.json").read_text()
    run_convert(str(FIXTURE_TREE), "--analyze-only", "-q", "-o", str(out))
    assert sorted(p.name for p in out.iterdir()) == ["audit.json", "audit.md"]
    second = load_json(out / "audit.json")
    assert second["instances"] == load_json_text(first)["instances"]


def load_json_text(text: str) -> dict:
    import json
    return json.loads(text)


def test_proof_stages_need_the_series(tmp_path):
    for stage in ("--verify", "--boot", "--bench"):
        done = run_convert(str(FIXTURE_TREE), "--analyze-only", stage, "-o", str(tmp_path),
                           check=False)
        assert done.returncode == 2
        assert done.stderr.strip() == (f"convert.py: error: {stage} needs the series; "
                                       "it cannot be combined with --analyze-only")
    assert not list(tmp_path.iterdir())


def test_boot_timeout_must_be_positive(tmp_path):
    done = run_convert(str(FIXTURE_TREE), "--boot", "--boot-timeout", "0", "-o", str(tmp_path),
                       check=False)
    assert done.returncode == 2
    assert "--boot-timeout must be at least 1 second" in done.stderr
    assert not list(tmp_path.iterdir())
