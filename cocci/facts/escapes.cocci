// SPDX-License-Identifier: GPL-2.0-only
/// Report every place where the address of a semaphore leaves the
/// semaphore API: passed to another function, stored, or returned.  Who
/// releases a semaphore whose address escapes cannot be proven from its
/// own up() sites, so it is never turned into a mutex without review.
/// Every &field and &variable is reported, whatever its type: which of
/// them are semaphores is known only from the whole tree, and the facts
/// of a file depend on that file alone.
///
// Confidence: Moderate
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers
// Keywords: semaphore, mutex, sem2mutex

virtual report

@initialize:python depends on report@
@@
import json

SEM_API = {"sema_init", "init_MUTEX", "init_MUTEX_LOCKED", "down",
	   "down_interruptible", "down_killable", "down_trylock",
	   "down_timeout", "up", "lockdep_set_class", "lockdep_set_subclass",
	   "lockdep_set_class_and_name", "lockdep_set_novalidate_class",
	   "sizeof", "memset"}
def emit(kind, pos, **fields):
	fields.update(kind=kind, file=pos.file, line=int(pos.line),
		      col=int(pos.column), function=pos.current_element)
	print(json.dumps(fields, sort_keys=True), flush=True)

// --------------------------------------------------- passed to a function
// Each shape is its own rule: anchoring a rule on another rule's
// positions makes spatch try every argument of every call again, and a
// disjunction of shapes stops, in one call, at the first shape it finds
// in any argument.  The callee is any expression: a call through a
// function pointer (ops->release(&dev->sem)) hands the address to code
// nobody can see.

@call_typed_field depends on report@
expression f;
identifier fld;
type T;
T *e;
position p;
@@
f@p(..., &e->fld, ...)

@script:python depends on report@
f << call_typed_field.f;
T << call_typed_field.T;
fld << call_typed_field.fld;
p << call_typed_field.p;
@@
if f not in SEM_API:
	emit("escape", p[0], via="call", callee=f, shape="field",
	     container=T, field=fld)

@call_field depends on report@
expression f;
identifier fld;
expression e;
position p;
@@
f@p(..., &e->fld, ...)

@script:python depends on report@
f << call_field.f;
fld << call_field.fld;
p << call_field.p;
@@
if f not in SEM_API:
	emit("escape", p[0], via="call", callee=f, shape="field",
	     container=None, field=fld)

@call_field_2 depends on report@
expression f;
identifier fld;
expression e;
position p;
@@
f@p(..., &e.fld, ...)

@script:python depends on report@
f << call_field_2.f;
fld << call_field_2.fld;
p << call_field_2.p;
@@
if f not in SEM_API:
	emit("escape", p[0], via="call", callee=f, shape="field",
	     container=None, field=fld)

@call_field_element depends on report@
expression f;
identifier fld;
expression e, i;
position p;
@@
f@p(..., &e->fld[i], ...)

@script:python depends on report@
f << call_field_element.f;
fld << call_field_element.fld;
p << call_field_element.p;
@@
if f not in SEM_API:
	emit("escape", p[0], via="call", callee=f, shape="field",
	     container=None, field=fld)

@call_field_element_2 depends on report@
expression f;
identifier fld;
expression e, i;
position p;
@@
f@p(..., &e.fld[i], ...)

@script:python depends on report@
f << call_field_element_2.f;
fld << call_field_element_2.fld;
p << call_field_element_2.p;
@@
if f not in SEM_API:
	emit("escape", p[0], via="call", callee=f, shape="field",
	     container=None, field=fld)

@call_var depends on report@
expression f;
identifier x;
expression i;
position p;
@@
f@p(..., &x, ...)

@script:python depends on report@
f << call_var.f;
x << call_var.x;
p << call_var.p;
@@
if f not in SEM_API:
	emit("escape", p[0], via="call", callee=f, shape="var", name=x)

@call_var_2 depends on report@
expression f;
identifier x;
expression i;
position p;
@@
f@p(..., &x[i], ...)

@script:python depends on report@
f << call_var_2.f;
x << call_var_2.x;
p << call_var_2.p;
@@
if f not in SEM_API:
	emit("escape", p[0], via="call", callee=f, shape="var", name=x)

// ----------------------------------------------- stored or returned
// Assigned (L = &x), used to initialise a declared variable, or returned.

@stored_field_assigned depends on report@
identifier fld;
expression e, L, i;
position p;
@@
(
L =@p &e->fld
|
L =@p &e.fld
|
L =@p &e->fld[i]
|
L =@p &e.fld[i]
)

@script:python depends on report@
fld << stored_field_assigned.fld;
p << stored_field_assigned.p;
@@
emit("escape", p[0], via="store", shape="field",
     container=None, field=fld)

@stored_field_declared depends on report@
identifier fld, x;
expression e;
type T;
position p;
@@
(
T x@p = &e->fld;
|
T x@p = &e.fld;
)

@script:python depends on report@
fld << stored_field_declared.fld;
p << stored_field_declared.p;
@@
emit("escape", p[0], via="store", shape="field",
     container=None, field=fld)

@stored_field_returned depends on report@
identifier fld;
expression e;
position p;
@@
(
return@p &e->fld;
|
return@p &e.fld;
)

@script:python depends on report@
fld << stored_field_returned.fld;
p << stored_field_returned.p;
@@
emit("escape", p[0], via="store", shape="field",
     container=None, field=fld)

@stored_typed_field_assigned depends on report@
identifier fld;
expression L;
type T;
T *e;
position p;
@@
L =@p &e->fld

@script:python depends on report@
fld << stored_typed_field_assigned.fld;
T << stored_typed_field_assigned.T;
p << stored_typed_field_assigned.p;
@@
emit("escape", p[0], via="store", shape="field",
     container=T, field=fld)

@stored_typed_field_declared depends on report@
identifier fld, x;
type T, T2;
T *e;
position p;
@@
T2 x@p = &e->fld;

@script:python depends on report@
fld << stored_typed_field_declared.fld;
T << stored_typed_field_declared.T;
p << stored_typed_field_declared.p;
@@
emit("escape", p[0], via="store", shape="field",
     container=T, field=fld)

@stored_typed_field_returned depends on report@
identifier fld;
type T;
T *e;
position p;
@@
return@p &e->fld;

@script:python depends on report@
fld << stored_typed_field_returned.fld;
T << stored_typed_field_returned.T;
p << stored_typed_field_returned.p;
@@
emit("escape", p[0], via="store", shape="field",
     container=T, field=fld)

@stored_var_assigned depends on report@
identifier v;
expression L, i;
position p;
@@
(
L =@p &v
|
L =@p &v[i]
)

@script:python depends on report@
v << stored_var_assigned.v;
p << stored_var_assigned.p;
@@
emit("escape", p[0], via="store", shape="var", name=v)

@stored_var_declared depends on report@
identifier v, x;
expression i;
type T;
position p;
@@
(
T x@p = &v;
|
T x@p = &v[i];
)

@script:python depends on report@
v << stored_var_declared.v;
p << stored_var_declared.p;
@@
emit("escape", p[0], via="store", shape="var", name=v)

@stored_var_returned depends on report@
identifier v;
expression i;
position p;
@@
(
return@p &v;
|
return@p &v[i];
)

@script:python depends on report@
v << stored_var_returned.v;
p << stored_var_returned.p;
@@
emit("escape", p[0], via="store", shape="var", name=v)
