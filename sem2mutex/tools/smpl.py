"""sem2mutex's own SmPL programs as text: their rules renamed, kept to
some files, or what they print tagged, so that several copies of one rule
file can share a spatch run.

Only the rule headers (``@name depends on ...@``), the metavariable
declarations (``p << rule.p``, ``position rule.p``) and the calls of one
function in the script rules are touched, and a script rule may be added;
the rules' C patterns are left as they are.  This reads the SmPL of cocci/,
never C.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# A rule header: a line of its own between @s (the @@ closing the
# metavariables is no header).
HEADER = re.compile(r"^@(?!@)(?P<inside>.*)@[ \t]*$", re.M)
SCRIPT_KINDS = ("script:", "initialize:", "finalize:")
# A header's dependency, up to the words that may follow it.
DEPENDENCY = re.compile(r"\bdepends on\s+(?P<on>.*?)(?=\s+(?:exists|forall|disable|using)\b|$)")


@dataclass(frozen=True)
class Rule:
    header: str  # what is between the header's @s
    declarations: str  # the lines up to the @@ that closes them
    body: str  # the rest, up to the next rule

    @property
    def is_script(self) -> bool:
        return self.header.lstrip().startswith(SCRIPT_KINDS)

    @property
    def name(self) -> str | None:
        """The rule's name, if it has one."""
        words = self.header.split()
        if not words:
            return None
        if self.is_script:
            # @script:python name depends on ...@: the word after the kind
            return words[1] if len(words) > 1 and words[1] not in ("depends", "(") \
                and re.fullmatch(r"\w+", words[1]) else None
        return words[0] if words[0] not in ("depends", "exists", "forall") \
            and re.fullmatch(r"\w+", words[0]) else None

    def text(self) -> str:
        return f"@{self.header}@\n{self.declarations}{self.body}"


def split_rules(program: str) -> tuple[str, list[Rule]]:
    """PROGRAM's text before its first rule (virtual lines, comments), and
    its rules."""
    heads = list(HEADER.finditer(program))
    if not heads:
        return program, []
    rules = []
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(program)
        rest = program[head.end() + 1:end]
        close = re.search(r"^@@[ \t]*\n?", rest, re.M)
        cut = close.end() if close else 0
        rules.append(Rule(head["inside"], rest[:cut], rest[cut:]))
    return program[:heads[0].start()], rules


def renamed(program: str, prefix: str) -> str:
    """PROGRAM with PREFIX before each of its rule names, wherever a header
    or a metavariable declaration names the rule."""
    preamble, rules = split_rules(program)
    names = {r.name for r in rules if r.name}
    if not names:
        return program
    alternatives = "|".join(sorted(map(re.escape, names), key=len, reverse=True))
    as_word = re.compile(rf"\b({alternatives})\b")
    as_owner = re.compile(rf"\b({alternatives})\.(?=\w)")
    out = [preamble]
    for r in rules:
        header = as_word.sub(lambda m: prefix + m[1], r.header)
        declarations = as_owner.sub(lambda m: f"{prefix}{m[1]}.", r.declarations)
        out.append(Rule(header, declarations, r.body).text())
    return "".join(out)


def kept_to(program: str, files: list[str], gate: str) -> str:
    """PROGRAM with each of its matching rules run only on FILES: a script
    rule named GATE, first, fails on any other file, and every matching
    rule depends on it; a script rule runs on what those rules found, and
    one without metavariables on every file, as before.

    Not spatch's `depends on file in "..."`: spatch checks that for every
    rule on every top-level element of a file, turning each name the file
    does not have into a regular expression (2.6.11's wrapper run, three
    copies kept to their groups' files, 216 files in all, took 32 s
    against 15 s)."""
    if not files:
        raise ValueError("a program kept to no file")
    listed = ", ".join(repr(f) for f in sorted(files))
    gate_rule = (f"@script:python {gate}@\n@@\n"
                 f"if not {{{listed}}}.intersection(cocci.files()):\n"
                 f"\tcocci.include_match(False)\n\n")
    preamble, rules = split_rules(program)
    out = [preamble, gate_rule]
    for r in rules:
        if r.is_script:
            out.append(r.text())
            continue
        dependency = DEPENDENCY.search(r.header)
        if dependency:
            header = (r.header[:dependency.start("on")]
                      + f"{gate} && ({dependency['on'].strip()}) "
                      + r.header[dependency.end("on"):].lstrip()).rstrip()
        elif r.name:
            header = r.header.replace(r.name, f"{r.name} depends on {gate}", 1)
        else:
            header = f"depends on {gate} {r.header.strip()}".rstrip()
        out.append(Rule(header, r.declarations, r.body).text())
    return "".join(out)


def tagged(program: str, function: str, tag: int) -> str:
    """PROGRAM with each call of FUNCTION in its script rules' bodies made a
    call of FUNCTION_tagged with TAG first (which a rule of the caller's
    defines), so that what a copy of the rules prints tells which copy it
    is."""
    call = re.compile(rf"\b{re.escape(function)}\(")
    preamble, rules = split_rules(program)
    out = [preamble]
    for r in rules:
        body = r.body
        if r.header.lstrip().startswith("script:"):
            body = call.sub(f"{function}_tagged({tag}, ", body)
        out.append(Rule(r.header, r.declarations, body).text())
    return "".join(out)
