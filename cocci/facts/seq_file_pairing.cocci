// SPDX-License-Identifier: GPL-2.0-only
/// Report, for the seq_operations .start and .stop functions sem2mutex
/// pairs, a down() some path of its .start function leaves without holding
/// (a path that returns without going through it), and an up() some path
/// of its .stop function does not go through.  seq_read() calls .stop after
/// .start in the same task whatever .start returned: a semaphore .start
/// takes on every path and .stop releases on every path is released by the
/// task that took it.  The functions are given in SEM2MUTEX_SEQ_STARTS and
/// SEM2MUTEX_SEQ_STOPS (comma-separated names).
///
// Confidence: High
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers
// Keywords: semaphore, mutex, seq_file, sem2mutex

virtual report

@initialize:python depends on report@
@@
import json
import os

STARTS = set(filter(None, os.environ.get("SEM2MUTEX_SEQ_STARTS", "").split(",")))
STOPS = set(filter(None, os.environ.get("SEM2MUTEX_SEQ_STOPS", "").split(",")))


def emit(kind, pos, **fields):
	fields.update(kind=kind, file=pos.file, line=int(pos.line),
		      col=int(pos.column), function=pos.current_element)
	print(json.dumps(fields, sort_keys=True), flush=True)

// spatch 1.1.1 cannot inherit an identifier declared with a script
// constraint: run as it stands, the rules match every function and choose
// when reporting; sem2mutex writes the two lists in as literal sets
// (seqfile.py's seq_program()), so that only their paths are walked.
@seq_taken depends on report@
identifier fn;
expression S;
position p;
@@
fn(...) {
  <+... down@p(S) ...+>
}

@seq_unheld depends on report exists@
identifier seq_taken.fn;
expression seq_taken.S;
position q;
@@
fn@q(...) {
  ... when != down(S)
}

@script:python depends on report@
p << seq_taken.p;
q << seq_unheld.q;
@@
if q[0].current_element in STARTS:
	emit("seq_unheld", p[0])

@seq_released depends on report@
identifier fn;
expression S;
position p;
@@
fn(...) {
  <+... up@p(S) ...+>
}

@seq_unreleased depends on report exists@
identifier seq_released.fn;
expression seq_released.S;
position q;
@@
fn@q(...) {
  ... when != up(S)
}

@script:python depends on report@
p << seq_released.p;
q << seq_unreleased.q;
@@
if q[0].current_element in STOPS:
	emit("seq_unreleased", p[0])
