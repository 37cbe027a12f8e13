// SPDX-License-Identifier: GPL-2.0-only
/// down_trylock() returns 0 when it took the semaphore and 1 when it did
/// not; mutex_trylock() returns 1 when it took the mutex and 0 when it did
/// not.  For a semaphore that sem2mutex turns into struct mutex every call
/// is therefore rewritten to a value that means the same:
///
///   !down_trylock(E)            ->  mutex_trylock(E)
///   !(down_trylock(E))          ->  mutex_trylock(E)
///   down_trylock(E) == 0        ->  mutex_trylock(E)
///   down_trylock(E) != 0        ->  !mutex_trylock(E)
///   down_trylock(E);            ->  mutex_trylock(E);   (result unused)
///   any other down_trylock(E)   ->  !mutex_trylock(E)
///
/// so if (down_trylock(E)) becomes if (!mutex_trylock(E)), ret =
/// down_trylock(E) becomes ret = !mutex_trylock(E), and the same holds in
/// while (), return, && and || operands.  !mutex_trylock(E) is 1 or 0 just
/// like down_trylock(E), so the rewrite keeps the value, not only its truth.
///
/// Only the calls listed in the rewrite plan are changed: the plan is a JSON
/// file named by $SEM2MUTEX_REWRITE_PLAN, written by sem2mutex from its
/// audit ("edits" with "to": "mutex" and "op": "down_trylock", keyed by file
/// and line).  Without a plan nothing is changed.
//
// Confidence: High
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers
// Keywords: semaphore, mutex, sem2mutex

virtual patch

@initialize:python depends on patch@
@@
import json
import os


def mutex_trylocks_wanted():
	path = os.environ.get("SEM2MUTEX_REWRITE_PLAN")
	if not path:
		return set()
	with open(path) as plan:
		edits = json.load(plan)["edits"]
	return {(e["file"], e["line"]) for e in edits
		if e["to"] == "mutex" and e["op"] == "down_trylock"}


MUTEX_TRYLOCKS = mutex_trylocks_wanted()


def planned_trylock(p):
	return (p[0].file, int(p[0].line)) in MUTEX_TRYLOCKS


def rewrote_trylock(form, p):
	print(json.dumps({"kind": "rewrote", "rule": form, "op": "down_trylock",
			  "to": "mutex", "file": p[0].file,
			  "line": int(p[0].line)}), flush=True)

// The more specific forms come first: each rewritten call is gone before
// the catch-all rule at the end looks for down_trylock() again.

@unused_result depends on patch@
expression E;
position p : script:python() { planned_trylock(p) };
@@
- down_trylock@p(E);
+ mutex_trylock(E);

@script:python depends on unused_result@
E << unused_result.E;
p << unused_result.p;
@@
rewrote_trylock("unused_result", p)

@negated depends on patch@
expression E;
position p : script:python() { planned_trylock(p) };
@@
(
- !down_trylock@p(E)
+ mutex_trylock(E)
|
- !(down_trylock@p(E))
+ mutex_trylock(E)
)

@script:python depends on negated@
E << negated.E;
p << negated.p;
@@
rewrote_trylock("negated", p)

@compared_equal_zero depends on patch@
expression E;
position p : script:python() { planned_trylock(p) };
@@
(
- down_trylock@p(E) == 0
+ mutex_trylock(E)
|
- 0 == down_trylock@p(E)
+ mutex_trylock(E)
)

@script:python depends on compared_equal_zero@
E << compared_equal_zero.E;
p << compared_equal_zero.p;
@@
rewrote_trylock("compared_equal_zero", p)

@compared_not_zero depends on patch@
expression E;
position p : script:python() { planned_trylock(p) };
@@
(
- down_trylock@p(E) != 0
+ !mutex_trylock(E)
|
- 0 != down_trylock@p(E)
+ !mutex_trylock(E)
)

@script:python depends on compared_not_zero@
E << compared_not_zero.E;
p << compared_not_zero.p;
@@
rewrote_trylock("compared_not_zero", p)

@value depends on patch@
expression E;
position p : script:python() { planned_trylock(p) };
@@
- down_trylock@p(E)
+ !mutex_trylock(E)

@script:python depends on value@
E << value.E;
p << value.p;
@@
rewrote_trylock("value", p)
