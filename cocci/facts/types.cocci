// SPDX-License-Identifier: GPL-2.0-only
/// Report what a file tells about types, for the tree-wide type index
/// that ties a semaphore call to its struct when spatch alone cannot (it
/// does not read headers): every member of every struct and union with
/// its type (members of anonymous inner structs and unions too), every
/// typedef, the return type of every function returning a pointer, the
/// type of every variable declared with a struct type, and object-like
/// macros that stand for a call (#define current get_current()).
/// Semaphore members are the struct members whose type is (a typedef of)
/// struct semaphore: declarations.cocci reports the semaphore variables.
///
// Confidence: High
// Copyright: (C) 2026 sem2mutex developers
// Options: --no-includes --include-headers
// Keywords: semaphore, mutex, typedef, sem2mutex

virtual report

@initialize:python depends on report@
@@
import json


def emit_type(kind, pos, **fields):
	fields.update(kind=kind, file=pos.file, line=int(pos.line),
		      col=int(pos.column), function=pos.current_element)
	print(json.dumps(fields, sort_keys=True), flush=True)

// ---------------------------------------------------------------- members
// A member's type includes its array bounds: struct semaphore [ 4 ].

@member depends on report@
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
T << member.T;
FT << member.FT;
fld << member.fld;
p << member.p;
@@
emit_type("member", p[0], container=T, field=fld, type=FT,
	  union=T.startswith("union "))

// A struct defined together with a variable: static struct foo {...} foo;
@member_with_var depends on report@
type T, FT;
identifier fld, x;
position p;
@@
T {
  ...
  FT fld@p;
  ...
} x;

@script:python depends on report@
T << member_with_var.T;
FT << member_with_var.FT;
fld << member_with_var.fld;
p << member_with_var.p;
@@
emit_type("member", p[0], container=T, field=fld, type=FT)

// ... or with pointers or arrays of it: static struct foo { ... } *foos[4];
@member_with_declarator depends on report@
type T, FT;
identifier fld, x;
expression N;
position p;
@@
(
T { ... FT fld@p; ... } *x;
|
T { ... FT fld@p; ... } x[N];
|
T { ... FT fld@p; ... } *x[N];
)

@script:python depends on report@
T << member_with_declarator.T;
FT << member_with_declarator.FT;
fld << member_with_declarator.fld;
p << member_with_declarator.p;
@@
emit_type("member", p[0], container=T, field=fld, type=FT)

// An anonymous struct variable: static struct { ... } hwa742;
@anonymous_struct_member depends on report@
type FT;
identifier fld, x;
position p;
@@
struct {
  ...
  FT fld@p;
  ...
} x;

@script:python depends on report@
x << anonymous_struct_member.x;
FT << anonymous_struct_member.FT;
fld << anonymous_struct_member.fld;
p << anonymous_struct_member.p;
@@
emit_type("member", p[0], container="anonymous struct of " + x, field=fld,
	  type=FT)

// Members of a named inner struct or union: e->holder.fld.  A member of
// a union shares its storage with the union's other members.
@holder_member depends on report@
type T, FT;
identifier fld, holder;
position p;
@@
T {
  ...
  struct {
    ...
    FT fld@p;
    ...
  } holder;
  ...
};

@script:python depends on report@
T << holder_member.T;
FT << holder_member.FT;
holder << holder_member.holder;
fld << holder_member.fld;
p << holder_member.p;
@@
emit_type("member", p[0], container=T, field=holder + "." + fld, type=FT)

@holder_union_member depends on report@
type T, FT;
identifier fld, holder;
position p;
@@
T {
  ...
  union {
    ...
    FT fld@p;
    ...
  } holder;
  ...
};

@script:python depends on report@
T << holder_union_member.T;
FT << holder_union_member.FT;
holder << holder_union_member.holder;
fld << holder_union_member.fld;
p << holder_union_member.p;
@@
emit_type("member", p[0], container=T, field=holder + "." + fld, type=FT, union=True)

// A struct defined inside another: struct rme { struct dmabuf { ... } dma[2]; };
@inner_struct_member depends on report@
type T, FT;
identifier S, fld, x;
expression N;
position p;
@@
T {
  ...
(
  struct S { ... FT fld@p; ... } x;
|
  struct S { ... FT fld@p; ... } x[N];
|
  struct S { ... FT fld@p; ... } *x;
)
  ...
};

@script:python depends on report@
S << inner_struct_member.S;
FT << inner_struct_member.FT;
fld << inner_struct_member.fld;
p << inner_struct_member.p;
@@
emit_type("member", p[0], container="struct " + S, field=fld, type=FT)

// Members of an anonymous inner struct or union are the outer one's.
@anonymous_member depends on report@
type T, FT;
identifier fld;
position p;
@@
T {
  ...
  struct {
    ...
    FT fld@p;
    ...
  };
  ...
};

@script:python depends on report@
T << anonymous_member.T;
FT << anonymous_member.FT;
fld << anonymous_member.fld;
p << anonymous_member.p;
@@
emit_type("member", p[0], container=T, field=fld, type=FT)

@anonymous_union_member depends on report@
type T, FT;
identifier fld;
position p;
@@
T {
  ...
  union {
    ...
    FT fld@p;
    ...
  };
  ...
};

@script:python depends on report@
T << anonymous_union_member.T;
FT << anonymous_union_member.FT;
fld << anonymous_union_member.fld;
p << anonymous_union_member.p;
@@
emit_type("member", p[0], container=T, field=fld, type=FT, union=True)

// --------------------------------------------------------------- typedefs

@typedefs depends on report@
type T, N;
position p;
@@
typedef T N@p;

@script:python depends on report@
T << typedefs.T;
N << typedefs.N;
p << typedefs.p;
@@
emit_type("typedef", p[0], name=N, type=T)

// ------------------------------------------------ what expressions return

@returns_pointer depends on report@
type T;
identifier f;
position p;
@@
T *f@p(...) { ... }

@script:python depends on report@
T << returns_pointer.T;
f << returns_pointer.f;
p << returns_pointer.p;
@@
emit_type("returns", p[0], name=f, type=T + " *")

@declared_returning_pointer depends on report@
type T;
identifier f;
position p;
@@
T *f@p(...);

@script:python depends on report@
T << declared_returning_pointer.T;
f << declared_returning_pointer.f;
p << declared_returning_pointer.p;
@@
emit_type("returns", p[0], name=f, type=T + " *")

// Only struct-typed variables can hold a semaphore member; the pattern
// sees every declaration, the script keeps those.
@struct_variable depends on report@
type T;
identifier x;
position p;
@@
T x@p;

@script:python depends on report@
T << struct_variable.T;
x << struct_variable.x;
p << struct_variable.p;
@@
if T.startswith(("struct ", "union ")):
	emit_type("variable", p[0], name=x, type=T)

@call_alias depends on report@
identifier M, g;
position p;
@@
#define M@p g()

@script:python depends on report@
M << call_alias.M;
g << call_alias.g;
p << call_alias.p;
@@
emit_type("call_alias", p[0], name=M, callee=g)

// Accessor macros whose whole body is the address of a member of their
// one parameter (2.6's #define PIPE_SEM(inode) (&(inode).i_sem)): a call
// down(PIPE_SEM(*inode)) acts on that member of its argument's struct.
@macro_accessor_arrow depends on report@
identifier M, x, fld;
position p;
@@
#define M(x) (&(x)->fld@p)

@script:python depends on report@
M << macro_accessor_arrow.M;
fld << macro_accessor_arrow.fld;
p << macro_accessor_arrow.p;
@@
emit_type("macro_accessor", p[0], name=M, field=fld, arrow=True)

@macro_accessor_dot depends on report@
identifier M, x, fld;
position p;
@@
#define M(x) (&(x).fld@p)

@script:python depends on report@
M << macro_accessor_dot.M;
fld << macro_accessor_dot.fld;
p << macro_accessor_dot.p;
@@
emit_type("macro_accessor", p[0], name=M, field=fld, arrow=False)

// Member macros whose whole body is a member of a cast to a struct
// pointer (2.6's #define spi_dv_sem(x) (((struct spi_transport_attrs *)
// &(x)->starget_data)->dv_sem)): down(&spi_dv_sem(starget)) acts on that
// member of that struct, whatever the argument.
@macro_cast_member depends on report@
identifier M, x, fld;
type T;
expression E;
position p;
@@
#define M(x) (((T *)E)->fld@p)

@script:python depends on report@
M << macro_cast_member.M;
T << macro_cast_member.T;
fld << macro_cast_member.fld;
p << macro_cast_member.p;
@@
emit_type("macro_accessor", p[0], name=M, field=fld, arrow=True, container=T)

// The members a macro's body reaches (#define to_sem(d) ((d)->priv->sem)):
// a semaphore call through such a macro may act on a member of that name.
@macro_arrow_member depends on report@
identifier M, fld;
expression E;
position p;
@@
#define M(...) <+... E->fld@p ...+>

@script:python depends on report@
M << macro_arrow_member.M;
fld << macro_arrow_member.fld;
p << macro_arrow_member.p;
@@
emit_type("macro_member", p[0], name=M, field=fld)

@macro_dot_member depends on report@
identifier M, fld;
expression E;
position p;
@@
#define M(...) <+... E.fld@p ...+>

@script:python depends on report@
M << macro_dot_member.M;
fld << macro_dot_member.fld;
p << macro_dot_member.p;
@@
emit_type("macro_member", p[0], name=M, field=fld)

@object_macro_arrow_member depends on report@
identifier M, fld;
expression E;
position p;
@@
#define M <+... E->fld@p ...+>

@script:python depends on report@
M << object_macro_arrow_member.M;
fld << object_macro_arrow_member.fld;
p << object_macro_arrow_member.p;
@@
emit_type("macro_member", p[0], name=M, field=fld)

@object_macro_dot_member depends on report@
identifier M, fld;
expression E;
position p;
@@
#define M <+... E.fld@p ...+>

@script:python depends on report@
M << object_macro_dot_member.M;
fld << object_macro_dot_member.fld;
p << object_macro_dot_member.p;
@@
emit_type("macro_member", p[0], name=M, field=fld)
