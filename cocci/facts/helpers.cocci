// SPDX-License-Identifier: GPL-2.0-only
/// Report what a function does with a struct semaphore * it is given, and
/// where a local struct semaphore * gets its value, so that sem2mutex can
/// attribute down()/up() through a pointer to the semaphores the callers
/// pass:
/// - every function parameter of type struct semaphore *, with its index;
/// - every call the parameter is handed to (the semaphore API included),
///   with the argument's index: another helper, or an escape;
/// - every other use of the parameter (stored, returned, ...): a pointer
///   that escapes cannot be followed; a test against NULL is harmless;
/// - every value a local struct semaphore * is assigned.
///
// Confidence: High
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers
// Keywords: semaphore, mutex, pointer, sem2mutex

virtual report

@initialize:python depends on report@
@@
import json


def emit_helper(kind, pos, **fields):
	fields.update(kind=kind, file=pos.file, line=int(pos.line),
		      col=int(pos.column), function=pos.current_element)
	print(json.dumps(fields, sort_keys=True), flush=True)

@helper_param depends on report@
identifier fn, x;
parameter list[n] ps;
position p;
@@
fn@p(ps, struct semaphore *x, ...) { ... }

@script:python depends on report@
fn << helper_param.fn;
x << helper_param.x;
n << helper_param.n;
p << helper_param.p;
@@
emit_helper("sem_param", p[0], name=x, index=int(n), helper=fn)

@param_passed depends on report@
identifier fn, x, g;
expression list[n] es;
position c, q;
@@
fn(..., struct semaphore *x, ...) {
  <...
  g@c(es, x@q, ...)
  ...>
}

@script:python depends on report@
fn << param_passed.fn;
x << param_passed.x;
g << param_passed.g;
n << param_passed.n;
c << param_passed.c;
@@
emit_helper("param_passed", c[0], name=x, callee=g, index=int(n), helper=fn)

@param_tested depends on report@
identifier fn, x;
position q;
@@
fn(..., struct semaphore *x, ...) {
  <...
(
  !x@q
|
  x@q == NULL
|
  x@q != NULL
)
  ...>
}

@param_if_tested depends on report@
identifier fn, x;
statement S1, S2;
position q;
@@
fn(..., struct semaphore *x, ...) {
  <...
(
  if (x@q) S1 else S2
|
  if (x@q) S1
)
  ...>
}

@param_other depends on report@
identifier fn, x;
position p != {param_passed.q, param_tested.q, param_if_tested.q};
@@
fn(..., struct semaphore *x, ...) {
  <...
  x@p
  ...>
}

@script:python depends on report@
fn << param_other.fn;
x << param_other.x;
p << param_other.p;
@@
emit_helper("param_other", p[0], name=x, helper=fn)

// ------------------------------------------------ local pointers
// The typed rules below visit every expression: only in a file that
// declares a struct semaphore * at all.
@local_pointer depends on report@
identifier x;
expression E;
@@
(
struct semaphore *x;
|
struct semaphore *x = E;
)

@local_assigned depends on report && local_pointer@
local idexpression struct semaphore *x;
expression E;
position p;
@@
x =@p E

@script:python depends on report@
x << local_assigned.x;
E << local_assigned.E;
p << local_assigned.p;
@@
emit_helper("local_assigned", p[0], name=x, value=E)

@local_initialised depends on report && local_pointer@
identifier x;
expression E;
position p;
@@
struct semaphore *x@p = E;

@script:python depends on report@
x << local_initialised.x;
E << local_initialised.E;
p << local_initialised.p;
@@
emit_helper("local_assigned", p[0], name=x, value=E)

@local_api depends on report && local_pointer@
local idexpression struct semaphore *x;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up};
position q;
@@
op(x@q, ...)

@local_lhs depends on report && local_pointer@
local idexpression struct semaphore *x;
expression E;
position q;
@@
x@q = E

@local_tested depends on report && local_pointer@
local idexpression struct semaphore *x;
position q;
@@
(
!x@q
|
x@q == NULL
|
x@q != NULL
)

@local_other depends on report && local_pointer@
local idexpression struct semaphore *x;
position p != {local_api.q, local_lhs.q, local_tested.q};
@@
x@p

@script:python depends on report@
x << local_other.x;
p << local_other.p;
@@
emit_helper("local_other", p[0], name=x)
