// SPDX-License-Identifier: GPL-2.0-only
/// Add #include <linux/mutex.h> right after or right before the #include of
/// one header, at the line the rewrite plan names ("after" or "before").
///
/// A template, not a semantic patch of its own: SmPL cannot bind the file
/// name of an #include, so sem2mutex makes one copy of the two rules below
/// for each header it anchors to, with <SEM2MUTEX_ANCHOR> replaced by the
/// header as the file spells it (<linux/slab.h>, "esas2r.h") and _ANCHOR
/// in the rule names by a number, and runs the copies after
/// mutex_include.cocci, whose initialize rule and has_mutex_h they use.
//
// Confidence: High
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers
// Keywords: semaphore, mutex, sem2mutex

virtual patch

@after_include_ANCHOR depends on patch && !has_mutex_h@
position p : script:python() { planned_anchor(p, "after") };
@@
#include <SEM2MUTEX_ANCHOR>@p
+#include <linux/mutex.h>

@script:python depends on after_include_ANCHOR@
p << after_include_ANCHOR.p;
@@
included(p, "after")

@before_include_ANCHOR depends on patch && !has_mutex_h@
position p : script:python() { planned_anchor(p, "before") };
@@
+#include <linux/mutex.h>
#include <SEM2MUTEX_ANCHOR>@p

@script:python depends on before_include_ANCHOR@
p << before_include_ANCHOR.p;
@@
included(p, "before")
