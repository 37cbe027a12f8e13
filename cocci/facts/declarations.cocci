// SPDX-License-Identifier: GPL-2.0-only
/// Report every struct semaphore variable declared in a file: global,
/// static, extern and local variables, arrays, DEFINE_SEMAPHORE() and the
/// 2.6-era DECLARE_MUTEX()/DECLARE_MUTEX_LOCKED(), and every name the file
/// exports with EXPORT_SYMBOL() or EXPORT_SYMBOL_GPL().  Struct members are
/// reported with their types by types.cocci.  One JSON object per line on
/// stdout; sem2mutex merges them across the whole tree.
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

// ------------------------------------------------------------- variables

@var depends on report@
identifier x;
expression E;
position p;
@@
(
struct semaphore x@p;
|
struct semaphore x@p = E;
)

@script:python depends on report@
x << var.x;
p << var.p;
@@
emit("decl", p[0], name=x, array=False)

@var_array depends on report@
identifier x;
expression N, E;
position p;
@@
(
struct semaphore x@p[N];
|
struct semaphore x@p[N] = E;
|
struct semaphore x@p[] = E;
|
struct semaphore x@p[];
)

@script:python depends on report@
x << var_array.x;
p << var_array.p;
@@
emit("decl", p[0], name=x, array=True)

@var_static depends on report@
identifier x;
expression N, E;
position p;
@@
(
static struct semaphore x@p;
|
static struct semaphore x@p = E;
|
static struct semaphore x@p[N];
|
static struct semaphore x@p[N] = E;
)

@script:python depends on report@
p << var_static.p;
@@
emit("storage", p[0], storage="static")

@var_extern depends on report@
identifier x;
expression N;
position p;
@@
(
extern struct semaphore x@p;
|
extern struct semaphore x@p[N];
|
extern struct semaphore x@p[];
)

@script:python depends on report@
p << var_extern.p;
@@
emit("storage", p[0], storage="extern")

// ------------------------------------------------- declaring macros

@define_sem depends on report@
declarer name DEFINE_SEMAPHORE;
identifier x;
position p;
@@
DEFINE_SEMAPHORE(x@p, ...);

@script:python depends on report@
x << define_sem.x;
p << define_sem.p;
@@
emit("decl", p[0], name=x, array=False, macro="DEFINE_SEMAPHORE")

@define_sem_static depends on report@
declarer name DEFINE_SEMAPHORE;
identifier x;
position p;
@@
static DEFINE_SEMAPHORE(x@p, ...);

@script:python depends on report@
p << define_sem_static.p;
@@
emit("storage", p[0], storage="static")

@declare_mutex depends on report@
declarer name DECLARE_MUTEX;
identifier x;
position p;
@@
DECLARE_MUTEX(x@p);

@script:python depends on report@
x << declare_mutex.x;
p << declare_mutex.p;
@@
emit("decl", p[0], name=x, array=False, macro="DECLARE_MUTEX")

@declare_mutex_static depends on report@
declarer name DECLARE_MUTEX;
identifier x;
position p;
@@
static DECLARE_MUTEX(x@p);

@script:python depends on report@
p << declare_mutex_static.p;
@@
emit("storage", p[0], storage="static")

@declare_mutex_locked depends on report@
declarer name DECLARE_MUTEX_LOCKED;
identifier x;
position p;
@@
DECLARE_MUTEX_LOCKED(x@p);

@script:python depends on report@
x << declare_mutex_locked.x;
p << declare_mutex_locked.p;
@@
emit("decl", p[0], name=x, array=False, macro="DECLARE_MUTEX_LOCKED")

@declare_mutex_locked_static depends on report@
declarer name DECLARE_MUTEX_LOCKED;
identifier x;
position p;
@@
static DECLARE_MUTEX_LOCKED(x@p);

@script:python depends on report@
p << declare_mutex_locked_static.p;
@@
emit("storage", p[0], storage="static")

// ------------------------------------------------------------- exports

// An exported semaphore's name in its export is no use of it: sem2mutex
// keeps only the names of the semaphores the file declares.
@exported depends on report@
declarer d = {EXPORT_SYMBOL, EXPORT_SYMBOL_GPL};
identifier x;
position p;
@@
d(x@p);

@script:python depends on report@
x << exported.x;
d << exported.d;
p << exported.p;
@@
emit("export", p[0], name=x, macro=d)
