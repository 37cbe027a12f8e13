"""The simple-mutex core patch: David Howells' 2005 xchg() mutex on 6.1.

The series carries, after the counting-API core patch, a patch that adds
the seed's simple mutex to the tree as ``struct simple_mutex`` and, under
``CONFIG_MUTEX_SIMPLE``, as the implementation of ``struct mutex`` (the
way ``CONFIG_PREEMPT_RT`` swaps in rtmutex).

How the patch is made, against whatever tree the series targets:

- new files (our code, its KUnit suite included) are copied from
  ``core/simple-mutex/tree/``;
- the C change to existing code (kernel/locking/rtmutex.c) is made by
  spatch with ``cocci/core/simple_mutex_ww_rt.cocci``;
- preprocessor conditionals (Coccinelle parses ``#if`` lines as comments
  and cannot rewrite them), Kconfig and Makefile lines are edited as exact
  whole-line anchors that must occur a known number of times
  (``core/simple-mutex/edits.toml``, the text they add in
  ``core/simple-mutex/fragments/``); a missing anchor stops the run
  instead of producing a half-applied patch.
"""
from __future__ import annotations

import shutil
import tempfile
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

from sem2mutex.errors import AlreadyApplied, AnchorError, SpatchError
from sem2mutex.model import CoreChange
from sem2mutex.paths import COCCI_DIR, CORE_DIR
from sem2mutex.tools.fs import replace_file
from sem2mutex.tools.spatch import launch, spatch_failure

SIMPLE_MUTEX_DIR = CORE_DIR / "simple-mutex"
# The new files of the patch, as they go into the tree.
SIMPLE_MUTEX_FILES_DIR = SIMPLE_MUTEX_DIR / "tree"
WW_RT_COCCI = COCCI_DIR / "core" / "simple_mutex_ww_rt.cocci"
# The cocci file's python rules print one line per rewritten site when run
# with -D log_changes; every rule must fire at least once.
WW_RT_COCCI_RULES = ("ww_waiter", "ww_orig_waiter")
COCCI_LOG_PREFIX = "sem2mutex-cocci: "


@dataclass(frozen=True)
class AnchoredEdit:
    """Replace a run of whole lines that must occur exactly ``count`` times.

    Used only for text Coccinelle cannot edit: Kconfig, Makefiles and
    preprocessor directives.  ``why`` says what the edit is for; it is shown
    when the anchor is missing.
    """

    path: str
    anchor: tuple[str, ...]
    replacement: tuple[str, ...]
    why: str
    count: int = 1


def _wrap(paragraphs: list[str]) -> str:
    return "\n\n".join(textwrap.fill(p, width=72) for p in paragraphs)


def simple_mutex_change() -> CoreChange:
    """Subject and commit message of the simple-mutex core patch."""
    body = _wrap([
        "The 2005 LWN discussion of David Howells' \"MUTEX: Introduce simple "
        "mutex implementation\" left a doubt open: the posted mutex \"may "
        "actually be slower than the semaphores it replaces\". To settle it "
        "with numbers on a current kernel, carry that implementation, "
        "ported to 6.1, next to the generic mutex.",
        "struct simple_mutex is the seed's lock: it is grabbed with one "
        "xchg() of a state word, a task that fails sleeps at the tail of a "
        "FIFO list under a spinlock, and unlock hands the mutex directly to "
        "the first waiter, so a sleeping waiter is never overtaken. The "
        "port adds lockdep annotations, killable and io sleeps, and fixes "
        "the original's hand-over, which read the waiter after unlinking "
        "it: the waiter now learns of the hand-over from a flag written "
        "with release semantics, and wake-ups go through a wake_q. "
        "CONFIG_SIMPLE_MUTEX builds it as a type of its own, so that it can "
        "be measured against the semaphore and the generic mutex in the "
        "same kernel.",
        "CONFIG_MUTEX_SIMPLE (default n) makes it the implementation of "
        "struct mutex and of the whole mutex API, the way PREEMPT_RT swaps "
        "in rtmutex: <linux/mutex.h> takes struct mutex from "
        "<linux/mutex-simple.h>, kernel/locking/simple_mutex.c implements "
        "the lock functions, and mutex.c keeps only the lock tracepoints and "
        "atomic_dec_and_mutex_lock(). As under PREEMPT_RT, ww_mutex is then built on rt_mutex: "
        "the new hidden symbol WW_MUTEX_RT (PREEMPT_RT || MUTEX_SIMPLE) "
        "replaces PREEMPT_RT where the ww_mutex code means \"ww_mutex is an "
        "rt_mutex\", so PREEMPT_RT kernels are unchanged. DEBUG_MUTEXES, "
        "which instruments the generic mutex, is not available with "
        "MUTEX_SIMPLE, nor are the locking API selftests, which know only "
        "the generic and RT ww_mutex bases.",
        "CONFIG_DEBUG_MUTEX_OWNER, from the same patch, records the owner "
        "and prints a \"BUG:\" line naming both tasks when another task "
        "releases the mutex.",
        "CONFIG_SIMPLE_MUTEX_KUNIT_TEST builds its KUnit suite: mutual "
        "exclusion under contention, FIFO hand-over without lock stealing, "
        "trylock, interruptible and killable sleeps, the owner check, and "
        "the mutex and ww_mutex APIs, on struct simple_mutex and, with "
        "MUTEX_SIMPLE, on struct mutex.",
        "Based on a patch by David Howells <dhowells@redhat.com>, December "
        "2005.",
    ])
    return CoreChange(
        subject="locking/mutex: Add CONFIG_MUTEX_SIMPLE, an xchg()-based mutex",
        body=body,
    )


def simple_mutex_edits() -> list[AnchoredEdit]:
    """Every edit of an existing file that is not C code (edits.toml)."""
    with open(SIMPLE_MUTEX_DIR / "edits.toml", "rb") as manifest:
        entries = tomllib.load(manifest)["edit"]
    return [AnchoredEdit(path=e["path"], anchor=tuple(e["anchor"]),
                         replacement=tuple(line for item in e["replacement"]
                                           for line in expand(item)),
                         why=e["why"], count=e.get("count", 1))
            for e in entries]


def expand(item: str) -> list[str]:
    """A replacement line, or the lines of the fragment "@NAME" names."""
    if not item.startswith("@"):
        return [item]
    return (SIMPLE_MUTEX_DIR / "fragments" / item[1:]).read_text().split("\n")[:-1]


def new_files() -> list[Path]:
    """Our own kernel files, relative to the tree root."""
    return sorted(p.relative_to(SIMPLE_MUTEX_FILES_DIR)
                  for p in SIMPLE_MUTEX_FILES_DIR.rglob("*") if p.is_file())


def _find_line_runs(lines: list[str], anchor: tuple[str, ...]) -> list[int]:
    width = len(anchor)
    return [i for i in range(len(lines) - width + 1)
            if tuple(lines[i:i + width]) == anchor]


def apply_anchored_edit(tree: Path, edit: AnchoredEdit) -> None:
    path = tree / edit.path
    lines = path.read_text().split("\n")
    starts = _find_line_runs(lines, edit.anchor)
    if len(starts) != edit.count:
        raise AnchorError(
            f"{edit.path}: expected {edit.count} occurrence(s) of "
            f"{edit.anchor!r}, found {len(starts)} (needed to {edit.why})")
    width = len(edit.anchor)
    for start in reversed(starts):
        lines[start:start + width] = list(edit.replacement)
    replace_file(path, "\n".join(lines))


def copy_new_files(tree: Path) -> list[str]:
    copied = []
    for rel in new_files():
        target = tree / rel
        if target.exists():
            raise AlreadyApplied(f"{rel} already exists in {tree}: "
                                  "is the simple-mutex patch applied twice?")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SIMPLE_MUTEX_FILES_DIR / rel, target)
        copied.append(str(rel))
    return copied


def run_ww_rt_cocci(tree: Path, spatch: Path) -> list[str]:
    """Apply the rtmutex.c semantic patch; returns the rewritten sites."""
    rel = "kernel/locking/rtmutex.c"
    source = tree / rel
    with tempfile.TemporaryDirectory(prefix="sem2mutex-cocci-") as tmp:
        output = Path(tmp) / "rtmutex.c"
        proc = launch(spatch, ["--sp-file", str(WW_RT_COCCI), "-D", "patch",
                               "-D", "log_changes", "--no-includes", "--include-headers",
                               "--very-quiet", "--no-show-diff", str(source), "-o", str(output)],
                      Path(tmp))
        if proc.returncode != 0:
            raise SpatchError(spatch_failure(proc, f"{rel} with {WW_RT_COCCI.name}"))
        sites = [line[len(COCCI_LOG_PREFIX):] for line in proc.stdout.splitlines()
                 if line.startswith(COCCI_LOG_PREFIX)]
        fired = {site.split()[0] for site in sites}
        missing = [rule for rule in WW_RT_COCCI_RULES if rule not in fired]
        if missing or not output.exists():
            raise AnchorError(f"{rel}: {WW_RT_COCCI.name} rules {missing} "
                              "matched nothing")
        replace_file(source, output.read_text())
    return sites


def missing_anchor(tree: Path) -> str | None:
    """The first anchor line the patch needs and TREE lacks, described."""
    for edit in simple_mutex_edits():
        path = tree / edit.path
        lines = path.read_text().split("\n") if path.is_file() else []
        found = len(_find_line_runs(lines, edit.anchor))
        if found != edit.count:
            return (f"{edit.path}: expected {edit.count} occurrence(s) of "
                    f"{edit.anchor!r}, found {found} (needed to {edit.why})")
    return None


def apply_simple_mutex(tree: Path, spatch: Path) -> list[str]:
    """Apply the simple-mutex core patch to a scratch tree, in place.

    Returns the touched paths relative to the tree, sorted.  Raises
    AnchorError if the tree lacks a line the patch is anchored on.
    """
    tree = Path(tree)
    edits = simple_mutex_edits()
    # Check every anchor before touching anything, so a foreign tree fails
    # without being left half-patched.
    problem = missing_anchor(tree)
    if problem:
        raise AnchorError(problem)
    touched = set(copy_new_files(tree))
    for edit in edits:
        apply_anchored_edit(tree, edit)
        touched.add(edit.path)
    run_ww_rt_cocci(tree, spatch)
    touched.add("kernel/locking/rtmutex.c")
    return sorted(touched)
