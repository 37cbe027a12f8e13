// SPDX-License-Identifier: GPL-2.0-only
/// Find every remaining caller of the old counting semaphore API: down(),
/// down_interruptible(), down_killable(), down_trylock(), down_timeout() and
/// up().  Prints one JSON object per call:
///   {"file", "line", "function", "op", "type"}
/// "function" is the function containing the call and "op" the old name.
/// "type" is "semaphore" when the argument is known to be a
/// struct semaphore *, and "unknown type" when spatch cannot tell (typically
/// a field of a struct defined in a header that was not parsed).  Calls whose
/// argument has some other known type, and calls in a file that defines its
/// own function of that name, are not semaphore calls: several drivers have
/// unrelated functions called up() or down().
//
// Confidence: High for "semaphore", Moderate for "unknown type"
// Copyright: (C) 2024 sem2mutex contributors
// Options: --no-includes --include-headers
// Keywords: semaphore, sem2mutex

virtual report

@initialize:python depends on report@
@@
import json

# (file, name) pairs for files that define their own up(), down(), ...
LOCAL_DEFINITIONS = set()

def emit(p, op, kind):
	function = p[0].current_element
	# Coccinelle names the context of a call in a macro body or a global
	# initialiser "something_else": there is no enclosing function.
	if function == "something_else":
		function = None
	print(json.dumps({"file": p[0].file, "line": int(p[0].line),
			  "function": function, "op": op, "type": kind}))

// The file has its own function of that name: its untyped calls are to it.
@local_definition depends on report@
identifier f = {down, down_interruptible, down_killable, down_trylock,
                down_timeout, up};
position p;
@@
f@p(...) { ... }

@script:python depends on report@
f << local_definition.f;
p << local_definition.p;
@@
LOCAL_DEFINITIONS.add((p[0].file, f))

@semaphore_call depends on report@
identifier f = {down, down_interruptible, down_killable, down_trylock,
                down_timeout, up};
struct semaphore *s;
position p;
@@
f@p(s, ...)

// spatch does not know that DEFINE_SEMAPHORE() declares a struct semaphore.
@defined_semaphore depends on report@
declarer name DEFINE_SEMAPHORE;
identifier sem;
@@
DEFINE_SEMAPHORE(sem);

@defined_semaphore_call depends on report@
identifier f = {down, down_interruptible, down_killable, down_trylock,
                down_timeout, up};
identifier defined_semaphore.sem;
position p != semaphore_call.p;
@@
f@p(&sem, ...)

@typed_call depends on report@
identifier f = {down, down_interruptible, down_killable, down_trylock,
                down_timeout, up};
type T;
T e;
position p != {semaphore_call.p, defined_semaphore_call.p};
@@
f@p(e, ...)

@untyped_call depends on report@
identifier f = {down, down_interruptible, down_killable, down_trylock,
                down_timeout, up};
expression e;
position p != {semaphore_call.p, defined_semaphore_call.p, typed_call.p};
@@
f@p(e, ...)

@script:python depends on report@
f << semaphore_call.f;
p << semaphore_call.p;
@@
emit(p, f, "semaphore")

@script:python depends on report@
f << defined_semaphore_call.f;
p << defined_semaphore_call.p;
@@
emit(p, f, "semaphore")

@script:python depends on report@
f << untyped_call.f;
p << untyped_call.p;
@@
if (p[0].file, f) not in LOCAL_DEFINITIONS:
	emit(p, f, "unknown type")
