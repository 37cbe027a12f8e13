// SPDX-License-Identifier: GPL-2.0-only
/// Describe the argument of every semaphore API call as a tree of
/// sub-expressions, each with its extent in the file: member accesses
/// (e->f, e.f), array elements, calls, identifiers, conditionals, and
/// the type of every sub-expression whose type spatch knows.  sem2mutex
/// rebuilds the tree from the extents and types what spatch could not
/// (a struct defined in a header, a typedef, a function's return type)
/// from the tree-wide index of types.cocci, so that each call is tied to
/// exactly one semaphore.  calls.cocci reports the calls themselves.
///
// Confidence: High
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers
// Keywords: semaphore, mutex, sem2mutex

virtual report

@initialize:python depends on report@
@@
import json


def extent(pos):
	return [int(pos.line), int(pos.column), int(pos.line_end),
		int(pos.column_end)]


def emit_access(kind, anchor, at, **fields):
	fields.update(kind=kind, file=anchor.file, line=int(anchor.line),
		      col=int(anchor.column), function=anchor.current_element,
		      at=extent(at))
	print(json.dumps(fields, sort_keys=True), flush=True)

// The argument itself: the root of the tree.
@acc_arg depends on report@
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
expression E;
position p, q;
@@
op@p(E@q, ...)

@script:python depends on report@
p << acc_arg.p;
q << acc_arg.q;
@@
emit_access("acc_arg", p[0], q[0])

// e->f and e.f in separate rules: a disjunction would stop at the first
// branch that matches somewhere in the argument.
@acc_arrow depends on report@
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
expression E;
identifier fld;
position p, q, r;
@@
op@p(<+... E@q->fld@r ...+>, ...)

@script:python depends on report@
p << acc_arrow.p;
q << acc_arrow.q;
r << acc_arrow.r;
fld << acc_arrow.fld;
@@
emit_access("acc_member", p[0], q[0], field=fld, arrow=True,
	    end=[int(r[0].line_end), int(r[0].column_end)])

@acc_dot depends on report@
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
expression E;
identifier fld;
position p, q, r;
@@
op@p(<+... E@q.fld@r ...+>, ...)

@script:python depends on report@
p << acc_dot.p;
q << acc_dot.q;
r << acc_dot.r;
fld << acc_dot.fld;
@@
emit_access("acc_member", p[0], q[0], field=fld, arrow=False,
	    end=[int(r[0].line_end), int(r[0].column_end)])

@acc_index depends on report@
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
expression E, I, X;
position p, q, r;
@@
op@p(<+... E@q[I]@X@r ...+>, ...)

@script:python depends on report@
p << acc_index.p;
q << acc_index.q;
r << acc_index.r;
@@
emit_access("acc_index", p[0], r[0], base=extent(q[0]))

@acc_call depends on report@
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
identifier g;
expression X;
position p, r;
@@
op@p(<+... g(...)@X@r ...+>, ...)

@script:python depends on report@
p << acc_call.p;
r << acc_call.r;
g << acc_call.g;
@@
emit_access("acc_call", p[0], r[0], callee=g)

// The argument of a call with one: what an accessor macro is given.
@acc_call_arg depends on report@
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
identifier g;
expression A, X;
position p, a, r;
@@
op@p(<+... g(A@a)@X@r ...+>, ...)

@script:python depends on report@
p << acc_call_arg.p;
a << acc_call_arg.a;
r << acc_call_arg.r;
@@
emit_access("acc_call_arg", p[0], r[0], arg=extent(a[0]))

@acc_local depends on report@
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
local idexpression x;
position p, r;
@@
op@p(<+... x@r ...+>, ...)

@script:python depends on report@
p << acc_local.p;
r << acc_local.r;
x << acc_local.x;
@@
emit_access("acc_ident", p[0], r[0], name=x, local=True)

@acc_global depends on report@
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
global idexpression x;
position p, r;
@@
op@p(<+... x@r ...+>, ...)

@script:python depends on report@
p << acc_global.p;
r << acc_global.r;
x << acc_global.x;
@@
emit_access("acc_ident", p[0], r[0], name=x, local=False)

@acc_cond depends on report@
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
expression C, A, B, X;
position p, a, b, r;
@@
op@p(<+... C ?@X@r A@a : B@b ...+>, ...)

@script:python depends on report@
p << acc_cond.p;
a << acc_cond.a;
b << acc_cond.b;
r << acc_cond.r;
@@
emit_access("acc_cond", p[0], r[0], then=extent(a[0]), otherwise=extent(b[0]))

// Every sub-expression whose type spatch knows: locals, parameters,
// casts, and what the file itself declares.
@acc_type depends on report@
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
type T;
T E;
position p, q;
@@
op@p(<+... E@q ...+>, ...)

@script:python depends on report@
p << acc_type.p;
q << acc_type.q;
T << acc_type.T;
@@
emit_access("acc_type", p[0], q[0], type=T)
