"""A last check before a semaphore is called a mutex: every mention of
its name must be one of the facts the analysis understood.

The fact rules match the forms they know (API calls, declarations,
`&x` escapes).  Anything else that names the semaphore (an alias
attribute, sizeof, a struct copy, a use spatch did not parse) could
break the conversion, so it blocks the `mutex` class.  Coccinelle's own
lexer (`spatch --tokens-c`) lists the identifiers; no C is parsed here.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from sem2mutex.audit.intake import kernel_files_mentioning
from sem2mutex.audit.visibility import Visibility
from sem2mutex.model import WRAPPER_OPS, Instance, Location, Reason
from sem2mutex.tools.grep import GrepMemo, word_lines
from sem2mutex.tools.lexer import Lexer, Token, directives, if0_lines

VARIABLE_KINDS = ("global", "static", "local", "array")
FIELD_KINDS = ("field", "field-array")


@dataclass(frozen=True)
class Mention:
    line: int
    name: str
    member: bool  # follows `.` or `->`


def mentions_in(tokens: list[Token]) -> list[Mention]:
    mentions = []
    for i, tok in enumerate(tokens):
        if tok.identifier:
            prev = tokens[i - 1] if i else None
            member = bool(prev and not prev.identifier and prev.text in ("->", ".")
                          and prev.line == tok.line)
            mentions.append(Mention(tok.line, tok.text, member))
    return mentions


def explained_lines(inst: Instance) -> set[Location]:
    return ({d for d in inst.decls} | {i.location for i in inst.inits}
            | {s.location for s in inst.sites} | {e.pos.location for e in inst.escapes}
            | set(inst.aliased_at) | set(inst.exported_at))


def files_of(inst: Instance, unparsed: dict[str, set[str]] | None = None) -> set[str]:
    """The files where INST's mentions are looked for: its own for a
    static or local; for a global or a member, the files holding its
    facts and those UNPARSED names for it: files spatch did not parse (they
    name neither the API nor struct semaphore) that may take it through a
    macro standing for the API (2.6's XFS: psema(&sem, PINOD))."""
    if inst.kind in ("static", "local"):
        return {inst.file}
    return {loc.file for loc in explained_lines(inst)} | (unparsed or {}).get(inst.id, set())


def is_global(inst: Instance) -> bool:
    return inst.id.startswith("global:")


def api_macros(instances: list[Instance]) -> set[str]:
    """The macros standing for the API on a parameter of theirs (2.6's XFS:
    #define psema(sp, b) down(sp)), from their pointer instances."""
    return {op.macro for inst in instances if any(n.code == "macro-parameter" for n in inst.notes)
            for op in [*inst.sites, *inst.inits] if op.macro}


def unexplained_macro_uses(inst: Instance, mentions: dict[str, list[Mention]]
                           ) -> list[Location]:
    """The uses of INST's accessor macros that are none of its API calls
    (foo(PIPE_SEM(inode)) hands its address on): MENTIONS holds every
    file that names them."""
    known = explained_lines(inst)
    return [Location(f, m.line) for f in sorted(mentions) for m in mentions[f]
            if m.name in inst.through_macros and not m.member
            and Location(f, m.line) not in known]


def unexplained(inst: Instance, mentions: dict[str, list[Mention]],
                others: OthersFacts | None = None,
                unparsed: dict[str, set[str]] | None = None) -> list[Location]:
    """The lines of INST's files that name it where the analysis saw none
    of its facts, once per mention.  A line that names it no more often
    than OTHERS' facts there do is theirs: `down(&tuner->lock)` in a file
    that also has struct cam's `lock` is a call the types tied to struct
    tuner."""
    name = inst.name.split(".")[-1]
    want_member = inst.kind in FIELD_KINDS
    known = explained_lines(inst)
    found = []
    for f in sorted(files_of(inst, unparsed)):
        on_line = Counter(m.line for m in mentions.get(f, [])
                          if m.name == name and m.member == want_member)
        for line, count in sorted(on_line.items()):
            where = Location(f, line)
            if where in known:
                continue
            if others is not None and count <= others.at(where, name, want_member, inst.id):
                continue
            found += [where] * count
    return found


# What OthersFacts files another lock type's arguments under.
OTHER_LOCK = "another lock type"


@dataclass
class OthersFacts:
    """How many facts of each instance each line holds, by the name they
    mention.  A call, initialiser or escape names its semaphore once on its
    line, and a variable's declaration names it once.  Left out: calls that
    name it elsewhere or not at all (through a wrapper, a helper or an
    accessor macro, in a macro's body), and the pointer and unresolved
    pseudo-instances, which may be any semaphore."""

    by_place: dict[tuple[Location, str, bool], Counter]

    @classmethod
    def of(cls, instances: list[Instance],
           other_locks: list[tuple[Location, str, bool]] = ()) -> "OthersFacts":
        """INSTANCES' facts, and OTHER_LOCKS: the addresses given to another
        lock type's function (spin_lock(&ov->sbuf[i].lock)), no semaphore's."""
        by_place: dict[tuple[Location, str, bool], Counter] = defaultdict(Counter)
        for where, name, member in other_locks:
            by_place[(where, name, member)][OTHER_LOCK] += 1
        for inst in instances:
            if inst.kind not in VARIABLE_KINDS + FIELD_KINDS:
                continue
            name = inst.name.split(".")[-1]
            member = inst.kind in FIELD_KINDS
            for where in direct_fact_lines(inst):
                by_place[(where, name, member)][inst.id] += 1
        return cls(dict(by_place))

    def at(self, where: Location, name: str, member: bool, besides: str) -> int:
        """How many facts of instances other than BESIDES name NAME at WHERE."""
        counts = self.by_place.get((where, name, member), Counter())
        return sum(n for iid, n in counts.items() if iid != besides)


def direct_fact_lines(inst: Instance) -> list[Location]:
    # a wrapper's own up(), "released for its caller", names it on its line
    lines = [s.location for s in inst.sites
             if not (s.macro or s.op in WRAPPER_OPS or s.via_helper or s.through)]
    lines += [i.location for i in inst.inits if not (i.macro or i.through)]
    lines += [e.pos.location for e in inst.escapes]
    if inst.kind in VARIABLE_KINDS:
        lines += list(inst.decls)
    return lines


def needs_lexing(inst: Instance, textual: dict[str, dict[str, set[int]]],
                 unparsed: dict[str, set[str]] | None = None) -> set[str]:
    """The files where INST's name occurs as a word on a line the analysis
    did not explain: only there can the lexer find an unexplained use (its
    identifiers are a subset of grep's words, comments and strings aside)."""
    name = inst.name.split(".")[-1]
    known = explained_lines(inst)
    return {f for f in files_of(inst, unparsed)
            if any(Location(f, line) not in known
                   for line in textual.get(f, {}).get(name, ()))}


@dataclass
class MentionCheck:
    lexer: Lexer
    memo: GrepMemo | None = None
    visibility: Visibility | None = None  # None: every file sees every declaration

    def run(self, candidates: list[Instance], everyone: list[Instance],
            other_locks: list[tuple[Location, str, bool]] = ()) -> None:
        """Notes an unexplained use on each of CANDIDATES that has one;
        EVERYONE's facts and OTHER_LOCKS (OthersFacts.of) explain their own
        lines."""
        checked = [i for i in candidates if i.kind in VARIABLE_KINDS + FIELD_KINDS]
        others = OthersFacts.of(everyone, other_locks)
        unparsed = self.unparsed_files(checked, everyone)
        files = sorted({f for inst in checked for f in files_of(inst, unparsed)})
        # grep first: a file whose every mention sits on a known line needs
        # no lexing (lexing every file of every candidate costs minutes)
        textual = word_lines(self.lexer.tree, files,
                             {inst.name.split(".")[-1] for inst in checked}, memo=self.memo)
        suspicious = {inst.id: needs_lexing(inst, textual, unparsed) for inst in checked}
        lexed = sorted({f for fs in suspicious.values() for f in fs})
        mentions = {f: mentions_in(tokens)
                    for f, tokens in self.lexer.tokens_of(lexed).items()}
        macro_files = self.files_naming_macros(checked)
        mentions.update({f: mentions_in(tokens) for f, tokens in self.lexer.tokens_of(
            sorted(set().union(*macro_files.values()) - set(mentions))).items()})
        dead: dict[str, set[int]] = {}
        for inst in checked:
            where = unexplained(inst, {f: m for f, m in mentions.items()
                                       if f in suspicious[inst.id]}, others, unparsed)
            where = [w for w in where if w.line not in self.if0_lines(w.file, dead)]
            if where:
                inst.notes.append(Reason(
                    "unexplained-use", f"`{inst.name}` is named where the analysis saw no API call, "
                    "declaration or escape (an alias, sizeof, a copy, a macro argument...): "
                    + ", ".join(str(l) for l in where[:8]), tuple(where)))
            through = unexplained_macro_uses(inst, {
                f: mentions[f] for m in inst.through_macros for f in macro_files[m]})
            if through:
                names = ", ".join(f"{m}()" for m in inst.through_macros)
                inst.notes.append(Reason(
                    "unexplained-use", f"{names}, which its calls go through, is used where the "
                    "analysis saw none of its API calls (its address handed on?): "
                    + ", ".join(str(l) for l in through[:8]), tuple(through)))

    def if0_lines(self, rel: str, known: dict[str, set[int]]) -> set[int]:
        """REL's lines in #if 0 code (2.6's ip_vs_app.c: `#if 0000`), read
        only for a file with an unexplained mention, kept in KNOWN."""
        if rel not in known:
            known[rel] = if0_lines(directives(self.lexer.spatch, self.lexer.tree, rel,
                                              self.lexer.cache))
        return known[rel]

    def unparsed_files(self, checked: list[Instance], everyone: list[Instance]
                       ) -> dict[str, set[str]]:
        """Instance id -> the files that may take it where spatch did not
        look: for a global, every file naming it as a word; for a global
        or a member, every file naming a macro that stands for the API on
        its parameter.  Only the files that can see one of its
        declarations (acenic.h's member debug_lock is no use of s390's
        global debug_lock)."""
        globals_ = {inst.name for inst in checked if is_global(inst)}
        macros = api_macros(everyone)
        if not globals_ and not macros:
            return {}
        found = kernel_files_mentioning(self.lexer.tree, globals_ | macros, self.lexer.jobs,
                                        self.memo)
        through_macros = set().union(*(found.get(m, set()) for m in macros))
        result = {}
        for inst in checked:
            if inst.kind not in FIELD_KINDS and not is_global(inst):
                continue
            files = through_macros | (found.get(inst.name, set()) if is_global(inst) else set())
            result[inst.id] = {f for f in files if self.sees_one(f, inst.decls)}
        return result

    def sees_one(self, file: str, decls: list[Location]) -> bool:
        return self.visibility is None or any(self.visibility.sees(file, d.file) for d in decls)

    def files_naming_macros(self, checked: list[Instance]) -> dict[str, set[str]]:
        """Accessor macro -> the kernel files whose text names it as a word
        (grep: the lexer then tells identifiers from comments)."""
        names = {m for inst in checked for m in inst.through_macros}
        if not names:
            return {}
        return kernel_files_mentioning(self.lexer.tree, names, self.lexer.jobs, self.memo)
