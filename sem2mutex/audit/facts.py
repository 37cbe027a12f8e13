"""Facts stage: run the semantic patches of cocci/facts/ over the tree and
turn their JSON lines into typed records.

Parsing dominates spatch's cost, so each pass runs its rule files as one
program and each pass only gets the files that need it:

- pass 1 (declarations, operations) over every file the prefilter picked:
  the semaphores and the API calls;
- pass 2 (pairing, contexts, escapes) over the files where pass 1 found
  something, plus the files that mention a function which works on a
  semaphore through a pointer (its callers hand it their semaphore's
  address); pass 1's names narrow the escape report;
- pass 3 (wrappers.py) once the lock/unlock wrapper functions are known.
"""
from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from sem2mutex.audit.intake import CandidateFiles
from sem2mutex.model import (ApiCall, Callback, CallEdge, Escape, FactSet, FieldDecl, FunctionDef,
                    ParseFailure, Position, Target, VarDecl)
from sem2mutex.paths import COCCI_DIR
from sem2mutex.audit.intake import kernel_files_mentioning
from sem2mutex.tools.spatch import ParseError, SpatchOutput, SpatchRunner
from sem2mutex.tools.lexer import Lexer

FACTS_DIR = COCCI_DIR / "facts"
PASS1_RULES = [FACTS_DIR / "declarations.cocci", FACTS_DIR / "calls.cocci"]
PASS2_RULES = [FACTS_DIR / name for name in
               ("call_targets.cocci", "pairing.cocci", "contexts.cocci", "escapes.cocci")]

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

    The rules check that against the functions they have seen defined, a
    set that lives as long as the spatch process, which reads several
    files: the facts would depend on how the files were split between
    processes.  A function an ops structure names may be defined in
    another file (callback_targets picks its non-static definition); calls
    are only followed within a file.
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
                             rec.get("macro")))
    return decls


def field_decls(grouped: dict[str, list[dict]]) -> list[FieldDecl]:
    arrays = {key(rec) for rec in grouped.get("field_array", [])}
    fields = []
    seen: set[tuple[PosKey, str]] = set()
    for rec in grouped.get("field", []):
        if not is_named_type(rec["container"]):
            continue  # reported again by nested_field with its named holder
        k = (key(rec), rec["field"])
        if k in seen:
            continue
        seen.add(k)
        fields.append(FieldDecl(position(rec), rec["container"], rec["field"], key(rec) in arrays))
    return fields


# ------------------------------------------------------------------ calls


def field_candidates(shapes: list[dict]) -> tuple[tuple[str | None, str], ...]:
    """(container, field) readings of a field argument, most precise first."""
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


def target_of(op: str, arg: str, by_address: bool, shapes: list[dict]) -> Target:
    object_is_bare = op == "__SEMAPHORE_INITIALIZER"
    if not object_is_bare and not by_address:
        return Target("pointer", text=arg)
    wanted = [s for s in shapes if s["addr"] != object_is_bare]
    for shape in ("field_element", "field"):
        matching = [s for s in wanted if s["shape"] == shape]
        if matching:
            cands = field_candidates(matching)
            container, fld = cands[0]
            return Target(shape, container=container, field=fld, text=arg,
                          candidates=cands)
    for shape in ("element", "global", "local"):
        matching = [s for s in wanted if s["shape"] == shape]
        if matching:
            return Target(shape, name=matching[0]["name"], text=arg)
    return Target("unknown", text=arg)


def api_calls(grouped: dict[str, list[dict]], shape_records: list[dict]) -> list[ApiCall]:
    shapes: dict[PosKey, list[dict]] = defaultdict(list)
    for rec in shape_records:
        shapes[key(rec)].append(rec)
    macros = {key(rec): rec["macro"] for rec in grouped.get("in_macro", [])}
    by_address = {key(rec) for rec in grouped.get("by_address", [])}
    calls = []
    seen: set[PosKey] = set()
    for rec in grouped.get("call", []):
        k = key(rec)
        if k in seen:
            continue
        seen.add(k)
        target = target_of(rec["op"], rec["arg"], k in by_address, shapes[k])
        calls.append(ApiCall(position(rec), rec["op"], target, rec.get("count"),
                             macros.get(k), paired=True))
    return calls


def with_pairing(calls: list[ApiCall], grouped: dict[str, list[dict]]) -> list[ApiCall]:
    """Mark the up() calls pairing.cocci found unpaired."""
    unpaired = {key(rec) for rec in grouped.get("unpaired", [])}
    return [replace(c, paired=(c.pos.file, c.pos.line, c.pos.col) not in unpaired)
            for c in calls]


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
        found.add(Callback(position(rec), rec["name"], rec["context"], slot))
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


def escapes(grouped: dict[str, list[dict]]) -> list[Escape]:
    by_site: dict[tuple[PosKey, str], list[dict]] = defaultdict(list)
    for rec in grouped.get("escape", []):
        name = rec.get("field") or rec.get("name")
        by_site[((rec["file"], rec["line"], 0), name)].append(rec)
    result = []
    for recs in by_site.values():
        first = recs[0]
        if first["shape"] == "var":
            target = Target("var", name=first["name"], text=first["name"])
        else:
            cands = field_candidates([{**r, "shape": "field"} for r in recs])
            target = Target("field", container=cands[0][0], field=cands[0][1],
                            text=first["field"], candidates=cands)
        result.append(Escape(position(first), first["via"], first.get("callee"), target))
    return sorted(result, key=lambda e: (e.pos.file, e.pos.line))


# ------------------------------------------------------------------ stage


@dataclass
class FactCollector:
    runner: SpatchRunner
    lexer: Lexer

    def collect(self, files: CandidateFiles) -> FactSet:
        facts = FactSet()
        pass1_files = sorted(set(files.calling) | set(files.declaring))
        pass1 = self.runner.run("declarations and calls", PASS1_RULES, pass1_files)
        grouped1 = by_kind(pass1.records)
        facts.var_decls = var_decls(grouped1)
        facts.field_decls = field_decls(grouped1)
        facts.calls = api_calls(grouped1, [])

        pass2_files = files_with_facts(pass1.records)
        pass2_files |= set(self.pointer_callers(facts))
        with tempfile.TemporaryDirectory(prefix="sem2mutex-names-") as tmp:
            names_file = Path(tmp) / "names.json"
            names_file.write_text(json.dumps(sorted(semaphore_names(facts))))
            pass2 = self.runner.run("targets, pairing, contexts, escapes", PASS2_RULES,
                                    sorted(pass2_files),
                                    env={"SEM2MUTEX_NAMES": str(names_file)})
        grouped2 = same_file_only(by_kind(pass2.records))
        facts.calls = with_pairing(api_calls(grouped1, grouped2.get("shape", [])), grouped2)
        facts.callbacks = callbacks(grouped2)
        facts.functions = functions(grouped2)
        facts.call_edges = call_edges(grouped2)
        facts.escapes = escapes(grouped2)
        facts.parse_failures = self.parse_failures(pass1, pass2)
        facts.files_scanned = len(pass1_files)
        facts.pass2_files = set(pass2_files)
        return facts

    def pointer_callers(self, facts: FactSet) -> list[str]:
        """Files that mention a function doing down()/up() through a pointer."""
        names = {c.pos.function for c in facts.calls
                 if c.target.shape == "pointer" and c.macro is None}
        mentions = kernel_files_mentioning(self.runner.tree, names, self.runner.jobs)
        return sorted({f for files in mentions.values() for f in files})

    def parse_failures(self, *outputs: SpatchOutput) -> list[ParseFailure]:
        merged: dict[str, list[ParseError]] = defaultdict(list)
        for out in outputs:
            for f, errors in out.parse_errors.items():
                merged[f] += [e for e in errors if e not in merged[f]]
        files = sorted(merged)
        tokens = self.lexer.tokens_of(files)
        failures = []
        for f in files:
            errors = merged[f]
            # the lexer still tells which names the lines spatch skipped mention
            names = {t.text for t in tokens[f] if t.identifier
                     and any(e.first_line <= t.line <= e.last_line for e in errors)}
            failures.append(ParseFailure(f, "; ".join(e.message for e in errors),
                                         frozenset(names)))
        return failures


def add_context_records(facts: FactSet, records: list[dict]) -> None:
    """Merge context facts found after pass 2 (for wrapper callers)."""
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
