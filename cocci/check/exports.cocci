// SPDX-License-Identifier: GPL-2.0-only
/// Report every symbol a file exports to modules: EXPORT_SYMBOL(),
/// EXPORT_SYMBOL_GPL(), their _NS namespaced forms and the per-CPU
/// EXPORT_PER_CPU_SYMBOL(_GPL)(), with the macro used, so that sem2mutex
/// can tell which exported symbols a series adds and removes (what
/// out-of-tree modules must follow) and under which licence.
///
/// Every branch of an #ifdef is parsed, so an export under a condition is
/// reported too; sem2mutex reads the conditions from Coccinelle's lexer.
///
// Confidence: High
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers
// Keywords: export, sem2mutex

virtual report

@initialize:python depends on report@
@@
import json


def exported(macro, x, p):
	print(json.dumps({"kind": "export", "macro": macro, "name": x,
			  "file": p[0].file, "line": int(p[0].line)}), flush=True)

@export depends on report@
declarer d = {EXPORT_SYMBOL, EXPORT_SYMBOL_GPL, EXPORT_SYMBOL_NS,
	      EXPORT_SYMBOL_NS_GPL, EXPORT_PER_CPU_SYMBOL,
	      EXPORT_PER_CPU_SYMBOL_GPL};
identifier x;
position p;
@@
d(x@p, ...);

@script:python depends on report@
x << export.x;
p << export.p;
d << export.d;
@@
exported(d, x, p)
