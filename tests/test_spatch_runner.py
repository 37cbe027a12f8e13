"""The fact runner never takes a file spatch did not finish for a file it
read: a timeout or an exception of spatch's engine skips the file whole
(its semaphores then go to the audit's parse failures), and a python rule
that raised is a failed run, not a file with fewer facts.  Nor does the
lexer give a file it could not read no tokens."""
from __future__ import annotations

from pathlib import Path

import pytest

from sem2mutex.errors import SpatchError
from sem2mutex.progress import Progress
from sem2mutex.tools.spatch import (ParseError, SpatchRunner, find_spatch, parse_errors,
                                    python_failed, token_dump)

WHOLE_FILE = (1, 10**9)

# Every function the rules finish a file with.
REPORT_FUNCTIONS = """\
virtual report

@fn depends on report@
identifier f;
position p;
@@
f@p(...) { ... }

@script:python depends on report@
f << fn.f;
p << fn.p;
@@
print('{"kind": "fndef", "name": "%s", "file": "%s"}' % (f, p[0].file))
"""

# Every statement with every pair of statements after it, once for each
# statement: some 600**3 matches, far past one second on any machine.
CUBIC = """
@first depends on report@
expression e1;
@@
e1;

@later depends on report@
expression first.e1;
expression e2, e3;
position p;
@@
e1@p;
...
e2;
...
e3;

@script:python depends on report@
p << later.p;
@@
pass
"""

RAISING = """
@script:python depends on report@
f << fn.f;
@@
unknown = {}[f]
"""


def runner(tree: Path, timeout: int = 120) -> SpatchRunner:
    return SpatchRunner(find_spatch(), tree, 1, Progress(quiet=True), timeout_per_file=timeout)


def test_a_file_spatch_times_out_on_is_skipped_whole(tmp_path):
    statements = "".join(f"\tx = {i};\n" for i in range(600))
    # a parse error too: it used to hide the timeout
    (tmp_path / "slow.c").write_text("int x;\nvoid bad(void)\n{\n\tint y = 1 2;\n}\n"
                                     f"void slow(void)\n{{\n{statements}}}\n")
    (tmp_path / "fine.c").write_text("void fine(void)\n{\n}\n")
    out = runner(tmp_path, timeout=1).run_program("facts", REPORT_FUNCTIONS + CUBIC,
                                                  ["fine.c", "slow.c"])
    assert ParseError("spatch timed out on this file", *WHOLE_FILE) in out.parse_errors["slow.c"]
    assert any("parse error at line 4" in e.message for e in out.parse_errors["slow.c"])
    assert "fine.c" not in out.parse_errors
    assert {"kind": "fndef", "name": "fine", "file": "fine.c"} in out.records


def test_an_exception_of_spatch_skips_the_file_whole():
    # as spatch --file-groups reports one, and goes on with the next group
    stderr = ("HANDLING: a.c\nEXN: Not_found in a.c\nHANDLING: b.c\n"
              "HANDLING: c.c\nEXN: Coccinelle_modules.Common.Timeout in c.c\n")
    assert parse_errors(stderr) == {
        "a.c": [ParseError("spatch gave up on this file: Not_found", *WHOLE_FILE)],
        "c.c": [ParseError("spatch timed out on this file", *WHOLE_FILE)]}


def test_a_python_rule_that_raised_fails_the_run(tmp_path):
    (tmp_path / "a.c").write_text("void spin(void)\n{\n}\n")
    with pytest.raises(SpatchError) as failed:
        runner(tmp_path).run_program("facts", REPORT_FUNCTIONS + RAISING, ["a.c"])
    assert failed.value.one_line().startswith(
        "spatch reported an error on a.c (a pass over 1 file): a python rule raised "
        "KeyError: 'spin' (EXN: ")


def test_a_c_line_that_says_traceback_is_no_python_failure(tmp_path):
    # --verbose-parsing quotes the C lines it skips
    (tmp_path / "kdb.c").write_text(
        'void kdb(void)\n{\n\tchar *s = "Traceback" 2;\n}\n'
        'void spin(void)\n{\n}\n')
    out = runner(tmp_path).run_program("facts", REPORT_FUNCTIONS, ["kdb.c"])
    assert any("Traceback" in e.message for e in out.parse_errors["kdb.c"])
    assert {"kind": "fndef", "name": "spin", "file": "kdb.c"} in out.records
    assert python_failed("Traceback (most recent call last):\n  File x\nKeyError: 'a'\n")
    assert not python_failed("    whole content = \tTraceback (most recent call last):\n")


def test_a_file_the_lexer_cannot_read_is_an_error(tmp_path):
    (tmp_path / "here.c").write_text("void here(void)\n{\n\tdown(&sem);\n}\n")
    assert '"down"' in token_dump(find_spatch(), tmp_path, "here.c")
    with pytest.raises(SpatchError) as failed:
        token_dump(find_spatch(), tmp_path, "gone.c")
    assert failed.value.one_line() == (
        "spatch exited 255 on gone.c (its lexer, --tokens-c): ERROR: File gone.c does not "
        "exist: No such file or directory")
