"""launch() reads spatch's output from files, not pipes (spatch writes a
line at a time): what it returns must be what a pipe read with text=True
gave, the locale's encoding with undecodable bytes replaced and universal
newlines, for the records on stdout and the token dumps and parse errors
on stderr alike."""
from __future__ import annotations

import os
import subprocess
import tempfile

import pytest

from sem2mutex.errors import SpatchError
from sem2mutex.tools.spatch import OCAML_GC, PYTHON, find_spatch, launch

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
