"""Facts stage: run the semantic patches of cocci/facts/ over the tree and
turn their JSON lines into typed records.

Parsing dominates spatch's cost, so every fact rule runs in one program
and each file is parsed once; every rule only looks at its own file, so
the facts of a file depend on nothing else (and can be kept per file):

- the main pass (declarations, calls, argument trees, types, pairing,
  contexts, escapes) over every file the prefilter picked;
- a pass over the files that mention a function doing down()/up()
  through a pointer (its callers hand it their semaphore's address), one
  over the files naming a typedef of struct semaphore (2.6's XFS mutex_t,
  with typedef_declarations.cocci for its variables), and one over the
  headers that define the types the main pass left unknown (types.cocci
  only);
- wrappers.py once the lock/unlock wrapper functions are known.
"""
from __future__ import annotations

import re
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from sem2mutex.audit.intake import CandidateFiles
from sem2mutex.audit.typeindex import SEMAPHORE, CType
from sem2mutex.model import (ApiCall, Callback, CallEdge, Escape, Export, FactSet, FieldDecl,
                    FunctionDef, Location, ParseFailure, Position, SymbolAlias, Target,
                    VarDecl)
from sem2mutex.paths import COCCI_DIR
from sem2mutex.audit.intake import kernel_files_mentioning
from sem2mutex.audit.visibility import Visibility
from sem2mutex.tools.api import OTHER_LOCK_CALLS
from sem2mutex.tools.grep import GrepMemo, files_with_patterns, word_lines
from sem2mutex.tools.kernel_tree import is_kernel_source
from sem2mutex.tools.spatch import ParseError, SpatchOutput, SpatchRunner
from sem2mutex.tools.lexer import Lexer, Token

FACTS_DIR = COCCI_DIR / "facts"
FACT_RULES = [FACTS_DIR / f"{name}.cocci" for name in
              ("declarations", "calls", "access", "types", "pairing", "contexts", "escapes",
               "helpers")]
TYPE_RULES = [FACTS_DIR / "types.cocci"]
TYPEDEF_LIST_RULES = [FACTS_DIR / "typedef_lists.cocci"]
# the end of a struct declared with several names, "} foo_t, *pfoo_t;"
# (a prefilter: spatch decides)
TYPEDEF_LIST_END = r"^[[:space:]]*}[[:space:]]*[A-Za-z_][A-Za-z0-9_]*[[:space:]]*,"
TYPEDEF_RULES = FACTS_DIR / "typedef_declarations.cocci"
TYPEDEF_PLACEHOLDER = "sem_typedef_t"

ANONYMOUS_PREFIXES = ("struct {", "union {", "struct  {", "union  {")

PosKey = tuple[str, int, int]


def position(rec: dict) -> Position:
    return Position(rec["file"], rec["line"], rec["col"], rec.get("function") or "")


def key(rec: dict) -> PosKey:
    return (rec["file"], rec["line"], rec["col"])


def by_kind(records: list[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = defaultdict(list)
    for rec in records:
        grouped[rec["kind"]].append(rec)
    return grouped


def same_file_only(grouped: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Keep the calls of contexts.cocci to functions of their own file, and
    its ops callbacks that name a function some analysed file defines.

    contexts.cocci already reports only the calls to the functions of the
    file at hand (its set of them starts empty for each file); this keeps
    it so for records of any other origin.  ops records name every
    function an initializer holds: one may be defined in another file
    (callback_targets picks its non-static definition).  Calls are only
    followed within a file.
    """
    fndefs = grouped.get("fndef", [])
    defined = {(r["file"], r["name"]) for r in fndefs}
    anywhere = {r["name"] for r in fndefs}
    grouped["calls"] = [r for r in grouped.get("calls", [])
                        if (r["file"], r["callee"]) in defined]
    grouped["callback"] = [r for r in grouped.get("callback", [])
                           if r["context"] != "ops" or r["name"] in anywhere]
    return grouped


def is_named_type(container: str | None) -> bool:
    return bool(container) and not container.startswith(ANONYMOUS_PREFIXES)


# ------------------------------------------------------------ declarations


def var_decls(grouped: dict[str, list[dict]]) -> list[VarDecl]:
    storage: dict[PosKey, set[str]] = defaultdict(set)
    for rec in grouped.get("storage", []):
        storage[key(rec)].add(rec["storage"])
    decls = []
    seen: set[PosKey] = set()
    for rec in grouped.get("decl", []):
        k = key(rec)
        if k in seen:
            continue
        seen.add(k)
        kinds = storage[k]
        function = rec.get("function") or ""
        # spatch names a top-level declaration after itself (or
        # "something_else" for several declarators); inside a function body
        # the current element is the function.
        inside_function = function not in (rec["name"], "something_else", "")
        if "local" in kinds or inside_function:
            scope = "local"
        elif "static" in kinds:
            scope = "static"
        elif "extern" in kinds:
            scope = "extern"
        else:
            scope = "global"
        decls.append(VarDecl(position(rec), rec["name"], bool(rec.get("array")), scope,
                             rec.get("macro"), rec.get("typedef")))
    return decls


def field_decls(grouped: dict[str, list[dict]]) -> list[FieldDecl]:
    """The struct members types.cocci found declared as struct semaphore
    or a typedef of it (or an array of them), with the member path
    ("holder.sem")."""
    fields = []
    seen: set[tuple[PosKey, str]] = set()
    typedefs = set(semaphore_typedefs(grouped.get("typedef", [])))
    for rec in grouped.get("member", []):
        ctype = CType.parse(rec["type"])
        if ctype.base not in typedefs | {SEMAPHORE} or ctype.pointers or ctype.function:
            continue
        if not is_named_type(rec["container"]):
            continue
        k = (key(rec), rec["field"])
        if k in seen:
            continue
        seen.add(k)
        fields.append(FieldDecl(position(rec), rec["container"], rec["field"], ctype.array,
                                bool(rec.get("union")),
                                ctype.base if ctype.base != SEMAPHORE else None))
    return fields


def typedef_program(names: list[str]) -> str:
    """typedef_declarations.cocci with its rules once per NAME, the name
    written in place of the placeholder (SmPL constrains no type by a
    list)."""
    text = TYPEDEF_RULES.read_text()
    first_rule = text.index(f"@tdvar_{TYPEDEF_PLACEHOLDER}")
    head, rules = text[:first_rule], text[first_rule:]
    return head + "\n".join(rules.replace(TYPEDEF_PLACEHOLDER, n) for n in names)


def semaphore_typedefs(typedefs: list[dict]) -> list[str]:
    """The names TYPEDEFS (typedef records) give struct semaphore, through
    other typedefs too; a name also typedef'd to something else is none."""
    targets: dict[str, set[CType]] = defaultdict(set)
    for rec in typedefs:
        targets[rec["name"]].add(CType.parse(rec["type"]))
    names: set[str] = set()
    grown = True
    while grown:
        grown = False
        for name, types in targets.items():
            if name not in names and all(
                    t.base in names | {SEMAPHORE} and not (t.pointers or t.array or t.function)
                    for t in types):
                names.add(name)
                grown = True
    return sorted(names)


# ------------------------------------------------------------------ calls


def failed_acquires(unpaired: list[dict]) -> dict[PosKey, tuple[str, int]]:
    """For each release the pairing rules report a failed conditional
    down leads to, that down (op, line): the first one in the file."""
    found: dict[PosKey, tuple[str, int]] = {}
    for rec in unpaired:
        if rec.get("failed"):
            acquire = (rec["failed_op"], rec["failed"])
            found[key(rec)] = min(acquire, found.get(key(rec), acquire), key=lambda a: a[1])
    return found


def api_calls(grouped: dict[str, list[dict]]) -> list[ApiCall]:
    macros = {key(rec): rec["macro"] for rec in grouped.get("in_macro", [])}
    params = {key(rec): rec["param"] for rec in grouped.get("on_macro_param", [])}
    by_address = {key(rec) for rec in grouped.get("by_address", [])}
    unpaired = {key(rec) for rec in grouped.get("unpaired", [])}
    released_after: dict[PosKey, int] = {}
    for rec in grouped.get("unpaired", []):
        if rec.get("after"):
            released_after[key(rec)] = min(rec["after"], released_after.get(key(rec), rec["after"]))
    failed = failed_acquires(grouped.get("unpaired", []))
    returned = {key(rec): rec["by"] for rec in grouped.get("failure_returned", [])}
    calls = []
    seen: set[PosKey] = set()
    # in file order: the order spatch finds matches in changes with the
    # rule's pattern, and the first call of an instance names its line
    for rec in sorted(grouped.get("call", []), key=key):
        k = key(rec)
        if k in seen:
            continue
        seen.add(k)
        calls.append(ApiCall(position(rec), rec["op"], rec["arg"], k in by_address,
                             rec.get("count"), macros.get(k), paired=k not in unpaired,
                             released_after=released_after.get(k), args=rec.get("args"),
                             failed_acquire=failed.get(k), failure_returned=returned.get(k),
                             macro_param=params.get(k)))
    return calls


def files_with_facts(records: list[dict]) -> set[str]:
    return {rec["file"] for rec in records}


# ---------------------------------------------------------------- context


def callbacks(grouped: dict[str, list[dict]]) -> list[Callback]:
    found = set()
    # A registration the rules recognise (request_irq(), timer_setup(), ...)
    # says more than the generic "its address is passed on".
    specific = {(r["file"], r["line"], r["name"]) for r in grouped.get("callback", [])
                if r["context"] != "pointer"}
    for rec in grouped.get("callback", []):
        if rec["context"] == "pointer" and (rec["file"], rec["line"], rec["name"]) in specific:
            continue
        slot = f'{rec["ops"]}.{rec["slot"]}' if rec.get("slot") else None
        found.add(Callback(position(rec), rec["name"], rec["context"], slot,
                           rec.get("holder"), rec.get("name_line")))
    return sorted(found, key=lambda c: (c.pos.file, c.pos.line, c.name))


def functions(grouped: dict[str, list[dict]]) -> list[FunctionDef]:
    static = {key(rec) for rec in grouped.get("fnstatic", [])}
    seen = set()
    result = []
    for rec in grouped.get("fndef", []):
        k = (rec["file"], rec["name"])
        if k in seen:
            continue
        seen.add(k)
        result.append(FunctionDef(rec["file"], rec["name"], rec["line"], key(rec) in static))
    return result


def call_edges(grouped: dict[str, list[dict]]) -> list[CallEdge]:
    edges = {CallEdge(rec["file"], rec.get("function") or "", rec["callee"])
             for rec in grouped.get("calls", [])}
    return sorted(edges, key=lambda e: (e.file, e.caller, e.callee))


def field_candidates(shapes: list[dict]) -> tuple[tuple[str | None, str], ...]:
    """(container, field) readings of a field, most precise first."""
    named = [(s["container"], s["field"]) for s in shapes if is_named_type(s.get("container"))]
    # Longer paths ("cmd.poll_sem") name the outermost struct: try the
    # innermost named struct first, as the declaration facts do.
    named.sort(key=lambda cf: cf[1].count("."))
    untyped = [(None, s["field"]) for s in shapes if not s.get("container")]
    ordered: list[tuple[str | None, str]] = []
    for cand in named + untyped:
        if cand not in ordered:
            ordered.append(cand)
    return tuple(ordered)


def escapes(grouped: dict[str, list[dict]], names: set[str]) -> list[Escape]:
    """The escapes of NAMES (the semaphores' names): escapes.cocci reports
    every &field and &variable leaving the API, whatever it is; an address
    given to another lock type's function (spin_lock()) is none."""
    by_site: dict[tuple[PosKey, str], list[dict]] = defaultdict(list)
    for rec in grouped.get("escape", []):
        name = rec.get("field") or rec.get("name")
        if name not in names or rec.get("callee") in OTHER_LOCK_CALLS:
            continue
        by_site[((rec["file"], rec["line"], rec["col"]), name)].append(rec)
    result = []
    for recs in by_site.values():
        first = recs[0]
        if first["shape"] == "var":
            target = Target("var", name=first["name"], text=first["name"])
        else:
            cands = field_candidates(recs)
            target = Target("field", container=cands[0][0], field=cands[0][1],
                            text=first["field"], candidates=cands)
        result.append(Escape(position(first), first["via"], first.get("callee"), target))
    return sorted(result, key=lambda e: (e.pos.file, e.pos.line))


# ------------------------------------------------------------------ stage


@dataclass
class FactCollector:
    runner: SpatchRunner
    lexer: Lexer
    memo: GrepMemo | None = None
    # the files searched for typedefs of several names (typedef_lists())
    searched_for_lists: set[str] = field(default_factory=set)

    def collect(self, files: CandidateFiles) -> FactSet:
        main_files = sorted(set(files.calling) | set(files.declaring))
        outputs = [self.runner.run("facts", FACT_RULES, main_files)]
        first = by_kind(outputs[0].records)
        # the pointer callers can only add names: these files are lexed anyway
        self.lexer.lex_ahead(self.skipped_mentions(names_declared(first), outputs[0]))
        # What only the prefilter's files decide runs beside the pointer
        # callers' whole-tree grep and spatch run, each of which leaves a
        # core idle at times (spatch reads its program on one).
        with ThreadPoolExecutor(max_workers=1) as beside:
            in_lists = beside.submit(self.declared_in_typedef_lists, files.declaring)
            aliases = beside.submit(self.symbol_aliases, files.declaring)
            pointer_files = sorted(set(self.pointer_callers(api_calls(first)))
                                   - set(main_files))
            if pointer_files:
                outputs.append(self.runner.run("facts of pointer callers", FACT_RULES,
                                               pointer_files))
            typedef_files = self.typedef_users(first.get("typedef", []),
                                               set(main_files) | set(pointer_files), outputs)
            facts = facts_from_records([r for out in outputs for r in out.records]
                                       + in_lists.result())
            facts.symbol_aliases = aliases.result()
        facts.parse_failures = self.parse_failures(semaphore_names(facts), *outputs)
        facts.files_scanned = len(main_files)
        facts.pass2_files = set(main_files) | set(pointer_files) | set(typedef_files)
        facts.parsed_files = set(facts.pass2_files)
        return facts

    def declared_in_typedef_lists(self, declaring: list[str]) -> list[dict]:
        """typedef_lists.cocci's facts of the files that may declare a
        semaphore in the struct of a typedef of several names (2.6's
        dabusb.h: typedef struct { struct semaphore mutex; ... } dabusb_t,
        *pdabusb_t;): no other rule sees its members.  Only the records:
        the facts program reported these files' parse errors."""
        found = sorted(files_with_patterns(self.runner.tree, sorted(declaring),
                                           [TYPEDEF_LIST_END], memo=self.memo))
        self.searched_for_lists |= set(found)
        if not found:
            return []
        return self.runner.run("typedefs of several names", TYPEDEF_LIST_RULES, found).records

    def symbol_aliases(self, declaring: list[str]) -> list[SymbolAlias]:
        """The semaphores declared as another's alias (6.1's
        extern struct semaphore __efi_uv_runtime_lock __alias(efi_runtime_lock);),
        which spatch 1.1.1 does not parse: read from Coccinelle's lexer, in
        the files grep finds the macro in."""
        found = sorted(files_with_patterns(self.runner.tree, sorted(declaring),
                                           [r"\b__alias[[:space:]]*\("], memo=self.memo))
        return [alias for rel, tokens in self.lexer.tokens_of(found).items()
                for alias in aliases_in(rel, tokens)]

    def typedef_users(self, typedefs: list[dict], parsed: set[str],
                      outputs: list[SpatchOutput]) -> list[str]:
        """2.6's XFS: typedef struct semaphore mutex_t; mutex_t m_ilock; in
        headers that name no semaphore.  The files naming a typedef of
        struct semaphore are parsed too (those the prefilter did not
        pick: every fact rule), and their variables of that type reported
        (typedef_declarations.cocci, once per name); appends to OUTPUTS,
        returns the files parsed anew."""
        names = semaphore_typedefs(typedefs)
        if not names:
            return []
        naming = sorted({f for files in kernel_files_mentioning(
            self.runner.tree, set(names), self.runner.jobs, self.memo).values() for f in files})
        new = [f for f in naming if f not in parsed]
        if new:
            outputs.append(self.runner.run("facts of semaphore typedef users", FACT_RULES, new))
        outputs.append(self.runner.run_program("typedef declarations", typedef_program(names),
                                               naming))
        return new

    def more_types(self, missing: set[tuple[str, str, str]], visibility: Visibility,
                   parsed: set[str]) -> list[dict]:
        """The type facts of the files that may declare what MISSING names."""
        return self.header_types(missing, visibility, parsed) + \
            self.typedef_lists(missing, visibility)

    def header_types(self, missing: set[tuple[str, str, str]], visibility: Visibility,
                     parsed: set[str]) -> list[dict]:
        """types.cocci's facts of the headers, not parsed yet, that the files
        asking for MISSING declarations include and that may declare them
        (struct mm_struct of <linux/sched.h>, which mentions no semaphore)."""
        headers = {h for h in visibility.closure({from_file for _, _, from_file in missing})
                   if h.endswith(".h")} - parsed
        patterns = sorted({declaring_patterns(kind, name) for kind, name, _ in missing})
        found = sorted(f for f in files_with_patterns(self.runner.tree, sorted(headers), patterns,
                                                      memo=self.memo)
                       if is_kernel_source(f))
        if not found:
            return []
        out = self.runner.run("types of included headers", TYPE_RULES, found)
        parsed.update(found)
        return out.records

    def typedef_lists(self, missing: set[tuple[str, str, str]],
                      visibility: Visibility) -> list[dict]:
        """typedef_lists.cocci's facts of the files that may declare a
        typedef MISSING names among others (typedef struct { ... } a_t,
        *pa_t;), which types.cocci cannot see: the asking files and what
        they see, parsed already or not."""
        names = {name for kind, name, _ in missing if kind == "typedef"}
        askers = {from_file for kind, _, from_file in missing if kind == "typedef"}
        files = (askers | visibility.closure(askers)) - self.searched_for_lists
        if not names or not files:
            return []
        self.searched_for_lists |= files
        patterns = sorted(rf"\b{re.escape(name)}[[:space:]]*[,;]" for name in names)
        found = sorted(f for f in files_with_patterns(self.runner.tree, sorted(files), patterns,
                                                      memo=self.memo)
                       if is_kernel_source(f))
        if not found:
            return []
        return self.runner.run("typedefs of several names", TYPEDEF_LIST_RULES, found).records

    def pointer_callers(self, calls: list[ApiCall]) -> list[str]:
        """Files that mention a function doing down()/up() through a pointer."""
        names = {c.pos.function for c in calls if not c.by_address and c.macro is None
                 and c.op != "__SEMAPHORE_INITIALIZER"}
        mentions = kernel_files_mentioning(self.runner.tree, names, self.runner.jobs, self.memo)
        return sorted({f for files in mentions.values() for f in files})

    def parse_failures(self, names: set[str], *outputs: SpatchOutput) -> list[ParseFailure]:
        """The files spatch skipped code of, with the semaphore NAMES the
        skipped lines mention, as Coccinelle's lexer reads them (a name in
        a comment is no use).  grep first: a file whose skipped lines do not
        contain any of NAMES as a word needs no lexing."""
        merged = merged_parse_errors(outputs)
        tokens = self.lexer.tokens_of(self.skipped_mentions(names, *outputs))
        failures = []
        for f in sorted(merged):
            errors = merged[f]
            file_tokens = tokens.get(f, [])
            skipped = [(i, t) for i, t in enumerate(file_tokens) if t.identifier
                       and t.text in names
                       and any(e.first_line <= t.line <= e.last_line for e in errors)]
            plain = {t.text for i, t in skipped
                     if not (i and file_tokens[i - 1].text in ("->", "."))}
            failures.append(ParseFailure(f, "; ".join(e.message for e in errors),
                                         frozenset(t.text for _, t in skipped),
                                         frozenset(plain)))
        return failures

    def skipped_mentions(self, names: set[str], *outputs: SpatchOutput) -> list[str]:
        """The files whose skipped lines have one of NAMES as a word."""
        merged = merged_parse_errors(outputs)
        files = sorted(merged)
        textual = word_lines(self.runner.tree, files, names, memo=self.memo)
        return [f for f in files if any(
            e.first_line <= line <= e.last_line for e in merged[f]
            for lines in textual.get(f, {}).values() for line in lines)]


def aliases_in(rel: str, tokens: list[Token]) -> list[SymbolAlias]:
    """[struct] semaphore NAME __alias ( TARGET ) among TOKENS (the lexer's
    identifiers and punctuation: no keyword)."""
    texts = [t.text for t in tokens]
    return [SymbolAlias(Location(rel, tokens[i + 1].line), texts[i + 1], texts[i + 4])
            for i in range(len(tokens) - 5)
            if texts[i] == "semaphore" and texts[i + 2:i + 4] == ["__alias", "("]
            and texts[i + 5] == ")" and tokens[i + 1].identifier and tokens[i + 4].identifier]


def merged_parse_errors(outputs: tuple[SpatchOutput, ...]) -> dict[str, list[ParseError]]:
    merged: dict[str, list[ParseError]] = defaultdict(list)
    for out in outputs:
        for f, errors in out.parse_errors.items():
            merged[f] += [e for e in errors if e not in merged[f]]
    return merged


def declaring_patterns(kind: str, name: str) -> str:
    """An ERE for the lines that may declare NAME (a prefilter: spatch decides)."""
    word = re.escape(name)
    if kind == "struct":
        return rf"(struct|union)[[:space:]]+{word}[[:space:]]*(\{{|$)"
    if kind == "typedef":
        return rf"\b{word}[[:space:]]*(;|\[)"
    if kind == "function":
        return rf"\b{word}[[:space:]]*\("
    if kind == "macro":
        return rf"define[[:space:]]+{word}\("
    return rf"(\b{word}[[:space:]]*(;|=|\[)|define[[:space:]]+{word}\b)"


def other_lock_arguments(grouped: dict[str, list[dict]]) -> list[tuple[Location, str, bool]]:
    """The addresses given to another lock type's function (escapes()
    drops them): each names a member or variable that is no semaphore."""
    found = {(Location(r["file"], r["line"]), r.get("field") or r.get("name"),
              r["shape"] == "field")
             for r in grouped.get("escape", []) if r.get("callee") in OTHER_LOCK_CALLS}
    return sorted(found, key=lambda a: (a[0].file, a[0].line, a[1], a[2]))


def exports(grouped: dict[str, list[dict]], names: set[str]) -> list[Export]:
    """The exports of names a semaphore variable has somewhere."""
    return [Export(position(r), r["name"], r["macro"]) for r in grouped.get("export", [])
            if r["name"] in names]


def facts_from_records(records: list[dict]) -> FactSet:
    grouped = by_kind(records)
    facts = FactSet()
    facts.var_decls = var_decls(grouped)
    facts.field_decls = field_decls(grouped)
    facts.calls = api_calls(grouped)
    local = same_file_only(grouped)
    facts.callbacks = callbacks(local)
    facts.functions = functions(local)
    facts.call_edges = call_edges(local)
    facts.escapes = escapes(grouped, semaphore_names(facts))
    facts.exports = exports(grouped, {d.name for d in facts.var_decls})
    facts.other_lock_arguments = other_lock_arguments(grouped)
    facts.object_macros = {r["macro"] for r in grouped.get("in_macro", []) if r.get("object_like")}
    facts.access_records = [r for r in records if r["kind"].startswith("acc_")]
    facts.type_records = [r for r in records if r["kind"] in TYPE_KINDS]
    facts.helper_records = [r for r in records if r["kind"] in HELPER_KINDS]
    facts.call_sites = sorted({(r["file"], r["line"], r.get("function") or "", r["callee"])
                               for r in local.get("calls", [])})
    return facts


TYPE_KINDS = ("member", "typedef", "returns", "variable", "call_alias", "macro_member",
              "macro_accessor")
HELPER_KINDS = ("sem_param", "param_passed", "param_other", "local_assigned", "local_other",
                "handoff", "unheld_handoff", "up_after_handoff")


def add_context_records(facts: FactSet, records: list[dict]) -> None:
    """Merge context facts found after the main pass (for wrapper callers)."""
    grouped = same_file_only(by_kind(records))
    facts.callbacks = sorted(set(facts.callbacks) | set(callbacks(grouped)),
                             key=lambda c: (c.pos.file, c.pos.line, c.name))
    known = {(f.file, f.name) for f in facts.functions}
    facts.functions += [f for f in functions(grouped) if (f.file, f.name) not in known]
    facts.call_edges = sorted(set(facts.call_edges) | set(call_edges(grouped)),
                              key=lambda e: (e.file, e.caller, e.callee))


def semaphore_names(facts: FactSet) -> set[str]:
    """Variable names and innermost field names of every semaphore."""
    names = {d.name for d in facts.var_decls}
    names |= {f.field.split(".")[-1] for f in facts.field_decls}
    return names


def names_declared(grouped: dict[str, list[dict]]) -> set[str]:
    """semaphore_names() of the facts these records make."""
    return ({d.name for d in var_decls(grouped)}
            | {f.field.split(".")[-1] for f in field_decls(grouped)})
