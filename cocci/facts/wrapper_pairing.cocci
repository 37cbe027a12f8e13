// SPDX-License-Identifier: GPL-2.0-only
/// Report the calls of a semaphore's lock and unlock wrappers (functions or
/// macros), and
/// every unlock-wrapper call that some path reaches from the start of its
/// function without a lock-wrapper call on the same arguments (a call
/// whose result is used, `return foo_unlock(dev);`, as well) or from the
/// failure of a lock wrapper that returns its down_interruptible(), and
/// the wrapper calls in a macro's body, with the macro; the same for the
/// uses of object-like lock and unlock macros (LOAD_LOCK;).  The
/// wrappers of one semaphore are given in SEM2MUTEX_LOCK_WRAPPERS and
/// SEM2MUTEX_UNLOCK_WRAPPERS (comma-separated names), the object-like
/// macros among them in SEM2MUTEX_OBJECT_LOCK_WRAPPERS and
/// SEM2MUTEX_OBJECT_UNLOCK_WRAPPERS, the lock wrappers that may fail (a
/// down_interruptible() or down_killable() whose failure they return as
/// non-zero) in SEM2MUTEX_FALLIBLE_LOCK_WRAPPERS: an unlock-wrapper call a
/// path reaches from such a call whose result is dropped, or kept and not
/// tested, is unpaired too.  Also reported: a use of an unlock wrapper's
/// name that is neither a call nor an export (dev->done = foo_unlock;:
/// what calls the pointer is not seen), and a lock wrapper some path of
/// which avoids every down() of what it takes (lock_skipped).
///
// Confidence: High
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers
// Keywords: semaphore, mutex, sem2mutex

virtual report

@initialize:python depends on report@
@@
import json
import os

LOCKS = set(filter(None, os.environ.get("SEM2MUTEX_LOCK_WRAPPERS", "").split(",")))
UNLOCKS = set(filter(None, os.environ.get("SEM2MUTEX_UNLOCK_WRAPPERS", "").split(",")))
# the object-like macros among them, used by their bare names
OBJECT_LOCKS = set(filter(None, os.environ.get("SEM2MUTEX_OBJECT_LOCK_WRAPPERS",
					       "").split(",")))
OBJECT_UNLOCKS = set(filter(None, os.environ.get("SEM2MUTEX_OBJECT_UNLOCK_WRAPPERS",
						 "").split(",")))
# the lock wrappers that may fail to take the lock (and then return non-zero)
FALLIBLE_LOCKS = set(filter(None, os.environ.get("SEM2MUTEX_FALLIBLE_LOCK_WRAPPERS",
						 "").split(",")))


def emit(kind, pos, **fields):
	fields.update(kind=kind, file=pos.file, line=int(pos.line),
		      col=int(pos.column), function=pos.current_element)
	print(json.dumps(fields, sort_keys=True), flush=True)

@lock_call depends on report@
identifier w : script:python() { w in LOCKS };
position p;
@@
w@p(...)

@script:python depends on report@
p << lock_call.p;
@@
emit("wrapper_call", p[0], role="lock")

@unlock_call depends on report@
identifier w : script:python() { w in UNLOCKS };
position p;
@@
w@p(...)

@script:python depends on report@
p << unlock_call.p;
@@
emit("wrapper_call", p[0], role="unlock")

// A wrapper call in the body of a macro (6.1's printk.c: #define
// up_console_sem() __up_console_sem(_RET_IP_)): where the macro is
// expanded is not followed, so no path is known to take the lock first.
@lock_in_macro depends on report@
identifier M, w;
position lock_call.p;
@@
(
#define M(...) <+... w@p(...) ...+>
|
#define M <+... w@p(...) ...+>
)

@script:python depends on report@
M << lock_in_macro.M;
p << lock_call.p;
@@
emit("in_macro", p[0], macro=M)

@unlock_in_macro depends on report@
identifier M, w;
position unlock_call.p;
@@
(
#define M(...) <+... w@p(...) ...+>
|
#define M <+... w@p(...) ...+>
)

@script:python depends on report@
M << unlock_in_macro.M;
p << unlock_call.p;
@@
emit("in_macro", p[0], macro=M)

// Object-like lock and unlock macros (2.6's selinux: #define LOAD_LOCK
// down(&load_sem), used as LOAD_LOCK;): every use of the name that is no
// call is one of theirs, in statements or not, in other macros' bodies too.
@lock_use depends on report@
identifier w : script:python() { w in OBJECT_LOCKS };
position p;
@@
w@p

@script:python depends on report@
p << lock_use.p;
@@
emit("wrapper_call", p[0], role="lock")

@unlock_use depends on report@
identifier w : script:python() { w in OBJECT_UNLOCKS };
position p;
@@
w@p

@script:python depends on report@
p << unlock_use.p;
@@
emit("wrapper_call", p[0], role="unlock")

// A lock wrapper some path of which returns without taking what it takes
// elsewhere (if (dev->need) down(&dev->sem);): its callers cannot tell
// whether they hold the lock.  A member is one semaphore whatever struct
// it is reached through (2.6's snd_i2c_lock(): bus->master's or bus's
// lock_mutex, on either path).  A fallible wrapper's failure return goes
// through its down_interruptible(), which this does not count.  The downs
// are found along paths (exists), not by a nest (<+... ...+>), which cost
// 2.6's ntfs_mft_record_alloc() four seconds.
@lock_def_takes_member depends on report exists@
identifier lk : script:python() { lk in LOCKS };
identifier lock = {down, down_interruptible, down_killable};
expression E;
identifier fld;
position q, c;
@@
lk@q(...) {
  ... when any
  lock@c(&E->fld, ...)
  ... when any
}

@lock_def_skips_member depends on report exists@
symbol return_VOID;
identifier lk : script:python() { lk in LOCKS };
identifier lock = {down, down_interruptible, down_killable};
identifier lock_def_takes_member.fld;
expression E2;
position lock_def_takes_member.q;
position p;
@@
lk@q@p(...) {
  ... when != lock(&E2->fld, ...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
}

@script:python depends on report@
p << lock_def_skips_member.p;
@@
emit("lock_skipped", p[0])

@lock_def_takes depends on report exists@
identifier lk : script:python() { lk in LOCKS };
identifier lock = {down, down_interruptible, down_killable};
expression S;
position q, c != lock_def_takes_member.c;
@@
lk@q(...) {
  ... when any
  lock@c(S, ...)
  ... when any
}

@lock_def_skips depends on report exists@
symbol return_VOID;
identifier lk : script:python() { lk in LOCKS };
identifier lock = {down, down_interruptible, down_killable};
expression lock_def_takes.S;
position lock_def_takes.q;
position p;
@@
lk@q@p(...) {
  ... when != lock(S, ...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
}

@script:python depends on report@
p << lock_def_skips.p;
@@
emit("lock_skipped", p[0])

// An unlock wrapper named other than in a call (stored in a function
// pointer: d->done = foo_unlock;, handed on, in an initialiser): what
// calls it through the pointer is not seen, so the name counts as an
// unpaired call.  An export (EXPORT_SYMBOL(foo_unlock)) calls nothing.
@unlock_exported depends on report@
identifier ul : script:python() { ul in UNLOCKS };
declarer d = {EXPORT_SYMBOL, EXPORT_SYMBOL_GPL, EXPORT_SYMBOL_NS, EXPORT_SYMBOL_NS_GPL};
position p;
@@
(
d(ul@p);
|
d(ul@p, ...);
)

@unlock_ref depends on report@
identifier ul : script:python() { ul in UNLOCKS };
position p != {unlock_call.p, unlock_use.p, unlock_exported.p};
@@
ul@p

@script:python depends on report@
p << unlock_ref.p;
@@
emit("wrapper_call", p[0], role="unlock", ref=True)
emit("unpaired", p[0], op="unlock")

@lock_use_in_macro depends on report@
identifier M, w;
position lock_use.p;
@@
(
#define M(...) <+... w@p ...+>
|
#define M <+... w@p ...+>
)

@script:python depends on report@
M << lock_use_in_macro.M;
p << lock_use.p;
@@
emit("in_macro", p[0], macro=M)

@unlock_use_in_macro depends on report@
identifier M, w;
position unlock_use.p;
@@
(
#define M(...) <+... w@p ...+>
|
#define M <+... w@p ...+>
)

@script:python depends on report@
M << unlock_use_in_macro.M;
p << unlock_use.p;
@@
emit("in_macro", p[0], macro=M)

// Only a use standing as a statement (LOAD_UNLOCK;) has its paths
// followed below: any other use of an unlock macro is unpaired.
@unlock_statement depends on report@
identifier w : script:python() { w in OBJECT_UNLOCKS };
position p;
@@
w@p;

@unlock_other_use depends on report@
identifier w : script:python() { w in OBJECT_UNLOCKS };
position p != unlock_statement.p;
@@
w@p

@script:python depends on report@
p << unlock_other_use.p;
@@
emit("unpaired", p[0], op="unlock")

// In a file that calls no lock wrapper at all, no path can take one before
// an unlock-wrapper call: every such call is unpaired, and the path search
// below (seconds on fs/ntfs/inode.c of 2.6.11) is not run.  A lock macro's
// bare use does not count: it has no arguments to match the call's.
@script:python depends on report && !lock_call@
p << unlock_call.p;
@@
emit("unpaired", p[0], op="unlock")

@script:python depends on report && !lock_call && !lock_use@
p << unlock_use.p;
@@
emit("unpaired", p[0], op="unlock")

@unpaired_unlock depends on report && lock_call exists@
symbol return_VOID;
identifier fn;
identifier lk : script:python() { lk in LOCKS };
identifier ul : script:python() { ul in UNLOCKS };
expression list ES;
position p;
@@
fn(...) {
  ... when != lk(ES)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  ul@p(ES)
  ... when any
}

@script:python depends on report@
p << unpaired_unlock.p;
@@
emit("unpaired", p[0], op="unlock")

// An unlock-wrapper call some path reaches right after another one on the
// same arguments, with no lock-wrapper call between them: released twice.
// As in pairing.cocci, no path goes on past BUG(), panic() or ACPI's
// return macros.
@double_unlock depends on report && lock_call exists@
symbol return_VOID;
identifier fn;
identifier lk : script:python() { lk in LOCKS };
identifier ul : script:python() { ul in UNLOCKS };
expression list ES;
position p1, p2;
@@
fn(...) {
  ... when any
  ul@p1(ES)
  ... when != lk(ES)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  ul@p2(ES)
  ... when any
}

@script:python depends on report@
p1 << double_unlock.p1;
p2 << double_unlock.p2;
@@
emit("unpaired", p2[0], op="unlock", after=int(p1[0].line))

// The same for an unlock macro used as a statement, after any use of a
// lock wrapper or macro: an object-like macro has no arguments to match.
@unpaired_unlock_use depends on report && (lock_call || lock_use) exists@
symbol return_VOID;
identifier fn;
identifier lk : script:python() { lk in LOCKS };
identifier ul : script:python() { ul in OBJECT_UNLOCKS };
position p;
@@
fn(...) {
  ... when != lk
      when != lk(...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  ul@p;
  ... when any
}

@script:python depends on report@
p << unpaired_unlock_use.p;
@@
emit("unpaired", p[0], op="unlock")

@double_unlock_use depends on report && (lock_call || lock_use) exists@
symbol return_VOID;
identifier fn;
identifier lk : script:python() { lk in LOCKS };
identifier ul : script:python() { ul in OBJECT_UNLOCKS };
position p1, p2;
@@
fn(...) {
  ... when any
  ul@p1;
  ... when != lk
      when != lk(...)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  ul@p2;
  ... when any
}

@script:python depends on report@
p1 << double_unlock_use.p1;
p2 << double_unlock_use.p2;
@@
emit("unpaired", p2[0], op="unlock", after=int(p1[0].line))

// A lock wrapper that returns its down_interruptible() (or
// down_killable()): non-zero when it did not take the lock.  As in
// pairing.cocci, an unlock-wrapper call is unpaired in the failure branch
// of a test of its result, and past a negated test with no else.  (A
// wrapper that returns nothing cannot be tested.)  The failed call is
// named by its role: an identifier declared with a script constraint
// cannot be inherited by a script rule.
@failed_within_unlock depends on report && lock_call exists@
symbol return_VOID;
identifier lk : script:python() { lk in LOCKS };
identifier ul : script:python() { ul in UNLOCKS };
expression list ES;
expression X;
statement S1;
position a, p;
@@
(
if (\(lk@a(ES)\|lk@a(ES) < 0\|(X = lk@a(ES))\|(X = lk@a(ES)) != 0\|(X = lk@a(ES)) < 0\)) {
  ... when != lk(ES)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  ul@p(ES)
  ... when any
}
|
if (\(!lk@a(ES)\|!(X = lk@a(ES))\)) S1 else {
  ... when != lk(ES)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  ul@p(ES)
  ... when any
}
|
if (\(lk@a(ES) == 0\|(X = lk@a(ES)) == 0\)) S1 else {
  ... when != lk(ES)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  ul@p(ES)
  ... when any
}
)

@script:python depends on report@
a << failed_within_unlock.a;
p << failed_within_unlock.p;
@@
emit("unpaired", p[0], op="unlock", failed=int(a[0].line), failed_op="lock-wrapper")

@failed_past_unlock depends on report && lock_call exists@
symbol return_VOID;
identifier lk : script:python() { lk in LOCKS };
identifier ul : script:python() { ul in UNLOCKS };
expression list ES;
expression X;
statement S1;
position a, p;
@@
(
if (\(!lk@a(ES)\|!(X = lk@a(ES))\)) S1
|
if (\(lk@a(ES) == 0\|(X = lk@a(ES)) == 0\)) S1
)
... when != lk(ES)
    when != BUG()
    when != panic(...)
    when != return_VALUE(...)
    when != return_VOID
    when != return_ACPI_STATUS(...)
    when != return_PTR(...)
ul@p(ES)

@script:python depends on report@
a << failed_past_unlock.a;
p << failed_past_unlock.p;
@@
emit("unpaired", p[0], op="unlock", failed=int(a[0].line), failed_op="lock-wrapper")

// A lock wrapper that may fail (it returns non-zero when its
// down_interruptible() or down_killable() did not take the lock) called
// for nothing but its effect (2.6-style lock_dev(d); ... unlock_dev(d);):
// where it failed, the unlock-wrapper call releases a semaphore the caller
// does not hold.  Run only in the files that call one.
@fallible_call depends on report@
identifier flk : script:python() { flk in FALLIBLE_LOCKS };
position a;
@@
flk@a(...)

@failed_dropped_unlock depends on report && fallible_call exists@
symbol return_VOID;
identifier flk : script:python() { flk in FALLIBLE_LOCKS };
identifier lk : script:python() { lk in LOCKS };
identifier ul : script:python() { ul in UNLOCKS };
expression list ES;
position a, p;
@@
(
flk@a(ES);
|
 (void)flk@a(ES);
)
... when != lk(ES)
    when != BUG()
    when != panic(...)
    when != return_VALUE(...)
    when != return_VOID
    when != return_ACPI_STATUS(...)
    when != return_PTR(...)
ul@p(ES)

@script:python depends on report@
a << failed_dropped_unlock.a;
p << failed_dropped_unlock.p;
@@
emit("unpaired", p[0], op="unlock", failed=int(a[0].line), failed_op="lock-wrapper")

// The same with the result kept (ret = lock_dev(d); int ret =
// lock_dev(d);): unpaired in the failure branch of a test of it, past a
// negated test with no else (as long as nothing assigns it again), and
// where no test of it comes first.
@failed_stored_unlock depends on report && fallible_call exists@
symbol return_VOID;
identifier flk : script:python() { flk in FALLIBLE_LOCKS };
identifier lk : script:python() { lk in LOCKS };
identifier ul : script:python() { ul in UNLOCKS };
expression list ES;
expression X, E;
statement S1;
position a, p;
@@
X = flk@a(ES);
... when != X = E
    when != lk(ES)
(
if (X) {
  ... when != lk(ES)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  ul@p(ES)
  ... when any
}
|
if (X < 0) {
  ... when != lk(ES)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  ul@p(ES)
  ... when any
}
|
if (!X) S1 else {
  ... when != lk(ES)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  ul@p(ES)
  ... when any
}
|
if (!X) S1
... when != lk(ES)
    when != BUG()
    when != panic(...)
    when != return_VALUE(...)
    when != return_VOID
    when != return_ACPI_STATUS(...)
    when != return_PTR(...)
ul@p(ES)
)

@script:python depends on report@
a << failed_stored_unlock.a;
p << failed_stored_unlock.p;
@@
emit("unpaired", p[0], op="unlock", failed=int(a[0].line), failed_op="lock-wrapper")

@failed_declared_unlock depends on report && fallible_call exists@
symbol return_VOID;
identifier flk : script:python() { flk in FALLIBLE_LOCKS };
identifier lk : script:python() { lk in LOCKS };
identifier ul : script:python() { ul in UNLOCKS };
expression list ES;
expression E;
identifier x;
type T;
statement S1;
position a, p;
@@
T x = flk@a(ES);
... when != x = E
    when != lk(ES)
(
if (x) {
  ... when != lk(ES)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  ul@p(ES)
  ... when any
}
|
if (x < 0) {
  ... when != lk(ES)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  ul@p(ES)
  ... when any
}
|
if (!x) S1 else {
  ... when != lk(ES)
      when != BUG()
      when != panic(...)
      when != return_VALUE(...)
      when != return_VOID
      when != return_ACPI_STATUS(...)
      when != return_PTR(...)
  ul@p(ES)
  ... when any
}
|
if (!x) S1
... when != lk(ES)
    when != BUG()
    when != panic(...)
    when != return_VALUE(...)
    when != return_VOID
    when != return_ACPI_STATUS(...)
    when != return_PTR(...)
ul@p(ES)
)

@script:python depends on report@
a << failed_declared_unlock.a;
p << failed_declared_unlock.p;
@@
emit("unpaired", p[0], op="unlock", failed=int(a[0].line), failed_op="lock-wrapper")

@untested_unlock depends on report && fallible_call exists@
symbol return_VOID;
identifier flk : script:python() { flk in FALLIBLE_LOCKS };
identifier lk : script:python() { lk in LOCKS };
identifier ul : script:python() { ul in UNLOCKS };
expression list ES;
expression X;
identifier x;
type T;
position a, p;
@@
(
X = flk@a(ES);
... when != X
    when != lk(ES)
    when != BUG()
    when != panic(...)
    when != return_VALUE(...)
    when != return_VOID
    when != return_ACPI_STATUS(...)
    when != return_PTR(...)
ul@p(ES)
|
T x = flk@a(ES);
... when != x
    when != lk(ES)
    when != BUG()
    when != panic(...)
    when != return_VALUE(...)
    when != return_VOID
    when != return_ACPI_STATUS(...)
    when != return_PTR(...)
ul@p(ES)
)

@script:python depends on report@
a << untested_unlock.a;
p << untested_unlock.p;
@@
emit("unpaired", p[0], op="unlock", failed=int(a[0].line), failed_op="lock-wrapper")
