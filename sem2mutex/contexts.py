"""Which functions may run in which context.

A function registered as an IRQ handler, timer, tasklet, ... runs in that
context, and so does every function of the same file it calls,
transitively.  Calls across files are not followed: their callees are
resolved only when a wrapper analysis (wrappers.py) needs them.
"""
from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field

from .model import FactSet, Location

# Contexts where a mutex must never be taken or released.
ATOMIC_CONTEXTS = ("hardirq", "timer", "tasklet", "softirq")
# Process contexts that are another task than the one that took the lock.
OTHER_TASK_CONTEXTS = ("work", "kthread", "irq_thread")

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

    def of(self, file: str, function: str) -> list[ContextEvidence]:
        return self.by_function.get((file, function), [])


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
    for (file, name), context, slot, loc in callback_targets(facts):
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


def base_context(label: str) -> str:
    return label.split(" ", 1)[0]
