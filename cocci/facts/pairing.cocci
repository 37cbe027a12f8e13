// SPDX-License-Identifier: GPL-2.0-only
/// Report every up() that some path reaches from the start of its function
/// without going through a down(), down_interruptible(), down_killable(),
/// down_trylock() or down_timeout() of the same semaphore expression, and
/// every up() some path reaches from an earlier up() of the same
/// expression without a down() between them (through loops, switch and
/// break, goto and early returns: spatch follows every path, but none
/// through BUG() or panic(), which do not return, nor past the return
/// macros of ACPI's debug tracing, return_VALUE() and the like).  Such an
/// up() is not provably the release of the calling task's own down(): the
/// semaphore cannot be turned into a mutex without review.  So is an up()
/// a path reaches where a down_trylock(), down_interruptible(),
/// down_killable() or down_timeout() failed (reported with that call).
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

// The semaphore expressions this file releases: the path rules below run
// once per expression, so that their when != clauses test a known
// expression instead of carrying every candidate along each path.
@released depends on report@
expression S;
@@
up(S)

@unpaired_up depends on report exists@
symbol return_VOID;
identifier fn;
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression released.S;
position p;
@@
fn(...) {
  ... when != lock(S, ...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  up@p(S)
  ... when any
}

@script:python depends on report@
p << unpaired_up.p;
@@
emit("unpaired", p[0], op="up")

// An up() some path reaches right after another up() of the same
// expression, with no down() between them (an up() before a sleep, then a
// break or goto that skips the re-take into the final up()): the second
// release finds the semaphore already released.  Neither rule follows a
// path through BUG() or panic(), which do not return (2.6's
// kmem_cache_create(): up(&cache_chain_sem); BUG(); on a duplicate name),
// nor through ACPI's return_VALUE(), return_VOID, return_ACPI_STATUS()
// and return_PTR(), which return (2.6's processor_perflib.c).
@double_up depends on report exists@
symbol return_VOID;
identifier fn;
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression released.S;
position p1, p2;
@@
fn(...) {
  ... when any
  up@p1(S)
  ... when != lock(S, ...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  up@p2(S)
  ... when any
}

@script:python depends on report@
p1 << double_up.p1;
p2 << double_up.p2;
@@
emit("unpaired", p2[0], op="up", after=int(p1[0].line))

// An up() a path reaches after a down() of the same member whose struct
// pointer was assigned between them (down(&d->sem); d = d->next;
// up(&d->sem);): it releases another struct's semaphore than the one it
// took.  One rule from the down: inheriting the released members and the
// pointers some statement assigns ran it once per member and cost the
// fact program 16% on 2.6.11's fs/.
@up_after_rebase depends on report exists@
symbol return_VOID;
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression E, E2;
identifier fld;
position p;
@@
lock(&E->fld, ...)
... when != lock(&E->fld, ...)
E = E2;
... when != lock(&E->fld, ...)
    when != BUG()
    when != panic(...)
    when != return_VALUE(...)
    when != return_VOID
    when != return_ACPI_STATUS(...)
    when != return_PTR(...)
up@p(&E->fld)

@script:python depends on report@
p << up_after_rebase.p;
@@
emit("unpaired", p[0], op="up")

// An up() a path reaches where a conditional down did not take the
// semaphore: down_trylock(), down_interruptible(), down_killable() and
// down_timeout() return non-zero when they fail.  The rules above count
// such a call as a down on every path (spatch follows no value), so these
// say where its failure leads to an up(): inside the failure branch, past
// a negated test with no else, which its failure skips (the ISR of 6.1's
// st95hf/core.c: if (!down_trylock(&s)) { up(&s); return; } ... up(&s);),
// and past a call whose result is dropped (2.6's rocket.c:
// down_interruptible(&info->write_sem);).  They follow only the
// expressions the file takes with a conditional down.  A failure branch
// that falls through past a plain test (if (down_trylock(&s))
// pr_info(...); up(&s);) is failure_branches.cocci's: spatch's paths past
// an if do not say which branch they came through, and finding it costs
// as much as these rules together, so sem2mutex runs it only where a
// mutex candidate takes its semaphore conditionally.
@conditional depends on report@
identifier cond = {down_interruptible, down_killable, down_trylock, down_timeout};
expression S;
@@
cond(S, ...)

@failed_within_up depends on report exists@
symbol return_VOID;
identifier cond = {down_interruptible, down_killable, down_trylock, down_timeout};
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression conditional.S;
expression X;
statement S1;
position a, p;
@@
(
if (\(cond@a(S, ...)\|cond@a(S, ...) < 0\|(X = cond@a(S, ...))\|(X = cond@a(S, ...)) != 0\|
     (X = cond@a(S, ...)) < 0\)) {
  ... when != lock(S, ...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  up@p(S)
  ... when any
}
|
if (\(!cond@a(S, ...)\|!(X = cond@a(S, ...))\)) S1 else {
  ... when != lock(S, ...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  up@p(S)
  ... when any
}
|
if (\(cond@a(S, ...) == 0\|(X = cond@a(S, ...)) == 0\)) S1 else {
  ... when != lock(S, ...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  up@p(S)
  ... when any
}
)

@script:python depends on report@
a << failed_within_up.a;
cond << failed_within_up.cond;
p << failed_within_up.p;
@@
emit("unpaired", p[0], op="up", failed=int(a[0].line), failed_op=cond)

@failed_past_up depends on report exists@
symbol return_VOID;
identifier cond = {down_interruptible, down_killable, down_trylock, down_timeout};
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression conditional.S;
expression X;
statement S1;
position a, p;
@@
(
if (\(!cond@a(S, ...)\|!(X = cond@a(S, ...))\)) S1
|
if (\(cond@a(S, ...) == 0\|(X = cond@a(S, ...)) == 0\)) S1
|
cond@a(S, ...);
|
 (void)cond@a(S, ...);
)
... when != lock(S, ...)
    when != BUG()
    when != panic(...)
    when != return_VALUE(...)
    when != return_VOID
    when != return_ACPI_STATUS(...)
    when != return_PTR(...)
up@p(S)

@script:python depends on report@
a << failed_past_up.a;
cond << failed_past_up.cond;
p << failed_past_up.p;
@@
emit("unpaired", p[0], op="up", failed=int(a[0].line), failed_op=cond)

// The same with the result stored first (ret = down_interruptible(&s);
// if (ret) ...; if (ret < 0) ...), as long as nothing assigns it again.
@failed_stored_up depends on report exists@
symbol return_VOID;
identifier cond = {down_interruptible, down_killable, down_trylock, down_timeout};
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression conditional.S;
expression X, E;
statement S1;
position a, p;
@@
X = cond@a(S, ...);
... when != X = E
    when != lock(S, ...)
(
if (X) {
  ... when != lock(S, ...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  up@p(S)
  ... when any
}
|
if (X < 0) {
  ... when != lock(S, ...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  up@p(S)
  ... when any
}
|
if (!X) S1 else {
  ... when != lock(S, ...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  up@p(S)
  ... when any
}
|
if (!X) S1
... when != lock(S, ...)
    when != BUG()
    when != panic(...)
    when != return_VALUE(...)
    when != return_VOID
    when != return_ACPI_STATUS(...)
    when != return_PTR(...)
up@p(S)
)

@script:python depends on report@
a << failed_stored_up.a;
cond << failed_stored_up.cond;
p << failed_stored_up.p;
@@
emit("unpaired", p[0], op="up", failed=int(a[0].line), failed_op=cond)

// The same with the result declared (int ret = down_interruptible(&s);).
// The declarations are found first: the path rule below, costly on every
// function of a file, runs only in the files that have one.
@declared_result depends on report@
identifier cond = {down_interruptible, down_killable, down_trylock, down_timeout};
expression conditional.S;
identifier x;
type T;
position a;
@@
T x = cond@a(S, ...);

@failed_declared_up depends on report exists@
symbol return_VOID;
identifier cond = {down_interruptible, down_killable, down_trylock, down_timeout};
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression conditional.S;
expression E;
identifier declared_result.x;
type declared_result.T;
statement S1;
position declared_result.a;
position p;
@@
T x = cond@a(S, ...);
... when != x = E
    when != lock(S, ...)
(
if (x) {
  ... when != lock(S, ...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  up@p(S)
  ... when any
}
|
if (x < 0) {
  ... when != lock(S, ...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  up@p(S)
  ... when any
}
|
if (!x) S1 else {
  ... when != lock(S, ...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  up@p(S)
  ... when any
}
|
if (!x) S1
... when != lock(S, ...)
    when != BUG()
    when != panic(...)
    when != return_VALUE(...)
    when != return_VOID
    when != return_ACPI_STATUS(...)
    when != return_PTR(...)
up@p(S)
)

@script:python depends on report@
a << declared_result.a;
cond << failed_declared_up.cond;
p << failed_declared_up.p;
@@
emit("unpaired", p[0], op="up", failed=int(a[0].line), failed_op=cond)

// A success flag (locked = down_trylock(&s) == 0; declared or assigned;
// spatch's isomorphisms match locked = !down_trylock(&s) with it): its
// failure is !locked, so the failure branch is the one of a negated test,
// or the else of a plain one, and a plain test with no else is skipped by
// the failure.  The flags are found first, as the declared results above.
@success_flag depends on report@
identifier cond = {down_interruptible, down_killable, down_trylock, down_timeout};
expression conditional.S;
identifier x;
type T;
position a;
@@
(
x = cond@a(S, ...) == 0;
|
T x = cond@a(S, ...) == 0;
)

@failed_flag_up depends on report exists@
symbol return_VOID;
identifier cond = {down_interruptible, down_killable, down_trylock, down_timeout};
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression conditional.S;
expression E;
identifier success_flag.x;
type T;
statement S1;
position success_flag.a;
position p;
@@
(
x = cond@a(S, ...) == 0;
|
T x = cond@a(S, ...) == 0;
)
... when != x = E
    when != lock(S, ...)
(
if (!x) {
  ... when != lock(S, ...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  up@p(S)
  ... when any
}
|
if (x) S1 else {
  ... when != lock(S, ...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  up@p(S)
  ... when any
}
|
if (x) S1
... when != lock(S, ...)
    when != BUG()
    when != panic(...)
    when != return_VALUE(...)
    when != return_VOID
    when != return_ACPI_STATUS(...)
    when != return_PTR(...)
up@p(S)
)

@script:python depends on report@
a << success_flag.a;
cond << failed_flag_up.cond;
p << failed_flag_up.p;
@@
emit("unpaired", p[0], op="up", failed=int(a[0].line), failed_op=cond)

// A failure branch that jumps to a label (if (down_interruptible(&s))
// goto out;): an up() a path reaches from the label without a down()
// releases what the failed call did not take, whatever other path also
// leads there.
@failure_goto depends on report@
identifier cond = {down_interruptible, down_killable, down_trylock, down_timeout};
expression conditional.S;
expression X, E;
identifier L;
position a;
@@
(
if (cond@a(S, ...)) goto L;
|
if (cond@a(S, ...)) { ... goto L; }
|
X = cond@a(S, ...);
... when != X = E
(
if (X) goto L;
|
if (X) { ... goto L; }
|
if (X < 0) goto L;
|
if (X < 0) { ... goto L; }
)
)

@failed_goto_up depends on report exists@
symbol return_VOID;
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression conditional.S;
identifier failure_goto.L;
position p;
@@
L:
... when != lock(S, ...)
    when != BUG()
    when != panic(...)
    when != return_VALUE(...)
    when != return_VOID
    when != return_ACPI_STATUS(...)
    when != return_PTR(...)
up@p(S)

@script:python depends on report@
a << failure_goto.a;
cond << failure_goto.cond;
p << failed_goto_up.p;
@@
# a label names a place in its own function only
if p[0].current_element == a[0].current_element:
	emit("unpaired", p[0], op="up", failed=int(a[0].line), failed_op=cond)

// A call handing &E to another function (perhaps a helper that releases
// it) in a file that takes E: sem2mutex judges the helper's up() there as
// the caller's release when every path to the call took E first and no
// release of E came between.
@handoff_candidate depends on report@
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression E;
@@
lock(&E, ...)

@handoff depends on report@
expression handoff_candidate.E;
identifier g !~ "^(down|down_interruptible|down_killable|down_trylock|down_timeout|up|sema_init)$";
position p;
@@
g@p(..., &E, ...)

@script:python depends on report@
p << handoff.p;
g << handoff.g;
@@
emit("handoff", p[0], callee=g)

@unheld_handoff depends on report exists@
identifier fn;
identifier handoff.g;
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression handoff_candidate.E;
position handoff.p, q;
@@
fn(...) {
  ... when != lock(&E, ...)
  g@p@q(..., &E, ...)
  ... when any
}

@script:python depends on report@
q << unheld_handoff.q;
@@
emit("unheld_handoff", q[0])

@handoff_after_up depends on report exists@
identifier fn;
identifier handoff.g;
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression handoff_candidate.E;
position handoff.p, q, u;
@@
fn(...) {
  ... when any
  up@u(&E)
  ... when != lock(&E, ...)
  g@p@q(..., &E, ...)
  ... when any
}

@script:python depends on report@
q << handoff_after_up.q;
u << handoff_after_up.u;
@@
emit("unheld_handoff", q[0], after=int(u[0].line))

// An up() a path reaches after the handoff with no down() between: if the
// function handed &E to releases it, this up() releases it again.
@up_after_handoff depends on report exists@
identifier fn;
identifier handoff.g;
identifier lock = {down, down_interruptible, down_killable, down_trylock,
		   down_timeout};
expression handoff_candidate.E;
position handoff.p, u;
@@
fn(...) {
  ... when any
  g@p(..., &E, ...)
  ... when != lock(&E, ...)
  up@u(&E)
  ... when any
}

@script:python depends on report@
p << handoff.p;
u << up_after_handoff.u;
g << handoff.g;
@@
emit("up_after_handoff", u[0], handoff=int(p[0].line), callee=g)

// A down_interruptible() or down_killable() whose failure its function
// hands back as a non-zero result (return down_interruptible(&s);
// if (down_interruptible(&s)) return -EINTR; ret = down_killable(&s);
// if (ret) return ret;).  A lock wrapper's callers can tell it failed only
// then: wrappers.py takes no other for a lock wrapper (2.6's
// void foo_lock(d) { down_interruptible(&d->sem); } would have its
// callers' foo_unlock() release a semaphore a signal kept them from
// taking).  Only in a file with such a call; the isomorphisms that would
// spell each test three ways more are off (the forms are spelled out, and
// one not matched only makes a wrapper less): with them, compiling the rule
// doubled the start of every fact run (1.1 s more per chunk).
@fallible_down depends on report@
identifier cond = {down_interruptible, down_killable};
expression S;
@@
cond(S)

@failure_returned depends on report && fallible_down
  disable is_zero, isnt_zero, not_int1, not_int2@
identifier cond = {down_interruptible, down_killable};
expression S, E, X;
identifier x;
type T;
position a;
@@
(
return cond@a(S);
|
if (\(cond@a(S)\|cond@a(S) != 0\|cond@a(S) < 0\)) return -E;
|
if (\(cond@a(S)\|cond@a(S) != 0\|cond@a(S) < 0\)) { ... return -E; }
|
if (\((X = cond@a(S))\|(X = cond@a(S)) != 0\|(X = cond@a(S)) < 0\)) return X;
|
X = cond@a(S);
if (\(X\|X != 0\|X < 0\)) \(return X;\|return -E;\)
|
T x = cond@a(S);
if (\(x\|x != 0\|x < 0\)) \(return x;\|return -E;\)
|
T x = cond@a(S);
return x;
)

@script:python depends on report@
a << failure_returned.a;
@@
emit("failure_returned", a[0], by="return")

// A macro whose body is the call (2.6's #define
// lock_cpu_hotplug_interruptible() down_interruptible(&cpucontrol)):
// the failure is the value of its expansion.  (A return in a macro's body
// returns from the function it is expanded in: past a
// if (down_interruptible(&s)) return -EINTR; there, the lock is held.)
@failure_valued depends on report && fallible_down@
identifier cond = {down_interruptible, down_killable};
expression S;
identifier M;
position a;
@@
(
#define M(...) cond@a(S)
|
#define M cond@a(S)
)

@script:python depends on report@
a << failure_valued.a;
@@
emit("failure_returned", a[0], by="value")
