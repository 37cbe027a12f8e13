"""Which functions may run in which context.

A function registered as an IRQ handler, timer, tasklet, ... runs in that
context, and so does every function of the same file it calls,
transitively.  Calls across files are not followed: their callees are
resolved only when a wrapper analysis (wrappers.py) needs them.
"""
from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field

from sem2mutex.model import FactSet, Location
from sem2mutex.tools.lexer import Lexer

# Contexts where a mutex must never be taken or released.
ATOMIC_CONTEXTS = ("hardirq", "timer", "tasklet", "softirq")
# Process contexts that are another task than the one that took the lock.
OTHER_TASK_CONTEXTS = ("work", "kthread", "irq_thread")
# Callback slots the kernel only calls from process context (system calls,
# driver model, sysfs, module init): code reached only from these may sleep.
PROCESS_CONTEXT_SLOTS = frozenset((
    "open", "release", "read", "write", "read_iter", "write_iter", "unlocked_ioctl",
    "compat_ioctl", "ioctl", "mmap", "llseek", "flush", "fsync", "poll", "probe",
    "remove", "shutdown", "show", "store", "suspend", "resume", "freeze", "thaw",
    "restore", "runtime_suspend", "runtime_resume", "prepare", "complete"))

FunctionKey = tuple[str, str]  # (file, function)


@dataclass(frozen=True)
class ContextEvidence:
    context: str
    registered: str  # the callback that runs in that context
    location: Location  # where it was registered
    path: tuple[str, ...]  # call chain from the callback down to the function

    def describe(self) -> str:
        chain = " -> ".join(self.path)
        how = f"{self.registered}() is registered as {self.context} at {self.location}"
        return how if len(self.path) <= 1 else f"{how} and reaches it via {chain}"


@dataclass
class ContextMap:
    by_function: dict[FunctionKey, list[ContextEvidence]] = field(
        default_factory=lambda: defaultdict(list))
    # callers within the same file, and the functions that code this
    # analysis does not see may call, in a context it does not know
    callers: dict[FunctionKey, set[str]] = field(default_factory=lambda: defaultdict(set))
    entry_points: set[FunctionKey] = field(default_factory=set)

    def of(self, file: str, function: str) -> list[ContextEvidence]:
        return self.by_function.get((file, function), [])

    def entry_point_reaching(self, file: str, function: str) -> str | None:
        """The nearest function callable from unseen code that may lead to
        FUNCTION (alphabetically first among equals, so reruns agree)."""
        seen = {function}
        todo = deque([function])
        while todo:
            fn = todo.popleft()
            if (file, fn) in self.entry_points:
                return fn
            for caller in sorted(self.callers.get((file, fn), ())):
                if caller not in seen:
                    seen.add(caller)
                    todo.append(caller)
        return None


def callback_targets(facts: FactSet) -> list[tuple[FunctionKey, str, str, Location]]:
    """(function, context, slot, location) for each registered callback."""
    defined_in: dict[str, list[str]] = defaultdict(list)
    static: set[FunctionKey] = set()
    for fn in facts.functions:
        defined_in[fn.name].append(fn.file)
        if fn.static:
            static.add((fn.file, fn.name))
    targets = []
    for cb in facts.callbacks:
        files = defined_in.get(cb.name, [])
        if cb.pos.file in files:
            chosen = [cb.pos.file]
        else:
            chosen = [f for f in files if (f, cb.name) not in static]
        for f in chosen:
            targets.append(((f, cb.name), cb.context, cb.slot or "", cb.pos.location))
    return targets


def build_context_map(facts: FactSet) -> ContextMap:
    callees: dict[FunctionKey, set[str]] = defaultdict(set)
    for edge in facts.call_edges:
        callees[(edge.file, edge.caller)].add(edge.callee)
    cmap = ContextMap()
    for edge in facts.call_edges:
        cmap.callers[(edge.file, edge.callee)].add(edge.caller)
    cmap.entry_points = {(f.file, f.name) for f in facts.functions if not f.static}
    for (file, name), context, slot, loc in callback_targets(facts):
        if not runs_in_known_context(context, slot):
            cmap.entry_points.add((file, name))
        label = f"{context} ({slot})" if slot else context
        seen = {name}
        queue = deque([(name, (name,))])
        while queue:
            fn, path = queue.popleft()
            cmap.by_function[(file, fn)].append(ContextEvidence(label, name, loc, path))
            for callee in sorted(callees.get((file, fn), ())):
                if callee not in seen:
                    seen.add(callee)
                    queue.append((callee, path + (callee,)))
    return cmap


def runs_in_known_context(context: str, slot: str) -> bool:
    if context == "ops":
        return slot.rsplit(".", 1)[-1] in PROCESS_CONTEXT_SLOTS
    return context != "pointer"


def base_context(label: str) -> str:
    return label.split(" ", 1)[0]


def add_address_taken(cmap: ContextMap, facts: FactSet, lexer: Lexer,
                      files: set[str]) -> None:
    """Make every function of FILES whose name is used other than in a call
    (stored in a pointer, passed on, exported) an entry point.

    Matching that with a semantic patch costs seconds per big file, and it
    only matters where a trylock site's context is in question, so it is
    read from Coccinelle's lexer for those files only.
    """
    defined: dict[str, set[str]] = defaultdict(set)
    for fn in facts.functions:
        if fn.file in files:
            defined[fn.file].add(fn.name)
    # registrations the fact rules recognised already say how it is called
    registered = {cb.named_at for cb in facts.callbacks}
    cmap.entry_points |= used_other_than_called(lexer, defined, registered)


def used_other_than_called(lexer: Lexer, names: dict[str, set[str]],
                           registered: set[tuple[str, int, str]]) -> set[FunctionKey]:
    """(file, name) for each of NAMES (file -> function names) the file
    names other than in a call, a definition, a prototype or one of the
    REGISTERED (file, line, name) registrations."""
    found = set()
    for rel, tokens in lexer.tokens_of(sorted(names)).items():
        for i, tok in enumerate(tokens):
            if not tok.identifier or tok.text not in names[rel]:
                continue
            if (rel, tok.line, tok.text) in registered:
                continue
            following = tokens[i + 1] if i + 1 < len(tokens) else None
            if following is None or following.identifier or following.text != "(":
                found.add((rel, tok.text))
    return found
