"""The -v breakdown: each stage's wall time and processor time (its own
and its finished children's), so a user sees where the core-seconds go,
not only the seconds."""
from __future__ import annotations

import io
import subprocess
import sys
import time

from sem2mutex.progress import Progress

BURN = "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass"


def test_a_child_working_counts_a_stage_waiting_does_not():
    progress = Progress(verbose=True, stream=io.StringIO())
    with progress.stage("spatch"):
        subprocess.run([sys.executable, "-c", BURN], check=True)
    with progress.stage("waiting"):
        time.sleep(0.4)
    assert progress.processor["spatch"] >= 0.35
    assert progress.timings()["waiting"] >= 0.4
    assert progress.processor["waiting"] < 0.1


def test_a_stage_run_twice_adds_up():
    progress = Progress(verbose=True, stream=io.StringIO())
    for _ in range(2):
        with progress.stage("spatch"):
            subprocess.run([sys.executable, "-c", BURN], check=True)
    assert progress.processor["spatch"] >= 0.7


def test_breakdown_shows_both_columns():
    out = io.StringIO()
    progress = Progress(verbose=True, stream=out)
    with progress.stage("facts (spatch)"):
        subprocess.run([sys.executable, "-c", BURN], check=True)
    progress.breakdown()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("sem2mutex: time by stage (")
    assert "s of processor time):" in lines[0]
    assert lines[1] == "sem2mutex:       wall  processor  stage"
    wall, processor, name = lines[2].removeprefix("sem2mutex:").split(None, 2)
    assert name == "facts (spatch)"
    assert float(processor.rstrip("s")) >= 0.35 and float(wall.rstrip("s")) >= 0.35


def test_quiet_unless_verbose():
    out = io.StringIO()
    progress = Progress(stream=out)
    with progress.stage("facts"):
        pass
    progress.breakdown()
    assert out.getvalue() == ""
