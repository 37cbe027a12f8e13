"""Tests of the --verify stage (sem2mutex/verify.py).

The first part runs in seconds: the pure helpers, the #include search on
tests/verify/tree/ (a few C files of our own), and whole verifications of
that small tree with compile checks switched off (``files=[]``), in a
cache of their own.

The second part verifies series built here against the real 6.1 tree, in
the shared cache (scratch repository ``verify``, build dirs
``verify-allmodconfig`` and ``verify-allmodconfig-base``), compiling only a
handful of files (``files=``):

- a good series: the counting-API patch, three "conversions" made by
  tests/verify/counting_rename.cocci (an x86 driver, an ARM board file, a
  driver that cannot be built on x86 at all) and the flag day;
- the same series with a patch applied twice, which git am refuses;
- a series whose driver patch calls a function that does not exist.

Cold (no scratch repository, no build dirs) it takes about 4 minutes on
2 cores: git add of the whole tree, allmodconfig and make prepare twice
(with and without the series), the old-API check of the whole tree.  Warm
it takes about half a minute: the scratch repository is reset, old-API
results are cached per file content and make finds the objects current.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sem2mutex.series import core_api

from sem2mutex.proof import compile as verify_compile, workspace
from sem2mutex.tools.api import OLD_NAMES
from sem2mutex.paths import CacheLayout, cache_layout
from sem2mutex.progress import Progress
from sem2mutex.errors import BadSeries
from sem2mutex.proof.compile import CompiledFile, HeaderNotFollowed
from sem2mutex.proof.verify import VerifyRequest, verify_series
from sem2mutex.tools.spatch import find_spatch

SPATCH = find_spatch()

HERE = Path(__file__).resolve().parent / "verify"
SMALL_TREE = HERE / "tree"
COUNTING_RENAME = HERE / "counting_rename.cocci"
MISSPELT_UP = HERE / "misspelt_up.cocci"

GIT_ENV = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               GIT_AUTHOR_NAME="Test Author", GIT_AUTHOR_EMAIL="author@example.org",
               GIT_COMMITTER_NAME="Test Author", GIT_COMMITTER_EMAIL="author@example.org")

IFS_SYSFS = "drivers/platform/x86/intel/ifs/sysfs.c"   # x86_64 allmodconfig builds it
ARM_SPC = "arch/arm/mach-versatile/spc.c"                 # another architecture
HP_SDC = "drivers/input/serio/hp_sdc.c"                   # "#error" on x86
SEMAPHORE_C = core_api.SEMAPHORE_SOURCE


# --- building series ----------------------------------------------------------

def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, check=True,
                          capture_output=True, text=True).stdout


class SeriesRepo:
    """A small git repository holding copies of a few files of a tree.

    Each change is made by a real tool (core_api's semantic patches, or a
    test .cocci) and committed; format() writes the series as git
    format-patch does, plus the series file.
    """

    def __init__(self, path: Path, pristine: Path, files: list[str]):
        self.path = path
        for rel in files:
            (path / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(pristine / rel, path / rel)
        git(path, "init", "-q")
        git(path, "add", ".")
        git(path, "commit", "-q", "-m", "base")
        self.base = git(path, "rev-parse", "HEAD").strip()

    def commit(self, subject: str, body: str = "Test change.") -> None:
        git(self.path, "commit", "-q", "-a", "-s", "-m", f"{subject}\n\n{body}")

    def spatch(self, cocci: Path, rels: list[str], subject: str) -> None:
        core_api.run_spatch(SPATCH, cocci, [self.path / rel for rel in rels], virtual="patch",
                            in_place=True)
        assert git(self.path, "status", "--porcelain", "--untracked-files=no"), \
            f"{cocci.name} changed nothing in {rels}"
        self.commit(subject)

    def counting_api(self) -> None:
        core_api.apply_counting_api(self.path, SPATCH)
        change = core_api.counting_api_change()
        self.commit(change.subject, change.body)

    def flag_day(self) -> None:
        core_api.apply_flag_day(self.path, SPATCH)
        change = core_api.flag_day_change()
        self.commit(change.subject, change.body)

    def format(self, out: Path) -> list[str]:
        out.mkdir(parents=True, exist_ok=True)
        git(self.path, "format-patch", "-q", "--cover-letter", "-o", str(out),
            f"{self.base}..HEAD")
        names = sorted(p.name for p in out.glob("0*.patch")
                       if p.name != "0000-cover-letter.patch")
        write_series_file(out, names)
        return names


def write_series_file(series_dir: Path, names: list[str]) -> None:
    (series_dir / "series").write_text("".join(f"{name}\n" for name in names))


def duplicate_patch(series_dir: Path, names: list[str], index: int) -> str:
    """Append a copy of names[index] to the series: it cannot apply twice."""
    again = f"{len(names) + 1:04d}-the-same-patch-again.patch"
    shutil.copyfile(series_dir / names[index], series_dir / again)
    write_series_file(series_dir, names + [again])
    return again


def quiet() -> Progress:
    return Progress(quiet=True)


# --- pure helpers -----------------------------------------------------------------

MAKE_OUTPUT = """\
  CC [M]  drivers/platform/x86/intel/ifs/sysfs.o
/scratch/verify/arch/arm/mach-versatile/spc.c: In function 've_spc_init':
/scratch/verify/arch/arm/mach-versatile/spc.c:476:9: error: implicit declaration of \
function 'sync_cache_w' [-Werror=implicit-function-declaration]
  476 |         sync_cache_w(info);
      |         ^~~~~~~~~~~~
cc1: all warnings being treated as errors
make[2]: *** [/scratch/verify/scripts/Makefile.build:255: arch/arm/mach-versatile/spc.o] Error 1
make[3]: *** No rule to make target 'drivers/foo/nonexist.o'.  Stop.
make[2]: *** [/scratch/verify/scripts/Makefile.build:508: drivers] Error 2
make[1]: *** [/scratch/verify/Makefile:2065: .] Error 2
make: *** [Makefile:250: __sub-make] Error 2
"""


def test_failed_targets_reads_make_errors():
    assert verify_compile.failed_targets(MAKE_OUTPUT) >= {"arch/arm/mach-versatile/spc.o",
                                                  "drivers/foo/nonexist.o"}
    assert "drivers/platform/x86/intel/ifs/sysfs.o" not in verify_compile.failed_targets(MAKE_OUTPUT)


def test_error_excerpt_starts_at_the_function_and_drops_the_tree_path():
    excerpt = verify_compile.error_excerpt(MAKE_OUTPUT, Path("/scratch/verify"))
    lines = excerpt.splitlines()
    assert lines[0] == "arch/arm/mach-versatile/spc.c: In function 've_spc_init':"
    assert "error: implicit declaration of function 'sync_cache_w'" in lines[1]
    assert "/scratch/verify" not in excerpt
    assert len(lines) <= verify_compile.ERROR_EXCERPT_LINES


@pytest.mark.parametrize("rel, expected", [
    ("arch/arm/mach-versatile/spc.c", "arch/arm code"),
    ("arch/um/kernel/mem.c", "arch/um code"),
    ("tools/testing/foo.c", "tools/ is user-space or host code"),
    ("arch/x86/kernel/cpu/common.c", None),
    ("drivers/input/serio/hp_sdc.c", None),
])
def test_unbuildable_reason_by_path(rel, expected):
    reason = verify_compile.unbuildable_reason(rel)
    assert (reason is None) == (expected is None)
    if expected:
        assert reason.startswith(expected)


def test_read_series_follows_the_series_file(tmp_path):
    for name in ("0001-a.patch", "0002-b.patch", "0000-cover-letter.patch"):
        (tmp_path / name).write_text("x")
    (tmp_path / "series").write_text("# quilt style comment\n0002-b.patch\n\n0001-a.patch\n")
    assert [p.name for p in workspace.read_series(tmp_path)] == ["0002-b.patch", "0001-a.patch"]


def test_read_series_refuses_missing_files(tmp_path):
    with pytest.raises(BadSeries, match="no series file"):
        workspace.read_series(tmp_path)
    (tmp_path / "series").write_text("0001-gone.patch\n")
    with pytest.raises(BadSeries, match="0001-gone.patch"):
        workspace.read_series(tmp_path)


# --- the small tree -----------------------------------------------------------------

@pytest.fixture
def small_tree(tmp_path) -> Path:
    """A private copy (its own inodes) that the scratch copy will link to."""
    tree = tmp_path / "pristine"
    shutil.copytree(SMALL_TREE, tree)
    return tree


@pytest.fixture
def small_layout(tmp_path) -> CacheLayout:
    return CacheLayout(tmp_path / "cache")


def small_git_repo(tree: Path) -> Path:
    """The small tree as a git repository, for the #include search alone."""
    git(tree, "init", "-q")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "base")
    return tree


def test_find_includers_follows_headers_and_local_lookup(small_tree):
    repo = small_git_repo(small_tree)
    includers, skipped = verify_compile.find_includers(
        repo, ["drivers/demo/demo.h", "include/linux/demo_api.h"], limit=10)
    assert skipped == []
    # demo.c directly, user.c through sub/inner.h, third.c through an -I path;
    # other.c's "demo.h" is the one next to it; arch/arm cannot be built.
    assert includers["drivers/demo/demo.h"] == {
        "drivers/demo/demo.c", "drivers/demo/user.c", "drivers/third/third.c"}
    assert includers["include/linux/demo_api.h"] == {"drivers/demo/api_user.c"}


def test_find_includers_gives_up_on_widely_included_headers(small_tree):
    repo = small_git_repo(small_tree)
    includers, skipped = verify_compile.find_includers(repo, ["drivers/demo/demo.h"], limit=2)
    assert skipped == [HeaderNotFollowed(
        "drivers/demo/demo.h", "included by more than 2 .c files (directly or through "
                               "other headers); not compiled one by one")]
    assert includers["drivers/demo/demo.h"] == set()


def test_may_include_prefers_the_file_next_to_the_includer(small_tree):
    assert not verify_compile.may_include(small_tree, "drivers/other/other.c", '"', "demo.h",
                                  "drivers/demo/demo.h")
    assert verify_compile.may_include(small_tree, "drivers/other/other.c", '"', "demo.h",
                              "drivers/other/demo.h")
    assert verify_compile.may_include(small_tree, "drivers/x/y.c", "<", "linux/demo_api.h",
                              "include/linux/demo_api.h")
    assert not verify_compile.may_include(small_tree, "drivers/x/y.c", "<", "linux/demo.h",
                                  "drivers/demo/demo.h")


def small_series(tmp_path: Path, tree: Path) -> tuple[Path, list[str]]:
    """Convert demo.c to down_sem(); legacy.c keeps down_interruptible()."""
    repo = SeriesRepo(tmp_path / "small-series-repo", tree, ["drivers/demo/demo.c"])
    repo.spatch(COUNTING_RENAME, ["drivers/demo/demo.c"], "demo: Use down_sem()")
    series = tmp_path / "small-series"
    return series, repo.format(series)


def test_small_tree_verification_without_compiling(tmp_path, small_tree, small_layout):
    series, names = small_series(tmp_path, small_tree)
    before = (small_tree / "drivers/demo/demo.c").read_bytes()
    req = VerifyRequest(spatch=SPATCH, tree=small_tree, series_dir=series, out_dir=tmp_path / "out",
                        files=[], layout=small_layout)
    result = verify_series(req, quiet())

    assert result.applied and result.series == names
    assert result.touched == ["drivers/demo/demo.c"]
    assert workspace.paths_named_in(small_layout.scratch(workspace.SCRATCH_NAME),
                                 workspace.read_series(series)) == {"drivers/demo/demo.c"}
    assert [(c.file, c.op, c.function, c.type) for c in result.old_api_left] == [
        ("drivers/demo/legacy.c", "down_interruptible", "legacy_poke", "semaphore"),
        ("drivers/demo/legacy.c", "up", "legacy_poke", "semaphore")]
    assert result.compiled == [] and result.not_checked == ["drivers/demo/demo.c"]
    assert not result.passed
    # The pristine copy kept its content; the scratch file has its own inode.
    scratch = small_layout.scratch(workspace.SCRATCH_NAME)
    assert (small_tree / "drivers/demo/demo.c").read_bytes() == before
    assert b"down_sem(" in (scratch / "drivers/demo/demo.c").read_bytes()
    assert not os.path.samefile(scratch / "drivers/demo/demo.c",
                                small_tree / "drivers/demo/demo.c")
    assert os.path.samefile(scratch / "drivers/demo/legacy.c",
                            small_tree / "drivers/demo/legacy.c")
    written = json.loads((tmp_path / "out" / "verify.json").read_text())
    assert written == result.to_json()
    assert written["old_api_left"][0]["context"] == "function"
    assert set(written) >= {"applied", "old_api_left", "compiled", "not_buildable"}


def test_small_tree_rerun_resets_and_keeps_mtimes(tmp_path, small_tree, small_layout):
    series, _ = small_series(tmp_path, small_tree)
    req = VerifyRequest(spatch=SPATCH, tree=small_tree, series_dir=series, out_dir=tmp_path / "out",
                        files=[], layout=small_layout)
    verify_series(req, quiet())
    scratch = small_layout.scratch(workspace.SCRATCH_NAME)
    first_base = git(scratch, "rev-parse", "HEAD~1").strip()
    mtime = (scratch / "drivers/demo/demo.c").stat().st_mtime_ns
    stray = scratch / "drivers/demo/stray.o"
    stray.write_text("left behind")

    again = verify_series(req, quiet())
    assert again.applied and again.base == first_base      # reset, not made anew
    assert again.counts["mtimes_kept"] == 1
    assert (scratch / "drivers/demo/demo.c").stat().st_mtime_ns == mtime
    assert not stray.exists()                              # git clean
    assert again.counts["old_api_cached"] == again.counts["old_api_candidates"] == 1
    assert again.old_api_left == verify_series(req, quiet()).old_api_left


def test_small_tree_changed_file_gets_a_new_mtime(tmp_path, small_tree, small_layout):
    series, _ = small_series(tmp_path, small_tree)
    req = VerifyRequest(spatch=SPATCH, tree=small_tree, series_dir=series, out_dir=tmp_path / "out",
                        files=[], layout=small_layout)
    verify_series(req, quiet())
    scratch = small_layout.scratch(workspace.SCRATCH_NAME)
    mtime = (scratch / "drivers/demo/demo.c").stat().st_mtime_ns
    # Another series touching the same file differently.
    other = SeriesRepo(tmp_path / "other-repo", small_tree, ["drivers/demo/demo.c"])
    other.spatch(MISSPELT_UP, ["drivers/demo/demo.c"], "demo: Misspell up()")
    other_dir = tmp_path / "other-series"
    other.format(other_dir)
    result = verify_series(VerifyRequest(spatch=SPATCH, tree=small_tree, series_dir=other_dir,
                                         out_dir=tmp_path / "out", files=[],
                                         layout=small_layout), quiet())
    assert result.counts["mtimes_kept"] == 0
    assert (scratch / "drivers/demo/demo.c").stat().st_mtime_ns > mtime
    assert b"up_sem_misspelt(" in (scratch / "drivers/demo/demo.c").read_bytes()


def test_small_tree_patch_that_does_not_apply(tmp_path, small_tree, small_layout):
    series, names = small_series(tmp_path, small_tree)
    again = duplicate_patch(series, names, 0)
    req = VerifyRequest(spatch=SPATCH, tree=small_tree, series_dir=series, out_dir=tmp_path / "out",
                        layout=small_layout)
    result = verify_series(req, quiet())
    assert not result.applied
    assert result.failed_patch == again
    assert "patch does not apply" in result.apply_error
    assert result.old_api_left is None and result.compiled == []
    assert set(result.skipped) == {"old_api_left", "compile"}
    assert again in result.skipped["compile"]
    scratch = small_layout.scratch(workspace.SCRATCH_NAME)
    assert git(scratch, "rev-parse", "HEAD").strip() == result.base
    assert not (scratch / ".git" / "rebase-apply").exists()
    written = json.loads((tmp_path / "out" / "verify.json").read_text())
    assert written["applied"] is False and written["old_api_left"] is None


def test_small_tree_changed_pristine_tree_makes_a_new_scratch_repo(tmp_path, small_tree,
                                                                   small_layout):
    series, _ = small_series(tmp_path, small_tree)
    req = VerifyRequest(spatch=SPATCH, tree=small_tree, series_dir=series, out_dir=tmp_path / "out",
                        files=[], layout=small_layout)
    first = verify_series(req, quiet())
    makefile = small_tree / "Makefile"
    makefile.write_text(makefile.read_text().replace("SUBLEVEL = 0", "SUBLEVEL = 1"))
    second = verify_series(req, quiet())
    assert second.version == "6.1.1" and first.version == "6.1.0"
    assert second.base != first.base


# --- the real 6.1 tree -------------------------------------------------------------

@pytest.fixture(scope="module")
def pristine() -> Path:
    from sem2mutex.audit.intake import ensure_default_tree
    return ensure_default_tree(cache_layout())


@pytest.fixture(scope="module")
def good_series(tmp_path_factory, pristine) -> tuple[Path, list[str]]:
    work = tmp_path_factory.mktemp("good-series")
    repo = SeriesRepo(work / "repo", pristine, list(core_api.CORE_FILES)
                      + [IFS_SYSFS, ARM_SPC, HP_SDC])
    repo.counting_api()
    repo.spatch(COUNTING_RENAME, [IFS_SYSFS], "platform/x86/intel/ifs: Use down_sem()")
    repo.spatch(COUNTING_RENAME, [ARM_SPC], "ARM: vexpress/spc: Use down_sem()")
    repo.spatch(COUNTING_RENAME, [HP_SDC], "Input: hp_sdc - Use down_sem()")
    repo.flag_day()
    return work / "series", repo.format(work / "series")


GOOD_FILES = [SEMAPHORE_C, IFS_SYSFS, HP_SDC]


@pytest.fixture(scope="module")
def good_result(tmp_path_factory, pristine, good_series):
    series, _ = good_series
    out = tmp_path_factory.mktemp("good-out")
    req = VerifyRequest(spatch=SPATCH, tree=pristine, series_dir=series, out_dir=out, files=GOOD_FILES)
    return verify_series(req, quiet()), out


def test_good_series_applies(good_result, good_series):
    result, _ = good_result
    assert result.applied and result.failed_patch is None
    assert result.series == good_series[1] and len(result.series) == 5
    assert result.touched == sorted([*core_api.CORE_FILES, IFS_SYSFS, ARM_SPC, HP_SDC])


def test_good_series_reports_the_old_api_callers_it_left(good_result):
    result, _ = good_result
    left = result.old_api_left
    seen = {(c.file, c.op, c.function, c.type) for c in left}
    # down_console_sem() is a macro: reported without a function.
    assert ("kernel/printk/printk.c", "down", None, "semaphore") in seen
    assert ("kernel/printk/printk.c", "up", "__up_console_sem", "semaphore") in seen
    assert any(c.type == "unknown type" for c in left)
    assert not {c.file for c in left} & {IFS_SYSFS, ARM_SPC, HP_SDC, *core_api.CORE_FILES}
    assert {c.op for c in left} <= set(OLD_NAMES)
    assert len(left) > 500 and not result.passed


def test_good_series_compiles_what_x86_can_build(good_result):
    result, _ = good_result
    assert result.compiled == [CompiledFile(IFS_SYSFS, True, None, "touched"),
                               CompiledFile(SEMAPHORE_C, True, None, "touched")]
    reasons = {n.file: n.reason for n in result.not_buildable}
    assert set(reasons) == {ARM_SPC, HP_SDC}
    assert reasons[ARM_SPC].startswith("arch/arm code")
    assert "without the series either" in reasons[HP_SDC]
    assert "No support for device registration on this arch" in reasons[HP_SDC]
    assert [h.header for h in result.headers_not_followed] == ["include/linux/semaphore.h"]
    assert result.not_checked == []


def test_good_series_verify_json(good_result):
    result, out = good_result
    written = json.loads((out / "verify.json").read_text())
    assert written == result.to_json()
    assert written["applied"] is True
    assert written["compiled"][0] == {"file": IFS_SYSFS, "ok": True, "error": None,
                                      "why": "touched", "fails_without_series": None}
    assert {"file", "line", "function", "op", "type"} <= set(written["old_api_left"][0])
    assert written["timings"]["git_am"] > 0 and written["timings"]["compile"] > 0
    assert written["base"] == result.base and len(written["base"]) == 40


def test_good_series_left_the_pristine_tree_alone(good_result, pristine):
    result, _ = good_result
    scratch = cache_layout().scratch(workspace.SCRATCH_NAME)
    for rel in result.touched:
        assert b"down_sem" not in (pristine / rel).read_bytes()
        assert b"down_sem" in (scratch / rel).read_bytes()
        assert not os.path.samefile(scratch / rel, pristine / rel)


def head_log_length(scratch: Path) -> int:
    return len((scratch / ".git" / "logs" / "HEAD").read_text().splitlines())


def test_rerun_compiles_nothing_again(good_result, good_series, pristine, tmp_path):
    """Two runs of one series back to back: the second recompiles nothing.

    The scratch repository is shared with convert.py --verify; a run of
    another series in between (another process, waiting on the same lock)
    rightly makes the next run recompile, so the pair is retried then.
    """
    first, _ = good_result
    scratch = cache_layout().scratch(workspace.SCRATCH_NAME)
    build = cache_layout().build("verify-allmodconfig")
    objects = [build / (rel[:-2] + ".o") for rel in (SEMAPHORE_C, IFS_SYSFS)]
    req = VerifyRequest(spatch=SPATCH, tree=pristine, series_dir=good_series[0], out_dir=tmp_path,
                        files=GOOD_FILES)
    for _attempt in range(3):
        verify_series(req, quiet())
        before = [obj.stat().st_mtime_ns for obj in objects]
        log_before = head_log_length(scratch)
        again = verify_series(req, quiet())
        # One reset, one git am entry per patch: nobody else ran in between.
        if head_log_length(scratch) == log_before + 1 + len(good_series[1]):
            break
    else:
        pytest.skip("other verifications kept running between the two runs")
    assert again.counts["mtimes_kept"] == len(again.touched)
    assert [obj.stat().st_mtime_ns for obj in objects] == before
    assert again.counts["old_api_parsed"] == 0
    assert again.old_api_left == first.old_api_left
    assert again.compiled == first.compiled and again.not_buildable == first.not_buildable


def test_series_that_does_not_apply(tmp_path, pristine, good_series):
    series = tmp_path / "series"
    shutil.copytree(good_series[0], series)
    again = duplicate_patch(series, good_series[1], 1)
    result = verify_series(VerifyRequest(spatch=SPATCH, tree=pristine, series_dir=series,
                                         out_dir=tmp_path / "out"), quiet())
    assert not result.applied and result.failed_patch == again
    assert IFS_SYSFS in result.apply_error
    assert result.old_api_left is None and result.compiled == []
    assert result.not_buildable == []
    assert "does not apply" in result.skipped["old_api_left"]


def test_series_with_a_compile_error(tmp_path_factory, pristine):
    work = tmp_path_factory.mktemp("broken-series")
    repo = SeriesRepo(work / "repo", pristine, list(core_api.CORE_FILES) + [IFS_SYSFS])
    repo.counting_api()
    repo.spatch(MISSPELT_UP, [IFS_SYSFS], "platform/x86/intel/ifs: Misspell up()")
    repo.format(work / "series")
    result = verify_series(VerifyRequest(spatch=SPATCH, tree=pristine, series_dir=work / "series",
                                         out_dir=work / "out",
                                         files=[SEMAPHORE_C, IFS_SYSFS]), quiet())
    assert result.applied
    by_file = {c.file: c for c in result.compiled}
    assert by_file[SEMAPHORE_C].ok
    broken = by_file[IFS_SYSFS]
    assert not broken.ok and broken.fails_without_series is False
    assert "up_sem_misspelt" in broken.error and "error" in broken.error
    assert str(pristine) not in broken.error
    assert not result.passed
    written = json.loads((work / "out" / "verify.json").read_text())
    entry = next(c for c in written["compiled"] if c["file"] == IFS_SYSFS)
    assert entry["ok"] is False and "up_sem_misspelt" in entry["error"]
