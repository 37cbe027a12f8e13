"""--bench: boot the benchmark kernel (semaphore vs 6.1 mutex vs simple
mutex) and turn its console lines into bench.json."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sem2mutex.errors import BenchError
from sem2mutex.progress import Progress
from sem2mutex.proof.boot import BENCH, BENCH_JSON, BootStageRequest, run_variant
from sem2mutex.tools.fs import write_text_atomic

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


class BenchLogError(BenchError):
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
    write_text_atomic(Path(out_path), json.dumps(summary, indent=2) + "\n")
    return summary


# --------------------------------------------------------------------------
# The stage


def bench_series(req: BootStageRequest, progress: Progress) -> dict:
    """Boot the benchmark kernel and write OUTDIR/bench.json; returns it.

    The console log and boot.json of that boot are in OUTDIR/bench/.
    """
    outcome = run_variant(req, BENCH, progress)
    if not outcome.passed:
        raise BenchError(f"the benchmark kernel failed ({'; '.join(outcome.reasons)}); "
                         f"see {outcome.boot_log}")
    bench_json = Path(req.out_dir) / BENCH_JSON
    try:
        summary = write_bench_json(outcome.boot_log, bench_json, req.accel)
    except BenchLogError as err:
        raise BenchError(f"{outcome.boot_log}: {err}") from None
    summary["kernel"] = {"boot_json": str(outcome.boot_json), "seconds": outcome.seconds,
                         "series": str(req.series_dir)}
    write_text_atomic(bench_json, json.dumps(summary, indent=2) + "\n")
    progress.step(f"bench: wrote {bench_json}")
    return summary
