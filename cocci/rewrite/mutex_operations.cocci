// SPDX-License-Identifier: GPL-2.0-only
/// Lock and unlock the semaphores that sem2mutex turns into struct mutex
/// with the mutex API: down() becomes mutex_lock(), down_interruptible()
/// mutex_lock_interruptible(), down_killable() mutex_lock_killable() and
/// up() mutex_unlock().  Their return values mean the same (0 when the lock
/// was taken, -EINTR when a signal interrupted the wait).  down_trylock(),
/// whose return value is inverted, is handled by mutex_trylock.cocci, and
/// down_timeout() has no mutex equivalent.
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

def mutex_operations_plan():
	path = os.environ.get("SEM2MUTEX_REWRITE_PLAN")
	if not path:
		return {"edits": [], "api": {"mutex": {}}}
	with open(path) as plan:
		return json.load(plan)


MUTEX_OPERATIONS_PLAN = mutex_operations_plan()
# The name table comes with the plan (sem2mutex/tools/api.py).
MUTEX_NAME = MUTEX_OPERATIONS_PLAN["api"]["mutex"]
MUTEX_OPERATIONS = {(e["file"], e["line"], e["op"])
		    for e in MUTEX_OPERATIONS_PLAN["edits"] if e["to"] == "mutex"}


def planned_operation(p, op):
	return (p[0].file, int(p[0].line), op) in MUTEX_OPERATIONS

@operation depends on patch@
identifier op = {down, down_interruptible, down_killable, up};
position p : script:python(op) { planned_operation(p, op) };
fresh identifier mutex_op = script:python(op) { MUTEX_NAME[op] };
expression E;
@@
- op@p(E)
+ mutex_op(E)

@script:python depends on operation@
op << operation.op;
E << operation.E;
p << operation.p;
@@
print(json.dumps({"kind": "rewrote", "rule": "operation", "op": op,
		  "to": "mutex", "file": p[0].file, "line": int(p[0].line)}),
      flush=True)
