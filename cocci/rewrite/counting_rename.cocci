// SPDX-License-Identifier: GPL-2.0-only
/// Move the semaphores that stay semaphores (counting, signal, ambiguous,
/// reached through a pointer or not attributable) to the renamed counting
/// API: down() becomes down_sem(), down_interruptible()
/// down_sem_interruptible(), down_killable() down_sem_killable(),
/// down_trylock() down_sem_trylock(), down_timeout() down_sem_timeout() and
/// up() up_sem().  The semantics are exactly those of the old names, return
/// values included; declarations and initialisers do not change.  Calls
/// inside macro bodies are renamed too.
///
/// Only the calls listed in the rewrite plan are changed: the plan is a JSON
/// file named by $SEM2MUTEX_REWRITE_PLAN, written by sem2mutex from its
/// audit ("edits" with "to": "counting", keyed by file, line and call).
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

def counting_rename_plan():
	path = os.environ.get("SEM2MUTEX_REWRITE_PLAN")
	if not path:
		return {"edits": [], "api": {"counting": {}}}
	with open(path) as plan:
		return json.load(plan)


COUNTING_RENAME_PLAN = counting_rename_plan()
# The name table comes with the plan (sem2mutex/tools/api.py).
COUNTING_NAME = COUNTING_RENAME_PLAN["api"]["counting"]
COUNTING_RENAMES = {(e["file"], e["line"], e["op"]) for e in COUNTING_RENAME_PLAN["edits"]
		    if e["to"] == "counting"}


def planned_rename(p, op):
	return (p[0].file, int(p[0].line), op) in COUNTING_RENAMES

@rename depends on patch@
identifier op = {down, down_interruptible, down_killable, down_trylock,
		 down_timeout, up};
position p : script:python(op) { planned_rename(p, op) };
fresh identifier counting_op = script:python(op) { COUNTING_NAME[op] };
expression list es;
@@
- op@p(es)
+ counting_op(es)

@script:python depends on rename@
op << rename.op;
es << rename.es;
p << rename.p;
@@
print(json.dumps({"kind": "rewrote", "rule": "rename", "op": op,
		  "to": "counting", "file": p[0].file, "line": int(p[0].line)}),
      flush=True)
