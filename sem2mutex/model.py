"""Typed records passed between the pipeline stages.

intake -> facts -> resolve -> classify -> decisions -> report

Every location is tree-relative (file, line) so reports never leak the
machine's paths and can be compared across checkouts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path


class ApiEra(str, Enum):
    """Which spelling of the semaphore API the tree uses."""

    MODERN = "6.x"  # DEFINE_SEMAPHORE / sema_init, struct mutex exists
    LEGACY = "2.6.x"  # init_MUTEX / DECLARE_MUTEX, no struct mutex


@dataclass(frozen=True)
class KernelTree:
    path: Path
    version: str  # "6.1.192"
    api_era: ApiEra
    is_git: bool


@dataclass(frozen=True)
class Location:
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


# ----------------------------------------------------------------- facts
# One record per JSON line printed by the semantic patches in cocci/facts/.


@dataclass(frozen=True)
class Position:
    file: str
    line: int
    col: int
    function: str  # spatch's current_element: function, or something_else

    @property
    def location(self) -> Location:
        return Location(self.file, self.line)


@dataclass(frozen=True)
class VarDecl:
    pos: Position
    name: str
    array: bool
    storage: str  # "global", "static", "extern", "local"
    macro: str | None  # DEFINE_SEMAPHORE, DECLARE_MUTEX, ...
    typedef: str | None = None  # declared as a typedef of struct semaphore (XFS's mutex_t)


@dataclass(frozen=True)
class FieldDecl:
    pos: Position
    container: str  # "struct foo" or a typedef name
    field: str  # "sem", or "cmd.poll_sem" inside an anonymous member
    array: bool
    in_union: bool = False  # shares its storage with the union's other members
    typedef: str | None = None  # declared as a typedef of struct semaphore (XFS's mutex_t)


@dataclass(frozen=True)
class Target:
    """What an escape's address is of, as escapes.cocci described it."""

    shape: str  # field or var
    name: str | None = None  # variable name
    container: str | None = None  # struct type when spatch knew it
    field: str | None = None
    text: str = ""  # the expression as spatch printed it
    # (container, field) readings of a field argument, most precise first
    candidates: tuple[tuple[str | None, str], ...] = ()


@dataclass(frozen=True)
class ApiCall:
    pos: Position
    op: str  # sema_init, down, up, __SEMAPHORE_INITIALIZER, ...
    arg: str  # the semaphore argument as spatch printed it
    by_address: bool  # &X (X for the static initializer), else a pointer value
    count: str | None  # initial count expression, for initialisers
    macro: str | None  # name of the macro whose body holds the call
    paired: bool  # for up(): dominated by a down of the same expression
    released_after: int | None = None  # up(): line of an earlier up() on the same path
    args: int | None = None  # its number of arguments; None: as the API's prototype
    # up(): the conditional down (op, line) whose failure a path follows to it
    failed_acquire: tuple[str, int] | None = None
    # down_interruptible(), down_killable(): how its failure leaves its
    # function or macro (pairing.cocci's failure_returned): "return", a
    # return statement (of a non-zero value; in a macro, from the function
    # it is expanded in), or "value", the value of the macro's body
    failure_returned: str | None = None
    # in a macro body, the macro's parameter it acts on (2.6's XFS: #define
    # psema(sp, b) down(sp)): each expansion names its own semaphore
    macro_param: str | None = None

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.pos.file, self.pos.line, self.pos.col)


@dataclass(frozen=True)
class Callback:
    pos: Position
    name: str  # function registered
    context: str  # hardirq, irq_thread, timer, tasklet, softirq, work, kthread, ops
    slot: str | None = None  # ops: "struct file_operations.open"
    holder: str | None = None  # ops: the variable the initializer sets
    # the line naming the function, when the registration spans lines
    name_line: int | None = None

    @property
    def named_at(self) -> tuple[str, int, str]:
        """(file, line, name): where the registration names the function."""
        return (self.pos.file, self.name_line or self.pos.line, self.name)


@dataclass(frozen=True)
class FunctionDef:
    file: str
    name: str
    line: int
    static: bool


@dataclass(frozen=True)
class CallEdge:
    file: str
    caller: str
    callee: str


@dataclass(frozen=True)
class Export:
    """EXPORT_SYMBOL(name) or EXPORT_SYMBOL_GPL(name)."""

    pos: Position
    name: str
    macro: str


@dataclass(frozen=True)
class Escape:
    pos: Position
    via: str  # "call" or "store"
    callee: str | None
    target: Target


@dataclass(frozen=True)
class ParseFailure:
    file: str
    error: str
    identifiers: frozenset[str] = frozenset()  # named in the skipped lines
    plain: frozenset[str] = frozenset()  # of those, named other than after . or ->


@dataclass(frozen=True)
class SymbolAlias:
    """extern struct semaphore name __alias(target); (6.1's
    __efi_uv_runtime_lock): NAME is TARGET under another name."""

    location: Location
    name: str
    target: str


@dataclass
class FactSet:
    """Everything spatch reported about the files it was given."""

    var_decls: list[VarDecl] = field(default_factory=list)
    field_decls: list[FieldDecl] = field(default_factory=list)
    calls: list[ApiCall] = field(default_factory=list)
    callbacks: list[Callback] = field(default_factory=list)
    functions: list[FunctionDef] = field(default_factory=list)
    call_edges: list[CallEdge] = field(default_factory=list)
    escapes: list[Escape] = field(default_factory=list)
    exports: list[Export] = field(default_factory=list)
    # &x->lock given to spin_lock() and the like: (where, name, a member?)
    other_lock_arguments: list[tuple[Location, str, bool]] = field(default_factory=list)
    parse_failures: list[ParseFailure] = field(default_factory=list)
    symbol_aliases: list[SymbolAlias] = field(default_factory=list)
    # the object-like macros whose body calls the API (#define LOCK down(&s))
    object_macros: set[str] = field(default_factory=set)
    # access.cocci's argument trees and types.cocci's type facts, raw: the
    # resolve stage reads them with the tree's include graph
    access_records: list[dict] = field(default_factory=list)
    type_records: list[dict] = field(default_factory=list)
    helper_records: list[dict] = field(default_factory=list)  # helpers.cocci
    # every call of a function of the same file: (file, line, caller, callee)
    call_sites: list[tuple[str, int, str, str]] = field(default_factory=list)
    files_scanned: int = 0
    pass2_files: set[str] = field(default_factory=set)  # where contexts are known
    parsed_files: set[str] = field(default_factory=set)  # every file spatch was given


# ------------------------------------------------------------- the series


@dataclass(frozen=True)
class CoreChange:
    """One core patch of the series: what it is and why (commit message)."""

    subject: str
    body: str


# ------------------------------------------------------------- instances


class SemClass(str, Enum):
    MUTEX = "mutex"
    COUNTING = "counting"
    SIGNAL = "signal"
    AMBIGUOUS = "ambiguous"


@dataclass(frozen=True)
class Init:
    location: Location
    op: str
    count: int | None  # None when not a literal
    count_text: str
    macro: str | None = None  # the macro whose body holds the initialiser
    through: str | None = None  # the accessor macro its argument goes through


# The ops of the sites wrappers.py adds at a wrapper's caller: a call of
# the wrapper, which names no semaphore where it stands.
WRAPPER_OPS = ("lock-wrapper", "unlock-wrapper")


@dataclass(frozen=True)
class Site:
    location: Location
    function: str
    op: str  # down, down_interruptible, ..., up; or lock:<wrapper>/unlock:<wrapper>
    paired: bool = True
    macro: str | None = None
    via_wrapper: str | None = None
    released_after: int | None = None  # up() again after the up() at this line
    via_helper: str | None = None  # done by this helper on the pointer it was passed
    through: str | None = None  # the accessor macro its argument goes through
    # up(): reached where this conditional down (op, line) did not take it
    failed_acquire: tuple[str, int] | None = None
    spelled: str | None = None  # the name it uses, an __alias of the instance's
    # down_interruptible(), down_killable(): "return" or "value", as
    # ApiCall.failure_returned, when its failure leaves its function or macro
    failure_returned: str | None = None
    # an unlock wrapper named, not called (d->done = foo_unlock;): what
    # calls it through that pointer is not seen
    address_taken: bool = False
    # an unlock-wrapper call: the lock wrappers (names) that return without
    # taking it on some path, so that no caller knows it holds it
    lock_skipped_by: str | None = None


@dataclass(frozen=True)
class Reason:
    code: str
    detail: str
    locations: tuple[Location, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """A reviewer's decision pinning an instance's class."""

    instance: str
    sem_class: SemClass
    reviewer: str
    reason: str
    # a mutex verdict on an instance with atomic-context or escape evidence
    # is refused unless the reviewer says override = true (decisions.py)
    override: bool = False


@dataclass
class Instance:
    id: str
    kind: str  # global, static, local, field, array, field-array, pointer, unresolved
    name: str
    struct: str | None
    file: str  # declaring file (tree-relative), or first use
    decl_line: int | None = None
    decls: list[Location] = field(default_factory=list)  # every declaration, extern too
    inits: list[Init] = field(default_factory=list)
    sites: list[Site] = field(default_factory=list)
    escapes: list[Escape] = field(default_factory=list)
    notes: list[Reason] = field(default_factory=list)  # facts met while resolving
    # where its address is taken in code the analysis followed: given to a
    # local pointer, or the body of an accessor macro its calls go through
    aliased_at: list[Location] = field(default_factory=list)
    # its EXPORT_SYMBOL() lines: no use of it
    exported_at: list[Location] = field(default_factory=list)
    # the accessor macros its calls go through: their every use is checked
    through_macros: list[str] = field(default_factory=list)
    sem_class: SemClass = SemClass.AMBIGUOUS
    reasons: list[Reason] = field(default_factory=list)
    pinned: Verdict | None = None
    classified_as: SemClass | None = None  # the tool's own class when pinned


@dataclass(frozen=True)
class StaleVerdict:
    verdict: Verdict
    why: str


@dataclass(frozen=True)
class OtherTypeCall:
    """A call of an API name that is no semaphore operation: its argument
    resolved to something that is not a struct semaphore (down() on an
    rw_semaphore in dead #if code), or it has a number of arguments the
    API does not take (a file's own up(x, r))."""

    location: Location
    op: str
    text: str
    why: str


@dataclass
class Audit:
    tree: KernelTree
    scope: list[str]
    instances: list[Instance]
    parse_failures: list[ParseFailure]
    stale_verdicts: list[StaleVerdict] = field(default_factory=list)
    other_type_calls: list[OtherTypeCall] = field(default_factory=list)
    files_scanned: int = 0
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)  # seconds by stage
