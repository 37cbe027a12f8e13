"""Keep a retyped member's name in its display column.

    struct semaphore                mgmt_lock;     (name at column 40)
    struct mutex                    mgmt_lock;     (still at column 40)

spatch keeps the whitespace that followed the tokens it replaced, so
`struct semaphore<padding>name` becomes `struct mutex<padding>name`, four
columns to the left of the names aligned with it; a tab-aligned member
moves back a tab stop.  SmPL has no way to say how much whitespace to
print, so this is a post-pass, and deliberately a narrow one:

- it only touches a declaration spatch has just retyped, on the line the
  plan maps it to, and only the whitespace between the end of the type and
  the name, at the columns rewrite_state.cocci reported for the name before
  and after the rewrite (no C is read here: the line is cut at those
  columns);
- a single space stays a single space; padding is recomputed so that the
  name starts at its old display column (tabs of 8), with tabs if the old
  padding had any, else spaces;
- the caller re-reads the file with rewrite_state.cocci and checks that
  spatch still finds the same declaration at the column computed here
  (verify_alignment).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

TAB = 8


def display_width(text: str, start: int = 0) -> int:
    """The display column after TEXT, printed from column START."""
    col = start
    for ch in text:
        col = (col // TAB + 1) * TAB if ch == "\t" else col + 1
    return col


def padding_to(column: int, target: int, tabs: bool) -> str:
    """Whitespace from display COLUMN to TARGET, with tabs where allowed."""
    fill = ""
    if tabs:
        while (column // TAB + 1) * TAB <= target:
            fill += "\t"
            column = (column // TAB + 1) * TAB
    return fill + " " * max(0, target - column)


@dataclass(frozen=True)
class Realignment:
    file: str
    line: int  # in the file as it is now
    name: str
    column: int  # where the name is after the realignment (characters)


def realigned_line(old_line: str, old_column: int, new_line: str, new_column: int
                   ) -> tuple[str, int] | None:
    """NEW_LINE with the name at NEW_COLUMN moved back to the display
    column it had at OLD_COLUMN in OLD_LINE, and the name's new column;
    None when nothing is to be done (the old padding was one space, or the
    name is already there)."""
    before_name = old_line[:old_column]
    padding = before_name[len(before_name.rstrip(" \t")):]
    if padding in ("", " "):
        return None
    head = new_line[:new_column].rstrip(" \t")
    target = display_width(before_name)
    if display_width(head) >= target:  # the new type is longer: keep spatch's output
        return None
    fill = padding_to(display_width(head), target, "\t" in padding)
    if head + fill == new_line[:new_column]:
        return None
    return head + fill + new_line[new_column:], len(head + fill)


def realign(tree: Path, file: str, wanted: list[tuple[int, str, int, str, int]]
            ) -> list[Realignment]:
    """Apply realigned_line() to FILE for each (line now, name, column now,
    old line text, old column); returns what it changed."""
    path = tree / file
    data = path.read_bytes()
    lines = data.decode(errors="surrogateescape").split("\n")
    done = []
    for line, name, column, old_text, old_column in wanted:
        text = lines[line - 1]
        if text[column:column + len(name)] != name:  # not where spatch said: leave it
            continue
        changed = realigned_line(old_text, old_column, text, column)
        if changed:
            lines[line - 1], new_column = changed
            done.append(Realignment(file, line, name, new_column))
    if done:
        path.write_bytes("\n".join(lines).encode(errors="surrogateescape"))
    return done
