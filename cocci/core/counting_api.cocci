// SPDX-License-Identifier: GPL-2.0-only
/// Give the counting semaphore API its own names: down() becomes down_sem(),
/// down_interruptible() down_sem_interruptible(), down_killable()
/// down_sem_killable(), down_trylock() down_sem_trylock(), down_timeout()
/// down_sem_timeout() and up() up_sem().  The definitions, their exports and
/// their prototypes are renamed; the old names stay behind as thin exported
/// wrappers so that every commit of a bisectable conversion series builds.
/// The flag-day patch (flag_day.cocci) removes the wrappers again.
///
/// Run on kernel/locking/semaphore.c and include/linux/semaphore.h together.
/// The kerneldoc comment above each renamed definition still names the old
/// function afterwards; counting_api_kerneldoc.cocci reports those comments
/// (Coccinelle can read comments but not rewrite them).
//
// Confidence: High
// Copyright: (C) 2024 sem2mutex contributors
// Options: --no-includes --include-headers

virtual patch

@initialize:python@
@@
import json
import os

# The name table is sem2mutex's (sem2mutex/tools/api.py), in
# $SEM2MUTEX_API; by hand: SEM2MUTEX_API="$(python3 -m sem2mutex.tools.api)"
NEW_NAME = json.loads(os.environ["SEM2MUTEX_API"])["counting"]

// A file that already has down_sem() has had this patch: applying it again
// would rename the wrappers it added, so every rule below stays away.
@already_defined depends on patch@
identifier s;
type T;
@@
T down_sem(struct semaphore *s) { ... }

@already_declared depends on patch@
identifier s;
type T;
@@
T down_sem(struct semaphore *s);

// Only definitions whose first parameter is a struct semaphore *: other
// functions called up() or down() exist in drivers and are left alone.
@definition depends on patch && !already_defined && !already_declared disable prototypes@
identifier f = {down, down_interruptible, down_killable, down_trylock,
                down_timeout, up};
fresh identifier nf = script:python(f) { NEW_NAME[f] };
identifier s;
type T;
@@
T
- f
+ nf
  (struct semaphore *s, ...) { ... }

@export depends on patch@
declarer name EXPORT_SYMBOL;
identifier definition.f;
fresh identifier nf = script:python(f) { NEW_NAME[f] };
@@
EXPORT_SYMBOL(
- f
+ nf
 );

// Calls between the API functions inside the file that defines them move
// to the new names too: after the flag day the old names are gone.  The
// wrappers are added by a later rule, so their calls are not touched.
@internal_call depends on patch && definition@
identifier f = {down, down_interruptible, down_killable, down_trylock,
                down_timeout, up};
fresh identifier nf = script:python(f) { NEW_NAME[f] };
expression list es;
@@
- f
+ nf
  (es)

// up() is renamed by old_prototypes below, which also appends the old names.
@prototype depends on patch && !already_defined && !already_declared@
identifier f = {down, down_interruptible, down_killable, down_trylock,
                down_timeout};
fresh identifier nf = script:python(f) { NEW_NAME[f] };
identifier s;
type T;
@@
T
- f
+ nf
  (struct semaphore *s, ...);

// The old names, now thin wrappers, after the last renamed export so the
// flag day can drop them as one block.
@wrappers depends on patch && export@
declarer name EXPORT_SYMBOL;
identifier up_export = up_sem;
@@
EXPORT_SYMBOL(up_export);
+/*
+ * The old names of the counting semaphore API.  They remain only until every
+ * user has moved to the down_sem() family; new code must not use them.
+ */
+void __sched down(struct semaphore *sem)
+{
+	down_sem(sem);
+}
+EXPORT_SYMBOL(down);
+
+int __sched down_interruptible(struct semaphore *sem)
+{
+	return down_sem_interruptible(sem);
+}
+EXPORT_SYMBOL(down_interruptible);
+
+int __sched down_killable(struct semaphore *sem)
+{
+	return down_sem_killable(sem);
+}
+EXPORT_SYMBOL(down_killable);
+
+int __sched down_trylock(struct semaphore *sem)
+{
+	return down_sem_trylock(sem);
+}
+EXPORT_SYMBOL(down_trylock);
+
+int __sched down_timeout(struct semaphore *sem, long timeout)
+{
+	return down_sem_timeout(sem, timeout);
+}
+EXPORT_SYMBOL(down_timeout);
+
+void __sched up(struct semaphore *sem)
+{
+	up_sem(sem);
+}
+EXPORT_SYMBOL(up);

// Rewritten rather than used as context: Coccinelle does not attach added
// declarations after a context-only prototype.
@old_prototypes depends on patch && !already_defined && !already_declared && prototype@
symbol sem;
@@
-extern void up(struct semaphore *sem);
+extern void up_sem(struct semaphore *sem);
+
+/* The old names: wrappers until every user has moved to the names above. */
+extern void down(struct semaphore *sem);
+extern int __must_check down_interruptible(struct semaphore *sem);
+extern int __must_check down_killable(struct semaphore *sem);
+extern int __must_check down_trylock(struct semaphore *sem);
+extern int __must_check down_timeout(struct semaphore *sem, long jiffies);
+extern void up(struct semaphore *sem);
