// SPDX-License-Identifier: GPL-2.0-only
/// Initialise statically the semaphores that sem2mutex turns into struct
/// mutex as mutexes: __SEMAPHORE_INITIALIZER(x, 1) becomes
/// __MUTEX_INITIALIZER(x) (sema_init(&x, 1) is a call, rewritten with the
/// other calls by api_calls.cocci).  Only a literal count of 1 is
/// rewritten: anything else is not a mutex.
///
/// Only the calls listed in the rewrite plan are changed: the plan is a JSON
/// file named by $SEM2MUTEX_REWRITE_PLAN, written by sem2mutex from its
/// audit ("edits" with "to": "mutex", keyed by file, line and call).
/// Without a plan nothing is changed.
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


def mutex_initialisers_wanted():
	path = os.environ.get("SEM2MUTEX_REWRITE_PLAN")
	if not path:
		return set()
	with open(path) as plan:
		edits = json.load(plan)["edits"]
	return {(e["file"], e["line"], e["op"]) for e in edits
		if e["to"] == "mutex"}


MUTEX_INITIALISERS = mutex_initialisers_wanted()


def planned_initialiser(p, op):
	return (p[0].file, int(p[0].line), op) in MUTEX_INITIALISERS


def rewrote_initialiser(rule, p, op):
	print(json.dumps({"kind": "rewrote", "rule": rule, "op": op,
			  "to": "mutex", "file": p[0].file,
			  "line": int(p[0].line)}), flush=True)

@static_initializer depends on patch@
expression X;
position p : script:python() { planned_initialiser(p, "__SEMAPHORE_INITIALIZER") };
@@
- __SEMAPHORE_INITIALIZER@p(X, 1)
+ __MUTEX_INITIALIZER(X)

@script:python depends on static_initializer@
X << static_initializer.X;
p << static_initializer.p;
@@
rewrote_initialiser("static_initializer", p, "__SEMAPHORE_INITIALIZER")
