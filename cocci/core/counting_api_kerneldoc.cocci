// SPDX-License-Identifier: GPL-2.0-only
/// Report the comment written directly above each definition of the
/// counting semaphore API, old names and new, as one JSON object per line:
/// {"file", "line", "function", "comment"}.  "line" is the line of the
/// definition; "comment" is the text Coccinelle attaches before it.
///
/// sem2mutex uses this after counting_api.cocci to find the kerneldoc
/// comments that still name the old function (" * down - acquire ...").
/// Coccinelle 1.1.1 can match and read comments but not rewrite them, and it
/// drops a comment only together with the whole function definition, so the
/// renaming of the comment itself is an exact, anchored edit done by
/// sem2mutex/core_api.py from what this rule reports.
//
// Confidence: High
// Copyright: (C) 2024 sem2mutex contributors
// Options: --no-includes --include-headers

virtual report

@initialize:python depends on report@
@@
import json

@definition depends on report@
comments doc;
identifier f = {down, down_interruptible, down_killable, down_trylock,
                down_timeout, up, down_sem, down_sem_interruptible,
                down_sem_killable, down_sem_trylock, down_sem_timeout,
                up_sem};
identifier s;
type T;
position p;
@@
T@doc f@p(struct semaphore *s, ...) { ... }

@script:python depends on report@
doc << definition.doc;
f << definition.f;
p << definition.p;
@@
print(json.dumps({"file": p[0].file, "line": int(p[0].line),
                  "function": f, "comment": doc[0].before}))
