"""Facts stage: run the semantic patches of cocci/facts/ over the tree and
turn their JSON lines into typed records.

Pass 1 (declarations.cocci) finds every semaphore variable and field; its
names then narrow pass 2's escape report.  Pass 2 (operations, pairing,
contexts, escapes) runs over the files that call the API or declare a
semaphore.  Pass 3 (wrappers, see wrappers.py) runs later, once the
lock/unlock wrapper functions are known.
"""
from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from .intake import CandidateFiles
from .model import (ApiCall, Callback, CallEdge, Escape, FactSet, FieldDecl, FunctionDef,
                    ParseFailure, Position, Target, VarDecl)
from .paths import COCCI_DIR
from .spatch import SpatchOutput, SpatchRunner, identifiers_in

FACTS_DIR = COCCI_DIR / "facts"
PASS1_RULES = [FACTS_DIR / "declarations.cocci"]
PASS2_RULES = [FACTS_DIR / name for name in
               ("operations.cocci", "pairing.cocci", "contexts.cocci", "escapes.cocci")]

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


def target_of(op: str, arg: str, shapes: list[dict]) -> Target:
    object_is_bare = op == "__SEMAPHORE_INITIALIZER"
    wanted = [s for s in shapes if s["addr"] != object_is_bare]
    if not object_is_bare and not any(s["addr"] for s in shapes):
        return Target("pointer", text=arg)
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


def api_calls(grouped: dict[str, list[dict]]) -> list[ApiCall]:
    shapes: dict[PosKey, list[dict]] = defaultdict(list)
    for rec in grouped.get("shape", []):
        shapes[key(rec)].append(rec)
    macros = {key(rec): rec["macro"] for rec in grouped.get("in_macro", [])}
    unpaired = {key(rec) for rec in grouped.get("unpaired", [])}
    calls = []
    seen: set[PosKey] = set()
    for rec in grouped.get("call", []):
        k = key(rec)
        if k in seen:
            continue
        seen.add(k)
        target = target_of(rec["op"], rec["arg"], shapes[k])
        calls.append(ApiCall(position(rec), rec["op"], target, rec.get("count"),
                             macros.get(k), k not in unpaired))
    return calls


# ---------------------------------------------------------------- context


def callbacks(grouped: dict[str, list[dict]]) -> list[Callback]:
    found = set()
    for rec in grouped.get("callback", []):
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

    def collect(self, files: CandidateFiles) -> FactSet:
        facts = FactSet()
        pass1 = self.runner.run("declarations", PASS1_RULES, files.declaring)
        grouped1 = by_kind(pass1.records)
        facts.var_decls = var_decls(grouped1)
        facts.field_decls = field_decls(grouped1)

        pass2_files = sorted(set(files.calling) | set(files.declaring))
        with tempfile.TemporaryDirectory(prefix="sem2mutex-names-") as tmp:
            names_file = Path(tmp) / "names.json"
            names_file.write_text(json.dumps(sorted(semaphore_names(facts))))
            pass2 = self.runner.run("operations", PASS2_RULES, pass2_files,
                                    env={"SEM2MUTEX_NAMES": str(names_file)})
        grouped2 = by_kind(pass2.records)
        facts.calls = api_calls(grouped2)
        facts.callbacks = callbacks(grouped2)
        facts.functions = functions(grouped2)
        facts.call_edges = call_edges(grouped2)
        facts.escapes = escapes(grouped2)
        facts.parse_failures = self.parse_failures(pass1, pass2)
        facts.files_scanned = len(set(files.declaring) | set(files.calling))
        return facts

    def parse_failures(self, *outputs: SpatchOutput) -> list[ParseFailure]:
        merged: dict[str, list[str]] = defaultdict(list)
        for out in outputs:
            for f, msgs in out.parse_errors.items():
                for m in msgs:
                    if m not in merged[f]:
                        merged[f].append(m)
        return [ParseFailure(f, "; ".join(msgs),
                             identifiers_in(self.runner.spatch, self.runner.tree, f))
                for f, msgs in sorted(merged.items())]


def semaphore_names(facts: FactSet) -> set[str]:
    """Variable names and innermost field names of every semaphore."""
    names = {d.name for d in facts.var_decls}
    names |= {f.field.split(".")[-1] for f in facts.field_decls}
    return names
