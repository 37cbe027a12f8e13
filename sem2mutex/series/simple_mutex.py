"""The simple-mutex core patch: David Howells' 2005 xchg() mutex on 6.1.

The series carries, after the counting-API core patch, a patch that adds
the seed's simple mutex to the tree as ``struct simple_mutex`` and, under
``CONFIG_MUTEX_SIMPLE``, as the implementation of ``struct mutex`` (the
way ``CONFIG_PREEMPT_RT`` swaps in rtmutex).

How the patch is made, against whatever tree the series targets:

- new files (our code) are copied from ``core/simple-mutex/``;
- the C change to existing code (kernel/locking/rtmutex.c) is made by
  spatch with ``cocci/core/simple_mutex_ww_rt.cocci``;
- preprocessor conditionals (Coccinelle parses ``#if`` lines as comments
  and cannot rewrite them), Kconfig and Makefile lines are edited as exact
  whole-line anchors that must occur a known number of times; a missing
  anchor stops the run instead of producing a half-applied patch.

This module also turns the benchmark's console lines into ``bench.json``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

from sem2mutex.model import CoreChange
from sem2mutex.paths import COCCI_DIR, CORE_DIR

SIMPLE_MUTEX_FILES_DIR = CORE_DIR / "simple-mutex"
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


class AnchorError(RuntimeError):
    """The tree does not contain an anchor line the patch relies on."""


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
        "Based on a patch by David Howells <dhowells@redhat.com>, December "
        "2005.",
    ])
    return CoreChange(
        subject="locking/mutex: Add CONFIG_MUTEX_SIMPLE, an xchg()-based mutex",
        body=body,
    )


KCONFIG_PREEMPT_BLOCK = (
    "config MUTEX_SIMPLE",
    '\tbool "Simple exchange-based mutexes"',
    "\tdepends on !PREEMPT_RT && !DEBUG_LOCKING_API_SELFTESTS",
    "\tselect SIMPLE_MUTEX",
    "\tselect RT_MUTEXES",
    "\thelp",
    "\t  Implement struct mutex with the simple mutex of David Howells'",
    "\t  2005 patch instead of the generic adaptive mutex: the mutex is",
    "\t  taken with one xchg(), contending tasks sleep in arrival order",
    "\t  and unlock hands the mutex straight to the first of them.  There",
    "\t  is no optimistic spinning and no lock stealing.  ww_mutex is then",
    "\t  built on rt_mutex, as with PREEMPT_RT.",
    "",
    "\t  This is meant for comparing the two implementations.  If unsure,",
    "\t  say N.",
    "",
    "config SIMPLE_MUTEX",
    '\tbool "Simple exchange-based mutex type (struct simple_mutex)"',
    "\thelp",
    "\t  Provide struct simple_mutex, the lock behind MUTEX_SIMPLE, as a",
    "\t  type of its own so that it can be tested and measured next to",
    "\t  the generic mutex.  If unsure, say N.",
    "",
    "config WW_MUTEX_RT",
    "\tdef_bool PREEMPT_RT || MUTEX_SIMPLE",
    "\thelp",
    "\t  ww_mutex is built on rt_mutex instead of the generic mutex.",
    "",
)

KCONFIG_DEBUG_OWNER_BLOCK = (
    "config DEBUG_MUTEX_OWNER",
    '\tbool "Simple mutex debugging: owner tracking and checking"',
    "\tdepends on DEBUG_KERNEL && SIMPLE_MUTEX",
    "\thelp",
    "\t  Remember which task holds each simple mutex (with MUTEX_SIMPLE,",
    "\t  each struct mutex) and print a \"BUG:\" report naming both tasks",
    "\t  when another task releases it.",
    "",
)


def simple_mutex_edits() -> list[AnchoredEdit]:
    """Every edit of an existing file that is not C code."""
    return [
        AnchoredEdit(
            path="include/linux/mutex.h",
            anchor=("#ifndef CONFIG_PREEMPT_RT",),
            replacement=(
                "#if defined(CONFIG_MUTEX_SIMPLE)",
                "/*",
                " * The simple exchange-based mutex: see <linux/mutex-simple.h>.",
                " */",
                "#include <linux/mutex-simple.h>",
                "#elif !defined(CONFIG_PREEMPT_RT)",
            ),
            why="choose the simple mutex ahead of the generic and RT ones",
        ),
        AnchoredEdit(
            path="include/linux/ww_mutex.h",
            anchor=("   (defined(CONFIG_PREEMPT_RT) && defined(CONFIG_DEBUG_RT_MUTEXES))",),
            replacement=("   (defined(CONFIG_WW_MUTEX_RT) && defined(CONFIG_DEBUG_RT_MUTEXES))",),
            why="ww_mutex debugging follows rt_mutex debugging when based on it",
        ),
        AnchoredEdit(
            path="include/linux/ww_mutex.h",
            anchor=("#ifndef CONFIG_PREEMPT_RT",),
            replacement=("#ifndef CONFIG_WW_MUTEX_RT",),
            count=2,
            why="ww_mutex base type and ww_mutex_destroy() follow WW_MUTEX_RT",
        ),
        AnchoredEdit(
            path="kernel/locking/mutex.c",
            anchor=("#ifndef CONFIG_PREEMPT_RT",),
            replacement=("#if !defined(CONFIG_PREEMPT_RT) && !defined(CONFIG_MUTEX_SIMPLE)",),
            why="leave mutex.c only its lock tracepoints and "
                "atomic_dec_and_mutex_lock(), as PREEMPT_RT does",
        ),
        AnchoredEdit(
            path="kernel/locking/mutex.c",
            anchor=("#endif /* !CONFIG_PREEMPT_RT */",),
            replacement=("#endif /* !CONFIG_PREEMPT_RT && !CONFIG_MUTEX_SIMPLE */",),
            why="keep the closing comment true",
        ),
        AnchoredEdit(
            path="kernel/locking/Makefile",
            anchor=("obj-y += mutex.o semaphore.o rwsem.o percpu-rwsem.o",),
            replacement=(
                "obj-y += mutex.o semaphore.o rwsem.o percpu-rwsem.o",
                "obj-$(CONFIG_SIMPLE_MUTEX) += simple_mutex.o",
                "obj-$(CONFIG_MUTEX_SIMPLE) += ww_rt_mutex.o",
            ),
            why="build simple_mutex.o, and ww_mutex on rt_mutex",
        ),
        AnchoredEdit(
            path="kernel/Kconfig.preempt",
            anchor=("endchoice", "", "config PREEMPT_COUNT"),
            replacement=("endchoice", "") + KCONFIG_PREEMPT_BLOCK
            + ("config PREEMPT_COUNT",),
            why="MUTEX_SIMPLE sits after the preemption model, like PREEMPT_RT",
        ),
        AnchoredEdit(
            path="lib/Kconfig.debug",
            anchor=("\tselect DEBUG_MUTEXES if !PREEMPT_RT",),
            replacement=("\tselect DEBUG_MUTEXES if !PREEMPT_RT && !MUTEX_SIMPLE",),
            count=4,
            why="lock debugging must not force the generic mutex's debugging",
        ),
        AnchoredEdit(
            path="lib/Kconfig.debug",
            anchor=(
                "config DEBUG_MUTEXES",
                '\tbool "Mutex debugging: basic checks"',
                "\tdepends on DEBUG_KERNEL && !PREEMPT_RT",
            ),
            replacement=(
                "config DEBUG_MUTEXES",
                '\tbool "Mutex debugging: basic checks"',
                "\tdepends on DEBUG_KERNEL && !PREEMPT_RT",
                "\tdepends on !MUTEX_SIMPLE",
            ),
            why="DEBUG_MUTEXES instruments the generic mutex only",
        ),
        AnchoredEdit(
            path="lib/Kconfig.debug",
            anchor=("\tselect DEBUG_RT_MUTEXES if PREEMPT_RT",),
            replacement=("\tselect DEBUG_RT_MUTEXES if WW_MUTEX_RT",),
            why="ww_mutex slowpath debugging follows the ww_mutex base",
        ),
        AnchoredEdit(
            path="lib/Kconfig.debug",
            anchor=("config DEBUG_WW_MUTEX_SLOWPATH",),
            replacement=KCONFIG_DEBUG_OWNER_BLOCK + ("config DEBUG_WW_MUTEX_SLOWPATH",),
            why="the seed's owner check, next to the other mutex debugging",
        ),
    ]


def new_files() -> list[Path]:
    """Our own kernel files, relative to the tree root."""
    return sorted(p.relative_to(SIMPLE_MUTEX_FILES_DIR)
                  for p in SIMPLE_MUTEX_FILES_DIR.rglob("*") if p.is_file())


def _replace_file(path: Path, text: str) -> None:
    """Write via a new inode, so hard-linked scratch copies never write
    through to the tree they were linked from."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


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
    _replace_file(path, "\n".join(lines))


def copy_new_files(tree: Path) -> list[str]:
    copied = []
    for rel in new_files():
        target = tree / rel
        if target.exists():
            raise FileExistsError(f"{rel} already exists in {tree}: "
                                  "is the simple-mutex patch applied twice?")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SIMPLE_MUTEX_FILES_DIR / rel, target)
        copied.append(str(rel))
    return copied


def run_ww_rt_cocci(tree: Path) -> list[str]:
    """Apply the rtmutex.c semantic patch; returns the rewritten sites."""
    rel = "kernel/locking/rtmutex.c"
    source = tree / rel
    with tempfile.TemporaryDirectory(prefix="sem2mutex-cocci-") as tmp:
        output = Path(tmp) / "rtmutex.c"
        proc = subprocess.run(
            ["spatch", "--sp-file", str(WW_RT_COCCI), "-D", "patch",
             "-D", "log_changes", "--no-includes", "--include-headers",
             "--very-quiet", str(source), "-o", str(output)],
            capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"spatch failed on {rel}:\n{proc.stderr}")
        sites = [line[len(COCCI_LOG_PREFIX):] for line in proc.stdout.splitlines()
                 if line.startswith(COCCI_LOG_PREFIX)]
        fired = {site.split()[0] for site in sites}
        missing = [rule for rule in WW_RT_COCCI_RULES if rule not in fired]
        if missing or not output.exists():
            raise AnchorError(f"{rel}: {WW_RT_COCCI.name} rules {missing} "
                              "matched nothing")
        _replace_file(source, output.read_text())
    return sites


def apply_simple_mutex(tree: Path) -> list[str]:
    """Apply the simple-mutex core patch to a scratch tree, in place.

    Returns the touched paths relative to the tree, sorted.  Raises
    AnchorError if the tree lacks a line the patch is anchored on.
    """
    tree = Path(tree)
    edits = simple_mutex_edits()
    # Check every anchor before touching anything, so a foreign tree fails
    # without being left half-patched.
    for edit in edits:
        lines = (tree / edit.path).read_text().split("\n")
        found = len(_find_line_runs(lines, edit.anchor))
        if found != edit.count:
            raise AnchorError(
                f"{edit.path}: expected {edit.count} occurrence(s) of "
                f"{edit.anchor!r}, found {found} (needed to {edit.why})")
    touched = set(copy_new_files(tree))
    for edit in edits:
        apply_anchored_edit(tree, edit)
        touched.add(edit.path)
    run_ww_rt_cocci(tree)
    touched.add("kernel/locking/rtmutex.c")
    return sorted(touched)


# --- Benchmark log -> bench.json -------------------------------------------
#
# qemu/kunit/mutex_bench prints one console line per measurement:
#   sem2mutex-bench: v=1 kind=env mutex=generic cpus=4 hz=250 ...
#   sem2mutex-bench: v=1 kind=uncontended impl=semaphore threads=1 round=0 ops=50000 ns=1234567
#   sem2mutex-bench: v=1 kind=contended impl=mutex threads=4 round=2 ops=91234 ns=150123456
# Anything before the marker (printk time stamp, KTAP "# test:" prefix) is
# ignored.  This reads console text, never C.

BENCH_MARKER = "sem2mutex-bench:"
BENCH_FORMAT_VERSION = "1"
BENCH_IMPLS = ("semaphore", "mutex", "simple_mutex")
BENCH_KINDS = ("uncontended", "contended")
# Options whose cost lands on some implementations and not on others.
LOCK_DEBUG_FLAGS = ("prove_locking", "debug_lock_alloc", "debug_mutexes",
                    "debug_rt_mutexes", "debug_mutex_owner", "lock_stat")
TCG_NOTE = ("Under TCG the guest's clock runs on emulated code: absolute "
            "times are not hardware times, only ratios between "
            "implementations measured in the same run mean anything.")


class BenchLogError(ValueError):
    """The console log holds no usable benchmark, or contradicts itself."""


@dataclass(frozen=True)
class BenchSample:
    kind: str      # "uncontended" or "contended"
    impl: str      # one of BENCH_IMPLS
    threads: int
    round: int
    ops: int       # lock+unlock pairs (uncontended) / critical sections
    ns: int        # elapsed guest nanoseconds


@dataclass(frozen=True)
class BenchRun:
    env: dict[str, str]
    samples: tuple[BenchSample, ...]


def _bench_fields(line: str) -> dict[str, str] | None:
    marker = line.find(BENCH_MARKER)
    if marker < 0:
        return None
    fields = {}
    for token in line[marker + len(BENCH_MARKER):].split():
        key, sep, value = token.partition("=")
        if not sep:
            raise BenchLogError(f"malformed benchmark token {token!r} in: {line.strip()}")
        fields[key] = value
    if fields.get("v") != BENCH_FORMAT_VERSION:
        raise BenchLogError(f"unknown benchmark line version: {line.strip()}")
    return fields


def _sample(fields: dict[str, str], line: str) -> BenchSample:
    try:
        sample = BenchSample(kind=fields["kind"], impl=fields["impl"],
                             threads=int(fields["threads"]), round=int(fields["round"]),
                             ops=int(fields["ops"]), ns=int(fields["ns"]))
    except (KeyError, ValueError) as err:
        raise BenchLogError(f"incomplete benchmark line ({err}): {line.strip()}") from err
    if sample.impl not in BENCH_IMPLS:
        raise BenchLogError(f"unknown implementation {sample.impl!r}: {line.strip()}")
    if sample.ops <= 0 or sample.ns <= 0:
        raise BenchLogError(f"empty measurement: {line.strip()}")
    return sample


def parse_bench_log(text: str) -> BenchRun:
    """Collect the benchmark lines of one boot's console log."""
    env: dict[str, str] | None = None
    samples: dict[tuple[str, str, int, int], BenchSample] = {}
    for line in text.splitlines():
        fields = _bench_fields(line)
        if fields is None:
            continue
        kind = fields.get("kind")
        if kind == "env":
            this_env = {k: v for k, v in fields.items() if k not in ("v", "kind")}
            if env is not None and env != this_env:
                raise BenchLogError("benchmark lines from two different kernels in one log")
            env = this_env
        elif kind in BENCH_KINDS:
            sample = _sample(fields, line)
            key = (sample.kind, sample.impl, sample.threads, sample.round)
            if key in samples:
                raise BenchLogError(f"measurement reported twice: {key}")
            samples[key] = sample
        else:
            raise BenchLogError(f"unknown benchmark line kind {kind!r}: {line.strip()}")
    if env is None or not samples:
        raise BenchLogError("no benchmark results in the console log")
    return BenchRun(env=env, samples=tuple(samples.values()))


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


BENCH_PAIRS = (("simple_mutex", "semaphore"), ("simple_mutex", "mutex"),
               ("mutex", "semaphore"))


def _uncontended_summary(samples: list[BenchSample]) -> dict:
    summary = {}
    for impl in BENCH_IMPLS:
        per_op = [s.ns / s.ops for s in samples if s.impl == impl]
        if per_op:
            summary[impl] = {"rounds_ns_per_op": [round(v, 2) for v in per_op],
                             "median_ns_per_op": round(_median(per_op), 2)}
    return summary


def _contended_summary(samples: list[BenchSample]) -> dict:
    summary: dict[str, dict] = {}
    for threads in sorted({s.threads for s in samples}):
        row = {}
        for impl in BENCH_IMPLS:
            rates = [s.ops * 1e9 / s.ns for s in samples
                     if s.impl == impl and s.threads == threads]
            if rates:
                row[impl] = {"rounds_ops_per_s": [round(r) for r in rates],
                             "median_ops_per_s": round(_median(rates))}
        summary[str(threads)] = row
    return summary


def _paired_ratios(per_round: dict[str, dict[int, float]]) -> dict[str, dict]:
    """a/b for each pair of implementations, round by round.

    The implementations take turns within each round, so dividing within a
    round cancels most of the drift of an emulated, shared machine; the
    median of those ratios is the figure, and ``rounds`` says whether every
    round agreed on which side of 1 it falls ("all below 1", "all above 1")
    or not ("mixed": the difference is within the noise).
    """
    ratios = {}
    for a, b in BENCH_PAIRS:
        rounds = sorted(set(per_round.get(a, {})) & set(per_round.get(b, {})))
        if not rounds:
            continue
        values = [per_round[a][r] / per_round[b][r] for r in rounds]
        if all(v < 1 for v in values):
            agreement = "all below 1"
        elif all(v > 1 for v in values):
            agreement = "all above 1"
        else:
            agreement = "mixed"
        ratios[f"{a}/{b}"] = {"median": round(_median(values), 3), "rounds": agreement,
                              "per_round": [round(v, 3) for v in values]}
    return ratios


def _per_round(samples: list[BenchSample], rate: bool) -> dict[str, dict[int, float]]:
    values: dict[str, dict[int, float]] = {}
    for s in samples:
        values.setdefault(s.impl, {})[s.round] = s.ops * 1e9 / s.ns if rate else s.ns / s.ops
    return values


def _mutex_description(kind: str) -> str:
    return {"generic": "struct mutex: the 6.1 generic mutex",
            "simple": "struct mutex: the simple mutex (CONFIG_MUTEX_SIMPLE=y)",
            "rt": "struct mutex: rtmutex (PREEMPT_RT)"}.get(kind, f"struct mutex ({kind})")


def bench_summary(run: BenchRun, accel: str) -> dict:
    """The content of bench.json: figures, ratios and what they rest on."""
    uncontended_samples = [s for s in run.samples if s.kind == "uncontended"]
    contended_samples = [s for s in run.samples if s.kind == "contended"]
    uncontended = _uncontended_summary(uncontended_samples)
    contended = _contended_summary(contended_samples)
    lock_debugging = {flag: run.env.get(flag) == "1" for flag in LOCK_DEBUG_FLAGS}
    debugged = any(lock_debugging.values())
    cost_ratios = _paired_ratios(_per_round(uncontended_samples, rate=False))
    throughput_ratios = {
        threads: _paired_ratios(_per_round(
            [s for s in contended_samples if str(s.threads) == threads], rate=True))
        for threads in contended}
    notes = [TCG_NOTE] if accel == "tcg" else []
    if debugged:
        notes.append("Lock debugging was on: lockdep and the debug checks cost the "
                     "mutexes more than the semaphore and disable the generic "
                     "mutex's fast path; use a kernel without them for conclusions.")
    return {
        "accel": accel,
        "notes": notes,
        "environment": {
            "mutex": run.env.get("mutex"),
            "cpus": int(run.env.get("cpus", "0")),
            "hz": int(run.env.get("hz", "0")),
            "lock_debugging": debugged,
            "flags": run.env,
        },
        "implementations": {
            "semaphore": "struct semaphore, count 1, down()/up()",
            "mutex": _mutex_description(run.env.get("mutex", "")),
            "simple_mutex": "struct simple_mutex: the seed's xchg() mutex, ported",
        },
        "uncontended": uncontended,
        "contended": contended,
        "ratios": {
            "uncontended_cost": cost_ratios,
            "contended_throughput": throughput_ratios,
        },
        "ratio_meaning": ("uncontended_cost: ns per lock+unlock, a/b < 1 means a is "
                          "cheaper; contended_throughput: critical sections per "
                          "second, a/b > 1 means a gets more done; median of the "
                          "per-round ratios, 'rounds' says if every round agreed"),
    }


def write_bench_json(console_log: Path, out_path: Path, accel: str) -> dict:
    """Parse a boot's console log and write bench.json; returns its content."""
    summary = bench_summary(parse_bench_log(Path(console_log).read_text(errors="replace")),
                            accel)
    Path(out_path).write_text(json.dumps(summary, indent=2) + "\n")
    return summary
