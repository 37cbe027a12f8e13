"""The series stage end to end: format, git am, checkpatch, modes, idempotence.

Most tests run on a small kernel tree assembled from the default 6.1 tree
(the core files the series edits, the kernel's own scripts, two drivers)
plus the analysis fixtures, so a full series takes seconds.  The last
tests take the series of the whole default tree, shared with
test_default_tree.py through the `default_run` fixture.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import FIXTURE_TREE, REPO, load_json, run_convert
from sem2mutex.series.builder import MaintainersAhead, core_files
from sem2mutex.errors import ToolFailure
from sem2mutex.tools.cache import ResultCache
from sem2mutex.tools.kernel_scripts import checkpatch_all, get_maintainer, run_checkpatch
from sem2mutex.tools.maintainers import MaintainersFile

IDENTITY = "Series Test <series-test@sem2mutex.invalid>"
KERNEL_SCRIPTS = ["scripts/checkpatch.pl", "scripts/get_maintainer.pl", "scripts/spelling.txt",
                  "scripts/const_structs.checkpatch"]
DRIVERS = ["drivers/usb/usb-skeleton.c", "drivers/mux/core.c"]
GIT_ENV = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t.invalid", LC_ALL="C")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, capture_output=True,
                          text=True)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


def tree_digest(tree: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in tree.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(tree)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def patches_of(series_dir: Path) -> list[Path]:
    return [series_dir / name for name in (series_dir / "series").read_text().split()]


def git_am_copy(tree: Path, series_dir: Path, dest: Path) -> Path:
    """A git-initialised copy of TREE with the series applied by git am."""
    shutil.copytree(tree, dest)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "base")
    git(dest, "am", "-q", *map(str, patches_of(series_dir)))
    return dest


def checkpatch_errors(tree: Path, patch: Path) -> list[str]:
    done = subprocess.run(["perl", str(tree / "scripts/checkpatch.pl"), "--no-tree", "--terse",
                           str(patch)], cwd=tree, capture_output=True, text=True)
    # 0: clean (--terse then prints nothing); 1: it reported something.
    # Anything else (no perl, a broken script) must not pass for clean.
    assert done.returncode in (0, 1) and (done.returncode == 0 or done.stdout), done.stderr
    return [line for line in done.stdout.splitlines() if ": ERROR:" in line]


def old_api_declared(tree: Path) -> set[str]:
    header = (tree / "include/linux/semaphore.h").read_text()
    return {name for name in ("down", "down_interruptible", "down_trylock", "up")
            if re.search(rf"\b{name}\s*\(struct semaphore", header)}


@pytest.fixture(scope="module")
def default_6_1() -> Path:
    from conftest import default_tree
    if not Path("/usr/src/linux-source-6.1.tar.xz").exists():
        pytest.skip("linux-source-6.1 is not installed")
    return default_tree()


@pytest.fixture(scope="module")
def small_tree(tmp_path_factory, default_6_1) -> Path:
    tree = tmp_path_factory.mktemp("small") / "linux"
    for rel in ["Makefile", "MAINTAINERS", *KERNEL_SCRIPTS, *core_files(), *DRIVERS]:
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(default_6_1 / rel, tree / rel)
    for sub in ("drivers/fixture", "fs/fixture"):
        shutil.copytree(FIXTURE_TREE / sub, tree / sub)
    return tree


def make_series(tree: Path, out: Path, *extra: str) -> Path:
    run_convert(str(tree), "-q", "-o", str(out), "--identity", IDENTITY, *extra)
    return out


@pytest.fixture(scope="module")
def flag_day(tmp_path_factory, small_tree) -> Path:
    return make_series(small_tree, tmp_path_factory.mktemp("flag-day"))


@pytest.fixture(scope="module")
def gradual(tmp_path_factory, small_tree) -> Path:
    return make_series(small_tree, tmp_path_factory.mktemp("gradual"), "--mode", "gradual")


@pytest.fixture(scope="module")
def flag_day_applied(tmp_path_factory, small_tree, flag_day) -> Path:
    return git_am_copy(small_tree, flag_day, tmp_path_factory.mktemp("am") / "linux")


def test_series_order_and_kinds(flag_day):
    scope = load_json(flag_day / "scope.json")
    names = (flag_day / "series").read_text().split()
    assert names[0].startswith("0001-") and names == sorted(names)
    assert (flag_day / "0000-cover-letter.patch").is_file()
    subjects = [p.read_text().split("Subject: ", 1)[1].splitlines()[0] for p in patches_of(flag_day)]
    assert "down_sem" in subjects[0]
    assert "MUTEX_SIMPLE" in subjects[1] or "simple" in subjects[1].lower()
    assert "down()" in subjects[-1] or "remove" in subjects[-1].lower()
    assert all(s.startswith("[PATCH") for s in subjects)
    assert len(names) >= 4
    assert scope["instances"]["mutex"] >= 1 and scope["instances"]["counting"] >= 1


def test_every_patch_is_signed_and_has_a_diffstat(flag_day):
    for patch in patches_of(flag_day):
        text = patch.read_text()
        assert f"From: {IDENTITY}" in text, patch.name
        assert f"Signed-off-by: {IDENTITY}" in text, patch.name
        assert re.search(r"\d+ files? changed", text), patch.name


def test_conversion_patches_cc_the_maintainers(flag_day):
    usb = [p for p in patches_of(flag_day) if "usb-skeleton.c" in p.read_text()
           and "down_sem" in p.read_text() and p != patches_of(flag_day)[0]]
    assert usb, "no patch converts usb-skeleton.c"
    assert re.search(r"^Cc: .*linux-usb@vger\.kernel\.org", usb[0].read_text(), re.M)


def test_series_applies_with_git_am(flag_day_applied, flag_day):
    log = git(flag_day_applied, "log", "--format=%s").splitlines()
    assert len(log) == len(patches_of(flag_day)) + 1  # the patches and the base commit


def test_git_am_of_every_file_the_glob_names(small_tree, flag_day, tmp_path):
    # `git am OUTDIR/0*.patch` includes the cover letter, which carries no
    # diff: git stops there unless told to drop empty mails.
    repo = tmp_path / "glob"
    shutil.copytree(small_tree, repo)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "am", "-q", "--empty=drop", *map(str, sorted(flag_day.glob("0*.patch"))))
    assert len(git(repo, "log", "--format=%s").splitlines()) == len(patches_of(flag_day)) + 1


def test_no_checkpatch_error_in_any_patch(small_tree, flag_day):
    for patch in patches_of(flag_day):
        assert checkpatch_errors(small_tree, patch) == [], patch.name


def test_checkpatch_in_batches_equals_one_patch_at_a_time(small_tree, flag_day):
    """checkpatch.pl given several patches reports each as if run on it alone."""
    patches = patches_of(flag_day)
    together = checkpatch_all(small_tree, patches, jobs=2)
    alone = [run_checkpatch(small_tree, [p])[p] for p in patches]
    assert together == alone
    assert any(r.warnings for r in alone)  # something to tell apart


def test_flag_day_removes_the_old_api_and_gradual_keeps_it(small_tree, flag_day, gradual,
                                                            tmp_path):
    assert len(patches_of(gradual)) == len(patches_of(flag_day)) - 1
    assert old_api_declared(small_tree) == {"down", "down_interruptible", "down_trylock", "up"}
    gradual_tree = git_am_copy(small_tree, gradual, tmp_path / "gradual")
    assert old_api_declared(gradual_tree) == {"down", "down_interruptible", "down_trylock", "up"}
    flag_day_tree = git_am_copy(small_tree, flag_day, tmp_path / "flag-day")
    assert old_api_declared(flag_day_tree) == set()


def test_converted_sites_use_the_new_api(flag_day_applied):
    skeleton = (flag_day_applied / "drivers/usb/usb-skeleton.c").read_text()
    assert "down_sem_interruptible(&dev->limit_sem)" in skeleton
    assert "up_sem(&dev->limit_sem)" in skeleton
    paired = (flag_day_applied / "drivers/fixture/paired.c").read_text()
    assert "mutex_lock" in paired and "#include <linux/mutex.h>" in paired


def test_rerun_on_a_converted_tree_finds_nothing_to_convert(flag_day_applied, tmp_path):
    before = tree_digest(flag_day_applied / "drivers")
    done = run_convert(str(flag_day_applied), "-o", str(tmp_path / "again"),
                       "--identity", IDENTITY)
    assert "nothing to convert" in done.stderr
    assert not list((tmp_path / "again").glob("*.patch"))
    assert tree_digest(flag_day_applied / "drivers") == before


def test_input_tree_is_left_alone_and_rerun_is_stable(small_tree, flag_day, tmp_path):
    before = tree_digest(small_tree)
    again = make_series(small_tree, tmp_path / "again")
    assert tree_digest(small_tree) == before
    assert (again / "series").read_text() == (flag_day / "series").read_text()
    # Dates, message ids and blob hashes of the mail headers may differ.
    volatile = r"^(From [0-9a-f]+ |Date: |index |Message-Id: |In-Reply-To: |References: ).*$"
    strip = lambda p: re.sub(volatile, "", p.read_text(), flags=re.M)
    for first, second in zip(patches_of(flag_day), patches_of(again)):
        assert strip(first) == strip(second), first.name


PINNED = """\
[[verdict]]
instance = "field:drivers/fixture/more.c:struct more_dev.exported_try"
class = "mutex"
reviewer = "A Reviewer <reviewer@example.invalid>"
reason = "only process context calls the exported trylock"
"""


def same_outputs(a: Path, b: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "compare-outputs"),
                           str(a), str(b)], capture_output=True, text=True)


def test_rerun_from_the_cache_equals_a_cold_run(small_tree, tmp_path):
    """Issue 10's review loop: a rerun after a verdict (and after editing a
    file) takes the kept results, and writes what a run without any cache
    writes."""
    env = dict(os.environ, SEM2MUTEX_CACHE=str(tmp_path / "cache"))
    decisions = tmp_path / "decisions.toml"
    decisions.write_text(PINNED)
    run_convert(str(small_tree), "-q", "-o", str(tmp_path / "first"), "--identity", IDENTITY,
                env=env)
    warm = tmp_path / "warm"
    run_convert(str(small_tree), "-q", "-o", str(warm), "--identity", IDENTITY,
                "--decisions", str(decisions), env=env)
    cold = tmp_path / "cold"
    run_convert(str(small_tree), "-q", "-o", str(cold), "--identity", IDENTITY,
                "--decisions", str(decisions), "--no-cache")
    done = same_outputs(cold, warm)
    assert done.returncode == 0, done.stdout
    # the verdict changed nothing before the verdicts: one audit kept
    assert len(list((tmp_path / "cache" / "results" / "examined").rglob("*.pickle"))) == 1
    assert "A Reviewer" in "".join(p.read_text() for p in patches_of(warm))
    assert not same_outputs(tmp_path / "first", warm).returncode == 0

    edited = tmp_path / "edited" / "linux"
    shutil.copytree(small_tree, edited)
    skeleton = edited / "drivers/usb/usb-skeleton.c"
    skeleton.write_text(skeleton.read_text().replace("up(&dev->limit_sem);",
                                                     "up(&dev->limit_sem); /* edited */", 1))
    for name, extra in (("edited-warm", []), ("edited-cold", ["--no-cache"])):
        run_convert(str(edited), "-q", "-o", str(tmp_path / name), "--identity", IDENTITY,
                    "--decisions", str(decisions), *extra, env=env)
    assert len(list((tmp_path / "cache" / "results" / "examined").rglob("*.pickle"))) == 2
    done = same_outputs(tmp_path / "edited-cold", tmp_path / "edited-warm")
    assert done.returncode == 0, done.stdout
    assert "/* edited */" in "".join(p.read_text() for p in patches_of(tmp_path / "edited-warm"))


# --- the whole default tree ------------------------------------------------------

def test_default_series_has_every_part(default_run):
    out = default_run
    names = (out / "series").read_text().split()
    assert (out / "0000-cover-letter.patch").is_file()
    assert len(names) >= 10
    scope = load_json(out / "scope.json")
    assert scope["checkpatch"]["errors"] == []


def test_default_series_applies_and_leaves_no_old_api_user(default_run, default_6_1, tmp_path):
    from sem2mutex.progress import Progress
    from sem2mutex.proof.verify import VerifyRequest, verify_series
    from sem2mutex.tools.spatch import find_spatch
    result = verify_series(VerifyRequest(tree=default_6_1, series_dir=default_run,
                                         spatch=find_spatch(),
                                         out_dir=tmp_path, files=[]), Progress(quiet=True))
    assert result.applied, result.apply_error
    assert result.old_api_left == []


def test_default_series_has_no_checkpatch_error(default_run, default_6_1):
    patches = patches_of(default_run)
    with ThreadPoolExecutor(max_workers=2) as pool:
        errors = dict(zip((p.name for p in patches),
                          pool.map(lambda p: checkpatch_errors(default_6_1, p), patches)))
    assert {name: e for name, e in errors.items() if e} == {}



def test_default_series_cc_lists_equal_the_whole_maintainers_answers(default_run, default_6_1):
    """get_maintainer.pl reads an excerpt of MAINTAINERS (--mpath): for the
    file list of every patch of the default series, its answer is the one
    it gives reading the whole file."""
    excerpts = MaintainersFile.read(default_6_1 / "MAINTAINERS")
    lists = [sorted(set(re.findall(r"^diff --git a/(\S+) b/", p.read_text(), re.M)))
             for p in patches_of(default_run)]
    lists = [files for files in lists if files]
    assert len(lists) > 60

    def both(files: list[str]) -> tuple[list[str], list[str]]:
        return get_maintainer(default_6_1, files), get_maintainer(default_6_1, files,
                                                                 maintainers=excerpts)
    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(both, lists))
    assert all(whole for whole, _ in answers)
    assert [whole for whole, _ in answers] == [part for _, part in answers]
    assert len(excerpts.excerpt(lists[0])) < len((default_6_1 / "MAINTAINERS").read_bytes()) / 4

# --- what a maintainer reads: exports, alignment, includes, messages, verdicts

def test_small_tree_exports_equal_the_diff(small_tree, flag_day, tmp_path):
    from test_scope import diff_oracle, touched_copy
    scope = load_json(flag_day / "scope.json")
    after, touched = touched_copy(small_tree, flag_day, tmp_path / "after")
    assert (scope["exports_added"], scope["exports_removed"]) == \
        diff_oracle(small_tree, flag_day, after, touched)
    assert scope["exports_removed"] == ["down", "down_interruptible", "down_killable",
                                        "down_timeout", "down_trylock", "up"]


DECLARATION = re.compile(r"^([-+])(.*struct (?:semaphore|mutex))([ \t]+)(\w+)(\[[^]]*\])?;", re.M)


def retyped_declarations(series_dir: Path) -> list[tuple[str, str, str]]:
    """(patch, - line, + line) of every struct semaphore member or variable
    a patch turns into a struct mutex (hunks list the - lines first)."""
    found = []
    for patch in patches_of(series_dir):
        old: dict[str, str] = {}
        for m in DECLARATION.finditer(patch.read_text()):
            sign, head, name = m.group(1), m.group(2), m.group(4)
            if sign == "-" and head.endswith("semaphore"):
                old[name] = m.group(0)[1:]
            elif sign == "+" and head.endswith("mutex") and name in old:
                found.append((patch.name, old.pop(name), m.group(0)[1:]))
    return found


def name_column(line: str) -> int:
    m = re.match(r"(.*struct (?:semaphore|mutex)[ \t]+)\w", line)
    return len(m.group(1).expandtabs(8))


def test_default_series_keeps_padded_names_in_their_column(default_run):
    pairs = retyped_declarations(default_run)
    padded = [(p, old, new) for p, old, new in pairs if not re.search(r"semaphore \w", old)]
    assert len(padded) >= 7, pairs
    assert [(p, old, new) for p, old, new in padded
            if name_column(old) != name_column(new)] == []
    assert [(p, old, new) for p, old, new in pairs
            if re.search(r"semaphore \w", old) and not re.search(r"mutex \w", new)] == []
    hinic = [new for p, old, new in padded if "mgmt_lock" in new]
    assert hinic == ["\tstruct mutex                    mgmt_lock;"]


def test_default_series_drops_every_unused_semaphore_h(default_run, default_6_1, tmp_path):
    from test_scope import touched_copy
    from sem2mutex.series.rewrite import SEMAPHORE_SPELLINGS, read_state
    from sem2mutex.tools.spatch import find_spatch
    after, touched = touched_copy(default_6_1, default_run, tmp_path / "after")
    including = [f for f in touched if f.endswith((".c", ".h")) and (after / f).is_file()
                 and "#include <linux/semaphore.h>" in (after / f).read_text()]
    state = read_state(after, including, find_spatch(), 2)
    unused = [f for f in including if not state.files[f].uses(SEMAPHORE_SPELLINGS)
              and f not in state.parse_errors]
    assert unused == []
    text = "".join(p.read_text() for p in patches_of(default_run))
    gone = re.findall(r"^-#include <linux/semaphore\.h>", text, re.M)
    assert len(gone) >= 16
    brcmstb = (after / "drivers/cpufreq/brcmstb-avs-cpufreq.c").read_text()
    assert "#include <linux/module.h>\n#include <linux/mutex.h>\n#include <linux/of_address.h>" \
        in brcmstb


def test_default_series_messages_look_hand_made(default_run):
    subjects = {}
    for patch in [default_run / "0000-cover-letter.patch", *patches_of(default_run)]:
        head, _, rest = patch.read_text().partition("\n\n")
        subjects[patch.name] = " ".join(re.search(r"^Subject: (.*(?:\n .*)*)", head, re.M)
                                        .group(1).split())
        body = rest.split("\n---\n")[0].split("\n-- \n")[0]
        long = [line for line in body.splitlines()
                if len(line) > 72 and not line.startswith(("Cc: ", "Signed-off-by: "))]
        assert long == [], patch.name
    text = " ".join(subjects.values())
    for prefix in ("net: hinic: ", "wifi: ath6kl: ", "cpufreq: brcmstb-avs-cpufreq: ",
                   "RDMA/vmw_pvrdma: ", "ARM: versatile: ", "MIPS: Octeon: ", "x86/cpu: "):
        assert prefix in text, prefix
    assert "x86/include" not in text and "Input: serio" not in text


def test_pinned_verdicts_reach_the_patches(small_tree, tmp_path):
    decisions = tmp_path / "decisions.toml"
    decisions.write_text('''
[[verdict]]
instance = "field:drivers/fixture/more.c:struct more_dev.exported_try"
class = "mutex"
reviewer = "Ada Reviewer <ada@example.org>"
reason = "every caller is a probe or an ioctl: process context"

[[verdict]]
instance = "field:drivers/fixture/more.c:struct more_dev.napi_sem"
class = "mutex"
reviewer = "Ada Reviewer <ada@example.org>"
reason = "looks fine"
''')
    out = make_series(small_tree, tmp_path / "out", "--decisions", str(decisions))
    text = " ".join("".join(p.read_text() for p in patches_of(out)).split())
    assert ("pinned mutex by Ada Reviewer <ada@example.org>, who wrote: \"every caller is a "
            "probe or an ioctl: process context\"") in text
    scope = load_json(out / "scope.json")
    assert "field:drivers/fixture/more.c:struct more_dev.exported_try" in \
        scope["converted_to_mutex"]
    assert [v["instance"] for v in scope["refused_verdicts"]] == \
        ["field:drivers/fixture/more.c:struct more_dev.napi_sem"]
    cover = " ".join((out / "0000-cover-letter.patch").read_text().split())
    assert "field:drivers/fixture/more.c:struct more_dev.exported_try is a mutex by a " \
           "reviewer's verdict (Ada Reviewer <ada@example.org>" in cover


def test_a_checkpatch_run_that_dies_is_a_tool_failure(tmp_path):
    """A patch checkpatch.pl never got to must not pass for a clean one."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts/checkpatch.pl").write_text('die "broken\\n";\n')
    patches = [tmp_path / f"000{n}-x.patch" for n in (1, 2)]
    for p in patches:
        p.write_text("Subject: [PATCH] x\n")
    with pytest.raises(ToolFailure, match="checkpatch.pl exited 255 on 2 patch"):
        checkpatch_all(tmp_path, patches, jobs=1)


def test_maintainers_asked_ahead_are_not_asked_again(tmp_path):
    """What MaintainersAhead asks lands where get_maintainer() looks."""
    tree = tmp_path / "linux"
    (tree / "scripts").mkdir(parents=True)
    (tree / "a.c").write_text("int a;\n")
    asked = tmp_path / "asked"
    (tree / "scripts/get_maintainer.pl").write_text(
        f'open(my $log, ">>", "{asked}"); print $log "@ARGV\\n"; close($log);\n'
        'print "A Maintainer <a\\@example.invalid>\\n";\n')
    cache = ResultCache(tmp_path / "cache")
    ahead = MaintainersAhead(tree, cache, [["a.c"]])
    ahead.stop()
    assert asked.read_text().count("a.c") == 1
    assert get_maintainer(tree, ["a.c"], cache) == ["A Maintainer <a@example.invalid>"]
    assert asked.read_text().count("a.c") == 1
    MaintainersAhead(tree, ResultCache(None), [["a.c"]]).stop()  # no cache: asks nothing
    assert asked.read_text().count("a.c") == 1


# A get_maintainer.pl that prints the section names of the MAINTAINERS it
# read (--mpath's, else the tree's), and one with no --mpath at all.
SECTIONS_SCRIPT = r"""
my $path = "MAINTAINERS";
for (my $i = 0; $i < @ARGV; $i++) { $path = $ARGV[$i + 1] if $ARGV[$i] eq "--mpath"; }
open(my $m, "<", $path) or die; print grep { /^[A-Z ]+$/ } <$m>;
"""
OLD_SCRIPT = r"""
die "invalid argument\n" if grep { $_ eq "--mpath" } @ARGV;
print "WHOLE FILE READ\n";
"""


def test_get_maintainer_reads_an_excerpt_or_the_whole_file(tmp_path):
    tree = tmp_path / "linux"
    (tree / "scripts").mkdir(parents=True)
    (tree / "drivers/foo").mkdir(parents=True)
    (tree / "drivers/foo/foo.c").write_text("int foo;\n")
    (tree / "MAINTAINERS").write_text("FOO\nF:\tdrivers/foo/\n\nBAR\nF:\tdrivers/bar/\n\n"
                                      "THE REST\nF:\t*\nF:\t*/\n")
    script = tree / "scripts/get_maintainer.pl"
    script.write_text(SECTIONS_SCRIPT)
    excerpts = MaintainersFile.read(tree / "MAINTAINERS")
    assert get_maintainer(tree, ["drivers/foo/foo.c"]) == ["FOO", "BAR", "THE REST"]
    assert get_maintainer(tree, ["drivers/foo/foo.c"], maintainers=excerpts) == \
        ["FOO", "THE REST"]
    script.write_text(OLD_SCRIPT)  # a script without --mpath: asked again, whole
    assert get_maintainer(tree, ["drivers/foo/foo.c"], maintainers=excerpts) == \
        ["WHOLE FILE READ"]
