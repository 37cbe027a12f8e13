"""scripts/compare-outputs: equal outputs pass, any real difference fails."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO

SCRIPT = REPO / "scripts" / "compare-outputs"
PATCH = """From {commit} Mon Sep 17 00:00:00 2001
Message-Id: <{commit}.1.git.a@b>
From: A <a@b>
Date: {date}
Subject: [PATCH 01/01] x: Convert binary semaphore to struct mutex

body
---
-struct semaphore lock;
+struct mutex lock;
"""


def outdir(path, date="Fri, 4 Dec 2026 12:47:55 +0000", commit="a" * 40, line="+struct mutex",
           seconds=1.0):
    path.mkdir()
    (path / "audit.json").write_text(json.dumps({"summary": {"mutex": 1, "seconds": seconds}}))
    (path / "series").write_text("0001-x.patch\n")
    (path / "0001-x.patch").write_text(PATCH.format(date=date, commit=commit)
                                       .replace("+struct mutex", line))
    return path


def compare(a, b):
    return subprocess.run([sys.executable, str(SCRIPT), str(a), str(b)],
                          capture_output=True, text=True)


def test_dates_ids_and_timings_do_not_count(tmp_path):
    a = outdir(tmp_path / "a")
    b = outdir(tmp_path / "b", date="Sat, 5 Dec 2026 08:00:00 +0000", commit="b" * 40,
               seconds=99.0)
    done = compare(a, b)
    assert done.returncode == 0, done.stdout
    assert "same outputs" in done.stdout


def test_a_changed_line_fails(tmp_path):
    done = compare(outdir(tmp_path / "a"), outdir(tmp_path / "b", line="+struct  mutex"))
    assert done.returncode == 1
    assert "0001-x.patch differs" in done.stdout


def test_a_missing_patch_fails(tmp_path):
    a, b = outdir(tmp_path / "a"), outdir(tmp_path / "b")
    (b / "0002-y.patch").write_text("x\n")
    done = compare(a, b)
    assert done.returncode == 1 and "only in" in done.stdout
