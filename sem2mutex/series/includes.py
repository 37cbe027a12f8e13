"""Where <linux/mutex.h> goes, and whether <linux/semaphore.h> stays.

    file state (rewrite_state.cocci), #include lines (Coccinelle's lexer)
        -> plan_include() -> IncludePlan -> mutex_include.cocci (+ named anchors)

A maintainer converting a driver by hand would:

- drop `#include <linux/semaphore.h>` from a file that names no semaphore
  any more (no struct semaphore, no down()/up()/down_sem() call, no
  DEFINE_SEMAPHORE), unless it is a header other files get their
  semaphores through;
- include <linux/mutex.h> where a struct mutex is now declared (or a file
  that dropped semaphore.h now calls mutex_lock()), and put it where the
  file's own order puts it: at its place in an alphabetical block of
  <linux/...> includes, else in place of the <linux/semaphore.h> it
  replaces, else after the file's <linux/...> includes.

Whether a file still uses a semaphore is spatch's answer (rewrite_state.cocci
reports every call, define, declaration and mention of the type); a file
spatch could not parse whole keeps its include.  The include names come
from Coccinelle's lexer, since SmPL cannot bind an #include's file name.
"""
from __future__ import annotations

from dataclasses import dataclass

MUTEX_H = "<linux/mutex.h>"
SEMAPHORE_H = "<linux/semaphore.h>"
LINUX = "<linux/"

AFTER, BEFORE, REPLACE, DROP = "after", "before", "replace", "drop"


@dataclass(frozen=True)
class IncludeLine:
    line: int
    header: str  # as written: "<linux/slab.h>", "\"esas2r.h\""


@dataclass(frozen=True)
class IncludePlan:
    """What to do with one file's includes."""

    file: str
    add: tuple[int, str, str] | None = None  # (line, AFTER/BEFORE/REPLACE, header there)
    drop: int | None = None  # the <linux/semaphore.h> line to remove (not replaced)
    keep_why: str = ""  # why <linux/semaphore.h> stays, when it does
    no_place: bool = False  # <linux/mutex.h> wanted, but the file has no #include

    @property
    def replaces(self) -> bool:
        return self.add is not None and self.add[1] == REPLACE

    @property
    def drops_semaphore_h(self) -> bool:
        return self.drop is not None or self.replaces


def in_shared_header(path: str) -> bool:
    """include/linux/foo.h, arch/x86/include/asm/foo.h: headers of no one driver."""
    return path.startswith("include/") or "/include/" in path


def linux_blocks(includes: list[IncludeLine]) -> list[list[IncludeLine]]:
    """Runs of <linux/...> includes on consecutive lines."""
    blocks: list[list[IncludeLine]] = []
    for inc in sorted(includes, key=lambda i: i.line):
        if not inc.header.startswith(LINUX):
            continue
        if blocks and blocks[-1][-1].line == inc.line - 1:
            blocks[-1].append(inc)
        else:
            blocks.append([inc])
    return blocks


def is_alphabetical(block: list[IncludeLine]) -> bool:
    names = [i.header for i in block]
    return len(names) >= 2 and names == sorted(names)


def mutex_place(includes: list[IncludeLine], semaphore: IncludeLine | None,
                dropping: bool) -> tuple[int, str, str] | None:
    """(line, AFTER/BEFORE/REPLACE, header at that line) for <linux/mutex.h>."""
    blocks = linux_blocks(includes)
    block = next((b for b in blocks if semaphore in b), blocks[0] if blocks else None)
    if block is not None and is_alphabetical(block):
        rest = [i for i in block if not (dropping and i == semaphore)]
        later = next((i for i in rest if i.header > MUTEX_H), None)
        if later is not None:
            return (later.line, BEFORE, later.header)
        return (rest[-1].line, AFTER, rest[-1].header)
    if semaphore is not None:
        return ((semaphore.line, REPLACE, semaphore.header) if dropping
                else (semaphore.line, AFTER, semaphore.header))
    if block is not None:
        return (block[-1].line, AFTER, block[-1].header)
    angle = [i for i in includes if i.header.startswith("<")]
    first = min(angle or includes, key=lambda i: i.line, default=None)
    return (first.line, BEFORE, first.header) if first else None


def plan_include(file: str, includes: list[IncludeLine], *, semaphore_left: bool,
                 keep_why: str, wants_mutex_h: bool, calls_mutex: bool,
                 has_mutex_h: bool) -> IncludePlan:
    """What a maintainer would do with FILE's includes after the rewrite.

    SEMAPHORE_LEFT: the file still names a semaphore (or spatch could not
    read it all); KEEP_WHY: another reason to keep <linux/semaphore.h>
    (files including this header use semaphores); WANTS_MUTEX_H: the file
    now declares a struct mutex; CALLS_MUTEX: it uses the mutex API at all.
    """
    semaphore = next((i for i in includes if i.header == SEMAPHORE_H), None)
    why = "the file still uses a semaphore" if semaphore_left else keep_why
    dropping = semaphore is not None and not why
    wanted = wants_mutex_h or (dropping and calls_mutex)
    if not wanted or has_mutex_h:
        return IncludePlan(file, drop=semaphore.line if dropping else None,
                           keep_why=why if semaphore is not None else "")
    place = mutex_place(includes, semaphore, dropping)
    if place is None:
        return IncludePlan(file, no_place=True, keep_why=why if semaphore else "")
    drop = semaphore.line if dropping and place[1] != REPLACE else None
    return IncludePlan(file, add=place, drop=drop, keep_why=why if semaphore else "")
