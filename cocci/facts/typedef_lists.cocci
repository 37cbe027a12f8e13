// SPDX-License-Identifier: GPL-2.0-only
/// Report the names, and the struct members, of typedefs that declare
/// several names (2.6's dabusb.h: typedef struct { ... } dabusb_t,
/// *pdabusb_t;), as types.cocci reports those of the others.  spatch 1.1.1
/// matches a declaration of several declarators only with a pattern it
/// could rewrite there, which no typedef pattern is, except in its match
/// mode: the * below.  Match mode turns --verbose-parsing off after the
/// first file group, so this program runs apart, on the files that may
/// declare a typedef the others did not find, after the facts program
/// has reported their parse errors.
///
// Confidence: High
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers --no-show-diff
// Keywords: semaphore, mutex, typedef, sem2mutex

virtual report

@initialize:python depends on report@
@@
import json


def emit_type(kind, pos, **fields):
	fields.update(kind=kind, file=pos.file, line=int(pos.line),
		      col=int(pos.column), function=pos.current_element)
	print(json.dumps(fields, sort_keys=True), flush=True)

@typedef_name depends on report@
type T, N;
position p;
@@
* typedef T N@p;

@script:python depends on report@
T << typedef_name.T;
N << typedef_name.N;
p << typedef_name.p;
@@
emit_type("typedef", p[0], name=N, type=T)

// The members of a struct or union the typedef defines; every other
// definition of the file too (types.cocci's member facts again).
@typedef_member depends on report@
type T, FT;
identifier fld;
position p;
@@
T {
  ...
  FT fld@p;
  ...
};

@script:python depends on report@
T << typedef_member.T;
FT << typedef_member.FT;
fld << typedef_member.fld;
p << typedef_member.p;
@@
emit_type("member", p[0], container=T, field=fld, type=FT,
	  union=T.startswith("union "))
