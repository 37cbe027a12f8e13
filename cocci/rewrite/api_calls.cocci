// SPDX-License-Identifier: GPL-2.0-only
/// Rewrite the semaphore API calls the rewrite plan lists, inside function
/// bodies:
///
/// - for a semaphore that becomes a struct mutex: down() -> mutex_lock(),
///   down_interruptible() -> mutex_lock_interruptible(), down_killable() ->
///   mutex_lock_killable(), up() -> mutex_unlock() (their return values mean
///   the same: 0 when the lock was taken, -EINTR when a signal interrupted
///   the wait), and sema_init(E, 1) -> mutex_init(E);
/// - down_trylock(), whose result is inverted (0 when it took the semaphore,
///   while mutex_trylock() returns 1 when it took the mutex), to a value
///   that means the same:
///
///     !down_trylock(E)            ->  mutex_trylock(E)
///     !(down_trylock(E))          ->  mutex_trylock(E)
///     down_trylock(E) == 0        ->  mutex_trylock(E)
///     down_trylock(E) != 0        ->  !mutex_trylock(E)
///     down_trylock(E);            ->  mutex_trylock(E);   (result unused)
///     any other down_trylock(E)   ->  !mutex_trylock(E)
///
///   so if (down_trylock(E)) becomes if (!mutex_trylock(E)) (a bare test is
///   != 0 to spatch's isomorphisms), ret = down_trylock(E) becomes ret =
///   !mutex_trylock(E): 1 or 0 just like down_trylock(E), so the value is
///   kept, not only its truth;
/// - for a semaphore that stays one: down() -> down_sem(), and so on for
///   down_interruptible(), down_killable(), down_trylock(), down_timeout()
///   and up().  down_timeout() has no mutex equivalent.
///
/// Only the calls listed in the rewrite plan are changed: the plan is a JSON
/// file named by $SEM2MUTEX_REWRITE_PLAN, written by sem2mutex from its
/// audit ("edits" keyed by file, line and call, "to" "mutex" or
/// "counting"; "api" the name table of sem2mutex/tools/api.py).  Without a
/// plan nothing is changed.
//
// Why one rule for every call: once a rule has changed a function, spatch
// re-parses that function from a temporary file, and the positions later
// rules of the same run see there name that file, not the planned one, so
// they could not change the function: a function with a down() and a
// down_trylock() would need a second spatch run, a second parse and print of
// the whole file.  One disjunction does all of a function's calls at once.
// A position constraint that depends on another metavariable cannot be
// evaluated inside a disjunction, so each call has its branch and its
// position variable, and the names are spelt out; the initialize rule
// checks them against the plan's table.  down_trylock(E); is a statement,
// which a disjunction of expressions cannot hold: it keeps a rule of its
// own, before the others.
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


def api_calls_plan():
	path = os.environ.get("SEM2MUTEX_REWRITE_PLAN")
	if not path:
		return None
	with open(path) as plan:
		return json.load(plan)


API_CALLS_PLAN = api_calls_plan()
API_CALL_EDITS = set()
if API_CALLS_PLAN is not None:
	API_CALL_EDITS = {(e["file"], e["line"], e["op"], e["to"])
			  for e in API_CALLS_PLAN["edits"]}
	# the names the branches below spell out, as the table has them
	SPELT = {"mutex": {"down": "mutex_lock",
			   "down_interruptible": "mutex_lock_interruptible",
			   "down_killable": "mutex_lock_killable",
			   "down_trylock": "mutex_trylock", "up": "mutex_unlock"},
		 "counting": {"down": "down_sem",
			      "down_interruptible": "down_sem_interruptible",
			      "down_killable": "down_sem_killable",
			      "down_trylock": "down_sem_trylock",
			      "down_timeout": "down_sem_timeout", "up": "up_sem"}}
	for table, names in SPELT.items():
		if API_CALLS_PLAN["api"][table] != names:
			raise ValueError("api_calls.cocci spells the %s names "
					 "otherwise than the plan's table" % table)
	if API_CALLS_PLAN["api"]["mutex_initialisers"]["sema_init"] != "mutex_init":
		raise ValueError("api_calls.cocci spells mutex_init otherwise "
				 "than the plan's table")


def planned_call(p, op, to):
	return (p[0].file, int(p[0].line), op, to) in API_CALL_EDITS


def rewrote(rule, op, to, p):
	print(json.dumps({"kind": "rewrote", "rule": rule, "op": op, "to": to,
			  "file": p[0].file, "line": int(p[0].line)}), flush=True)

@unused_result depends on patch@
expression E;
position p : script:python() { planned_call(p, "down_trylock", "mutex") };
@@
- down_trylock@p(E);
+ mutex_trylock(E);

@script:python depends on unused_result@
p << unused_result.p;
@@
rewrote("unused_result", "down_trylock", "mutex", p)

// The more specific trylock forms come first: a disjunction takes the
// first branch that matches a term.
@call depends on patch@
expression E;
expression list es;
position negated : script:python() { planned_call(negated, "down_trylock", "mutex") };
position equal_zero : script:python() { planned_call(equal_zero, "down_trylock", "mutex") };
position not_zero : script:python() { planned_call(not_zero, "down_trylock", "mutex") };
position value : script:python() { planned_call(value, "down_trylock", "mutex") };
position lock : script:python() { planned_call(lock, "down", "mutex") };
position lock_int : script:python() { planned_call(lock_int, "down_interruptible", "mutex") };
position lock_kill : script:python() { planned_call(lock_kill, "down_killable", "mutex") };
position unlock : script:python() { planned_call(unlock, "up", "mutex") };
position init : script:python() { planned_call(init, "sema_init", "mutex") };
position c_down : script:python() { planned_call(c_down, "down", "counting") };
position c_int : script:python() { planned_call(c_int, "down_interruptible", "counting") };
position c_kill : script:python() { planned_call(c_kill, "down_killable", "counting") };
position c_try : script:python() { planned_call(c_try, "down_trylock", "counting") };
position c_timeout : script:python() { planned_call(c_timeout, "down_timeout", "counting") };
position c_up : script:python() { planned_call(c_up, "up", "counting") };
@@
(
- !down_trylock@negated(E)
+ mutex_trylock(E)
|
- !(down_trylock@negated(E))
+ mutex_trylock(E)
|
- down_trylock@equal_zero(E) == 0
+ mutex_trylock(E)
|
- 0 == down_trylock@equal_zero(E)
+ mutex_trylock(E)
|
- down_trylock@not_zero(E) != 0
+ !mutex_trylock(E)
|
- 0 != down_trylock@not_zero(E)
+ !mutex_trylock(E)
|
- down_trylock@value(E)
+ !mutex_trylock(E)
|
- down@lock(E)
+ mutex_lock(E)
|
- down_interruptible@lock_int(E)
+ mutex_lock_interruptible(E)
|
- down_killable@lock_kill(E)
+ mutex_lock_killable(E)
|
- up@unlock(E)
+ mutex_unlock(E)
|
- sema_init@init(E, 1)
+ mutex_init(E)
|
- down@c_down(es)
+ down_sem(es)
|
- down_interruptible@c_int(es)
+ down_sem_interruptible(es)
|
- down_killable@c_kill(es)
+ down_sem_killable(es)
|
- down_trylock@c_try(es)
+ down_sem_trylock(es)
|
- down_timeout@c_timeout(es)
+ down_sem_timeout(es)
|
- up@c_up(es)
+ up_sem(es)
)

@script:python depends on call@
p << call.negated;
@@
rewrote("negated", "down_trylock", "mutex", p)

@script:python depends on call@
p << call.equal_zero;
@@
rewrote("compared_equal_zero", "down_trylock", "mutex", p)

@script:python depends on call@
p << call.not_zero;
@@
rewrote("compared_not_zero", "down_trylock", "mutex", p)

@script:python depends on call@
p << call.value;
@@
rewrote("value", "down_trylock", "mutex", p)

@script:python depends on call@
p << call.lock;
@@
rewrote("operation", "down", "mutex", p)

@script:python depends on call@
p << call.lock_int;
@@
rewrote("operation", "down_interruptible", "mutex", p)

@script:python depends on call@
p << call.lock_kill;
@@
rewrote("operation", "down_killable", "mutex", p)

@script:python depends on call@
p << call.unlock;
@@
rewrote("operation", "up", "mutex", p)

@script:python depends on call@
p << call.init;
@@
rewrote("sema_init_one", "sema_init", "mutex", p)

@script:python depends on call@
p << call.c_down;
@@
rewrote("rename", "down", "counting", p)

@script:python depends on call@
p << call.c_int;
@@
rewrote("rename", "down_interruptible", "counting", p)

@script:python depends on call@
p << call.c_kill;
@@
rewrote("rename", "down_killable", "counting", p)

@script:python depends on call@
p << call.c_try;
@@
rewrote("rename", "down_trylock", "counting", p)

@script:python depends on call@
p << call.c_timeout;
@@
rewrote("rename", "down_timeout", "counting", p)

@script:python depends on call@
p << call.c_up;
@@
rewrote("rename", "up", "counting", p)
