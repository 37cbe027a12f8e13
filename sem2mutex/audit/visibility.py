"""Which files can see which declarations: the tree's include graph.

A struct defined in a .c file is private to it (and to a .c file that
includes it); a struct of a header is seen by the files that include that
header, directly or through other headers.  The analysis asks this in two
directions:

- to type an expression, which definitions of `struct foo` (or of a
  typedef) a file can mean;
- to scope what it could not see, which semaphores the code spatch skipped
  in a file (a parse failure) could touch.

The graph over-approximates on purpose: every #include counts whatever
#if surrounds it, `<asm/x.h>` names the header of every architecture, and
a directive the usual paths do not resolve (a driver's -I in its Makefile)
names every header whose path ends the same way.  Seeing too much only
widens a taint; seeing too little could hide one.
"""
from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

SOURCE_SUFFIXES = (".c", ".h")


def parse_directive(directive: str) -> tuple[bool, str] | None:
    """(quoted, path) of `#include "x.h"` or `#include <x.h>`."""
    for opening, closing, quoted in (('"', '"', True), ("<", ">", False)):
        start = directive.find(opening)
        end = directive.find(closing, start + 1)
        if start != -1 and end > start:
            return quoted, directive[start + 1:end].strip()
    return None


@dataclass
class HeaderPaths:
    """Every .c and .h file of a tree, indexed the ways #include names them."""

    files: set[str]
    by_include_path: dict[str, list[str]]  # "linux/fs.h" -> include/linux/fs.h ...
    by_suffix_name: dict[str, list[str]]  # "fs.h" -> every */fs.h

    @classmethod
    def scan(cls, tree: Path, skip: tuple[str, ...] = ()) -> "HeaderPaths":
        files: set[str] = set()
        for top in sorted(os.listdir(tree)):
            if top in skip or top.startswith("."):
                continue
            root = tree / top
            if root.is_file():
                if top.endswith(SOURCE_SUFFIXES):
                    files.add(top)
                continue
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                rel_dir = os.path.relpath(dirpath, tree)
                files.update(f"{rel_dir}/{f}" for f in filenames
                             if f.endswith(SOURCE_SUFFIXES))
        return cls.of_files(files)

    @classmethod
    def of_files(cls, files: set[str]) -> "HeaderPaths":
        by_include_path: dict[str, list[str]] = defaultdict(list)
        by_suffix_name: dict[str, list[str]] = defaultdict(list)
        for f in sorted(files):
            if not f.endswith(".h"):
                continue
            by_suffix_name[f.rsplit("/", 1)[-1]].append(f)
            for root in include_roots(f):
                by_include_path[f[len(root):]].append(f)
        return cls(files, dict(by_include_path), dict(by_suffix_name))


def include_roots(header: str) -> list[str]:
    """The directories a compiler's -I makes HEADER reachable from:
    include/, include/uapi/, arch/*/include/(uapi/)."""
    roots = []
    parts = header.split("/")
    if parts[0] == "include":
        roots.append("include/")
        if len(parts) > 2 and parts[1] == "uapi":
            roots.append("include/uapi/")
    if parts[0] == "arch" and len(parts) > 3 and parts[2] == "include":
        roots.append(f"arch/{parts[1]}/include/")
        if parts[3] == "uapi":
            roots.append(f"arch/{parts[1]}/include/uapi/")
    return roots


def asm_aliases(header: str) -> list[str]:
    """include/asm-i386/x.h is <asm/x.h>; include/asm-generic/x.h stands
    behind every architecture's generated <asm/x.h>."""
    parts = header.split("/")
    if parts[0] == "include" and len(parts) > 2 and (
            parts[1].startswith("asm-")):
        return ["asm/" + "/".join(parts[2:])]
    return []


@dataclass
class IncludeGraph:
    edges: dict[str, set[str]]

    @classmethod
    def build(cls, directives: dict[str, list[str]], paths: HeaderPaths) -> "IncludeGraph":
        return cls(IncludeResolver.of(paths).edges(directives))


@dataclass
class IncludeResolver:
    """Which files the #include directives of a file name, among PATHS."""

    paths: HeaderPaths
    asm: dict[str, list[str]]

    @classmethod
    def of(cls, paths: HeaderPaths) -> "IncludeResolver":
        asm: dict[str, list[str]] = defaultdict(list)
        for header in paths.by_suffix_name.values():
            for h in header:
                for alias in asm_aliases(h):
                    asm[alias].append(h)
        return cls(paths, asm)

    def edges(self, directives: dict[str, list[str]]) -> dict[str, set[str]]:
        """file -> the files its DIRECTIVES include."""
        edges: dict[str, set[str]] = {}
        for file, lines in directives.items():
            targets: set[str] = set()
            for line in lines:
                parsed = parse_directive(line)
                if parsed:
                    targets.update(resolve_include(file, *parsed, self.paths, self.asm))
            targets.discard(file)
            edges[file] = targets
        return edges


def resolve_include(file: str, quoted: bool, name: str, paths: HeaderPaths,
                    asm: dict[str, list[str]]) -> list[str]:
    found: list[str] = []
    if quoted:
        here = os.path.normpath(os.path.join(os.path.dirname(file), name))
        if here in paths.files:
            found.append(here)
    found += paths.by_include_path.get(name, [])
    found += asm.get(name, [])
    if not found:
        # a -I of a Makefile, a generated wrapper: every header ending so
        base = name.rsplit("/", 1)[-1]
        found = [h for h in paths.by_suffix_name.get(base, [])
                 if h == name or h.endswith("/" + name)]
    return found


@dataclass
class Visibility:
    """sees(file, declared_in): can code in FILE use what DECLARED_IN declares?"""

    graph: IncludeGraph
    _includers: dict[str, set[str]] | None = field(default=None, repr=False)
    _views: dict[str, int] = field(default_factory=dict, repr=False)
    _reach: "ReachBits" = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._reach = ReachBits(self.graph.edges)

    @classmethod
    def everything(cls) -> "Visibility":
        """No graph: every file sees every header (and only its own .c)."""
        return cls(IncludeGraph({}))

    def closure(self, files: set[str]) -> set[str]:
        """What code in FILES may see: what they include, transitively,
        and for a file others include, what those include (view())."""
        bits = 0
        for file in files:
            bits |= self.view(file)
        return self._reach.names(bits)

    def includers(self, header: str) -> set[str]:
        """Every file that includes HEADER, directly or not."""
        if self._includers is None:
            reverse: dict[str, set[str]] = defaultdict(set)
            for src, targets in self.graph.edges.items():
                for t in targets:
                    reverse[t].add(src)
            self._includers = reverse
        seen = {header}
        todo = [header]
        while todo:
            for src in self._includers.get(todo.pop(), ()):
                if src not in seen:
                    seen.add(src)
                    todo.append(src)
        return seen - {header}

    def view(self, file: str) -> int:
        """What code in FILE may see, as ReachBits bits: what it includes,
        and when other files include it, what the .c files among them
        include (a header's inline functions and macros see the headers
        included before it in each translation unit, and so does a .c
        file another .c file includes: 2.6's ohci-omap.c, which
        ohci-hcd.c includes after ohci.h), those .c files included."""
        known = self._views.get(file)
        if known is None:
            known = self._reach.of(file)
            for source in self.includers(file):
                if source.endswith(".c"):
                    known |= self._reach.of(source)
            self._views[file] = known
        return known

    def sees(self, file: str, declared_in: str) -> bool:
        if file == declared_in:
            return True
        if not self.graph.edges:
            return declared_in.endswith(".h")
        return self._reach.has(self.view(file), declared_in)


class ReachBits:
    """Everything each file includes, transitively, as one integer of bits
    (a bit per file met): the analysis asks "does A see B" a hundred
    thousand times on a 2.6 tree, and walking the graph for every new A
    cost seconds.  Each strongly connected part of the graph (headers
    that include each other) is walked once, with Tarjan's algorithm."""

    def __init__(self, edges: dict[str, set[str]]) -> None:
        self.edges = edges
        self.bit: dict[str, int] = {}
        self.reached: dict[str, int] = {}

    def has(self, bits: int, name: str) -> bool:
        position = self.bit.get(name)
        return position is not None and bool(bits >> position & 1)

    def names(self, bits: int) -> set[str]:
        return {name for name, position in self.bit.items() if bits >> position & 1}

    def own(self, name: str) -> int:
        position = self.bit.setdefault(name, len(self.bit))
        return 1 << position

    def of(self, start: str) -> int:
        """START and every file it includes, directly or not."""
        known = self.reached.get(start)
        if known is not None:
            return known
        order: dict[str, int] = {start: 0}
        low = {start: 0}
        gathered = {start: self.own(start)}
        stack, on_stack = [start], {start}
        walk = [(start, iter(self.edges.get(start, ())))]
        while walk:
            node, children = walk[-1]
            for child in children:
                if child in self.reached:
                    gathered[node] |= self.reached[child]
                elif child not in order:
                    order[child] = low[child] = len(order)
                    gathered[child] = self.own(child)
                    stack.append(child)
                    on_stack.add(child)
                    walk.append((child, iter(self.edges.get(child, ()))))
                    break
                elif child in on_stack:
                    low[node] = min(low[node], order[child])
            else:
                walk.pop()
                if low[node] == order[node]:
                    self.close_component(node, stack, on_stack, gathered)
                if walk:
                    parent = walk[-1][0]
                    low[parent] = min(low[parent], low[node])
                    gathered[parent] |= gathered[node]
        return self.reached[start]

    def close_component(self, root: str, stack: list[str], on_stack: set[str],
                        gathered: dict[str, int]) -> None:
        members = []
        while True:
            member = stack.pop()
            on_stack.discard(member)
            members.append(member)
            if member == root:
                break
        total = 0
        for member in members:
            total |= gathered[member]
        for member in members:
            gathered[member] = total
            self.reached[member] = total
