// SPDX-License-Identifier: GPL-2.0-only
/// Report every up() that some path reaches from the start of its function
/// without going through a down(), down_interruptible(), down_killable(),
/// down_trylock() or down_timeout() of the same semaphore expression.
/// Such an up() is not provably the release of the calling task's own
/// down(): the semaphore cannot be turned into a mutex without review.
/// An up() that is not reported here is paired in its function.
///
// Confidence: High
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers
// Keywords: semaphore, mutex, sem2mutex

virtual report

@initialize:python depends on report@
@@
import json


def emit(kind, pos, **fields):
	fields.update(kind=kind, file=pos.file, line=int(pos.line),
		      col=int(pos.column), function=pos.current_element)
	print(json.dumps(fields, sort_keys=True), flush=True)

@unpaired_up depends on report exists@
identifier fn;
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression S;
position p;
@@
fn(...) {
  ... when != lock(S, ...)
  up@p(S);
  ... when any
}

@script:python depends on report@
p << unpaired_up.p;
@@
emit("unpaired", p[0], op="up")
