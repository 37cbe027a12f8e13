"""Judge a boot from its console log.

Three independent witnesses:
- KTAP, parsed by the tree's own tools/testing/kunit/kunit.py (not by us);
- the kernel's own reports (lockdep, mutex debugging, WARN, BUG, panic),
  found by scanning the log for the headers the kernel prints;
- what /init printed: that it ran, whether lock debugging is still armed
  (lockdep switches itself off after its first report) and the taint mask.

Regular expressions here read console text, never C.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

INIT_MARKER = "sem2mutex-init:"
INIT_REACHED = f"{INIT_MARKER} reached /init"
INIT_FINISHED = f"{INIT_MARKER} rebooting"
KUNIT_PY = "tools/testing/kunit/kunit.py"

# Taint bits (include/linux/panic.h) that mean the kernel reported a bug.
TAINT_DIE = 7  # 'D': an oops happened
TAINT_WARN = 9  # 'W': a WARN() fired
SPLAT_TAINTS = {TAINT_DIE: "oops (taint D)", TAINT_WARN: "warning (taint W)"}

# Optional "[    1.234567] " printk time stamp, then the report header.
_PREFIX = r"^\s*(?:\[\s*\d+\.\d+\]\s*)?"
# kind -> pattern; anchored ones must start the message so that e.g.
# "RETBleed: WARNING: ..." mitigation notices do not count as WARN().
SPLAT_PATTERNS: dict[str, re.Pattern[str]] = {
    "possible recursive locking": re.compile(r"possible recursive locking detected"),
    "inconsistent lock state": re.compile(r"inconsistent lock state"),
    "possible circular locking": re.compile(r"possible circular locking dependency detected"),
    "bad unlock balance": re.compile(r"bad unlock balance detected"),
    "irq lock inversion": re.compile(r"possible irq lock inversion dependency detected"),
    "irq-safe to irq-unsafe": re.compile(r"-safe -> .*-unsafe lock order detected"),
    "lock held at exit": re.compile(r"lock held when returning to user space|"
                                    r"held lock freed|still has locks held"),
    "suspicious RCU usage": re.compile(r"suspicious RCU usage"),
    "DEBUG_LOCKS_WARN_ON": re.compile(r"DEBUG_LOCKS_WARN_ON"),
    "sleeping in atomic context": re.compile(r"sleeping function called from invalid context"),
    "scheduling while atomic": re.compile(r"scheduling while atomic"),
    "BUG": re.compile(_PREFIX + r"BUG:"),
    "kernel BUG": re.compile(_PREFIX + r"kernel BUG at"),
    "WARNING": re.compile(_PREFIX + r"WARNING:"),
    "Oops": re.compile(_PREFIX + r"Oops:"),
    "general protection fault": re.compile(_PREFIX + r"general protection fault"),
    "RCU stall": re.compile(r"rcu: INFO: .*detected stalls"),
    "hung task": re.compile(_PREFIX + r"INFO: task .* blocked for more than"),
    "Kernel panic": re.compile(r"Kernel panic - not syncing"),
}


@dataclass(frozen=True)
class Splat:
    kind: str
    line: int  # 1-based line number in boot.log
    text: str


@dataclass(frozen=True)
class InitReport:
    reached: bool = False
    finished: bool = False
    release: str | None = None
    tainted: int | None = None
    debug_locks: int | None = None


@dataclass
class TestCounts:
    total: int = 0
    passed: int = 0
    failed: int = 0
    skipped: int = 0


@dataclass
class SuiteResult:
    name: str
    counts: TestCounts
    cases: dict[str, str]  # test name -> PASS / FAIL / SKIP / ERROR


@dataclass
class KunitReport:
    counts: TestCounts
    suites: list[SuiteResult]
    exit_code: int
    summary: str  # kunit.py's own human summary, for the report

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


@dataclass
class Verdict:
    passed: bool
    reasons: list[str] = field(default_factory=list)


def scan_splats(log_text: str) -> list[Splat]:
    """Every line that carries a kernel bug report header, in log order.

    One line may match several kinds (e.g. a WARNING line naming lockdep);
    it is listed once, under the first, most specific kind.
    """
    splats = []
    for number, line in enumerate(log_text.splitlines(), start=1):
        for kind, pattern in SPLAT_PATTERNS.items():
            if pattern.search(line):
                splats.append(Splat(kind, number, line.strip()))
                break
    return splats


def parse_init_report(log_text: str) -> InitReport:
    values: dict[str, str] = {}
    reached = finished = False
    for line in log_text.splitlines():
        index = line.find(INIT_MARKER)
        if index < 0:
            continue
        message = line[index:].strip()
        reached |= message == INIT_REACHED
        finished |= message == INIT_FINISHED
        body = message[len(INIT_MARKER):].strip()
        if "=" in body and " " not in body.split("=", 1)[0]:
            key, value = body.split("=", 1)
            values[key] = value
    return InitReport(reached=reached, finished=finished, release=values.get("release"),
                      tainted=_int_or_none(values.get("tainted")),
                      debug_locks=_int_or_none(values.get("debug_locks")))


def init_splats(report: InitReport) -> list[Splat]:
    """Bugs /init saw that the console scan might have missed."""
    splats = []
    if report.debug_locks == 0:
        splats.append(Splat("lock debugging switched off", 0,
                            f"{INIT_MARKER} debug_locks=0: lockdep or mutex debugging "
                            "reported a problem and turned itself off"))
    for bit, what in SPLAT_TAINTS.items():
        if report.tainted is not None and report.tainted >> bit & 1:
            splats.append(Splat(f"kernel tainted: {what}", 0,
                                f"{INIT_MARKER} tainted={report.tainted}"))
    return splats


def parse_kunit(tree: Path, log_path: Path) -> KunitReport:
    """Run the tree's `kunit.py parse --json` on the console log."""
    with tempfile.TemporaryDirectory(prefix="sem2mutex-kunit-") as tmp:
        json_path = Path(tmp) / "kunit.json"
        cmd = [sys.executable, str(tree / KUNIT_PY), "parse", f"--json={json_path}",
               str(log_path.resolve())]
        # kunit.py would leave __pycache__ in the tree otherwise.
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        summary = (proc.stdout + proc.stderr).strip()
        if not json_path.is_file():
            return KunitReport(TestCounts(), [], proc.returncode or 1, summary)
        data = json.loads(json_path.read_text())
    counts, suites = counts_from_kunit_json(data)
    return KunitReport(counts, suites, proc.returncode, summary)


def counts_from_kunit_json(data: dict) -> tuple[TestCounts, list[SuiteResult]]:
    """Leaf test cases of kunit.py's JSON, overall and per top-level suite."""
    suites = []
    for group in data.get("sub_groups", []):
        cases: dict[str, str] = {}
        _collect_cases(group, "", cases)
        suites.append(SuiteResult(group.get("name", "?"), _count(cases.values()), cases))
    top_cases: dict[str, str] = {}
    _collect_cases({"test_cases": data.get("test_cases", [])}, "", top_cases)
    statuses = [s for suite in suites for s in suite.cases.values()] + list(top_cases.values())
    return _count(statuses), suites


def judge(kunit: KunitReport, splats: list[Splat], init: InitReport,
          ended_by_itself: bool, timed_out: bool) -> Verdict:
    """Passed only if every witness agrees the kernel is sound."""
    reasons = []
    if kunit.counts.total == 0:
        reasons.append("no KUnit test ran")
    if kunit.counts.failed:
        reasons.append(f"{kunit.counts.failed} KUnit test(s) failed")
    if not kunit.ok and not kunit.counts.failed and kunit.counts.total:
        reasons.append(f"kunit.py parse reported failure (exit {kunit.exit_code})")
    if kunit.counts.total and kunit.counts.passed == 0:
        reasons.append("no KUnit test passed")
    if splats:
        kinds = sorted({s.kind for s in splats})
        reasons.append(f"{len(splats)} kernel report(s): {', '.join(kinds)}")
    if timed_out:
        reasons.append("the machine did not end before the timeout")
    elif not ended_by_itself:
        reasons.append("the machine did not end by itself")
    if not init.reached:
        reasons.append("/init never ran")
    elif not init.finished:
        reasons.append("/init did not finish")
    return Verdict(passed=not reasons, reasons=reasons)


def splats_as_json(splats: list[Splat]) -> list[dict]:
    return [asdict(s) for s in splats]


def _collect_cases(group: dict, prefix: str, out: dict[str, str]) -> None:
    for case in group.get("test_cases", []):
        out[prefix + case.get("name", "?")] = case.get("status", "FAIL")
    for sub in group.get("sub_groups", []):
        _collect_cases(sub, prefix + sub.get("name", "?") + ".", out)


def _count(statuses) -> TestCounts:
    counts = TestCounts()
    for status in statuses:
        counts.total += 1
        if status == "PASS":
            counts.passed += 1
        elif status == "SKIP":
            counts.skipped += 1
        else:
            counts.failed += 1  # FAIL, and ERROR for a crashed test
    return counts


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
