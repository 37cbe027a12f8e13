// SPDX-License-Identifier: GPL-2.0-only
/// Test helper for tests/test_verify.py: a conversion gone wrong.  Every
/// up() becomes up_sem_misspelt(), a function no header declares, so the
/// patched file must fail to compile and verify must say so.
//
// Confidence: High
// Copyright: (C) 2024 sem2mutex contributors
// Options: --no-includes

virtual patch

@depends on patch@
expression list args;
@@
- up(args)
+ up_sem_misspelt(args)
