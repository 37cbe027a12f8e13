// SPDX-License-Identifier: GPL-2.0-only
/// Replace or drop #include <linux/semaphore.h> in a file that no longer
/// uses any semaphore, and add #include <linux/mutex.h> where the file's
/// own order puts it, at the lines the rewrite plan names.
///
/// The plan is a JSON file named by $SEM2MUTEX_REWRITE_PLAN: "includes",
/// each a file, a line and what to do there: "replace" (the
/// <linux/semaphore.h> at that line becomes <linux/mutex.h>), "drop" (it
/// goes), "after" or "before" (<linux/mutex.h> is added next to the
/// #include at that line).  sem2mutex decides them (series/includes.py):
/// spatch tells it which files still use a semaphore, and its lexer which
/// headers a file includes.  Without a plan nothing is changed.
///
/// Adding next to a given #include needs that header's name in the rule:
/// spatch 1.1.1 cannot bind an #include's file name to a metavariable, and
/// an addition next to "#include <...>" only ever lands after the file's
/// last #include.  So the "after" and "before" rules are in
/// mutex_include_next_to.cocci, a template that sem2mutex copies once per
/// header it anchors to, after this file.
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


def include_plan():
	path = os.environ.get("SEM2MUTEX_REWRITE_PLAN")
	if not path:
		return set()
	with open(path) as plan:
		includes = json.load(plan)["includes"]
	return {(i["file"], i["line"], i["where"]) for i in includes}


INCLUDE_PLAN = include_plan()


def planned_anchor(p, where):
	return (p[0].file, int(p[0].line), where) in INCLUDE_PLAN


def included(p, where):
	print(json.dumps({"kind": "include-edit", "where": where,
			  "file": p[0].file, "line": int(p[0].line)}), flush=True)

@has_mutex_h depends on patch@
@@
#include <linux/mutex.h>

@replace_semaphore_h depends on patch && !has_mutex_h@
position p : script:python() { planned_anchor(p, "replace") };
@@
-#include <linux/semaphore.h>@p
+#include <linux/mutex.h>

@script:python depends on replace_semaphore_h@
p << replace_semaphore_h.p;
@@
included(p, "replace")

@drop_semaphore_h depends on patch@
position p : script:python() { planned_anchor(p, "drop") };
@@
-#include <linux/semaphore.h>@p

@script:python depends on drop_semaphore_h@
p << drop_semaphore_h.p;
@@
included(p, "drop")
