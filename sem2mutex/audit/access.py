"""What a semaphore call's argument names: a variable, a struct member, an
element, or nothing this analysis can tie down.

access.cocci reports the argument of every call as its sub-expressions
(member accesses, elements, calls, identifiers, conditionals), each with
its extent in the file, and the type of each sub-expression spatch knows.
Here the tree is rebuilt from the extents (an extent inside another is a
sub-expression of it; parentheses and & are the gaps between) and each
node is typed, from spatch's own types first, else from the tree-wide
TypeIndex: the member's type in its struct, a function's result, a
global's declared type, a typedef's meaning.

    ArgumentTree.from_records(records) -> denote() -> [Denotation, ...]

A Denotation is a semaphore object (a member of a struct, a variable),
something else (an rw_semaphore reached by mistake in dead code), a
pointer chosen at run time, or unknown, each with why.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sem2mutex.audit.typeindex import ANONYMOUS, CType, MacroAccessor, Member, TypeIndex

Extent = tuple[int, int, int, int]  # line, column, end line, end column (exclusive)


def contains(outer: Extent, inner: Extent) -> bool:
    return (outer[0], outer[1]) <= (inner[0], inner[1]) and \
        (inner[2], inner[3]) <= (outer[2], outer[3])


@dataclass(frozen=True)
class Node:
    kind: str  # member, index, call, ident, cond
    extent: Extent
    base: Extent | None = None  # member, index
    name: str = ""  # member: field; call: callee; ident: identifier
    arrow: bool = False
    local: bool = False
    then: Extent | None = None
    otherwise: Extent | None = None
    arg: Extent | None = None  # call: its argument, when it has one

    @property
    def size(self) -> tuple[int, int]:
        return (self.extent[2] - self.extent[0], self.extent[3] - self.extent[1])


# ------------------------------------------------------------ denotations


class NoMember(str):
    """Why a member is not known: no visible definition of its struct has it."""



@dataclass(frozen=True)
class Denotation:
    """What an argument names."""

    kind: str  # field, var, other-type, pointer, unknown
    container: str | None = None  # field: the struct as the index names it
    field: str | None = None  # field: "sem" or "holder.sem"
    members: tuple[Member, ...] = ()  # field: the definitions it resolved to
    name: str | None = None  # var: identifier
    local: bool = False
    element: bool = False  # an element of an array
    type_text: str | None = None  # other-type: what it is instead
    why: str = ""  # unknown/pointer: what could not be known
    untyped_field: str | None = None  # unknown: the member name, to suspect
    # field: the accessor macro reached through (file, line of its #define, name)
    accessor: tuple[str, int, str] | None = None


@dataclass
class ArgumentTree:
    arg: Extent
    nodes: list[Node]
    types: dict[Extent, str]
    file: str
    text: str = ""

    @classmethod
    def from_records(cls, file: str, records: list[dict], text: str = "") -> "ArgumentTree | None":
        arg = None
        nodes: list[Node] = []
        types: dict[Extent, str] = {}
        call_args = {tuple(r["at"]): tuple(r["arg"]) for r in records
                     if r["kind"] == "acc_call_arg"}
        for r in records:
            at = tuple(r["at"])
            kind = r["kind"]
            if kind == "acc_arg":
                arg = at
            elif kind == "acc_member":
                nodes.append(Node("member", (at[0], at[1], *r["end"]), base=at,
                                  name=r["field"], arrow=r["arrow"]))
            elif kind == "acc_index":
                nodes.append(Node("index", at, base=tuple(r["base"])))
            elif kind == "acc_call":
                nodes.append(Node("call", at, name=r["callee"], arg=call_args.get(at)))
            elif kind == "acc_ident":
                nodes.append(Node("ident", at, name=r["name"], local=r["local"]))
            elif kind == "acc_cond":
                nodes.append(Node("cond", at, then=tuple(r["then"]),
                                  otherwise=tuple(r["otherwise"])))
            elif kind == "acc_type":
                types.setdefault(at, r["type"])
        if arg is None:
            return None
        return cls(arg, nodes, types, file, text)

    # ------------------------------------------------------------- shape

    PRIORITY = {"cond": 0, "member": 1, "index": 2, "call": 3, "ident": 4}

    def node_at(self, extent: Extent) -> Node | None:
        """The node spanning EXTENT, else the one maximal node inside it
        (EXTENT is then a parenthesised or &-prefixed expression)."""
        exact = [n for n in self.nodes if n.extent == extent]
        if exact:
            # An isomorphism can report a[i].f also as a->f: keep the
            # reading with the widest base.
            return min(exact, key=lambda n: (self.PRIORITY[n.kind],
                                              -(n.base[3] - n.base[1]) if n.base else 0))
        inside = [n for n in self.nodes if n.extent != extent and contains(extent, n.extent)]
        maximal = [n for n in inside if not any(o is not n and o.extent != n.extent
                                                and contains(o.extent, n.extent)
                                                for o in inside)]
        extents = {n.extent for n in maximal}
        if len(extents) != 1:
            return None
        return self.node_at(extents.pop())

    def root(self) -> Node | None:
        return self.node_at(self.arg)

    # ------------------------------------------------------------- types

    def type_of(self, node: Node, index: TypeIndex, depth: int = 0) -> CType | None:
        if depth > 16:
            return None
        known = self.types.get(node.extent)
        if known:
            return CType.parse(known)
        if node.kind == "member":
            found = self.member_of(node, index, depth)
            if isinstance(found, list) and found:
                types = {m.type for m in found}
                return types.pop() if len(types) == 1 else None
            return None
        if node.kind == "index":
            base = self.node_at(node.base)
            base_type = self.type_of(base, index, depth + 1) if base else None
            return base_type.deref() if base_type else None
        if node.kind == "call":
            callee = index.returned(node.name, self.file)
            if callee:
                return callee
            typed = self.types.get(self.callee_extent(node))
            return CType.parse(typed).result() if typed else None
        if node.kind == "ident" and not node.local:
            declared = index.variable(node.name, self.file)
            if declared:
                return declared
            for callee in sorted(index.call_aliases.get(node.name, ())):
                result = index.returned(callee, self.file)
                if result:
                    return result
        if node.kind == "cond" and node.then:
            inner = self.node_at(node.then)
            return self.type_of(inner, index, depth + 1) if inner else None
        return None

    def why_untyped(self, node: Node, index: TypeIndex, depth: int) -> str:
        if depth > 16:
            return ""
        if node.kind == "member":
            found = self.member_of(node, index, depth)
            return f" ({found})" if isinstance(found, str) else ""
        if node.kind == "call":
            return f" (no parsed declaration of {node.name}() says what it returns)"
        if node.kind == "ident":
            return f" (no parsed declaration of `{node.name}`)"
        if node.kind == "index":
            base = self.node_at(node.base)
            return self.why_untyped(base, index, depth + 1) if base else ""
        return ""

    def callee_extent(self, call: Node) -> Extent | None:
        for n in self.nodes:
            if n.kind == "ident" and n.name == call.name and n.extent[:2] == call.extent[:2]:
                return n.extent
        return None

    def container_of(self, node: Node, index: TypeIndex, depth: int) -> tuple[str, str] | str:
        """(struct key, member prefix) that NODE's member lives in, or why not."""
        base = self.node_at(node.base)
        if base is None:
            return "its base expression is not understood"
        if base.kind == "member":
            # a member of an anonymous inner struct: holder.field
            outer = self.member_of(base, index, depth + 1)
            if isinstance(outer, list) and outer and all(
                    m.type.base.startswith(ANONYMOUS) for m in outer):
                if node.arrow == bool(outer[0].type.pointers):
                    return (outer[0].container, outer[0].field + ".")
        base_type = self.type_of(base, index, depth + 1)
        if base_type is None:
            return f"the type of `{self.describe(base)}` is not known" + \
                self.why_untyped(base, index, depth + 1)
        # typedefs first: a typedef may be the pointer (typedef struct foo *foo_p)
        canonical = index.canonical(base_type, self.file)
        if canonical is None:
            return (f"the typedef `{base_type.base}` is not known here: no one parsed "
                    "definition of it is visible")
        if node.arrow:
            canonical = canonical.deref()
            if canonical is None:
                return f"`{self.describe(base)}` is not a pointer"
        if canonical.pointers or canonical.array or canonical.function:
            return f"`{self.describe(base)}` is not a struct"
        return (canonical.base, "")

    def member_of(self, node: Node, index: TypeIndex, depth: int = 0) -> list[Member] | str:
        """The member definitions NODE names, or why they are not known."""
        where = self.container_of(node, index, depth)
        if isinstance(where, str):
            return where
        container, prefix = where
        found = index.member(container, prefix + node.name, self.file)
        if found:
            return found
        if not index.defines(container, self.file):
            return f"no definition of {container} was parsed"
        return NoMember(f"{container} has no member {prefix + node.name}")

    # -------------------------------------------------------- denotation

    def denote(self, index: TypeIndex, by_address: bool) -> list[Denotation]:
        """What the argument names: one Denotation, or one per branch of a
        conditional.  BY_ADDRESS: the argument is &X (a call's) or X (the
        static initializer's); otherwise a pointer value."""
        root = self.root()
        if root is None:
            return [Denotation("unknown", why="the argument's form is not understood")]
        if root.kind == "cond":
            return [d for ext in (root.then, root.otherwise)
                    for d in self.denote_object(self.node_at(ext), index)]
        if not by_address:
            through = self.through_accessor(root, index) if root.kind == "call" else None
            return [through or self.pointer(root, index)]
        return self.denote_object(root, index)

    def through_accessor(self, call: Node, index: TypeIndex) -> Denotation | None:
        """The semaphore member an accessor macro CALL reaches, when its
        argument's type ties it down (down(PIPE_SEM(*inode)): struct
        inode's i_sem); None, and the pointer it is, otherwise."""
        accessor = index.accessor(call.name, self.file)
        if accessor is None or not accessor.is_address or call.arg is None:
            return None
        known = self.types.get(call.arg)
        inner = self.node_at(call.arg)
        # a gap around the argument's node may be a * (PIPE_SEM(*inode))
        arg_type = CType.parse(known) if known else \
            self.type_of(inner, index) if inner and inner.extent == call.arg else None
        canonical = index.canonical(arg_type, self.file) if arg_type else None
        if canonical and accessor.arrow:
            canonical = canonical.deref()
        if canonical is None or canonical.pointers or canonical.array or canonical.function:
            return None
        return self.accessor_member(accessor, canonical, index)

    def through_cast_member(self, call: Node, index: TypeIndex) -> Denotation | None:
        """The semaphore member a member macro CALL names, whose body casts
        to a struct pointer (&spi_dv_sem(starget)); None otherwise."""
        accessor = index.accessor(call.name, self.file)
        if accessor is None or accessor.is_address:
            return None
        canonical = index.canonical(CType.parse(accessor.container), self.file)
        if canonical is None or canonical.pointers or canonical.array or canonical.function:
            return None
        return self.accessor_member(accessor, canonical, index)

    def accessor_member(self, accessor: MacroAccessor, container: CType,
                        index: TypeIndex) -> Denotation | None:
        found = index.member(container.base, accessor.field, self.file)
        if not found or not all(m.type.is_semaphore for m in found):
            return None
        return Denotation("field", container=found[0].container, field=found[0].field,
                          members=tuple(found),
                          accessor=(accessor.file, accessor.line, accessor.name))

    def pointer(self, node: Node, index: TypeIndex) -> Denotation:
        """A pointer value; a struct semaphore * member names its member,
        so that every function using it shares one question."""
        why = f"`{self.describe(node)}` is a pointer chosen at run time"
        if node.kind == "member":
            found = self.member_of(node, index)
            if isinstance(found, list) and found and \
                    all(m.type.is_semaphore_pointer for m in found):
                return Denotation("pointer", container=found[0].container, field=found[0].field,
                                  members=tuple(found), why=why)
        return Denotation("pointer", why=why)

    def denote_object(self, node: Node | None, index: TypeIndex) -> list[Denotation]:
        if node is None:
            return [Denotation("unknown", why="a branch's form is not understood")]
        if node.kind == "member":
            found = self.member_of(node, index)
            if isinstance(found, NoMember):
                # no visible definition has it: code that is never compiled
                return [Denotation("other-type", why=f"{found}: code that is never compiled")]
            if isinstance(found, str):
                return [Denotation("unknown", why=found, untyped_field=node.name)]
            types = {m.type for m in found}
            semaphores = [m for m in found if m.type.is_semaphore]
            if not semaphores:
                shown = ", ".join(sorted(f"{t.base}{' *' * t.pointers}" for t in types))
                return [Denotation("other-type", container=found[0].container,
                                   field=found[0].field, type_text=shown,
                                   why=f"{found[0].container}.{found[0].field} is a {shown}")]
            if len(semaphores) != len(found):
                return [Denotation("unknown", untyped_field=node.name,
                                   why=f"the visible definitions of {found[0].container} "
                                   f"disagree on the type of {found[0].field}")]
            return [Denotation("field", container=semaphores[0].container,
                               field=semaphores[0].field, members=tuple(semaphores))]
        if node.kind == "index":
            base = self.node_at(node.base)
            inner = self.denote_object(base, index) if base else []
            if base and base.kind == "ident" and inner and inner[0].kind == "var":
                base_type = self.type_of(base, index)
                if base_type and base_type.pointers and not base_type.array:
                    return [Denotation("unknown", why=f"`{base.name}` points to semaphores "
                                       "allocated at run time")]
            return [Denotation(d.kind, d.container, d.field, d.members, d.name, d.local, True,
                               d.type_text, d.why, d.untyped_field) for d in inner]
        if node.kind == "ident":
            return [Denotation("var", name=node.name, local=node.local)]
        if node.kind == "call":
            through = self.through_cast_member(node, index)
            if through:
                return [through]
            return [Denotation("unknown", why=f"`{self.describe(node)}` is a call (a macro or "
                               "a function returning the semaphore)")]
        return [Denotation("unknown", why="the argument's form is not understood")]

    def describe(self, node: Node) -> str:
        if node.kind == "member":
            base = self.node_at(node.base)
            return f"{self.describe(base) if base else '...'}{'->' if node.arrow else '.'}" \
                   f"{node.name}"
        if node.kind == "index":
            base = self.node_at(node.base)
            return f"{self.describe(base) if base else '...'}[...]"
        if node.kind == "call":
            return f"{node.name}(...)"
        if node.kind == "ident":
            return node.name
        return "(...) ? ... : ..."


@dataclass
class AccessIndex:
    """The argument trees of a file set, by call position."""

    trees: dict[tuple[str, int, int], ArgumentTree] = field(default_factory=dict)

    @classmethod
    def from_records(cls, records: list[dict]) -> "AccessIndex":
        grouped: dict[tuple[str, int, int], list[dict]] = {}
        for r in records:
            if r.get("kind", "").startswith("acc_"):
                grouped.setdefault((r["file"], r["line"], r["col"]), []).append(r)
        trees = {}
        for key, recs in grouped.items():
            tree = ArgumentTree.from_records(key[0], recs)
            if tree:
                trees[key] = tree
        return cls(trees)
