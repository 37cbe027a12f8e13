"""The prefilter's last step: a file whose only mention of the semaphore
API is inside a string literal ("link not up (%s)") is not parsed, and it
is Coccinelle's lexer, not a pattern, that says so."""
from __future__ import annotations

import re
import textwrap

from sem2mutex.audit.intake import (CALL_TOKENS, DECL_TOKENS, CandidateFiles,
                                    drop_literal_mentions, grep_to_python, mention_flags,
                                    split_by_mentions)
from sem2mutex.tools.lexer import Lexer
from sem2mutex.tools.spatch import find_spatch

PATTERNS = [re.compile(grep_to_python(DECL_TOKENS)), re.compile(grep_to_python(CALL_TOKENS))]

FILES = {
    # only messages and a character literal name the API
    "drivers/x/messages.c": """\
        static const char *state = "link not up (%s)";
        static const char *sem = "struct semaphore";
        static char open = '(';
        void report(void) { printk("going down (%d)\\n", 1); }
        """,
    # a message, and a macro that really takes a semaphore
    "drivers/x/macro.c": """\
        static const char *state = "link not up (%s)";
        #define LOCK_IT(x) down(&(x)->sem)
        """,
    # an escaped quote inside the message, then a real call
    "drivers/x/escaped.c": """\
        void f(void) { printk("say \\"up (\\" now"); up(&lock); }
        """,
    # declares a semaphore; a message also names up()
    "drivers/x/declares.c": """\
        static const char *state = "link not up (%s)";
        static struct semaphore lock;
        """,
}


def write_tree(root):
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))


def test_mention_flags_tell_literals_from_code():
    assert mention_flags('x = "link up (%s)";', PATTERNS) == [False, True, False, False]
    assert mention_flags('x = "up ("; up(&s);', PATTERNS) == [False, True, False, True]
    assert mention_flags("c = '\"'; up(&s); d = '\"';", PATTERNS) == [False, True, False, True]
    assert mention_flags("int a;", PATTERNS) == [False, False, False, False]


def test_split_marks_the_files_mentioning_the_api_only_in_literals(tmp_path):
    write_tree(tmp_path)
    declaring, calling, in_literals = split_by_mentions(tmp_path, set(FILES))
    assert in_literals == {"drivers/x/messages.c"}
    assert "drivers/x/declares.c" in declaring
    assert {"drivers/x/macro.c", "drivers/x/escaped.c"} <= calling


def test_the_lexer_drops_a_file_only_when_no_token_uses_the_api(tmp_path):
    write_tree(tmp_path)
    lexer = Lexer(find_spatch(), tmp_path, jobs=2)
    everything = sorted(FILES)
    # every file is a suspect here: the lexer must still keep the ones
    # that use the API in code
    files = CandidateFiles(declaring=everything, calling=everything,
                           in_literals_only=everything)
    kept = drop_literal_mentions(files, lexer)
    assert kept.declaring == ["drivers/x/declares.c"]
    assert kept.calling == ["drivers/x/escaped.c", "drivers/x/macro.c"]
    assert kept.in_literals_only == []


def test_no_suspect_no_lexer(tmp_path):
    files = CandidateFiles(declaring=["a.h"], calling=["a.c"])
    # a lexer over a directory that has none of the files: never asked
    assert drop_literal_mentions(files, Lexer(find_spatch(), tmp_path)) is files
