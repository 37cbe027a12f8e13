"""Coccinelle's own lexer, for the code its parser gives up on.

`spatch --tokens-c FILE` prints every token with its byte offset, line and
column.  sem2mutex reads it in two places where spatch's semantic matching
cannot see: which names an unparsed region mentions (mentions.py), and the
old-API calls inside function-defining macros that only the lexer
understands (unparsed.py).  No C is tokenised here with a regex: the regex
reads spatch's token dump.
"""
from __future__ import annotations

import re
import time
from array import array
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NamedTuple

from sem2mutex.tools.cache import ResultCache, file_digest, no_cache
from sem2mutex.tools.spatch import token_dump, version

# Identifiers print as   Tag13 (("name", ((("name", charpos, line, col, "file"))...
# punctuation as         Tag17 (((("(", charpos, line, col, "file"))...
# One pattern for both: one scan of a dump that is 12 MB for a big file.
TOKEN = re.compile(r'^Tag\d+ \((?:\("(?P<identifier>[A-Za-z_][A-Za-z0-9_]*)", \(\(\("(?P=identifier)"'
                   r'|\(\(\("(?P<punctuation>->|\.|\(|\)|,|;)"), '
                   r'(?P<pos>\d+), (?P<line>\d+), (?P<col>\d+),', re.M)


class Token(NamedTuple):
    text: str
    offset: int  # byte offset in the file
    line: int
    col: int
    identifier: bool


def packed(tokens: list[Token]) -> tuple:
    """TOKENS column by column, for the cache: a big file has 100,000
    tokens, and unpickling five arrays takes milliseconds where decoding
    a JSON list of records took a third of a second."""
    return ("\n".join(t.text for t in tokens), array("q", [t.offset for t in tokens]),
            array("l", [t.line for t in tokens]), array("l", [t.col for t in tokens]),
            bytes(t.identifier for t in tokens))


def unpacked(columns: tuple) -> list[Token]:
    texts, offsets, lines, cols, identifiers = columns
    if not offsets:
        return []
    return list(map(Token, texts.split("\n"), offsets, lines, cols, map(bool, identifiers)))


def lex(spatch: Path, tree: Path, rel: str) -> list[Token]:
    """The identifier and punctuation tokens of REL, in file order."""
    dump = token_dump(spatch, tree, rel)
    found = [Token(m["identifier"] or m["punctuation"], int(m["pos"]), int(m["line"]),
                   int(m["col"]), m["identifier"] is not None)
             for m in TOKEN.finditer(dump)]
    return sorted(found, key=lambda t: t.offset)


@dataclass
class Lexer:
    """lex() with the answers kept: the analysis asks for the same files
    (parse failures, trylock files, mentions) in several stages, and a
    big file costs about a second; CACHE keeps them between runs, under a
    hash of the file's content and of spatch's version."""

    spatch: Path
    tree: Path
    jobs: int = 2
    cache: ResultCache = field(default_factory=no_cache)
    seconds_by_file: dict[str, float] = field(default_factory=dict)
    _seen: dict[str, list[Token]] = field(default_factory=dict, repr=False)
    _version: str | None = field(default=None, repr=False)
    _ahead: dict[str, Future] = field(default_factory=dict, repr=False)
    _ahead_pool: ThreadPoolExecutor | None = field(default=None, repr=False)

    def tokens(self, rel: str) -> list[Token]:
        return self.tokens_of([rel])[rel]

    def lex_ahead(self, files) -> None:
        """Start lexing FILES on one thread of its own, for a later
        tokens_of(): the stages running meanwhile leave a core idle at
        times (a last slow file of a spatch pass, Python alone).  The
        tokens are the same either way; a failure surfaces when tokens_of()
        asks."""
        if self._ahead_pool is None:
            self._ahead_pool = ThreadPoolExecutor(max_workers=1)
        for f in dict.fromkeys(files):
            if f not in self._seen and f not in self._ahead:
                self._ahead[f] = self._ahead_pool.submit(self.cached_lex, f)

    def close(self) -> None:
        """Drop what lex_ahead() has not started; wait for what it has."""
        for job in self._ahead.values():
            job.cancel()
        self._ahead.clear()
        if self._ahead_pool is not None:
            self._ahead_pool.shutdown()
            self._ahead_pool = None

    def tokens_of(self, files) -> dict[str, list[Token]]:
        wanted = list(dict.fromkeys(files))
        for f in wanted:
            job = self._ahead.pop(f, None)
            # started ahead and running: wait; not started yet: lex it here
            if job is not None and not job.cancel():
                self._seen[f] = job.result()
        todo = [f for f in wanted if f not in self._seen]
        with ThreadPoolExecutor(max_workers=max(1, self.jobs)) as pool:
            for rel, tokens in zip(todo, pool.map(self.cached_lex, todo)):
                self._seen[rel] = tokens
        return {f: self._seen[f] for f in wanted}

    def summaries(self, files, kind: str, summarize: Callable[[list[Token]], Any]
                  ) -> dict[str, Any]:
        """SUMMARIZE(tokens) of each of FILES, kept in the cache under KIND
        and the file's content, so a rerun reads a few bytes per file, not
        its tokens.  KIND must name everything SUMMARIZE depends on besides
        the tokens (the words it looks for), and its result must be JSON."""
        wanted = list(dict.fromkeys(files))
        keys = {f: self.cache.key("lexer-summary", kind, self.spatch_version(),
                                  file_digest(self.tree / f)) for f in wanted}
        found = {f: self.cache.get("lexer-summary", keys[f]) for f in wanted}
        todo = [f for f in wanted if found[f] is None]
        for f, tokens in self.tokens_of(todo).items():
            found[f] = summarize(tokens)
            self.cache.put("lexer-summary", keys[f], found[f])
        return found

    def spatch_version(self) -> str:
        if self._version is None:
            self._version = version(self.spatch)
        return self._version

    def cached_lex(self, rel: str) -> list[Token]:
        key = self.cache.key("lexer", self.spatch_version(), rel, file_digest(self.tree / rel))
        kept = self.cache.get_object("lexer-columns", key)
        if isinstance(kept, tuple):
            return unpacked(kept)
        started = time.monotonic()
        tokens = lex(self.spatch, self.tree, rel)
        self.seconds_by_file[rel] = time.monotonic() - started
        self.cache.put_object("lexer-columns", key, packed(tokens))
        return tokens


# Preprocessor directives, as the lexer prints them: every conditional and
# #include token carries its directive as written in its position tuple,
#   Tag118 ((("CONFIG_X"), (0), ((("#ifdef CONFIG_X", 164, 11, 0, "f.c")) ...
#   Tag115 (("#include ", "<linux/export.h>", (0), ((("#include <linux/export.h>", 0, 1, ...
# (the tag numbers differ between spatch versions, the tuples do not).  Only
# the tokens the lexer made of those directives are read: a "#if" inside a
# comment or a string is not a token of its own.
DIRECTIVE = re.compile(r'^Tag\d+ \(.*?\(\(\("(?P<text>#\s*(?P<keyword>ifdef|ifndef|if|elif|'
                       r'else|endif|include)\b(?:[^"\\]|\\.)*)", (?P<pos>\d+), (?P<line>\d+), '
                       r'(?P<col>\d+),', re.M)
UNESCAPE = {"\\n": "\n", "\\t": "\t", '\\"': '"', "\\\\": "\\"}


@dataclass(frozen=True)
class Directive:
    keyword: str  # ifdef, ifndef, if, elif, else, endif, include
    argument: str  # the rest of the line, continuation lines joined: "CONFIG_X", "<linux/mutex.h>"
    line: int


def unescape(text: str) -> str:
    return re.sub(r'\\[nt"\\]', lambda m: UNESCAPE[m.group()], text)


def directives(spatch: Path, tree: Path, rel: str,
               cache: ResultCache | None = None) -> list[Directive]:
    """The conditional (#if...#endif) and #include directives of REL, in
    file order, as Coccinelle's lexer found them; with CACHE, kept under
    the file's content (the export check reads the same core files at
    every run)."""
    if cache is None or cache.root is None:
        return lexed_directives(spatch, tree, rel)
    key = cache.key("directives", version(spatch), (tree / rel).read_bytes())
    kept = cache.get("directives", key)
    if isinstance(kept, list):
        return [Directive(*d) for d in kept]
    found = lexed_directives(spatch, tree, rel)
    cache.put("directives", key, [[d.keyword, d.argument, d.line] for d in found])
    return found


def if0_lines(found: list[Directive]) -> set[int]:
    """The lines of FOUND's file inside an #if 0 branch (`#if 0000` too),
    code spatch skips and no build compiles; its #else or #elif branch is
    live, as is every other conditional's code."""
    dead: set[int] = set()
    stack: list[bool] = []  # per open conditional: is its current branch #if 0's?
    previous = None
    for d in (d for d in found if d.keyword != "include"):
        inside = any(stack)
        if previous is not None and inside:
            dead.update(range(previous + 1, d.line))
        if d.keyword in ("if", "ifdef", "ifndef"):
            stack.append(d.keyword == "if" and re.fullmatch(r"\(*\s*0+\s*\)*", d.argument)
                         is not None)
        elif d.keyword in ("else", "elif") and stack:
            stack[-1] = False
        elif d.keyword == "endif" and stack:
            stack.pop()
        if inside and any(stack):  # a conditional within the dead code
            dead.add(d.line)
        previous = d.line
    return dead


def lexed_directives(spatch: Path, tree: Path, rel: str) -> list[Directive]:
    found = []
    for m in DIRECTIVE.finditer(token_dump(spatch, tree, rel)):
        text = unescape(m["text"]).replace("\\\n", " ")
        rest = text.lstrip("#").strip()[len(m["keyword"]):]
        if m["keyword"] != "include":  # a comment after #else/#endif is no argument
            rest = rest.split("/*", 1)[0].split("//", 1)[0]
        found.append(Directive(m["keyword"], " ".join(rest.split()), int(m["line"])))
    return sorted(found, key=lambda d: d.line)
