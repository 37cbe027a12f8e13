"""spatch, the one place it is started from.

launch() is the only function of sem2mutex that starts spatch; everything
else (the fact passes, the rewrite, the core patches, the lexer, the
old-API check) goes through it, with the spatch that find_spatch() found.

The fact rules in cocci/ print one JSON object per line.  Several rule
files are concatenated into one SmPL program so each C file is parsed once
per pass; each C file is its own group (--file-groups) so that spatch does
not treat the files as one unit.  --no-scanner stops spatch from switching
to `git grep` on its own, which skips untracked files.
"""
from __future__ import annotations

import functools
import io
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from sem2mutex.errors import MissingTool, SpatchError
from sem2mutex.paths import COCCI_DIR
from sem2mutex.progress import Progress
from sem2mutex.tools.cache import ResultCache, file_digest, no_cache
from sem2mutex.tools.isos import UNUSED_ISOS, disabled_isos

# The kernel constructs spatch's own standard.h does not cover (README there).
MACRO_FILE = COCCI_DIR / "kernel-macros.h"

# Not --quiet: the "HANDLING: file" lines tell which file a parse error
# belongs to (the error itself may point into spatch's standard.h).
# --no-show-diff: typedef_lists.cocci is a * program, whose matches spatch
# would otherwise print as a diff among the facts.
SPATCH_FLAGS = ["--no-includes", "--no-scanner", "--verbose-parsing", "--no-show-diff",
                "-D", "report", "--macro-file", str(MACRO_FILE)]

HANDLING = re.compile(r"^HANDLING: (?P<file>\S+)\s*$", re.M)
SYNC = re.compile(r"^ERROR-RECOV: found sync .*?line (?P<line>\d+)\s*$", re.M)
PARSE_ERROR = re.compile(
    r'^parse error\s*\n\s*= File "(?P<file>[^"]+)", line (?P<line>\d+), column (?P<col>\d+)'
    r'.*?\n\s*around = (?P<around>.*?)\n\s*whole content = (?P<content>[^\n]*)'
    r'(?:\n\s*badcount: (?P<badcount>\d+))?',
    re.M | re.S)
# With --file-groups spatch reports an exception on a group (its --timeout
# included) on one line and goes on with the next group.
EXN = re.compile(r"^EXN: (?P<exn>.*) in (?P<file>\S+)\s*$", re.M)
TIMEOUT = re.compile(r"\bTimeout\b")


# An in-place run writes the files it changed and prints nothing else:
# without --no-show-diff spatch also prints a diff, which it first checks
# by parsing the file before and after once more (Compare_c): on
# bnx2x_main.c (15,000 lines, one instance rewritten) 3.4-5.6 s instead of
# 2.1-2.2 s, for a diff no one reads.
IN_PLACE_FLAGS = ["--in-place", "--no-show-diff"]

# Rewrite and check runs: one file per group, from a neutral directory.
RULE_FLAGS = ["--no-includes", "--no-scanner", "--include-headers", "--quiet",
              "--verbose-parsing", "--macro-file", str(MACRO_FILE)]
RULE_TIMEOUT_SECONDS = 120


def find_spatch() -> Path:
    found = shutil.which("spatch")
    if not found:
        raise MissingTool("spatch not found on PATH: install Coccinelle "
                          "(apt-get install coccinelle)")
    return Path(found)


def python_for_spatch() -> list[str]:
    """--python for the interpreter Debian built spatch against.

    Without it spatch runs `python3` from PATH to find its library: through
    pyenv's shims that costs a second for every spatch started (measured:
    1.24 s for a one-line file, 0.27 s with --python /usr/bin/python3).
    """
    for candidate in (Path("/usr/bin/python3"), shutil.which("python3")):
        if candidate and Path(candidate).is_file():
            return ["--python", str(candidate)]
    return []


PYTHON = python_for_spatch()


# OCaml's garbage collector, told to let the heap grow more before it
# works (space_overhead 400; spatch's OCaml 4.13 has 80): the fact rules
# over 60 files of 2.6.11 took 21.2 s at 200 instead of 24.1 s at 80
# (medians of five, 100 MB at most instead of 85); 6.1's fact pass over
# its four biggest files, one job, the settings in turn, two rounds:
# 8.2-8.5 s (one run 10.1 s) and 8.5-8.9 s of processor time at 400,
# 8.7-8.9 s and 9.3-10.2 s at 200 (252 MB at most instead of 201); its
# whole fact pass, two jobs: medians of three 49.5 s and 53.6 s.  A
# smaller or bigger minor heap was slower (s=128k, s=512k, s=1M).  A
# user's own OCAMLRUNPARAM wins.
OCAML_GC = {"OCAMLRUNPARAM": "o=400"}


# spatch's parser needs stack in proportion to a file's top-level
# elements (a #define is one): 20,000 #defines overflow a 1 MB stack and
# 150,000 the default 8 MB, and OCaml then stops the whole spatch ("Fatal
# error: exception Stack overflow", exit 2, or signal 11), failing every
# file of its pass.  6.1's nbio_7_2_0_sh_mask.h (16 MB of #defines) dies
# under 8 MB; its biggest header, dcn_3_2_0_sh_mask.h (24 MB), parses
# with 64 MB.  Bounded, so that a runaway recursion still ends.
SPATCH_STACK_BYTES = 1 << 30


def raise_stack_limit(want: int = SPATCH_STACK_BYTES) -> None:
    """Raise this process's soft stack limit, which every spatch it starts
    inherits, to WANT, or to the hard limit if that is lower; never lower
    it.  Called once, before any work (sem2mutex.cli.main)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_STACK, (target, hard))


def launch(spatch: Path, args: list[str], cwd: Path,
           env: dict[str, str] | None = None,
           isos_off: tuple[str, ...] = UNUSED_ISOS) -> subprocess.CompletedProcess:
    """Start spatch with ARGS in CWD and wait for it (output captured).
    A semantic patch is read with the isomorphisms ISOS_OFF turned off
    (by default those no rule of sem2mutex's uses: isos.py).

    The output goes to files, read once spatch is done: spatch writes a
    line at a time (a record, a token: 100,000 writes for a big file's
    token dump), and draining a pipe cost a poll and a read per write, in
    Python, beside the spatch on the other core (lexing 94 files of
    2.6.11 one after the other, twice: 10.1 and 11.3 s through pipes, 8.9
    and 10.3 s through files)."""
    python = PYTHON if "--sp-file" in args and "--python" not in args else []
    isos = disabled_isos(isos_off) if "--sp-file" in args or "--parse-cocci" in args else []
    with output_file() as out, output_file() as err:
        done = subprocess.run([str(spatch), *python, *isos, *args], cwd=cwd, stdout=out,
                              stderr=err,
                              env={**OCAML_GC, **os.environ, **(env or {})},
                              stdin=subprocess.DEVNULL, check=False)
        return subprocess.CompletedProcess(done.args, done.returncode,
                                           written(out), written(err))


def output_file() -> IO[bytes]:
    """A temporary file for spatch's output, gone once closed."""
    try:
        return tempfile.TemporaryFile()
    except OSError as err:
        raise SpatchError(f"cannot keep spatch's output in {tempfile.gettempdir()}: "
                          f"{err.strerror or err}") from err


def written(output: IO[bytes]) -> str:
    """What spatch wrote to OUTPUT, as text=True would have given it
    (the locale's encoding, undecodable bytes replaced, universal
    newlines)."""
    output.seek(0)
    with io.TextIOWrapper(output, errors="replace") as text:
        return text.read()


@functools.cache
def version(spatch: Path) -> str:
    """spatch's first --version line: part of every cache key (asked once)."""
    lines = launch(spatch, ["--version"], Path("/")).stdout.splitlines()
    return lines[0] if lines else ""


def token_dump(spatch: Path, tree: Path, rel: str) -> str:
    """Coccinelle's lexer output for one file (spatch --tokens-c), on
    stderr.  A lexer that failed is an error: its tokens would be few or
    none, and a file with no tokens mentions no semaphore."""
    done = launch(spatch, ["--tokens-c", rel], tree)
    if done.returncode != 0:
        raise SpatchError(spatch_failure(done, f"{rel} (its lexer, --tokens-c)"))
    return done.stderr


# --parse-cocci prints a program only when some rule of it transforms: a
# rule removing a call no kernel code has makes a program of fact rules one.
NO_OP_TRANSFORMATION = "\n\n@sem2mutex_no_op@\n@@\n- sem2mutex_no_such_call();\n"
TRANSFORMING_LINE = re.compile(r"^[-+*]", re.M)
VIRTUAL_LINE = re.compile(r"^virtual\s+(.*)$", re.M)


def expanded_rules(spatch: Path, program_text: str, scratch: Path,
                   isos_off: tuple[str, ...]) -> str:
    """PROGRAM_TEXT's rules as spatch expands them with the isomorphisms
    (spatch --parse-cocci), ISOS_OFF turned off and every virtual the
    program declares defined.  SCRATCH: a directory for the program."""
    text = program_text if TRANSFORMING_LINE.search(program_text) \
        else program_text + NO_OP_TRANSFORMATION
    program = scratch / "expanded.cocci"
    program.write_text(text)
    virtuals = sorted({v.strip() for line in VIRTUAL_LINE.findall(text) for v in line.split(",")})
    done = launch(spatch, ["--parse-cocci", str(program),
                           *[a for v in virtuals for a in ("-D", v)]], scratch, isos_off=isos_off)
    if done.returncode != 0:
        raise SpatchError(spatch_failure(done, f"{program} (--parse-cocci)"))
    return done.stdout


def reader_digest() -> str:
    """This module's source: how it reads spatch's output (its records, the
    parse errors and timeouts on stderr) is part of what a kept result
    says, so a kept result is only used by the code that read it."""
    return file_digest(Path(__file__))


@dataclass(frozen=True)
class ParseError:
    """A region of a file spatch skipped, as its error recovery reported it."""

    message: str
    first_line: int
    last_line: int


@dataclass
class SpatchOutput:
    records: list[dict] = field(default_factory=list)
    parse_errors: dict[str, list[ParseError]] = field(default_factory=dict)


def combine_rules(cocci_files: list[Path]) -> str:
    """One SmPL program from several single-purpose rule files."""
    return combine_programs([path.read_text() for path in cocci_files])


def combine_programs(programs: list[str]) -> str:
    """One SmPL program from the texts of several.

    `virtual` declarations must come first (after a script rule they would
    be read as python), so they are hoisted and deduplicated.
    """
    virtuals: list[str] = []
    bodies = []
    for text in programs:
        lines = text.splitlines()
        for line in lines:
            if line.startswith("virtual ") and line not in virtuals:
                virtuals.append(line)
        bodies.append("\n".join(line for line in lines if not line.startswith("virtual ")))
    return "\n".join(virtuals) + "\n\n" + "\n\n".join(bodies) + "\n"


# A fact pass is one spatch, its files spread over --jobs processes that
# fork once the program is read (Coccinelle's parmap, one file at a time,
# costliest first): a spatch start costs 1.0-1.25 s of reading the fact
# program, and 6.1's facts, cut into eight chunks of their own spatch,
# paid it eight times (183 files: 62.5-68.9 s of processor time, as one
# spatch 54.1-58.7 s; 7 December).  Parmap keeps each process's stdout and stderr
# in files under --tmp-dir and prints them one after the other at the end,
# so neither records nor a file's parse report interleave.
#
# Clock rules around the program tell when each file's rules began (its
# parse done) and ended, on a line each in the file SEM2MUTEX_CLOCK names:
# the progress while spatch runs, the seconds each file took (kept as its
# cost for the next run's order, shown by -v), and the file a process was
# on if spatch died.  A script rule without metavariables runs once per
# file, in the program's order.
CLOCK_ENV = "SEM2MUTEX_CLOCK"
CLOCK_INIT = """@initialize:python@
@@
import json as sem2mutex_json
import os as sem2mutex_os
import time as sem2mutex_time


def sem2mutex_clock(at, files=()):
	line = dict(at=at, files=list(files), pid=sem2mutex_os.getpid(),
		    t=sem2mutex_time.time())
	with open(sem2mutex_os.environ["SEM2MUTEX_CLOCK"], "a") as clock:
		clock.write(sem2mutex_json.dumps(line) + "\\n")


sem2mutex_clock("init")
"""
CLOCK_START = """@script:python@
@@
sem2mutex_clock("start", cocci.files())
"""
CLOCK_END = """@script:python@
@@
sem2mutex_clock("end", cocci.files())
"""


def with_clock(program_text: str) -> str:
    """PROGRAM_TEXT between the clock rules, its virtual lines hoisted
    first (after a script rule they would be read as python)."""
    lines = program_text.splitlines(keepends=True)
    virtuals = [line for line in lines if line.startswith("virtual ")]
    body = [line for line in lines if not line.startswith("virtual ")]
    return ("".join(virtuals) + "\n" + CLOCK_INIT + "\n" + CLOCK_START + "\n"
            + "".join(body) + "\n" + CLOCK_END)


@dataclass(frozen=True)
class ClockLine:
    at: str  # init, start or end
    file: str | None
    pid: int
    t: float


def read_clock(path: Path) -> list[ClockLine]:
    """The clock's lines so far; a line being written is left for later."""
    try:
        text = path.read_text()
    except OSError:
        return []
    found = []
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        files = raw.get("files") or [None]
        found.append(ClockLine(raw["at"], files[0], int(raw["pid"]), float(raw["t"])))
    return found


def clock_seconds(lines: list[ClockLine], ended: float) -> dict[str, float]:
    """Seconds per file, parse included: in each process, from the end of
    the file before (or the program's start) to the end of its rules.  A
    file whose rules did not end (its timeout) runs until the next file's
    start, or until ENDED."""
    init = min((c.t for c in lines if c.at == "init"),
               default=min((c.t for c in lines), default=ended))
    seconds: dict[str, float] = {}
    for pid in sorted({c.pid for c in lines if c.at != "init"}):
        since, open_file = init, None
        for c in sorted((c for c in lines if c.pid == pid and c.at != "init"),
                        key=lambda c: c.t):
            if c.at == "start":
                if open_file is not None:
                    seconds[open_file] = c.t - since
                    since = c.t
                open_file = c.file
            elif c.at == "end" and c.file is not None:
                seconds[c.file] = c.t - since
                since, open_file = c.t, None
        if open_file is not None:
            seconds[open_file] = max(0.0, ended - since)
    return {f: max(0.0, s) for f, s in seconds.items()}


def files_on_failure(order: list[str], lines: list[ClockLine], stderr_texts: list[str]
                     ) -> list[str]:
    """The files spatch was on when it failed: each process's last file
    (its last HANDLING line) that did not end; else every file that did
    not end."""
    ended = {c.file for c in lines if c.at == "end"}
    last_handled = []
    for text in stderr_texts:
        handled = HANDLING.findall(text)
        if handled and handled[-1] not in ended:
            last_handled.append(handled[-1])
    if last_handled:
        return [f for f in order if f in last_handled] or sorted(set(last_handled))
    return [f for f in order if f not in ended] or order


def parse_errors(stderr: str) -> dict[str, list[ParseError]]:
    """Skipped regions per file, from spatch's --verbose-parsing report.

    spatch skips a top-level element it cannot parse and resyncs at a
    later line; "badcount" is the number of lines it gave up on.  A file
    spatch stopped on (its timeout, an exception of its engine) is skipped
    whole: the rules it did not finish reported part of the file.
    """
    found: dict[str, list[ParseError]] = {}
    marks = list(HANDLING.finditer(stderr))
    for i, mark in enumerate(marks):
        block = stderr[mark.end():marks[i + 1].start() if i + 1 < len(marks) else len(stderr)]
        c_file = mark["file"]
        for exn in EXN.finditer(block):
            # the rules stopped part way: nothing of the file can be trusted
            why = "spatch timed out on this file" if TIMEOUT.search(exn["exn"]) else \
                f"spatch gave up on this file: {exn['exn']}"
            found.setdefault(c_file, []).append(ParseError(why, 1, 10**9))
        for err in PARSE_ERROR.finditer(block):
            syncs = [int(m["line"]) for m in SYNC.finditer(block, 0, err.start())]
            bad = int(err["badcount"] or 1)
            in_file = err["file"] == c_file
            if syncs:
                last = syncs[-1]
            else:
                last = int(err["line"]) if in_file else 10**9
            first = max(1, last - bad - 1)
            if in_file:
                first = min(first, int(err["line"]))
            where = f"line {err['line']}" if in_file else f"{err['file']}:{err['line']}"
            message = (f"lines {first}-{last} skipped: parse error at {where}, "
                       f"around {err['around'].strip().rstrip(',')}: {err['content'].strip()}")
            regions = found.setdefault(c_file, [])
            error = ParseError(message, first, last)
            if error not in regions:
                regions.append(error)
    return found


@dataclass
class SpatchRunner:
    """Runs a fact program over files, each parsed once, and keeps what
    spatch said about each file in CACHE under a hash of the program, the
    spatch version, the macro file and the file's content: a rerun parses
    only the files that changed."""

    spatch: Path
    tree: Path
    jobs: int
    progress: Progress
    timeout_per_file: int = 120
    cache: ResultCache = field(default_factory=no_cache)
    seconds_by_file: dict[str, float] = field(default_factory=dict)
    _version: str | None = field(default=None, repr=False)

    def run(self, label: str, cocci_files: list[Path], files: list[str],
            env: dict[str, str] | None = None) -> SpatchOutput:
        return self.run_program(label, combine_rules(cocci_files), files, env)

    def run_program(self, label: str, program_text: str, files: list[str],
                    env: dict[str, str] | None = None) -> SpatchOutput:
        output = SpatchOutput()
        if not files:
            return output
        digests = {f: file_digest(self.tree / f) for f in files}
        program_key = self.program_key(program_text, env)
        keys = {f: self.cache.key(program_key, f, digests[f]) for f in files}
        found = {f: self.cache.get("spatch", keys[f]) for f in files}
        todo = [f for f in files if found[f] is None]
        if len(todo) < len(files):
            self.progress.step(f"{label}: {len(files) - len(todo)}/{len(files)} files from "
                               "the cache")
        fresh: dict[str, dict] = {}
        if todo:
            fresh = self.run_files(label, program_text, todo, digests, env)
        for f in todo:
            self.cache.put("spatch", keys[f], fresh[f])
            self.cache.put("cost", self.cost_key(f, digests[f]), fresh[f]["seconds"])
            found[f] = fresh[f]
        for f in sorted(files):
            entry = found[f]
            output.records.extend(entry["records"])
            if entry["errors"]:
                output.parse_errors[f] = [ParseError(*e) for e in entry["errors"]]
        return output

    def program_key(self, program: str, env: dict[str, str] | None) -> str:
        """What every file's result depends on besides the file: hashed
        once, not once per file (a fact program is 100 KB)."""
        if self._version is None:
            self._version = version(self.spatch)
        return self.cache.key(program, json.dumps(env or {}, sort_keys=True), self._version,
                              MACRO_FILE.read_text(), reader_digest())

    def cost_key(self, rel: str, digest: str) -> str:
        return self.cache.key("cost", rel, digest)

    def estimated_costs(self, files: list[str], digests: dict[str, str]) -> dict[str, float]:
        """Seconds each file took last time, else its size as a guess
        (about 40 KB a second on this project's machine)."""
        costs = {}
        for f in files:
            measured = self.cache.get("cost", self.cost_key(f, digests[f]))
            costs[f] = float(measured) if isinstance(measured, (int, float)) else \
                (self.tree / f).stat().st_size / 40_000 + 0.05
        return costs

    def run_files(self, label: str, program_text: str, files: list[str],
                  digests: dict[str, str], env: dict[str, str] | None) -> dict[str, dict]:
        costs = self.estimated_costs(files, digests)
        order = sorted(files, key=lambda f: (-costs[f], f))
        with tempfile.TemporaryDirectory(prefix="sem2mutex-spatch-") as name:
            tmp = Path(name)
            program = tmp / "rules.cocci"
            program.write_text(with_clock(program_text))
            groups = tmp / "groups.txt"
            groups.write_text("".join(f"{f}\n\n" for f in order))
            clock = tmp / "clock"
            clock.touch()
            args = [*SPATCH_FLAGS, "--timeout", str(self.timeout_per_file),
                    "--sp-file", str(program), "--jobs", str(max(1, min(self.jobs, len(order)))),
                    "--chunksize", "1", "--tmp-dir", str(tmp / "parmap"),
                    "--file-groups", str(groups)]
            done = self._launch_counting(label, args, {**(env or {}), CLOCK_ENV: str(clock)},
                                         clock, len(order))
            ended = time.time()
            lines = read_clock(clock)
            if done.returncode != 0 or python_failed(done.stderr):
                kept = [p.read_text(errors="replace") for p in sorted(tmp.glob("parmap*/stderr*"))]
                raise SpatchError(files_failure(
                    files_on_failure(order, lines, kept or [done.stderr]), len(order), done))
        seconds = clock_seconds(lines, ended)
        errors = parse_errors(done.stderr)
        by_file: dict[str, list[dict]] = {f: [] for f in order}
        for line in done.stdout.splitlines():
            if line.startswith("{"):
                rec = json.loads(line)
                by_file.setdefault(rec.get("file", ""), []).append(rec)
        results: dict[str, dict] = {}
        for f in order:
            spent = seconds.get(f, 0.0)
            self.seconds_by_file[f] = self.seconds_by_file.get(f, 0.0) + spent
            results[f] = {"records": by_file[f], "seconds": round(spent, 3),
                          "errors": [[e.message, e.first_line, e.last_line]
                                     for e in errors.get(f, [])]}
        return results

    def _launch_counting(self, label: str, args: list[str], env: dict[str, str],
                         clock: Path, total: int) -> subprocess.CompletedProcess:
        """launch(), counting the files whose rules ended as it runs: a
        line at each tenth of the files, or after PROGRESS_QUIET_SECONDS
        without one when some more ended."""
        with ThreadPoolExecutor(max_workers=1) as pool:
            running = pool.submit(launch, self.spatch, args, self.tree, env)
            shown, shown_at = 0, time.monotonic()
            while True:
                try:
                    done = running.result(timeout=PROGRESS_SECONDS)
                    break
                except FutureTimeout:
                    ended = sum(1 for c in read_clock(clock) if c.at == "end")
                    quiet_for = time.monotonic() - shown_at
                    if ended > shown and (ended * 10 // total > shown * 10 // total
                                          or quiet_for >= PROGRESS_QUIET_SECONDS):
                        shown, shown_at = ended, time.monotonic()
                        self.progress.count(label, ended, total)
        self.progress.count(label, total, total)
        return done


# How often a running fact pass's progress is read off its clock, and the
# longest it stays silent while files end.
PROGRESS_SECONDS = 1.0
PROGRESS_QUIET_SECONDS = 10.0


@dataclass
class SpatchRun:
    records: list[dict]
    parse_errors: dict[str, list[ParseError]]  # file as given -> skipped regions
    stdout: str = ""


def files_failure(on: list[str], total: int, done: subprocess.CompletedProcess) -> str:
    """Why a fact pass over TOTAL files failed, on one line, with the
    first of the files it was ON."""
    files = ", ".join(on[:3]) + (f" and {len(on) - 3} more" if len(on) > 3 else "")
    return spatch_failure(done, f"{files} (a pass over {plural(total, 'file')})")


def spatch_failure(done: subprocess.CompletedProcess, on: str) -> str:
    """One line for a spatch run that failed: how it ended, what it was
    running ON, and its own last word."""
    return f"spatch {how_it_ended(done.returncode)} on {on}: {last_word(done.stderr)}"


def how_it_ended(returncode: int) -> str:
    if returncode < 0:
        return f"died of {signal.Signals(-returncode).name}"
    if returncode > 0:
        return f"exited {returncode}"
    return "reported an error"


def last_word(stderr: str) -> str:
    """The line of spatch's stderr that says what went wrong.  It ends with
    parsing warnings when spatch dies of a signal, so its fatal line, when
    it printed one, is the one shown; for a python rule that raised, the
    exception first, then spatch's line naming the rule (an "EXN: ... in FILE"
    line when the files were in groups: spatch then goes on to the next
    group and exits 0)."""
    lines = stderr.strip().splitlines()
    fatal = [line for line in lines if line.startswith("Fatal error")]
    if fatal:
        return fatal[-1]
    python = [i for i, line in enumerate(lines) if "Error in Python script" in line]
    if python:
        at = python[-1]
        raised = lines[at - 1] if at > 0 and not lines[at - 1].startswith(" ") else ""
        if raised and not raised.startswith("Traceback"):
            return f"a python rule raised {raised} ({lines[at]})"
        return lines[at]
    return lines[-1] if lines else "nothing on stderr"


# What spatch prints when a python rule raised, at the start of a line or
# inside an EXN line; never a C line, which --verbose-parsing quotes after
# "whole content = " (6.1's kdb_bt.c has the word Traceback).
PYTHON_FAILURE = re.compile(r'^Traceback \(most recent call last\):$'
                            r'|Error in Python script, line \d+, file "', re.M)


def python_failed(stderr: str) -> bool:
    """Whether a python rule raised: a bug of the rules, never of the C
    file (with --file-groups spatch says so on stderr and exits 0)."""
    return PYTHON_FAILURE.search(stderr) is not None


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("s" if count != 1 else "")


def run_rules(spatch: Path, cocci: list[Path], virtuals: list[str], files: list[Path],
              jobs: int, env: dict[str, str] | None = None, in_place: bool = False,
              flags: list[str] | None = None,
              cache: ResultCache | None = None,
              acting_on: dict[Path, str] | None = None) -> SpatchRun:
    """Run rule files as one program on explicit files, one file per group,
    from a neutral cwd.

    A neutral directory keeps a kernel tree's .cocciconfig (--use-gitgrep)
    out, --no-scanner stops spatch choosing files itself, and one group per
    file keeps one file's trouble out of another's.

    With CACHE, what spatch did to each file (its records, parse errors and,
    in place, the file it left) is kept under a hash of the program, the
    file's content and the entries of a JSON plan in ENV that name the file
    (the rewrite plan): a rerun after a reviewer's verdict rewrites only the
    files whose plan changed.  ACTING_ON gives, for a file, the part of the
    program that can act on it, to key it by instead of the whole program
    (the include step's rules, one per anchor header: a new anchor in one
    file must not make every other file's result stale).
    """
    if not files:
        return SpatchRun([], {})
    program_text = combine_rules(cocci)
    if cache is None or cache.root is None:
        return run_rule_program(spatch, program_text, cocci, virtuals, files, jobs, env,
                                in_place, flags)
    common = [json.dumps([virtuals, flags, in_place]), version(spatch), MACRO_FILE.read_text(),
              reader_digest()]
    plans = plan_files(env)
    keys = {f: cache.key((acting_on or {}).get(f, program_text), *common,
                         per_file_environment(env, plans, f), f.read_bytes())
            for f in files}
    kept = {f: cache.get("rules", keys[f]) for f in files}
    todo = [f for f in files if kept[f] is None]
    fresh = run_rule_program(spatch, program_text, cocci, virtuals, todo, jobs, env,
                             in_place, flags) if todo else SpatchRun([], {})
    records: list[dict] = []
    errors: dict[str, list[ParseError]] = {}
    for f in files:
        if kept[f] is None:
            mine = [r for r in fresh.records if r.get("file") == str(f)]
            entry = {"records": [{**r, "file": PLACEHOLDER} for r in mine],
                     "errors": [[e.message, e.first_line, e.last_line]
                                for e in fresh.parse_errors.get(str(f), [])],
                     "after": f.read_text(errors="surrogateescape") if in_place else None}
            cache.put("rules", keys[f], entry)
            records += mine
            if str(f) in fresh.parse_errors:
                errors[str(f)] = fresh.parse_errors[str(f)]
            continue
        entry = kept[f]
        records += [{**r, "file": str(f)} for r in entry["records"]]
        if entry["errors"]:
            errors[str(f)] = [ParseError(*e) for e in entry["errors"]]
        if in_place and entry["after"] is not None:
            after = entry["after"].encode(errors="surrogateescape")
            if f.read_bytes() != after:
                f.write_bytes(after)
    return SpatchRun(records, errors, fresh.stdout)


# Where a file's own path stands in a kept record.
PLACEHOLDER = "\0file"


def plan_files(env: dict[str, str] | None) -> dict[str, dict]:
    """The JSON files ENV names (the rewrite plan), read once."""
    found = {}
    for name, value in (env or {}).items():
        if value.endswith(".json") and Path(value).is_file():
            found[name] = json.loads(Path(value).read_text())
    return found


def per_file_environment(env: dict[str, str] | None, plans: dict[str, dict],
                         f: Path) -> str:
    """ENV as it matters to F: the other variables as they are, and of each
    JSON plan the entries naming F (their path left out)."""
    shown = {}
    for name, value in sorted((env or {}).items()):
        plan = plans.get(name)
        if plan is None:
            shown[name] = value
            continue
        shown[name] = {k: ([entry_without_file(e) for e in v if names_file_or_none(e, f)]
                           if isinstance(v, list) else v)
                       for k, v in sorted(plan.items())}
    return json.dumps(shown, sort_keys=True)


def names_file_or_none(entry, f: Path) -> bool:
    """Whether a plan ENTRY matters to F: it names F, or names no file."""
    return not isinstance(entry, dict) or entry.get("file", str(f)) == str(f)


def entry_without_file(entry):
    if not isinstance(entry, dict):
        return entry
    return {k: v for k, v in entry.items() if k != "file"}


def largest_first(files: list[Path]) -> list[Path]:
    """FILES, the largest first: spatch's processes take the next file
    when done with one, so the big ones go first and none is left to run
    alone at the end (a file's size is a fair guess of its cost)."""
    def size(f: Path) -> int:
        try:
            return f.stat().st_size
        except OSError:
            return 0
    return sorted(files, key=lambda f: (-size(f), str(f)))


def run_rule_program(spatch: Path, program_text: str, cocci: list[Path], virtuals: list[str],
                     files: list[Path], jobs: int, env: dict[str, str] | None,
                     in_place: bool, flags: list[str] | None) -> SpatchRun:
    with tempfile.TemporaryDirectory(prefix="sem2mutex-rules-") as neutral:
        program = Path(neutral) / "rules.cocci"
        program.write_text(program_text)
        groups = Path(neutral) / "groups"
        groups.write_text("".join(f"{f}\n\n" for f in largest_first(files)))
        args = [*(RULE_FLAGS if flags is None else flags),
                "--timeout", str(RULE_TIMEOUT_SECONDS),
                "--sp-file", str(program), *[a for v in virtuals for a in ("-D", v)],
                "--jobs", str(max(1, min(jobs, len(files)))), "--file-groups", str(groups)]
        if in_place:
            args += IN_PLACE_FLAGS
        done = launch(spatch, args, Path(neutral), env)
    if done.returncode != 0 or python_failed(done.stderr):
        raise SpatchError(spatch_failure(
            done, f"{plural(len(files), 'file')} with {', '.join(c.name for c in cocci)}"))
    # The rules print JSON, one object per line.
    records = [json.loads(line) for line in done.stdout.splitlines()
               if line.startswith("{")]
    return SpatchRun(records, parse_errors(done.stderr), done.stdout)
