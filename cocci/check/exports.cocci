// SPDX-License-Identifier: GPL-2.0-only
/// Report every symbol a file exports with EXPORT_SYMBOL() or
/// EXPORT_SYMBOL_GPL(), so that sem2mutex can tell which exported symbols
/// a series adds and removes (what out-of-tree modules must follow).
///
// Confidence: High
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers
// Keywords: export, sem2mutex

virtual report

@initialize:python depends on report@
@@
import json

@export depends on report@
declarer name EXPORT_SYMBOL, EXPORT_SYMBOL_GPL;
identifier x;
position p;
@@
(
EXPORT_SYMBOL(x@p);
|
EXPORT_SYMBOL_GPL(x@p);
)

@script:python depends on report@
x << export.x;
p << export.p;
@@
print(json.dumps({"kind": "export", "name": x, "file": p[0].file,
		  "line": int(p[0].line)}), flush=True)
