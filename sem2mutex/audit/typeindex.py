"""The tree-wide type index: what spatch cannot see from one file.

spatch runs without headers (--no-includes: reading every header for
every file would cost three times the whole analysis), so it types what a
file declares itself: locals, parameters, casts, and the structs the file
defines.  types.cocci reports, for every parsed file, the members of each
struct with their types, the typedefs, the functions returning a pointer,
the struct-typed variables and the macros that stand for a call.  This
index answers the questions spatch left open: what is the type of
`dev->cmd` when struct hns_roce_dev is defined in a header, what is
snd_pcm_t, what does to_mdev() return.

Types are kept as spatch prints them ("struct foo *", "snd_pcm_t",
"struct semaphore [ 4 ]"); CType reads that printed form (spatch's
output, not C source).  Every lookup is scoped by Visibility: a struct
defined in a .c file is only that file's, a header's only for the files
that include it.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sem2mutex.audit.visibility import Visibility

SEMAPHORE = "struct semaphore"
QUALIFIERS = ("const", "volatile", "__iomem", "__rcu", "__user", "__percpu", "__private")
ANONYMOUS = ("struct {", "union {")
MAX_TYPEDEF_DEPTH = 12


@dataclass(frozen=True)
class CType:
    """A type as spatch prints it, reduced to what resolution needs."""

    base: str  # "struct foo", "snd_pcm_t", "int", "struct { ... }"
    pointers: int = 0
    array: bool = False  # declared with [ ... ]: one more level to index
    function: bool = False  # a function designator; base/pointers are its result

    @classmethod
    def parse(cls, text: str) -> "CType":
        text = " ".join(text.split())
        if text.startswith(("struct ", "union ")) and not text.startswith(ANONYMOUS) \
                and " { " in text and "}" in text:
            # a definition printed whole: struct foo { ... } [ 2 ]
            head, _, rest = text.partition(" { ")
            text = head + rest[rest.rindex("}") + 1:]
        function = False
        if text.endswith(")") and " ( " in text and not text.startswith(ANONYMOUS):
            text, function = text.split(" ( ", 1)[0], True
        array = False
        while text.endswith("]") and "[" in text:
            text, array = text[:text.rindex("[")].rstrip(), True
        pointers = 0
        words = [w for w in text.split() if w not in QUALIFIERS]
        while words and words[-1] == "*":
            pointers += 1
            words.pop()
        while words and words[-1].endswith("*") and words[-1] != "*":
            pointers += words[-1].count("*")
            words[-1] = words[-1].rstrip("*")
        return cls(" ".join(words), pointers, array, function)

    def deref(self) -> "CType | None":
        """The type of *e or e[i] (an array or a pointer loses one level)."""
        if self.function:
            return None
        if self.array:
            return CType(self.base, self.pointers)
        if self.pointers:
            return CType(self.base, self.pointers - 1)
        return None

    def result(self) -> "CType":
        """The value of a call of a function designator."""
        return CType(self.base, self.pointers) if self.function else self

    @property
    def is_aggregate(self) -> bool:
        return not self.pointers and not self.array and not self.function

    @property
    def is_semaphore(self) -> bool:
        return self.base == SEMAPHORE and not self.pointers and not self.function

    @property
    def is_semaphore_pointer(self) -> bool:
        return self.base == SEMAPHORE and self.pointers == 1 and not self.array \
            and not self.function


@dataclass(frozen=True)
class Member:
    """One member of a struct or union: `field` is "holder.x" for a member
    of a named inner struct, the inner member's name for an anonymous one."""

    file: str
    line: int
    container: str
    field: str
    type: CType


@dataclass(frozen=True)
class Declared:
    """A typedef, a function's result or a variable, where it is declared."""

    file: str
    line: int
    name: str
    type: CType


@dataclass(frozen=True)
class MacroAccessor:
    """A one-parameter macro whose whole body is the address of a member
    of its parameter (#define PIPE_SEM(inode) (&(inode).i_sem)), or a
    member of a cast to a struct pointer (#define spi_dv_sem(x) (((struct
    spi_transport_attrs *)&(x)->starget_data)->dv_sem)): CONTAINER then
    names the struct."""

    file: str
    line: int
    name: str
    field: str
    arrow: bool  # (&(x)->field), else (&(x).field)
    container: str | None = None

    @property
    def is_address(self) -> bool:
        return self.container is None


@dataclass
class TypeIndex:
    visibility: Visibility
    members: dict[str, list[Member]] = field(default_factory=lambda: defaultdict(list))
    typedefs: dict[str, list[Declared]] = field(default_factory=lambda: defaultdict(list))
    returns: dict[str, list[Declared]] = field(default_factory=lambda: defaultdict(list))
    variables: dict[str, list[Declared]] = field(default_factory=lambda: defaultdict(list))
    call_aliases: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    # macro -> the members its body reaches (a call through it may act on them)
    macro_members: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    macro_accessors: dict[str, list[MacroAccessor]] = field(
        default_factory=lambda: defaultdict(list))
    files: set[str] = field(default_factory=set)  # files whose types are indexed
    # what a lookup found no visible declaration of: (kind, name, from file),
    # kind struct, typedef, function or variable; the facts stage parses the
    # headers that may declare them
    missing: set[tuple[str, str, str]] = field(default_factory=set)
    _aliases: dict[str, set[str]] | None = field(default=None, repr=False)

    def add_records(self, records: list[dict]) -> None:
        self._aliases = None
        seen: set[tuple] = set()
        for rec in records:
            kind = rec.get("kind")
            key = (kind, rec.get("file"), rec.get("line"), rec.get("col"), rec.get("field"),
                   rec.get("name"))
            if key in seen:
                continue
            seen.add(key)
            if kind == "member":
                self.members[rec["container"]].append(Member(
                    rec["file"], rec["line"], rec["container"], rec["field"],
                    CType.parse(rec["type"])))
            elif kind == "typedef":
                self.typedefs[rec["name"]].append(Declared(
                    rec["file"], rec["line"], rec["name"], typedef_target(rec)))
            elif kind == "returns":
                self.returns[rec["name"]].append(Declared(
                    rec["file"], rec["line"], rec["name"], CType.parse(rec["type"])))
            elif kind == "variable" and rec.get("function") in (rec["name"], "something_else"):
                ctype = CType.parse(rec["type"])
                if not ctype.function:
                    self.variables[rec["name"]].append(Declared(
                        rec["file"], rec["line"], rec["name"], ctype))
            elif kind == "call_alias":
                self.call_aliases[rec["name"]].add(rec["callee"])
            elif kind == "macro_member":
                self.macro_members[rec["name"]].add(rec["field"])
            elif kind == "macro_accessor":
                self.macro_accessors[rec["name"]].append(MacroAccessor(
                    rec["file"], rec["line"], rec["name"], rec["field"], rec["arrow"],
                    rec.get("container")))
            if kind in ("member", "typedef", "returns", "variable", "call_alias"):
                self.files.add(rec["file"])

    # ------------------------------------------------------------ lookups

    def visible(self, decls: list, from_file: str) -> list:
        """The declarations FROM_FILE can see (its own first)."""
        own = [d for d in decls if d.file == from_file]
        if own:
            return own
        # a struct's members all come from a few files: ask once per file
        seen = {f: self.visibility.sees(from_file, f) for f in {d.file for d in decls}}
        return [d for d in decls if seen[d.file]]

    def canonical(self, ctype: CType, from_file: str) -> CType | None:
        """CTYPE with its typedefs replaced; None when a typedef on the way
        is unknown or means different things to FROM_FILE."""
        for _ in range(MAX_TYPEDEF_DEPTH):
            if ctype.base.startswith(("struct ", "union ", "enum ")) or \
                    ctype.base in BASIC_TYPES or \
                    self.visible(self.members.get(ctype.base, []), from_file):
                return ctype
            decls = self.visible(self.typedefs.get(ctype.base, []), from_file)
            targets = {d.type for d in decls}
            if not targets:
                self.missing.add(("typedef", ctype.base, from_file))
            if len(targets) != 1:
                return None
            (target,) = targets
            if target.base.startswith(ANONYMOUS):
                # members of typedef struct { ... } name; are filed under the name
                if not target.pointers:
                    return ctype
                # typedef struct { ... } name, *pname;: pname is a name *
                named = self.anonymous_name(target.base, {d.file for d in decls})
                if named is None:
                    return None
                return CType(named, ctype.pointers + target.pointers,
                             ctype.array or target.array, ctype.function)
            ctype = CType(target.base, ctype.pointers + target.pointers,
                          ctype.array or target.array, ctype.function)
        return None

    def anonymous_name(self, base: str, files: set[str]) -> str | None:
        """The one typedef name FILES give the anonymous struct BASE itself."""
        names = {name for name, decls in self.typedefs.items() for d in decls
                 if d.file in files and d.type.base == base and not d.type.pointers
                 and not d.type.array}
        return names.pop() if len(names) == 1 else None

    def member(self, container: str, name: str, from_file: str) -> list[Member]:
        """The definitions of CONTAINER's member NAME that FROM_FILE sees.
        Several only when several visible definitions of the struct agree
        that it has the member; [] when none has it."""
        found = [m for m in self.definition(container, from_file) if m.field == name]
        return self.visible(found, from_file)

    def definition(self, container: str, from_file: str) -> list[Member]:
        """The members of CONTAINER FROM_FILE sees; those of
        `typedef struct foo { ... } foo_t;` are filed under foo_t."""
        own = self.visible(self.members.get(container, []), from_file)
        if own:
            return own
        for alias in sorted(self.aliases().get(container, ())):
            named = self.visible(self.members.get(alias, []), from_file)
            if named:
                return named
        return []

    def aliases(self) -> dict[str, set[str]]:
        """struct foo -> the typedef names of `typedef struct foo {...} foo_t;`."""
        if self._aliases is None:
            found: dict[str, set[str]] = defaultdict(set)
            for name, decls in self.typedefs.items():
                for d in decls:
                    if d.type.base.startswith(("struct ", "union ")) and not d.type.pointers \
                            and not d.type.base.startswith(ANONYMOUS):
                        found[d.type.base].add(name)
            self._aliases = found
        return self._aliases

    def defines(self, container: str, from_file: str) -> bool:
        found = bool(self.definition(container, from_file))
        if not found and container.startswith(("struct ", "union ")):
            self.missing.add(("struct", container.split(" ", 1)[1], from_file))
        return found

    def returned(self, function: str, from_file: str) -> CType | None:
        types = {d.type for d in self.visible(self.returns.get(function, []), from_file)}
        if not types:
            self.missing.add(("function", function, from_file))
        return types.pop() if len(types) == 1 else None

    def accessor(self, name: str, from_file: str) -> MacroAccessor | None:
        """The accessor macro NAME as FROM_FILE sees it; None when it sees
        none, or definitions that reach different members."""
        found = self.visible(self.macro_accessors.get(name, []), from_file)
        if not found:
            self.missing.add(("macro", name, from_file))
        shapes = {(a.field, a.arrow, a.container) for a in found}
        return found[0] if len(shapes) == 1 else None

    def variable(self, name: str, from_file: str) -> CType | None:
        types = {d.type for d in self.visible(self.variables.get(name, []), from_file)}
        if not types and name not in self.call_aliases:
            self.missing.add(("variable", name, from_file))
        return types.pop() if len(types) == 1 else None


BASIC_TYPES = frozenset((
    "void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
    "unsigned int", "unsigned long", "unsigned char", "unsigned short", "long long",
    "unsigned long long", "signed char", "_Bool", "bool"))


def typedef_target(rec: dict) -> CType:
    return CType.parse(rec["type"])
