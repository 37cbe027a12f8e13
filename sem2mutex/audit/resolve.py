"""Resolve stage: merge the facts of every file into semaphore instances.

One instance per semaphore: a global (by name), a static or a local (by
file), a struct field (by struct and field, whichever files use it; a
struct defined inside a .c file is private to it), an array of them.  A
call whose argument cannot be tied to exactly one instance is kept as an
`unresolved` or `pointer` instance: nothing spatch saw is dropped.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sem2mutex.model import (ApiCall, FactSet, FieldDecl, Init, Instance, Location,
                    Position, Reason, Site, Target, VarDecl)

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


def field_instance_id(decl: FieldDecl) -> str:
    if is_header(decl.pos.file):
        return f"field:{decl.container}.{decl.field}"
    return f"field:{decl.pos.file}:{decl.container}.{decl.field}"


def var_instance_id(decl: VarDecl) -> str:
    if decl.storage == "local":
        return f"local:{decl.pos.file}:{decl.pos.function}:{decl.name}"
    if decl.storage == "static":
        return f"static:{decl.pos.file}:{decl.name}"
    return f"global:{decl.name}"


def header_visible_from(header: str, file: str) -> bool:
    """Whether FILE can plausibly include HEADER.

    Headers in an include/ directory are for everyone; a driver's local
    header is included from its own directory or a neighbour ("../x.h").
    """
    if header.startswith("include/") or "/include/" in header:
        return True
    parent = header.rsplit("/", 2)[0] if header.count("/") >= 2 else ""
    return file.startswith(parent + "/") if parent else True


def visible_field_decls(decls: list[FieldDecl], file: str) -> list[FieldDecl]:
    """Declarations a file can see: its own, else those in headers it may include."""
    own = [d for d in decls if d.pos.file == file]
    return own or [d for d in decls if is_header(d.pos.file)
                   and header_visible_from(d.pos.file, file)]


def shared_dirs(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("/")[:-1], b.split("/")[:-1]):
        if x != y:
            break
        n += 1
    return n


def nearest_field_decls(decls: list[FieldDecl], file: str) -> list[FieldDecl]:
    """Of the visible declarations, those in the headers closest to FILE.

    A driver includes its own directory's headers far more often than a
    header of another driver that happens to use the same field name.
    """
    visible = visible_field_decls(decls, file)
    if not visible:
        return []
    best = max(shared_dirs(d.pos.file, file) for d in visible)
    return [d for d in visible if shared_dirs(d.pos.file, file) == best]


@dataclass
class Resolution:
    instance_id: str | None
    note: Reason | None = None
    # instance ids that an unresolved argument could name
    suspects: tuple[str, ...] = ()


@dataclass
class Resolver:
    index: DeclIndex

    def resolve(self, target: Target, pos: Position) -> Resolution:
        if target.shape in ("global", "local", "element", "var"):
            return self.resolve_var(target.name or "", pos)
        if target.shape in ("field", "field_element"):
            return self.resolve_field(target, pos)
        return Resolution(None)

    def resolve_var(self, name: str, pos: Position) -> Resolution:
        local = self.index.locals.get((pos.file, pos.function, name))
        if local:
            return Resolution(var_instance_id(local))
        static = self.index.statics.get((pos.file, name))
        if static:
            return Resolution(var_instance_id(static))
        if name in self.index.globals or name in self.index.externs:
            return Resolution(f"global:{name}")
        return Resolution(None)

    def resolve_field(self, target: Target, pos: Position) -> Resolution:
        for container, fld in target.candidates:
            if container is None:
                continue
            decls = visible_field_decls(self.index.fields.get((container, fld), []), pos.file)
            if decls:
                return Resolution(field_instance_id(decls[0]))
        name = (target.field or "").split(".")[-1]
        named = self.index.by_field_name.get(name, [])
        all_ids = {field_instance_id(d) for d in visible_field_decls(named, pos.file)}
        ids = {field_instance_id(d) for d in nearest_field_decls(named, pos.file)}
        if len(ids) == 1:
            (chosen,) = ids
            note = Reason("resolved-by-field-name",
                          f"spatch could not type `{target.text}`; the nearest semaphore "
                          f"field named `{name}` is {chosen}", (pos.location,))
            # The other fields of that name cannot rule this call out.
            return Resolution(chosen, note, suspects=tuple(sorted(all_ids - ids)))
        return Resolution(None, suspects=tuple(sorted(all_ids)))


@dataclass
class InstanceTable:
    """The instances being built, by id."""

    by_id: dict[str, Instance] = field(default_factory=dict)

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
        if d.macro in FIXED_COUNTS:
            inst.inits.append(Init(d.pos.location, d.macro, FIXED_COUNTS[d.macro], d.macro))
    for f in facts.field_decls:
        inst = table.get_or_create(field_instance_id(f), "field-array" if f.array else "field",
                                   f.field, f.container, f.pos.file, f.pos.line)
        inst.decls.append(f.pos.location)


def pseudo_instance(table: InstanceTable, call_pos: Position, target: Target,
                    function: str) -> Instance:
    if target.shape == "pointer":
        iid = f"pointer:{call_pos.file}:{function}:{target.text}"
        return table.get_or_create(iid, "pointer", target.text, None, call_pos.file,
                                   call_pos.line)
    iid = f"unresolved:{call_pos.file}:{target.text}"
    return table.get_or_create(iid, "unresolved", target.text, target.container,
                               call_pos.file, call_pos.line)


def attach_call(call: ApiCall, inst: Instance) -> None:
    loc = call.pos.location
    if call.op in INIT_OPS:
        count = FIXED_COUNTS.get(call.op, literal_count(call.count))
        inst.inits.append(Init(loc, call.op, count, call.count or str(count)))
    else:
        inst.sites.append(Site(loc, function_of(call.pos, call.macro), call.op,
                               paired=call.paired, macro=call.macro))


def attach_calls(facts: FactSet, resolver: Resolver, table: InstanceTable) -> None:
    for call in facts.calls:
        res = resolver.resolve(call.target, call.pos)
        if res.instance_id and res.instance_id in table.by_id:
            inst = table.by_id[res.instance_id]
        else:
            inst = pseudo_instance(table, call.pos, call.target,
                                   function_of(call.pos, call.macro))
        for suspect in res.suspects:
            if suspect in table.by_id:
                table.by_id[suspect].notes.append(Reason(
                    "possible-unresolved-use",
                    f"`{call.target.text}` ({call.op}) may name this semaphore; spatch "
                    f"could not tell which struct it belongs to", (call.pos.location,)))
        if res.note:
            inst.notes.append(res.note)
        attach_call(call, inst)


def attach_escapes(facts: FactSet, resolver: Resolver, table: InstanceTable) -> None:
    for esc in facts.escapes:
        res = resolver.resolve(esc.target, esc.pos)
        if res.instance_id and res.instance_id in table.by_id:
            table.by_id[res.instance_id].escapes.append(esc)
            continue
        for suspect in res.suspects:
            if suspect in table.by_id:
                table.by_id[suspect].escapes.append(esc)


def attach_parse_failures(facts: FactSet, table: InstanceTable) -> None:
    for failure in facts.parse_failures:
        for inst in table.by_id.values():
            visible = inst.kind not in ("static", "local", "pointer", "unresolved") \
                or inst.file == failure.file
            if visible and inst.name.split(".")[-1] in failure.identifiers:
                inst.notes.append(Reason(
                    "parse-failure",
                    f"spatch skipped code of {failure.file} that mentions "
                    f"`{inst.name}`: {failure.error}", (Location(failure.file, 1),)))


def build_instances(facts: FactSet) -> list[Instance]:
    table = InstanceTable()
    declare_instances(facts, table)
    resolver = Resolver(DeclIndex.build(facts))
    attach_calls(facts, resolver, table)
    attach_escapes(facts, resolver, table)
    attach_parse_failures(facts, table)
    for inst in table.by_id.values():
        inst.sites.sort(key=lambda s: (s.location.file, s.location.line))
        inst.decls = sorted(set(inst.decls), key=lambda l: (l.file, l.line))
        inst.inits.sort(key=lambda i: (i.location.file, i.location.line))
    return sorted(table.by_id.values(), key=lambda i: i.id)
