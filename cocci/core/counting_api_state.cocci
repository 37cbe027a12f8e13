// SPDX-License-Identifier: GPL-2.0-only
/// Report how far a tree has come along the counting semaphore API rename,
/// as one JSON object per line: {"file", "line", "name", "kind"}, where kind
/// is "definition" (a real implementation), "wrapper" (a definition whose
/// whole body calls the renamed function), "prototype" or "export".
///
/// A 6.1 tree reports definitions of down() ... up(); after counting_api.cocci
/// it reports definitions of down_sem() ... up_sem() and wrappers for the old
/// names; after flag_day.cocci the old names are gone.  sem2mutex reads this
/// to refuse applying a patch twice or out of order.
//
// Confidence: High
// Copyright: (C) 2024 sem2mutex contributors
// Options: --no-includes --include-headers

virtual report

@initialize:python depends on report@
@@
import json
import os

# The name table is sem2mutex's (sem2mutex/tools/api.py), in
# $SEM2MUTEX_API; by hand: SEM2MUTEX_API="$(python3 -m sem2mutex.tools.api)"
NEW_NAME = json.loads(os.environ["SEM2MUTEX_API"])["counting"]

def emit(p, name, kind):
	print(json.dumps({"file": p[0].file, "line": int(p[0].line),
			  "name": name, "kind": kind}))

@wrapper_candidate depends on report@
identifier f = {down, down_interruptible, down_killable, down_trylock,
                down_timeout, up};
identifier nf = {down_sem, down_sem_interruptible, down_sem_killable,
                 down_sem_trylock, down_sem_timeout, up_sem};
identifier s;
expression list es;
type T;
position p;
@@
(
T f@p(struct semaphore *s, ...) { nf(es); }
|
T f@p(struct semaphore *s, ...) { return nf(es); }
)

// A wrapper must call its own new name: down() calling up_sem() is not one.
@script:python wrapper depends on report@
f << wrapper_candidate.f;
nf << wrapper_candidate.nf;
p << wrapper_candidate.p;
@@
if NEW_NAME[f] != nf:
	cocci.include_match(False)
else:
	emit(p, f, "wrapper")

@definition depends on report@
identifier f = {down, down_interruptible, down_killable, down_trylock,
                down_timeout, up, down_sem, down_sem_interruptible,
                down_sem_killable, down_sem_trylock, down_sem_timeout,
                up_sem};
identifier s;
type T;
position p != wrapper_candidate.p;
@@
T f@p(struct semaphore *s, ...) { ... }

@prototype depends on report@
identifier f = {down, down_interruptible, down_killable, down_trylock,
                down_timeout, up, down_sem, down_sem_interruptible,
                down_sem_killable, down_sem_trylock, down_sem_timeout,
                up_sem};
identifier s;
type T;
position p;
@@
T f@p(struct semaphore *s, ...);

@export depends on report@
declarer name EXPORT_SYMBOL;
identifier f = {down, down_interruptible, down_killable, down_trylock,
                down_timeout, up, down_sem, down_sem_interruptible,
                down_sem_killable, down_sem_trylock, down_sem_timeout,
                up_sem};
position p;
@@
EXPORT_SYMBOL(f@p);

@script:python depends on report@
f << definition.f;
p << definition.p;
@@
emit(p, f, "definition")

@script:python depends on report@
f << prototype.f;
p << prototype.p;
@@
emit(p, f, "prototype")

@script:python depends on report@
f << export.f;
p << export.p;
@@
emit(p, f, "export")
