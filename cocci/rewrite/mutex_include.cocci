// SPDX-License-Identifier: GPL-2.0-only
/// Add #include <linux/mutex.h> to a file that now declares a struct mutex
/// (or DEFINE_MUTEX()) and does not include it yet.  The line goes right
/// after or right before the #include the rewrite plan names as its anchor.
/// spatch 1.1.1 only adds an #include after the last #include <...> of a
/// file or before the first one, so sem2mutex picks one of those: after
/// the last when the file's <...> includes are one unbroken block (the
/// new line then joins its <linux/...> neighbours), else before the first,
/// which is never inside an #ifdef block written further down.
///
/// The plan is a JSON file named by $SEM2MUTEX_REWRITE_PLAN ("includes":
/// file, anchor line and "after" or "before").  Without a plan nothing is
/// changed.
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


def include_anchors_wanted():
	path = os.environ.get("SEM2MUTEX_REWRITE_PLAN")
	if not path:
		return set()
	with open(path) as plan:
		includes = json.load(plan)["includes"]
	return {(i["file"], i["line"], i["where"]) for i in includes}


INCLUDE_ANCHORS = include_anchors_wanted()


def planned_anchor(p, where):
	return (p[0].file, int(p[0].line), where) in INCLUDE_ANCHORS


def added_include(p, where):
	print(json.dumps({"kind": "include-added", "where": where,
			  "file": p[0].file, "line": int(p[0].line)}), flush=True)

@has_mutex_h depends on patch@
@@
#include <linux/mutex.h>

@after_angle_include depends on patch && !has_mutex_h@
position p : script:python() { planned_anchor(p, "after") };
@@
#include <...>@p
+#include <linux/mutex.h>

@script:python depends on after_angle_include@
p << after_angle_include.p;
@@
added_include(p, "after")

@before_angle_include depends on patch && !has_mutex_h@
position p : script:python() { planned_anchor(p, "before") };
@@
+#include <linux/mutex.h>
#include <...>@p

@script:python depends on before_angle_include@
p << before_angle_include.p;
@@
added_include(p, "before")

@before_quoted_include depends on patch && !has_mutex_h@
position p : script:python() { planned_anchor(p, "before") };
@@
+#include <linux/mutex.h>
#include "..."@p

@script:python depends on before_quoted_include@
p << before_quoted_include.p;
@@
added_include(p, "before")
