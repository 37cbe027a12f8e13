"""launch() reads spatch's output from files, not pipes (spatch writes a
line at a time): what it returns must be what a pipe read with text=True
gave, the locale's encoding with undecodable bytes replaced and universal
newlines, for the records on stdout and the token dumps and parse errors
on stderr alike."""
from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

from conftest import CONVERT, FIXTURE_TREE, REPO
from sem2mutex.errors import SpatchError
from sem2mutex.tools.spatch import (OCAML_GC, PYTHON, SPATCH_STACK_BYTES, files_failure,
                                    find_spatch, launch, run_rules, spatch_failure)

# A latin-1 comment, bytes that are no UTF-8 at all, CRLF line ends.
ODD_SOURCE = (b"/* caf\xe9 */\r\n"
              b"static const char *s = \"\xff\xfe\";\r\n"
              b"int f(struct semaphore *sem)\r\n{\r\n\tdown(sem);\r\n\treturn 0;\r\n}\n")
# The same, with a line spatch cannot parse: --verbose-parsing prints it
# as it is, raw bytes and carriage return included.
UNPARSABLE_SOURCE = (b"int g(void)\r\n{\r\n\tint x = 1 2 \"\xff\";\r\n"
                     b"\tdown(&s);\r\n}\r\n")

REPORT_CALLS = """\
@r@
identifier fn;
expression E;
position p;
@@
fn@p(E)

@script:python@
fn << r.fn;
E << r.E;
p << r.p;
@@
print(fn, E, p[0].line, "caf\\u00e9")
"""


def piped(args: list[str], cwd) -> subprocess.CompletedProcess:
    """ARGS run the way launch() ran them before: through pipes."""
    python = PYTHON if "--sp-file" in args else []
    return subprocess.run([str(find_spatch()), *python, *args], cwd=cwd, capture_output=True,
                          text=True, errors="replace", env={**OCAML_GC, **os.environ},
                          stdin=subprocess.DEVNULL, check=False)


def launched_as_piped(args: list[str], cwd) -> subprocess.CompletedProcess:
    """launch(ARGS), checked against the same run through pipes."""
    got = launch(find_spatch(), args, cwd)
    before = piped(args, cwd)
    assert got.returncode == before.returncode
    assert got.stdout == before.stdout
    assert got.stderr == before.stderr
    return got


def test_token_dump_as_a_pipe_gives_it(tmp_path):
    (tmp_path / "odd.c").write_bytes(ODD_SOURCE)
    got = launched_as_piped(["--tokens-c", "odd.c"], tmp_path)
    assert got.returncode == 0
    assert '"down"' in got.stderr and "\r" not in got.stderr


def test_records_as_a_pipe_gives_them(tmp_path):
    (tmp_path / "odd.c").write_bytes(ODD_SOURCE)
    (tmp_path / "calls.cocci").write_text(REPORT_CALLS)
    got = launched_as_piped(["--sp-file", "calls.cocci", "--very-quiet", "odd.c"], tmp_path)
    assert got.returncode == 0
    assert got.stdout == "down sem 5 caf\u00e9\n"


def test_parse_errors_as_a_pipe_gives_them(tmp_path):
    (tmp_path / "bad.c").write_bytes(UNPARSABLE_SOURCE)
    (tmp_path / "calls.cocci").write_text(REPORT_CALLS)
    got = launched_as_piped(["--sp-file", "calls.cocci", "--verbose-parsing", "bad.c"], tmp_path)
    assert got.returncode == 0
    assert 'whole content = \tint x = 1 2 "\ufffd";\n' in got.stderr


def test_a_failure_keeps_its_status_and_message(tmp_path):
    got = launched_as_piped(["--sp-file", "missing.cocci", "odd.c"], tmp_path)
    assert got.returncode != 0
    assert "missing.cocci" in got.stderr


def test_no_room_for_the_output_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    with pytest.raises(SpatchError, match=r"cannot keep spatch's output in .*/gone: "):
        launch(find_spatch(), ["--version"], tmp_path)


# --------------------------------------------------------------------------
# spatch's stack: convert.py raises the soft limit its spatch runs inherit

ONE_MB = 1 << 20
# small enough for many_defines(8_000) to overflow it (4,000 did not always)
SMALL_STACK_BYTES = 256 << 10


def stack_limit_after(soft: int, hard: int) -> tuple[int, int]:
    """RLIMIT_STACK in a fresh interpreter that starts at (SOFT, HARD) and
    calls raise_stack_limit()."""
    code = ("import resource, sys\n"
            f"resource.setrlimit(resource.RLIMIT_STACK, ({soft}, {hard}))\n"
            "from sem2mutex.tools.spatch import raise_stack_limit\n"
            "raise_stack_limit()\n"
            "print(*resource.getrlimit(resource.RLIMIT_STACK))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, check=True)
    got_soft, got_hard = (int(x) for x in done.stdout.split())
    return got_soft, got_hard


def test_stack_limit_is_raised_to_the_bound_or_the_hard_limit():
    unlimited = resource.RLIM_INFINITY
    assert stack_limit_after(8 * ONE_MB, unlimited) == (SPATCH_STACK_BYTES, unlimited)
    assert stack_limit_after(8 * ONE_MB, 16 * ONE_MB) == (16 * ONE_MB, 16 * ONE_MB)


def test_stack_limit_is_never_lowered():
    unlimited = resource.RLIM_INFINITY
    assert stack_limit_after(2 * SPATCH_STACK_BYTES, unlimited) == \
        (2 * SPATCH_STACK_BYTES, unlimited)
    assert stack_limit_after(unlimited, unlimited) == (unlimited, unlimited)


def many_defines(count: int) -> str:
    """A C file with a semaphore, COUNT #defines (a generated register
    header's shape), then the semaphore's down() and up()."""
    defines = "".join(f"#define REG_FIELD_{i}__SHIFT 0x{i % 32:x}\n" for i in range(count))
    return ("#include <linux/semaphore.h>\n\nstatic struct semaphore regs_sem;\n\n"
            + defines
            + "\nvoid regs_update(void)\n{\n\tdown(&regs_sem);\n\tup(&regs_sem);\n}\n")


def small_stack() -> None:
    resource.setrlimit(resource.RLIMIT_STACK,
                       (SMALL_STACK_BYTES, resource.getrlimit(resource.RLIMIT_STACK)[1]))


def test_a_long_file_is_analysed_under_a_small_stack(tmp_path):
    tree = tmp_path / "linux"
    shutil.copytree(FIXTURE_TREE, tree)
    regs = tree / "drivers" / "fixture" / "many_regs.c"
    regs.write_text(many_defines(8_000))
    (tmp_path / "calls.cocci").write_text(REPORT_CALLS)
    # the file overflows the small stack: spatch alone dies on it (OCaml's
    # Stack_overflow, exit 2, or signal 11) and prints nothing
    alone = subprocess.run([str(find_spatch()), *PYTHON, "--sp-file", "calls.cocci",
                            "--very-quiet", str(regs)], cwd=tmp_path, capture_output=True,
                           text=True, preexec_fn=small_stack, check=False)
    assert alone.returncode in (2, -signal.SIGSEGV) and alone.stdout == ""
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(CONVERT), str(tree), "--analyze-only", "-q",
                           "--no-cache", "-o", str(out)], capture_output=True, text=True,
                          preexec_fn=small_stack, check=False)
    assert done.returncode == 0, done.stderr
    audit = json.loads((out / "audit.json").read_text())
    regs_sem = [i for i in audit["instances"] if i["name"] == "regs_sem"]
    assert len(regs_sem) == 1
    assert sorted((s["op"], s["line"]) for s in regs_sem[0]["sites"]) == \
        [("down", 8_008), ("up", 8_009)]


def test_a_failed_pass_says_how_spatch_ended_and_on_which_files():
    warnings = "init_defs: kernel-macros.h\nWarning: PARSING: type defaults to 'int'\n"
    crashed = subprocess.CompletedProcess([], -signal.SIGSEGV, "", warnings)
    assert files_failure(["a.c"], 1, crashed) == \
        "spatch died of SIGSEGV on a.c (a pass over 1 file): Warning: PARSING: type " \
        "defaults to 'int'"
    fatal = subprocess.CompletedProcess(
        [], 2, "", "Fatal error: exception Stack overflow\n" + warnings)
    assert files_failure(["a.c", "b.c", "c.c", "d.c", "e.c"], 90, fatal) == \
        "spatch exited 2 on a.c, b.c, c.c and 2 more (a pass over 90 files): " \
        "Fatal error: exception Stack overflow"
    silent = subprocess.CompletedProcess([], 1, "", "")
    assert files_failure(["a.c", "b.c"], 2, silent) == \
        "spatch exited 1 on a.c, b.c (a pass over 2 files): nothing on stderr"


def test_a_python_rule_that_raised_is_named_with_its_exception():
    stderr = ("HANDLING: a.c\nTraceback (most recent call last):\n"
              '  File "<string>", line 4, in <module>\nKeyError: \'foo\'\n'
              'Error in Python script, line 7, file "rules.cocci": Python failure\n')
    raised = subprocess.CompletedProcess([], 255, "", stderr)
    assert spatch_failure(raised, "1 file with x.cocci") == \
        "spatch exited 255 on 1 file with x.cocci: a python rule raised KeyError: 'foo' " \
        '(Error in Python script, line 7, file "rules.cocci": Python failure)'


RAISING_RULE = """\
@r@
identifier fn;
@@
fn(...) { ... }

@script:python@
fn << r.fn;
@@
unknown = {}[fn]
"""


def test_a_rule_run_that_fails_is_a_one_line_error(tmp_path):
    (tmp_path / "a.c").write_text("int spin(void)\n{\n\treturn 0;\n}\n")
    (tmp_path / "b.c").write_text("int spun(void)\n{\n\treturn 1;\n}\n")
    (tmp_path / "raising.cocci").write_text(RAISING_RULE)
    with pytest.raises(SpatchError) as failed:
        run_rules(find_spatch(), [tmp_path / "raising.cocci"], [],
                  [tmp_path / "a.c", tmp_path / "b.c"], jobs=1)
    # one group per file: spatch reports the exception and goes on
    assert re.fullmatch(r"spatch reported an error on 2 files with raising\.cocci: a python "
                        r"rule raised KeyError: 'spun' \(EXN: Failure\(\"Error in Python "
                        r"script, line \d+, file .*\": Python failure\"\) in \S+/b\.c\)",
                        failed.value.one_line(limit=1000))

# The fact runner under a stack spatch overflows on a long file, in an
# interpreter of its own (the test's own stack stays as it is).
RUNNER_UNDER_SMALL_STACK = """\
import resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_STACK,
                   (int(sys.argv[2]), resource.getrlimit(resource.RLIMIT_STACK)[1]))
from sem2mutex.errors import SpatchError
from sem2mutex.progress import Progress
from sem2mutex.tools.spatch import SpatchRunner, find_spatch
runner = SpatchRunner(find_spatch(), Path(sys.argv[1]), 1, Progress(quiet=True))
try:
    runner.run_program("facts", Path(sys.argv[3]).read_text(), ["many_regs.c"])
except SpatchError as err:
    print(err.one_line())
"""


def test_a_pass_spatch_dies_on_is_a_one_line_error(tmp_path):
    (tmp_path / "many_regs.c").write_text(many_defines(8_000))
    # the fact runner passes -D report
    (tmp_path / "calls.cocci").write_text("virtual report\n\n" + REPORT_CALLS)
    done = subprocess.run([sys.executable, "-c", RUNNER_UNDER_SMALL_STACK, str(tmp_path),
                           str(SMALL_STACK_BYTES), str(tmp_path / "calls.cocci")],
                          cwd=REPO, capture_output=True, text=True, check=True)
    assert re.fullmatch(r"spatch (died of SIGSEGV|exited 2) on many_regs\.c "
                        r"\(a pass over 1 file\): .*\n", done.stdout)
    if "exited 2" in done.stdout:
        assert done.stdout.endswith(": Fatal error: exception Stack overflow\n")
