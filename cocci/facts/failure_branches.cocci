// SPDX-License-Identifier: GPL-2.0-only
/// Report every up() a path reaches from the end of the failure branch of
/// a conditional down (down_trylock(), down_interruptible(),
/// down_killable(), down_timeout(): non-zero when they did not take the
/// semaphore) without another down of the same expression: a branch that
/// falls through past a plain test (if (down_trylock(&s)) pr_info(...);
/// up(&s);) releases what the failed call did not take.  pairing.cocci
/// reports the other ways a failure reaches an up(); this one it cannot:
/// spatch's paths past an if do not say which branch they came through,
/// so the branch is bound as a statement and the paths are searched from
/// it (from an identical statement elsewhere in its function too: more
/// reports, never fewer).  A branch that takes the semaphore again (2.6's
/// snsc.c: if (down_trylock(&s)) { if (down_interruptible(&s)) return
/// ...; }) leaves holding it, or not at all: not followed.  It costs as
/// much as the rest of the failed-down rules together, so sem2mutex runs
/// it only where a mutex candidate takes its semaphore conditionally.
///
// Confidence: High
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers
// Keywords: semaphore, mutex, sem2mutex

virtual report

@initialize:python depends on report@
@@
import json

# conditional downs whose failure branch takes the semaphore again
RETAKING = set()


def emit(kind, pos, **fields):
	fields.update(kind=kind, file=pos.file, line=int(pos.line),
		      col=int(pos.column), function=pos.current_element)
	print(json.dumps(fields, sort_keys=True), flush=True)

@conditional depends on report@
identifier cond = {down_interruptible, down_killable, down_trylock, down_timeout};
expression S;
@@
cond(S, ...)

@failure_branch depends on report@
identifier cond = {down_interruptible, down_killable, down_trylock, down_timeout};
expression conditional.S;
statement S1, S2;
position a;
@@
(
if (cond@a(S, ...)) S1 else S2
|
if (!cond@a(S, ...)) S2 else S1
|
if (cond@a(S, ...) == 0) S2 else S1
|
if (cond@a(S, ...)) S1
)

@retaking_branch depends on report@
identifier cond = {down_interruptible, down_killable, down_trylock, down_timeout};
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression conditional.S;
statement S2;
position a;
@@
(
if (cond@a(S, ...)) { <+... lock(S, ...) ...+> } else S2
|
if (!cond@a(S, ...)) S2 else { <+... lock(S, ...) ...+> }
|
if (cond@a(S, ...) == 0) S2 else { <+... lock(S, ...) ...+> }
|
if (cond@a(S, ...)) { <+... lock(S, ...) ...+> }
)

@script:python depends on report@
a << retaking_branch.a;
@@
RETAKING.add((a[0].file, a[0].line, a[0].column))

@failed_through_up depends on report exists@
symbol return_VOID;
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression conditional.S;
statement failure_branch.S1;
position p;
@@
S1
... when != lock(S, ...)
    when != BUG()
    when != panic(...)
    when != return_VALUE(...)
    when != return_VOID
    when != return_ACPI_STATUS(...)
    when != return_PTR(...)
up@p(S)

@script:python depends on report@
a << failure_branch.a;
cond << failure_branch.cond;
p << failed_through_up.p;
@@
if (a[0].file, a[0].line, a[0].column) not in RETAKING \
   and p[0].current_element == a[0].current_element:
	emit("unpaired", p[0], op="up", failed=int(a[0].line), failed_op=cond)
