// SPDX-License-Identifier: GPL-2.0-only
/// Report every variable declared with a typedef of struct semaphore
/// (2.6's XFS: typedef struct semaphore mutex_t; mutex_t xfs_Gqm_lock;),
/// as declarations.cocci reports struct semaphore variables.  SmPL cannot
/// constrain a type by a list, so the typedef is named here as
/// sem_typedef_t: sem2mutex writes the tree's own names in its place, one
/// copy of these rules per name (typedefs.py).
///
// Confidence: High
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers
// Keywords: semaphore, mutex, typedef, sem2mutex

virtual report

@initialize:python depends on report@
@@
import json


def emit(kind, pos, **fields):
	fields.update(kind=kind, file=pos.file, line=int(pos.line),
		      col=int(pos.column), function=pos.current_element)
	print(json.dumps(fields, sort_keys=True), flush=True)

@tdvar_sem_typedef_t depends on report@
typedef sem_typedef_t;
identifier x;
expression E;
position p;
@@
(
sem_typedef_t x@p;
|
sem_typedef_t x@p = E;
)

@script:python depends on report@
x << tdvar_sem_typedef_t.x;
p << tdvar_sem_typedef_t.p;
@@
emit("decl", p[0], name=x, array=False, typedef="sem_typedef_t")

@tdarray_sem_typedef_t depends on report@
typedef sem_typedef_t;
identifier x;
expression N, E;
position p;
@@
(
sem_typedef_t x@p[N];
|
sem_typedef_t x@p[N] = E;
|
sem_typedef_t x@p[];
)

@script:python depends on report@
x << tdarray_sem_typedef_t.x;
p << tdarray_sem_typedef_t.p;
@@
emit("decl", p[0], name=x, array=True, typedef="sem_typedef_t")

@tdstatic_sem_typedef_t depends on report@
typedef sem_typedef_t;
identifier x;
expression N, E;
position p;
@@
(
static sem_typedef_t x@p;
|
static sem_typedef_t x@p = E;
|
static sem_typedef_t x@p[N];
|
static sem_typedef_t x@p[N] = E;
)

@script:python depends on report@
p << tdstatic_sem_typedef_t.p;
@@
emit("storage", p[0], storage="static")

@tdextern_sem_typedef_t depends on report@
typedef sem_typedef_t;
identifier x;
expression N;
position p;
@@
(
extern sem_typedef_t x@p;
|
extern sem_typedef_t x@p[N];
|
extern sem_typedef_t x@p[];
)

@script:python depends on report@
p << tdextern_sem_typedef_t.p;
@@
emit("storage", p[0], storage="extern")
