// SPDX-License-Identifier: GPL-2.0-only
/// Report every call of the semaphore API: the initialisers (sema_init(),
/// the 2.6-era init_MUTEX() and init_MUTEX_LOCKED(),
/// __SEMAPHORE_INITIALIZER()) with their count, and the operations down(),
/// down_interruptible(), down_killable(), down_trylock(), down_timeout()
/// and up() with their enclosing function and number of arguments.  A
/// call inside a macro body is reported with the macro's name, and with
/// the parameter it acts on when its argument is one.
/// access.cocci describes what each call acts on.
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

// --------------------------------------------------------------- calls

// With how many arguments: a call the API's prototype does not take is
// some other function or macro of the same name (2.6's atafb.c rounds
// with its own up(x, r)).
@call depends on report@
identifier op = {init_MUTEX, init_MUTEX_LOCKED, down, down_interruptible,
		 down_killable, down_trylock, down_timeout, up};
expression X;
expression list[n] rest;
position p;
@@
op@p(X, rest)

@script:python depends on report@
op << call.op;
X << call.X;
n << call.n;
p << call.p;
@@
emit("call", p[0], op=op, arg=X, count=None, args=int(n) + 1)

@counted_init depends on report@
identifier op = {sema_init, __SEMAPHORE_INITIALIZER};
expression X, N;
position p;
@@
op@p(X, N)

@script:python depends on report@
op << counted_init.op;
X << counted_init.X;
N << counted_init.N;
p << counted_init.p;
@@
emit("call", p[0], op=op, arg=X, count=N)

// A call on &something acts on a semaphore object; any other argument
// is a pointer to one.
@by_address depends on report@
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up};
expression X;
position p;
@@
op@p(&X, ...)

@script:python depends on report@
p << by_address.p;
@@
emit("by_address", p[0])

// ---------------------------------------------------------------- macros

@in_macro depends on report@
identifier M;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
position p;
@@
#define M(...) <+... op@p(...) ...+>

@script:python depends on report@
M << in_macro.M;
p << in_macro.p;
@@
emit("in_macro", p[0], macro=M)

// A call on one of its macro's parameters (2.6's XFS: #define psema(sp, b)
// down(sp)): each expansion names its own semaphore, where it is expanded.
@on_macro_param depends on report@
identifier M, x;
identifier list[n] ps;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up};
position p;
@@
(
#define M(ps, x, ...) <+... op@p(x, ...) ...+>
|
#define M(ps, x, ...) <+... op@p((x), ...) ...+>
)

@script:python depends on report@
M << on_macro_param.M;
x << on_macro_param.x;
p << on_macro_param.p;
@@
emit("on_macro_param", p[0], macro=M, param=x)

// An object-like macro (#define LOAD_LOCK down(&load_sem)) is used by its
// bare name, which the wrapper analysis looks for as well.
@in_object_macro depends on report@
identifier M;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
position p;
@@
#define M <+... op@p(...) ...+>

@script:python depends on report@
M << in_object_macro.M;
p << in_object_macro.p;
@@
emit("in_macro", p[0], macro=M, object_like=True)
