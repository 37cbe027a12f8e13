// SPDX-License-Identifier: GPL-2.0-only
/// Turn the declarations of semaphores that sem2mutex classified as binary
/// locks into struct mutex: global, static, extern and local variables,
/// arrays, struct and union fields (also inside a nested struct or union,
/// and of a struct defined together with a variable), in .c files and in
/// headers; DEFINE_SEMAPHORE(x) becomes DEFINE_MUTEX(x).
///
/// Only the declarations listed in the rewrite plan are changed: the plan is
/// a JSON file named by $SEM2MUTEX_REWRITE_PLAN, written by sem2mutex from
/// its audit ("edits" with "to": "mutex" and "op": "declaration" or
/// "DEFINE_SEMAPHORE", keyed by file and line as spatch reports them).
/// Without a plan nothing is changed.  A declaration of several variables
/// at once (struct semaphore a, b;) is not matched: sem2mutex reports it.
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


def mutex_declarations_wanted():
	path = os.environ.get("SEM2MUTEX_REWRITE_PLAN")
	if not path:
		return set()
	with open(path) as plan:
		edits = json.load(plan)["edits"]
	return {(e["file"], e["line"], e["op"]) for e in edits
		if e["to"] == "mutex"}


MUTEX_DECLARATIONS = mutex_declarations_wanted()


# A position is a file and a line.  sem2mutex only plans a line after
# checking that it declares the planned name (rewrite_state.cocci), since a
# script constraint cannot also look at the name inside a disjunction.
def planned_declaration(p, op="declaration"):
	return (p[0].file, int(p[0].line), op) in MUTEX_DECLARATIONS


def rewrote_declaration(rule, p, op="declaration"):
	print(json.dumps({"kind": "rewrote", "rule": rule, "op": op,
			  "to": "mutex", "file": p[0].file,
			  "line": int(p[0].line)}), flush=True)

// ------------------------------------------------------------- variables

@variable depends on patch@
identifier x;
expression N, E;
position p : script:python() { planned_declaration(p) };
@@
(
- struct semaphore
+ struct mutex
  x@p;
|
- struct semaphore
+ struct mutex
  x@p = E;
|
- struct semaphore
+ struct mutex
  x@p[N];
|
- struct semaphore
+ struct mutex
  x@p[N] = E;
|
- struct semaphore
+ struct mutex
  x@p[] = E;
|
- struct semaphore
+ struct mutex
  x@p[];
)

@script:python depends on variable@
x << variable.x;
p << variable.p;
@@
rewrote_declaration("variable", p)

// ---------------------------------------------------------------- fields
//
// Each script rule below takes the field name as well as the position: with
// only the position, spatch 1.1.1 matches a T { ... } pattern once per
// struct instead of once per field, and rewrites only the first field.

@struct_field depends on patch@
type T;
identifier fld;
expression N;
position p : script:python() { planned_declaration(p) };
@@
T {
  ...
(
- struct semaphore
+ struct mutex
  fld@p;
|
- struct semaphore
+ struct mutex
  fld@p[N];
)
  ...
};

@script:python depends on struct_field@
fld << struct_field.fld;
p << struct_field.p;
@@
rewrote_declaration("struct_field", p)

// A struct defined together with a variable: static struct foo { ... } foo;
@struct_field_with_variable depends on patch@
type T;
identifier fld, x;
expression N;
position p : script:python() { planned_declaration(p) };
@@
T {
  ...
(
- struct semaphore
+ struct mutex
  fld@p;
|
- struct semaphore
+ struct mutex
  fld@p[N];
)
  ...
} x;

@script:python depends on struct_field_with_variable@
fld << struct_field_with_variable.fld;
p << struct_field_with_variable.p;
@@
rewrote_declaration("struct_field_with_variable", p)

// An anonymous struct variable: static struct { ... } foo;
@anonymous_struct_variable_field depends on patch@
identifier fld, x;
expression N;
position p : script:python() { planned_declaration(p) };
@@
struct {
  ...
(
- struct semaphore
+ struct mutex
  fld@p;
|
- struct semaphore
+ struct mutex
  fld@p[N];
)
  ...
} x;

@script:python depends on anonymous_struct_variable_field@
fld << anonymous_struct_variable_field.fld;
p << anonymous_struct_variable_field.p;
@@
rewrote_declaration("anonymous_struct_variable_field", p)

// A member of a named or anonymous struct or union inside a struct.
@nested_struct_field depends on patch@
type T;
identifier fld, holder;
expression N;
position p : script:python() { planned_declaration(p) };
@@
T {
  ...
  struct {
    ...
(
-   struct semaphore
+   struct mutex
    fld@p;
|
-   struct semaphore
+   struct mutex
    fld@p[N];
)
    ...
  } holder;
  ...
};

@script:python depends on nested_struct_field@
fld << nested_struct_field.fld;
p << nested_struct_field.p;
@@
rewrote_declaration("nested_struct_field", p)

@nested_union_field depends on patch@
type T;
identifier fld, holder;
expression N;
position p : script:python() { planned_declaration(p) };
@@
T {
  ...
  union {
    ...
(
-   struct semaphore
+   struct mutex
    fld@p;
|
-   struct semaphore
+   struct mutex
    fld@p[N];
)
    ...
  } holder;
  ...
};

@script:python depends on nested_union_field@
fld << nested_union_field.fld;
p << nested_union_field.p;
@@
rewrote_declaration("nested_union_field", p)

@anonymous_struct_field depends on patch@
type T;
identifier fld;
expression N;
position p : script:python() { planned_declaration(p) };
@@
T {
  ...
  struct {
    ...
(
-   struct semaphore
+   struct mutex
    fld@p;
|
-   struct semaphore
+   struct mutex
    fld@p[N];
)
    ...
  };
  ...
};

@script:python depends on anonymous_struct_field@
fld << anonymous_struct_field.fld;
p << anonymous_struct_field.p;
@@
rewrote_declaration("anonymous_struct_field", p)

@anonymous_union_field depends on patch@
type T;
identifier fld;
expression N;
position p : script:python() { planned_declaration(p) };
@@
T {
  ...
  union {
    ...
(
-   struct semaphore
+   struct mutex
    fld@p;
|
-   struct semaphore
+   struct mutex
    fld@p[N];
)
    ...
  };
  ...
};

@script:python depends on anonymous_union_field@
fld << anonymous_union_field.fld;
p << anonymous_union_field.p;
@@
rewrote_declaration("anonymous_union_field", p)

// ------------------------------------------------------ DEFINE_SEMAPHORE

// "static" stays: it is not part of the matched tokens.
@define_semaphore depends on patch@
declarer name DEFINE_SEMAPHORE;
declarer name DEFINE_MUTEX;
identifier x;
position p : script:python() { planned_declaration(p, "DEFINE_SEMAPHORE") };
@@
- DEFINE_SEMAPHORE(x@p);
+ DEFINE_MUTEX(x);

@script:python depends on define_semaphore@
x << define_semaphore.x;
p << define_semaphore.p;
@@
rewrote_declaration("define_semaphore", p, "DEFINE_SEMAPHORE")
