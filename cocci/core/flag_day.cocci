// SPDX-License-Identifier: GPL-2.0-only
/// The flag day of the counting semaphore rename: remove the old names
/// down(), down_interruptible(), down_killable(), down_trylock(),
/// down_timeout() and up() that counting_api.cocci left behind as thin
/// wrappers, together with their exports and prototypes, so that any user
/// still calling them fails to build.
///
/// Only wrappers are removed: a definition of an old name that does anything
/// but call its down_sem()-family replacement is left alone, so a tree that
/// never had counting_api.cocci applied keeps its real implementations.
/// Run on kernel/locking/semaphore.c and include/linux/semaphore.h together.
//
// Confidence: High
// Copyright: (C) 2024 sem2mutex contributors
// Options: --no-includes --include-headers

virtual patch

@initialize:python depends on patch@
@@
import json
import os

# The name table is sem2mutex's (sem2mutex/tools/api.py), in
# $SEM2MUTEX_API; by hand: SEM2MUTEX_API="$(python3 -m sem2mutex.tools.api)"
NEW_NAME = json.loads(os.environ["SEM2MUTEX_API"])["counting"]

@wrapper_candidate depends on patch@
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
@script:python wrapper depends on patch@
f << wrapper_candidate.f;
nf << wrapper_candidate.nf;
p << wrapper_candidate.p;
@@
if NEW_NAME[f] != nf:
	cocci.include_match(False)

// Removing a whole definition also removes the comment written above it,
// which for the first wrapper is the "old names" block comment.
@remove_wrapper depends on patch disable prototypes@
identifier wrapper_candidate.f;
position wrapper_candidate.p;
identifier s;
type T;
@@
- T f@p(struct semaphore *s, ...) { ... }

@remove_export depends on patch && remove_wrapper@
declarer name EXPORT_SYMBOL;
identifier wrapper_candidate.f;
@@
- EXPORT_SYMBOL(f);

// In the header, the old prototypes go only where the new ones are declared:
// a header without down_sem() is not one this patch belongs to.
@new_prototypes_present depends on patch@
identifier s;
type T;
@@
T down_sem(struct semaphore *s);

@remove_prototype depends on patch && new_prototypes_present@
identifier f = {down, down_interruptible, down_killable, down_trylock,
                down_timeout, up};
identifier s;
type T;
@@
- T f(struct semaphore *s, ...);
