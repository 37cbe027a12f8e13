// SPDX-License-Identifier: GPL-2.0-only
/// Report, for the files sem2mutex rewrites, every use of the semaphore API
/// and of what the rewrite turns it into: calls of the down()/up() family,
/// sema_init(), __SEMAPHORE_INITIALIZER() and of their mutex and down_sem()
/// replacements, with the variable and field names of their first
/// argument; struct semaphore and struct mutex declarations (variables
/// and struct or union fields, with the column of the name);
/// DEFINE_SEMAPHORE() and DEFINE_MUTEX(); every other mention of the two
/// types (pointers, parameters, casts, sizeof); and the #include lines.
/// One JSON object per line on stdout.
///
/// sem2mutex runs it before a rewrite, to know what is still to do (a tree
/// that already carries the rewrite has nothing left), and after it, on
/// the files that declare a mutex or include <linux/semaphore.h> and on
/// those with a planned position the rewrite's own records do not show
/// rewritten: to check the planned positions there, to align the members
/// it retyped, and to tell which files still need <linux/semaphore.h> and
/// which now need <linux/mutex.h>.
//
// The first time, it runs in one spatch with the transform rules, placed
// before them so that it sees the files unchanged; its rule names carry a
// state_ prefix so they cannot clash with theirs.
//
// Confidence: High
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers
// Keywords: semaphore, mutex, sem2mutex

virtual report

@initialize:python depends on report@
@@
import json


def state(kind, p, **fields):
	fields.update(kind=kind, file=p[0].file, line=int(p[0].line))
	print(json.dumps(fields, sort_keys=True), flush=True)

// ----------------------------------------------------------------- calls

@state_call depends on report@
identifier op = {down, down_interruptible, down_killable, down_trylock,
		 down_timeout, up, sema_init, __SEMAPHORE_INITIALIZER,
		 mutex_lock, mutex_lock_interruptible, mutex_lock_killable,
		 mutex_trylock, mutex_unlock, mutex_init, __MUTEX_INITIALIZER,
		 down_sem, down_sem_interruptible, down_sem_killable,
		 down_sem_trylock, down_sem_timeout, up_sem,
		 mutex_destroy, mutex_is_locked, mutex_lock_nested,
		 mutex_lock_interruptible_nested, mutex_lock_killable_nested,
		 mutex_lock_io, mutex_trylock_recursive, devm_mutex_init,
		 atomic_dec_and_mutex_lock, mutex_lock_nest_lock};
position p;
@@
op@p(...)

@script:python depends on state_call@
op << state_call.op;
p << state_call.p;
@@
state("call", p, name=op, column=int(p[0].column))

// The names the first argument is made of (variables, fields), so that
// sem2mutex can check that the call at a planned line is the planned
// instance's: &dev->lock names dev and lock.
@state_call_variable depends on report@
identifier state_call.op;
position state_call.p;
identifier i;
@@
op@p(<+... i ...+>, ...)

@script:python depends on state_call_variable@
i << state_call_variable.i;
p << state_call.p;
@@
state("argument", p, name=i, column=int(p[0].column))

@state_call_field depends on report@
identifier state_call.op;
position state_call.p;
identifier fld;
expression E;
@@
op@p(<+... \(E->fld\|E.fld\) ...+>, ...)

@script:python depends on state_call_field@
fld << state_call_field.fld;
p << state_call.p;
@@
state("argument", p, name=fld, column=int(p[0].column))

// ---------------------------------------------------------- declarations

@state_variable depends on report@
identifier x;
expression N, E;
position p;
type T = {struct semaphore, struct mutex};
@@
(
T x@p;
|
T x@p = E;
|
T x@p[N];
|
T x@p[N] = E;
|
T x@p[] = E;
|
T x@p[];
)

@script:python depends on state_variable@
T << state_variable.T;
x << state_variable.x;
p << state_variable.p;
@@
state("declaration", p, type=T, name=x, column=int(p[0].column))

@state_struct_field depends on report@
type S;
identifier fld;
expression N;
position p;
type T = {struct semaphore, struct mutex};
@@
S {
  ...
(
  T fld@p;
|
  T fld@p[N];
)
  ...
};

@script:python depends on state_struct_field@
T << state_struct_field.T;
fld << state_struct_field.fld;
p << state_struct_field.p;
@@
state("declaration", p, type=T, name=fld, column=int(p[0].column))

@state_field_with_variable depends on report@
type S;
identifier fld, x;
expression N;
position p;
type T = {struct semaphore, struct mutex};
@@
(
S { ... T fld@p; ... } x;
|
S { ... T fld@p[N]; ... } x;
|
struct { ... T fld@p; ... } x;
|
struct { ... T fld@p[N]; ... } x;
)

@script:python depends on state_field_with_variable@
T << state_field_with_variable.T;
fld << state_field_with_variable.fld;
p << state_field_with_variable.p;
@@
state("declaration", p, type=T, name=fld, column=int(p[0].column))

@state_nested_field depends on report@
type S;
identifier fld;
expression N;
position p;
type T = {struct semaphore, struct mutex};
@@
S {
  ...
(
  struct { ... T fld@p; ... };
|
  struct { ... T fld@p[N]; ... };
|
  union { ... T fld@p; ... };
|
  union { ... T fld@p[N]; ... };
)
  ...
};

@script:python depends on state_nested_field@
T << state_nested_field.T;
fld << state_nested_field.fld;
p << state_nested_field.p;
@@
state("declaration", p, type=T, name=fld, column=int(p[0].column))

@state_named_nested_field depends on report@
type S;
identifier fld, holder;
expression N;
position p;
type T = {struct semaphore, struct mutex};
@@
S {
  ...
(
  struct { ... T fld@p; ... } holder;
|
  struct { ... T fld@p[N]; ... } holder;
|
  union { ... T fld@p; ... } holder;
|
  union { ... T fld@p[N]; ... } holder;
)
  ...
};

@script:python depends on state_named_nested_field@
T << state_named_nested_field.T;
fld << state_named_nested_field.fld;
p << state_named_nested_field.p;
@@
state("declaration", p, type=T, name=fld, column=int(p[0].column))

@state_define_semaphore depends on report@
declarer name DEFINE_SEMAPHORE;
identifier x;
position p;
@@
DEFINE_SEMAPHORE(x@p, ...);

@script:python depends on state_define_semaphore@
x << state_define_semaphore.x;
p << state_define_semaphore.p;
@@
state("define", p, macro="DEFINE_SEMAPHORE", name=x)

@state_define_mutex depends on report@
declarer name DEFINE_MUTEX;
identifier x;
position p;
@@
DEFINE_MUTEX(x@p);

@script:python depends on state_define_mutex@
x << state_define_mutex.x;
p << state_define_mutex.p;
@@
state("define", p, macro="DEFINE_MUTEX", name=x)

// ----------------------------------------------------------------- types

// Every mention of either type, wherever it is (a pointer, a parameter, a
// cast, sizeof, a member): a file that still names struct semaphore
// needs <linux/semaphore.h>.  The position is that of the tag.
@state_semaphore_type depends on report@
position p;
@@
struct semaphore@p

@script:python depends on state_semaphore_type@
p << state_semaphore_type.p;
@@
state("type", p, name="struct semaphore")

@state_mutex_type depends on report@
position p;
@@
struct mutex@p

@script:python depends on state_mutex_type@
p << state_mutex_type.p;
@@
state("type", p, name="struct mutex")

// -------------------------------------------------------------- includes

@state_linux_include depends on report@
position p;
@@
#include <linux/...>@p

@script:python depends on state_linux_include@
p << state_linux_include.p;
@@
state("include", p, style="linux")

@state_angle_include depends on report@
position p;
@@
#include <...>@p

@script:python depends on state_angle_include@
p << state_angle_include.p;
@@
state("include", p, style="angle")

@state_quoted_include depends on report@
position p;
@@
#include "..."@p

@script:python depends on state_quoted_include@
p << state_quoted_include.p;
@@
state("include", p, style="quoted")

@state_mutex_include depends on report@
position p;
@@
#include <linux/mutex.h>@p

@script:python depends on state_mutex_include@
p << state_mutex_include.p;
@@
state("include", p, style="mutex")

@state_semaphore_include depends on report@
position p;
@@
#include <linux/semaphore.h>@p

@script:python depends on state_semaphore_include@
p << state_semaphore_include.p;
@@
state("include", p, style="semaphore")
