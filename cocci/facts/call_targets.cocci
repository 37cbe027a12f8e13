// SPDX-License-Identifier: GPL-2.0-only
/// Describe what each semaphore API call acts on, structurally: a global
/// or local variable, a field of a struct whose type spatch knows (or
/// not), an array element, or a pointer.  sem2mutex ties each call to one
/// semaphore instance of the whole tree with these shapes; calls.cocci
/// reports the calls themselves.
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

// ------------------------------------------------------- argument shapes
// The semaphore object is &SHAPE for a call and SHAPE for the static
// initializer; a bare SHAPE passed to a call is a pointer to a semaphore.

@addr_ptr_field depends on report@
position p;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
identifier fld;
type T;
T *e;
@@
(
op@p(&e->fld, ...)
|
op@p(&(e->fld), ...)
)

@script:python depends on report@
T << addr_ptr_field.T;
fld << addr_ptr_field.fld;
p << addr_ptr_field.p;
@@
emit("shape", p[0], shape="field", addr=True, container=T, field=fld)

@addr_field depends on report@
position p;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
identifier fld;
type T;
T e;
@@
op@p(&e.fld, ...)

@script:python depends on report@
T << addr_field.T;
fld << addr_field.fld;
p << addr_field.p;
@@
emit("shape", p[0], shape="field", addr=True, container=T, field=fld)

@addr_nested_field depends on report@
position p;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
identifier holder, fld;
type T;
T *e;
@@
(
op@p(&e->holder.fld, ...)
|
op@p(&(e->holder).fld, ...)
)

@script:python depends on report@
T << addr_nested_field.T;
holder << addr_nested_field.holder;
fld << addr_nested_field.fld;
p << addr_nested_field.p;
@@
emit("shape", p[0], shape="field", addr=True, container=T,
     field=holder + "." + fld)

@addr_untyped_field depends on report@
position p;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
identifier fld;
expression e;
@@
(
op@p(&e->fld, ...)
|
op@p(&e.fld, ...)
|
op@p(&(e->fld), ...)
|
op@p(&(e.fld), ...)
)

@script:python depends on report@
fld << addr_untyped_field.fld;
p << addr_untyped_field.p;
@@
emit("shape", p[0], shape="field", addr=True, container=None, field=fld)

@addr_field_element depends on report@
position p;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
identifier fld;
expression e, i;
type T;
T *te;
@@
(
op@p(&te->fld[i], ...)
|
op@p(&e->fld[i], ...)
|
op@p(&e.fld[i], ...)
)

@script:python depends on report@
fld << addr_field_element.fld;
p << addr_field_element.p;
@@
emit("shape", p[0], shape="field_element", addr=True, container=None,
     field=fld)

@addr_typed_field_element depends on report@
position p;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
identifier fld;
expression i;
type T;
T *e;
@@
op@p(&e->fld[i], ...)

@script:python depends on report@
T << addr_typed_field_element.T;
fld << addr_typed_field_element.fld;
p << addr_typed_field_element.p;
@@
emit("shape", p[0], shape="field_element", addr=True, container=T,
     field=fld)

@addr_global depends on report@
position p;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
global idexpression G;
@@
op@p(&G, ...)

@script:python depends on report@
G << addr_global.G;
p << addr_global.p;
@@
emit("shape", p[0], shape="global", addr=True, name=G)

@addr_local depends on report@
position p;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
local idexpression L;
@@
op@p(&L, ...)

@script:python depends on report@
L << addr_local.L;
p << addr_local.p;
@@
emit("shape", p[0], shape="local", addr=True, name=L)

@addr_element depends on report@
position p;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
identifier x;
expression i;
@@
op@p(&x[i], ...)

@script:python depends on report@
x << addr_element.x;
p << addr_element.p;
@@
emit("shape", p[0], shape="element", addr=True, name=x)

@addr_any depends on report@
position p;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
expression E;
@@
op@p(&E, ...)

@script:python depends on report@
p << addr_any.p;
@@
emit("shape", p[0], shape="addr", addr=True)

// A semaphore named without & : the static initializer's object, or a
// pointer handed to a call.
@bare_ptr_field depends on report@
position p;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
identifier fld;
type T;
T *e;
@@
op@p(e->fld, ...)

@script:python depends on report@
T << bare_ptr_field.T;
fld << bare_ptr_field.fld;
p << bare_ptr_field.p;
@@
emit("shape", p[0], shape="field", addr=False, container=T, field=fld)

@bare_field depends on report@
position p;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
identifier fld;
type T;
T e;
@@
op@p(e.fld, ...)

@script:python depends on report@
T << bare_field.T;
fld << bare_field.fld;
p << bare_field.p;
@@
emit("shape", p[0], shape="field", addr=False, container=T, field=fld)

@bare_untyped_field depends on report@
position p;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
identifier fld;
expression e;
@@
(
op@p(e->fld, ...)
|
op@p(e.fld, ...)
)

@script:python depends on report@
fld << bare_untyped_field.fld;
p << bare_untyped_field.p;
@@
emit("shape", p[0], shape="field", addr=False, container=None, field=fld)

@bare_global depends on report@
position p;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
global idexpression G;
@@
op@p(G, ...)

@script:python depends on report@
G << bare_global.G;
p << bare_global.p;
@@
emit("shape", p[0], shape="global", addr=False, name=G)

@bare_local depends on report@
position p;
identifier op = {sema_init, init_MUTEX, init_MUTEX_LOCKED, down,
		 down_interruptible, down_killable, down_trylock,
		 down_timeout, up, __SEMAPHORE_INITIALIZER};
local idexpression L;
@@
op@p(L, ...)

@script:python depends on report@
L << bare_local.L;
p << bare_local.p;
@@
emit("shape", p[0], shape="local", addr=False, name=L)

