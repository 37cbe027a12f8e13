// SPDX-License-Identifier: GPL-2.0-only
/// Test helper for tests/test_verify.py: move every call of the old
/// counting semaphore API in the given files to the down_sem() names, as a
/// conversion patch of the series would for a counting semaphore.  Unlike
/// the real rewrite it does not look at the argument's type: the tests only
/// give it files whose down() and up() calls are all semaphore calls.
//
// Confidence: High (on the files the tests choose)
// Copyright: (C) 2024 sem2mutex contributors
// Options: --no-includes

virtual patch

@depends on patch@
expression list args;
@@
- down(args)
+ down_sem(args)

@depends on patch@
expression list args;
@@
- down_interruptible(args)
+ down_sem_interruptible(args)

@depends on patch@
expression list args;
@@
- down_killable(args)
+ down_sem_killable(args)

@depends on patch@
expression list args;
@@
- down_trylock(args)
+ down_sem_trylock(args)

@depends on patch@
expression list args;
@@
- down_timeout(args)
+ down_sem_timeout(args)

@depends on patch@
expression list args;
@@
- up(args)
+ up_sem(args)
