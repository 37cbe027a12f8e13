"""Resolve stage: merge the facts of every file into semaphore instances.

One instance per semaphore: a global (by name), a static or a local (by
file), a struct member (by struct and member, whichever files use it; a
struct defined inside a .c file is private to it), an array of them.

Each call's argument is typed (access.py, with the tree-wide TypeIndex
and the include graph's Visibility) and tied to the instance it names.
A call that cannot be tied to exactly one instance is kept as an
`unresolved` or `pointer` instance, with why: nothing spatch saw is
dropped.  A call whose argument turns out not to be a semaphore at all
(down() on an rw_semaphore in dead #if code) is listed apart.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

from sem2mutex.audit.access import AccessIndex, Denotation
from sem2mutex.audit.helpers import (Attribution, Handoffs, attributed_sites, collect_helpers,
                                     follow, helper_note, local_aliases, releases)
from sem2mutex.audit.typeindex import CType, Member, TypeIndex
from sem2mutex.audit.visibility import Visibility
from sem2mutex.tools.api import ARGUMENTS
from sem2mutex.model import (ApiCall, Export, FactSet, FieldDecl, Init, Instance, Location,
                             OtherTypeCall, Position, Reason, Site, Target, VarDecl)

LOCK_OPS = ("down", "down_interruptible", "down_killable", "down_trylock", "down_timeout")
UNLOCK_OPS = ("up",)
INIT_OPS = ("sema_init", "init_MUTEX", "init_MUTEX_LOCKED", "__SEMAPHORE_INITIALIZER")
FIXED_COUNTS = {"init_MUTEX": 1, "init_MUTEX_LOCKED": 0, "DEFINE_SEMAPHORE": 1,
                "DECLARE_MUTEX": 1, "DECLARE_MUTEX_LOCKED": 0}
INTEGER_SUFFIXES = "uUlL"


def literal_count(text: str | None) -> int | None:
    """The value of a count spatch printed, when it is an integer literal."""
    if text is None:
        return None
    token = text.strip().rstrip(INTEGER_SUFFIXES)
    try:
        return int(token, 0)
    except ValueError:
        return None


def function_of(pos: Position, macro: str | None) -> str:
    if macro:
        return f"macro {macro}"
    return pos.function


def is_header(path: str) -> bool:
    return path.endswith(".h")


def field_id(file: str, container: str, fld: str) -> str:
    if is_header(file):
        return f"field:{container}.{fld}"
    return f"field:{file}:{container}.{fld}"


def field_instance_id(decl: FieldDecl) -> str:
    return field_id(decl.pos.file, decl.container, decl.field)


def member_instance_id(member: Member) -> str:
    return field_id(member.file, member.container, member.field)


def var_instance_id(decl: VarDecl) -> str:
    if decl.storage == "local":
        return f"local:{decl.pos.file}:{decl.pos.function}:{decl.name}"
    if decl.storage == "static":
        return f"static:{decl.pos.file}:{decl.name}"
    return f"global:{decl.name}"


@dataclass
class DeclIndex:
    """Where each semaphore is declared, for resolving the calls."""

    locals: dict[tuple[str, str, str], VarDecl] = field(default_factory=dict)
    statics: dict[tuple[str, str], VarDecl] = field(default_factory=dict)
    globals: dict[str, list[VarDecl]] = field(default_factory=lambda: defaultdict(list))
    externs: dict[str, list[VarDecl]] = field(default_factory=lambda: defaultdict(list))
    fields: dict[tuple[str, str], list[FieldDecl]] = field(
        default_factory=lambda: defaultdict(list))
    by_field_name: dict[str, list[FieldDecl]] = field(
        default_factory=lambda: defaultdict(list))

    @classmethod
    def build(cls, facts: FactSet) -> "DeclIndex":
        index = cls()
        for d in facts.var_decls:
            if d.storage == "local":
                index.locals[(d.pos.file, d.pos.function, d.name)] = d
            elif d.storage == "static":
                index.statics[(d.pos.file, d.name)] = d
            elif d.storage == "extern":
                index.externs[d.name].append(d)
            else:
                index.globals[d.name].append(d)
        for f in facts.field_decls:
            index.fields[(f.container, f.field)].append(f)
            index.by_field_name[f.field.split(".")[-1]].append(f)
        return index


@dataclass
class Resolution:
    instance_ids: list[str]  # the instances the argument names (several: a ?: b)
    notes: list[Reason] = field(default_factory=list)
    # instance ids that an unresolved argument could name
    suspects: tuple[str, ...] = ()
    pointer: bool = False  # a pointer chosen at run time
    pointer_member: Member | None = None  # the struct semaphore * member it is read from
    unresolved: str | None = None  # why it could not be tied down
    other_type: str | None = None  # not a semaphore at all
    # the accessor macros the argument reaches the semaphore through: name,
    # and where its body takes the address
    through: list[tuple[str, Location]] = field(default_factory=list)


@dataclass
class Resolver:
    index: DeclIndex
    types: TypeIndex
    visibility: Visibility
    access: AccessIndex

    # ------------------------------------------------------------- calls

    def resolve_call(self, call: ApiCall) -> Resolution:
        tree = self.access.trees.get(call.key)
        by_address = call.by_address or call.op == "__SEMAPHORE_INITIALIZER"
        if tree is None:
            if not by_address:
                return Resolution([], pointer=True)
            return Resolution([], unresolved="spatch reported no structure for the argument")
        resolution = Resolution([])
        for d in tree.denote(self.types, by_address):
            self.add_denotation(resolution, d, call.pos, call.arg)
        if resolution.unresolved or resolution.pointer:
            resolution.suspects += self.macro_suspects(tree, call.pos.file)
        return resolution

    def macro_suspects(self, tree, file: str) -> tuple[str, ...]:
        """The semaphore members a macro of the argument reaches
        (&to_sem(dev) with #define to_sem(d) ((d)->priv->sem)): the call
        may act on any of them."""
        names = {m for n in tree.nodes if n.kind in ("call", "ident")
                 for m in self.types.macro_members.get(n.name, ())}
        return tuple(sorted({field_instance_id(f) for name in names
                             for f in self.visible_fields(name, file)}))

    def add_denotation(self, res: Resolution, d: Denotation, pos: Position, text: str) -> None:
        if d.kind == "field":
            res.instance_ids.append(member_instance_id(d.members[0]))
            if d.accessor:
                file, line, macro = d.accessor
                res.through.append((macro, Location(file, line)))
        elif d.kind == "var":
            iid = self.var_id(d.name or "", pos, d.local)
            if iid:
                res.instance_ids.append(iid)
            else:
                res.unresolved = (f"`{d.name}` is not declared as a struct semaphore in any "
                                  "file this analysis parsed")
                res.suspects += self.suspect_vars(d.name or "", pos.file)
        elif d.kind == "other-type":
            res.other_type = d.why
        elif d.kind == "pointer":
            res.pointer = True
            if d.members:
                res.pointer_member = d.members[0]
        else:
            self.by_field_name(res, d, pos, text)

    def var_id(self, name: str, pos: Position, local: bool) -> str | None:
        found = self.index.locals.get((pos.file, pos.function, name))
        if found:
            return var_instance_id(found)
        if local:
            return None
        static = self.index.statics.get((pos.file, name))
        if static:
            return var_instance_id(static)
        if name in self.index.globals or name in self.index.externs:
            return f"global:{name}"
        # a static declared in a header: every includer gets its own copy,
        # one instance for them all (as a header's struct member)
        in_headers = sorted({var_instance_id(d) for (file, n), d in self.index.statics.items()
                             if n == name and is_header(file)
                             and self.visibility.sees(pos.file, file)})
        return in_headers[0] if len(in_headers) == 1 else None

    def by_field_name(self, res: Resolution, d: Denotation, pos: Position, text: str) -> None:
        """The argument's struct is not known: a semaphore member of that
        name is the only candidate when exactly one is visible from the
        file; every other one of that name becomes a suspect."""
        name = (d.untyped_field or "").split(".")[-1]
        visible = self.visible_fields(name, pos.file) if name else []
        ids = sorted({field_instance_id(f) for f in visible})
        if len(ids) == 1:
            (chosen,) = ids
            res.instance_ids.append(chosen)
            res.notes.append(Reason(
                "resolved-by-field-name",
                f"`{text}` could not be typed ({d.why}); the only semaphore member named "
                f"`{name}` visible from {pos.file} is {chosen}", (pos.location,)))
            return
        res.unresolved = d.why
        res.suspects += tuple(ids)

    def visible_fields(self, name: str, file: str) -> list[FieldDecl]:
        return [f for f in self.index.by_field_name.get(name, [])
                if self.visibility.sees(file, f.pos.file)]

    def suspect_vars(self, name: str, file: str) -> tuple[str, ...]:
        decls = self.index.globals.get(name, []) + self.index.externs.get(name, [])
        return tuple(sorted({f"global:{name}" for d in decls
                             if self.visibility.sees(file, d.pos.file)}))

    # ----------------------------------------------------------- escapes

    def resolve_escape(self, target: Target, pos: Position) -> Resolution:
        if target.shape == "var":
            iid = self.var_id(target.name or "", pos, local=False)
            return Resolution([iid] if iid else [])
        for container, fld in target.candidates:
            if container is None:
                continue
            canonical = self.types.canonical(CType.parse(container), pos.file)
            key = canonical.base if canonical else container
            members = [m for m in self.types.member(key, fld, pos.file) if m.type.is_semaphore]
            if members:
                return Resolution([member_instance_id(members[0])])
            if canonical and self.types.defines(key, pos.file):
                return Resolution([])  # a member of another type
        name = (target.field or "").split(".")[-1]
        ids = sorted({field_instance_id(f) for f in self.visible_fields(name, pos.file)})
        if len(ids) == 1:
            return Resolution(ids)
        return Resolution([], suspects=tuple(ids))


@dataclass
class InstanceTable:
    """The instances being built, by id."""

    by_id: dict[str, Instance] = field(default_factory=dict)
    other_type_calls: list[OtherTypeCall] = field(default_factory=list)

    def get_or_create(self, instance_id: str, kind: str, name: str, struct: str | None,
                      file: str, line: int | None = None) -> Instance:
        inst = self.by_id.get(instance_id)
        if inst is None:
            inst = Instance(id=instance_id, kind=kind, name=name, struct=struct, file=file,
                            decl_line=line)
            self.by_id[instance_id] = inst
        return inst


def declare_instances(facts: FactSet, table: InstanceTable) -> None:
    for d in sorted(facts.var_decls, key=lambda d: (d.storage == "extern", d.pos.file)):
        kind = "array" if d.array else ("global" if d.storage == "extern" else d.storage)
        inst = table.get_or_create(var_instance_id(d), kind, d.name, None, d.pos.file,
                                   d.pos.line)
        inst.decls.append(d.pos.location)
        if d.typedef:
            note_typedef(inst, d.typedef, d.pos.location)
        if d.macro in FIXED_COUNTS:
            inst.inits.append(Init(d.pos.location, d.macro, FIXED_COUNTS[d.macro], d.macro))
    for e in facts.exports:
        exported = exported_instance(table, e)
        if exported is not None:
            exported.exported_at.append(e.pos.location)
            exported.notes.append(Reason(
                "exported", f"exported to modules ({e.macro}()): a conversion changes the "
                "type every module using it sees", (e.pos.location,)))
    for f in facts.field_decls:
        inst = table.get_or_create(field_instance_id(f), "field-array" if f.array else "field",
                                   f.field, f.container, f.pos.file, f.pos.line)
        inst.decls.append(f.pos.location)
        if f.typedef:
            note_typedef(inst, f.typedef, f.pos.location)
        if f.in_union and not any(n.code == "in-union" for n in inst.notes):
            inst.notes.append(Reason("in-union", "a member of a union: its storage is shared "
                                     "with the union's other members, which a mutex's "
                                     "owner and wait list would overlap too",
                                     (f.pos.location,)))


def note_typedef(inst: Instance, typedef: str, where: Location) -> None:
    """A semaphore behind a type of the tree's own is used through that
    type's own API as well (XFS: #define mutex_lock(lock, num) down(lock)),
    in files that name neither: not every use can be seen."""
    if not any(n.code == "typedef-declared" for n in inst.notes):
        inst.notes.append(Reason(
            "typedef-declared", f"declared as `{typedef}`, a typedef of struct semaphore: "
            "code may take and release it through macros of that type's own API, in files "
            "that name neither, which this analysis does not follow", (where,)))


def exported_instance(table: InstanceTable, e: Export) -> Instance | None:
    """The variable EXPORT names: the file's own static, or the global
    the file declares (an export is in the file defining the symbol)."""
    static = table.by_id.get(f"static:{e.pos.file}:{e.name}")
    if static is not None:
        return static
    inst = table.by_id.get(f"global:{e.name}")
    if inst is not None and any(d.file == e.pos.file for d in inst.decls):
        return inst
    return None


def pseudo_instance(table: InstanceTable, call: ApiCall, res: Resolution) -> Instance:
    function = function_of(call.pos, call.macro)
    if res.pointer and res.unresolved is None and res.pointer_member is not None:
        m = res.pointer_member
        iid = "pointer:" + field_id(m.file, m.container, m.field).split(":", 1)[1]
        return table.get_or_create(iid, "pointer", m.field, m.container, m.file, m.line)
    if res.pointer and res.unresolved is None:
        iid = f"pointer:{call.pos.file}:{function}:{call.arg}"
        return table.get_or_create(iid, "pointer", call.arg, None, call.pos.file,
                                   call.pos.line)
    iid = f"unresolved:{call.pos.file}:{call.arg}"
    inst = table.get_or_create(iid, "unresolved", call.arg, None, call.pos.file,
                               call.pos.line)
    why = res.unresolved or "its form is not understood"
    if not any(n.code == "unresolved-why" and n.detail == why for n in inst.notes):
        inst.notes.append(Reason("unresolved-why", why, (call.pos.location,)))
    return inst


def attach_call(call: ApiCall, inst: Instance, through: str | None = None) -> None:
    loc = call.pos.location
    if call.op in INIT_OPS:
        count = FIXED_COUNTS.get(call.op, literal_count(call.count))
        inst.inits.append(Init(loc, call.op, count, call.count or str(count), call.macro,
                               through))
    else:
        inst.sites.append(Site(loc, function_of(call.pos, call.macro), call.op,
                               paired=call.paired, macro=call.macro,
                               released_after=call.released_after, through=through,
                               failed_acquire=call.failed_acquire,
                               failure_returned=call.failure_returned))


def takes_its_arguments(call: ApiCall) -> bool:
    """Whether CALL has as many arguments as the API's OP takes.  One that
    does not and acts on no known semaphore is no instance of its own (the
    audit lists it with the calls on something else); one that names a
    known semaphore stays a site of it."""
    return call.args is None or call.args == ARGUMENTS[call.op]


def attach_calls(facts: FactSet, resolver: Resolver, table: InstanceTable) -> None:
    pointer_calls: dict[str, list[ApiCall]] = defaultdict(list)
    for call in facts.calls:
        res = resolver.resolve_call(call)
        if not res.instance_ids and not takes_its_arguments(call):
            table.other_type_calls.append(OtherTypeCall(
                call.pos.location, call.op, call.arg,
                f"called with {call.args} arguments where the semaphore API's {call.op}() "
                f"takes {ARGUMENTS[call.op]}: a function or macro of the same name"))
            continue
        if res.other_type and not res.instance_ids and not res.pointer:
            table.other_type_calls.append(OtherTypeCall(call.pos.location, call.op, call.arg,
                                                        res.other_type))
            continue
        targets = [table.by_id[i] for i in dict.fromkeys(res.instance_ids) if i in table.by_id]
        missing = [i for i in res.instance_ids if i not in table.by_id]
        if missing and res.unresolved is None:
            res.unresolved = f"{', '.join(missing)} is not a declared semaphore"
        if not targets or res.unresolved or (res.pointer and not targets):
            targets.append(pseudo_instance(table, call, res))
            pointer_calls[targets[-1].id].append(call)
        for suspect in res.suspects:
            if suspect in table.by_id:
                table.by_id[suspect].notes.append(Reason(
                    "possible-unresolved-use",
                    f"`{call.arg}` ({call.op}) may name this semaphore: "
                    f"{res.unresolved or 'its struct is not known'}", (call.pos.location,)))
        for inst in targets:
            inst.notes.extend(res.notes)
            for macro, body in res.through:
                if macro not in inst.through_macros:
                    inst.through_macros.append(macro)
                    inst.aliased_at.append(body)
            # one accessor at most: it is the root of the argument
            attach_call(call, inst, res.through[0][0] if res.through else None)
    for iid, calls in pointer_calls.items():
        note_macro_parameter(table.by_id[iid], calls)


def note_macro_parameter(inst: Instance, calls: list[ApiCall]) -> None:
    """A pointer instance whose every call acts on a parameter of the
    macro holding it stands for no semaphore: each expansion names its own
    (2.6's XFS: #define psema(sp, b) down(sp)), where it is expanded."""
    if inst.kind != "pointer" or not all(c.macro_param for c in calls):
        return
    macros = ", ".join(sorted({f"{c.macro}()" for c in calls}))
    ops = ", ".join(sorted({f"{c.op}()" for c in calls}))
    inst.notes.append(Reason(
        "macro-parameter",
        f"{ops} in {macros} on its parameter `{calls[0].macro_param}`: each expansion "
        "names its own semaphore, judged where it is named (a mention there the analysis "
        "does not explain keeps it from being a mutex); the macro keeps the counting API",
        tuple(c.pos.location for c in calls)))


def attach_escapes(facts: FactSet, resolver: Resolver, table: InstanceTable,
                   attribution: Attribution | None = None) -> dict[tuple[str, int], list[str]]:
    """Attach each escape to the instance whose address leaves the API.
    A call of a followed helper is no escape: the helper's operations
    become the instance's, at the call.  Returns the instances of each
    stored address by (file, line), for the local aliases."""
    stored: dict[tuple[str, int], list[str]] = defaultdict(list)
    handoffs = Handoffs.from_records(facts.helper_records)
    for esc in facts.escapes:
        res = resolver.resolve_escape(esc.target, esc.pos)
        ids = [i for i in res.instance_ids if i in table.by_id]
        if esc.via == "store":
            stored[(esc.pos.file, esc.pos.line)] += ids
        helper = attribution.helper_for(esc.callee, esc.pos.file) \
            if attribution and esc.via == "call" and esc.callee else None
        ops = attribution.followed(helper) if helper else None
        if helper and ops is not None and len(ids) == 1:
            inst = table.by_id[ids[0]]
            inst.sites += attributed_sites(helper, ops, esc, handoffs)
            attribution.covered.add((esc.pos.file, esc.pos.line, helper.function))
            attribution.callers[(helper.file, helper.function)].append(inst.id)
            continue
        for iid in ids:
            table.by_id[iid].escapes.append(esc)
        if not ids:
            for suspect in res.suspects:
                if suspect in table.by_id:
                    table.by_id[suspect].escapes.append(esc)
    return stored


def released_again(facts: FactSet, table: InstanceTable, attribution: Attribution) -> None:
    """An up() a path reaches after a followed helper released the same
    semaphore, with no down() between: a second release."""
    handoffs = Handoffs.from_records(facts.helper_records)
    for inst in table.by_id.values():
        for i, site in enumerate(inst.sites):
            found = handoffs.released_after.get((site.location.file, site.location.line))
            if site.op != "up" or site.via_helper or not found:
                continue
            call_line, callee = found
            helper = attribution.helper_for(callee, site.location.file)
            ops = attribution.followed(helper) if helper else None
            if ops and releases(ops):
                inst.sites[i] = replace(site, paired=False, released_after=call_line)


def settle_helpers(facts: FactSet, table: InstanceTable, attribution: Attribution) -> None:
    """A static helper's pointer instance is settled when every call of the
    helper in its file was attributed (or hands a followed helper's pointer on)."""
    calls: dict[tuple[str, str], list[int]] = defaultdict(list)
    for file, line, _caller, callee in facts.call_sites:
        calls[(file, callee)].append(line)
    passed_on = {(h.file, line, callee) for h in attribution.helpers.values()
                 if attribution.followed(h) is not None for callee, _, line in h.passes}
    # a helper that is also a callback is called where this analysis cannot see
    callbacks = {(c.pos.file, c.name) for c in facts.callbacks}
    for key, helper in attribution.helpers.items():
        inst = table.by_id.get(helper.pointer_id)
        if inst is None or not helper.static or attribution.followed(helper) is None \
                or key in callbacks:
            continue
        lines = calls.get(key, [])
        if lines and all((helper.file, line, helper.function) in attribution.covered
                         or (helper.file, line, helper.function) in passed_on
                         for line in lines):
            inst.notes.append(helper_note(helper, attribution.callers_of(helper)))


def merge_symbol_aliases(facts: FactSet, table: InstanceTable) -> None:
    """A name declared with __alias() is its target's semaphore: its uses
    join the target's, each spelled as written.  No mutex is made of it:
    the series cannot retype the alias's declaration (spatch does not parse
    it), and a struct mutex seen as a struct semaphore is memory corruption."""
    for alias in facts.symbol_aliases:
        target = table.by_id.get(f"static:{alias.location.file}:{alias.target}") \
            or table.by_id.get(f"global:{alias.target}")
        if target is None:
            continue
        named = table.by_id.get(f"global:{alias.name}")
        if named is not None and named is not target:
            target.sites += [replace(s, spelled=s.spelled or alias.name) for s in named.sites]
            target.decls += named.decls
            target.inits += named.inits
            target.escapes += named.escapes
            target.exported_at += named.exported_at
            target.notes += [n for n in named.notes if n not in target.notes]
            del table.by_id[named.id]
        target.decls.append(alias.location)
        users = sorted({s.location.file for s in target.sites if s.spelled == alias.name})
        verbs = "takes and releases" if len(users) == 1 else "take and release"
        used = f", which {', '.join(users)} {verbs}" if users else ""
        target.notes.append(Reason(
            "symbol-alias", f"also declared as `{alias.name}` with __alias() at "
            f"{alias.location}{used}: a struct mutex would need that declaration retyped "
            "too, which the series does not do", (alias.location,)))


def settle_aliases(facts: FactSet, table: InstanceTable,
                   stored: dict[tuple[str, int], list[str]]) -> None:
    """A local struct semaphore * given only addresses of known semaphores,
    and used only by the API: its operations are theirs."""
    other = {(r["file"], r["function"], r["name"]) for r in facts.helper_records
             if r["kind"] == "local_other"}
    for pid, alias in local_aliases(facts.helper_records).items():
        inst = table.by_id.get(pid)
        if inst is None or (alias.file, alias.function, alias.name) in other:
            continue
        targets: list[str] = []
        for line, _value in alias.values:
            found = stored.get((alias.file, line), [])
            if len(set(found)) != 1:
                targets = []
                break
            targets += found
        if not targets:
            continue
        for iid in dict.fromkeys(targets):
            target = table.by_id[iid]
            lines = {line for line, _ in alias.values}
            target.escapes = [e for e in target.escapes if not (
                e.via == "store" and e.pos.file == alias.file and e.pos.line in lines)]
            target.aliased_at += [Location(alias.file, line) for line in sorted(lines)]
            target.sites += [replace(s, via_helper=f"the local pointer {alias.name}")
                             for s in inst.sites if s.macro is None]
        inst.notes.append(Reason(
            "helper-attributed", f"the local pointer `{alias.name}` of {alias.function}() is "
            f"only given the addresses of {', '.join(sorted(set(targets)))}: its operations "
            "are judged with theirs and it keeps the counting API", ()))


def parse_failure_reaches(inst: Instance, failure, visibility: Visibility) -> bool:
    """Whether code spatch skipped in FAILURE's file could touch INST: it
    names the semaphore (as a member after . or ->, or as a variable) and
    can see its declaration."""
    name = inst.name.split(".")[-1]
    if inst.kind in ("field", "field-array"):
        # any mention: container_of(p, struct foo, sem) names a member too
        if name not in failure.identifiers:
            return False
        return any(visibility.sees(failure.file, d.file) for d in inst.decls) \
            or not inst.decls
    if name not in failure.plain:
        return False
    if inst.kind in ("static", "local", "pointer", "unresolved"):
        return inst.file == failure.file
    return True


def attach_parse_failures(facts: FactSet, table: InstanceTable, visibility: Visibility) -> None:
    for failure in facts.parse_failures:
        for inst in table.by_id.values():
            if parse_failure_reaches(inst, failure, visibility):
                inst.notes.append(Reason(
                    "parse-failure",
                    f"spatch skipped code of {failure.file} that mentions "
                    f"`{inst.name}`: {failure.error}", (Location(failure.file, 1),)))


@dataclass
class Resolved:
    instances: list[Instance]
    other_type_calls: list[OtherTypeCall]
    # declarations the type index lacked: (kind, name, from file)
    missing_types: set[tuple[str, str, str]] = field(default_factory=set)


def build_instances(facts: FactSet, visibility: Visibility | None = None) -> Resolved:
    visibility = visibility or Visibility.everything()
    table = InstanceTable()
    declare_instances(facts, table)
    types = TypeIndex(visibility)
    types.add_records(facts.type_records)
    resolver = Resolver(DeclIndex.build(facts), types, visibility,
                        AccessIndex.from_records(facts.access_records))
    attach_calls(facts, resolver, table)
    static = {(f.file, f.name) for f in facts.functions if f.static}
    attribution = follow(collect_helpers(facts.helper_records, static),
                         {i: inst for i, inst in table.by_id.items() if inst.kind == "pointer"})
    stored = attach_escapes(facts, resolver, table, attribution)
    released_again(facts, table, attribution)
    settle_helpers(facts, table, attribution)
    settle_aliases(facts, table, stored)
    merge_symbol_aliases(facts, table)
    attach_parse_failures(facts, table, visibility)
    for inst in table.by_id.values():
        inst.sites.sort(key=lambda s: (s.location.file, s.location.line))
        inst.decls = sorted(set(inst.decls), key=lambda l: (l.file, l.line))
        inst.inits.sort(key=lambda i: (i.location.file, i.location.line))
    other = sorted(table.other_type_calls, key=lambda c: (c.location.file, c.location.line))
    return Resolved(sorted(table.by_id.values(), key=lambda i: i.id), other, types.missing)
