"""Conversion units: the instances one conversion patch converts, one
MAINTAINERS section each, and which unit owns which changed file."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from sem2mutex.model import Instance
from sem2mutex.series.includes import in_shared_header
from sem2mutex.series.prefixes import common_prefix, subject_prefix
from sem2mutex.series.rewrite import MUTEX, RewritePlan, RewriteResult
from sem2mutex.series.unparsed import UnparsedCall
from sem2mutex.tools.maintainers import FALLBACK_SECTION, Maintainers

PSEUDO_KINDS = ("pointer", "unresolved")


@dataclass
class ConversionUnit:
    """The instances one conversion patch converts: one MAINTAINERS section."""

    section: str
    prefix: str
    instances: list[Instance] = field(default_factory=list)
    # old-API calls in code spatch cannot parse, renamed by the lexer
    unparsed: list[UnparsedCall] = field(default_factory=list)

    @property
    def ids(self) -> set[str]:
        return {i.id for i in self.instances}


def home_file(inst: Instance) -> str:
    """The file that decides where an instance's patch goes: its declaration
    (a static's own file, whatever __alias() declares it elsewhere)."""
    if inst.kind == "static":
        return inst.file
    if inst.decls and inst.kind not in PSEUDO_KINDS:
        return inst.decls[0].file
    return inst.file


def prefix_file(inst: Instance) -> str:
    """The file whose subsystem names the patch: a struct declared in a
    shared header is named after the code that uses it."""
    home = home_file(inst)
    if not in_shared_header(home):
        return home
    users = Counter(s.location.file for s in inst.sites if not s.location.file.endswith(".h"))
    return users.most_common(1)[0][0] if users else home


def unit_key(inst: Instance, maintainers: Maintainers) -> tuple[str, str]:
    """(MAINTAINERS section, group): one conversion patch per key.

    An instance declared in a shared header takes the section of the code
    that uses it when the header's own is only THE REST; instances that
    still fall to THE REST are grouped by subject prefix, so one patch never
    spans unrelated drivers (a UFS field and an Input one).
    """
    section = maintainers.section_for(home_file(inst))
    if section == FALLBACK_SECTION and prefix_file(inst) != home_file(inst):
        section = maintainers.section_for(prefix_file(inst))
    group = subject_prefix(prefix_file(inst)) if section == FALLBACK_SECTION else ""
    return section, group


def conversion_units(instances: list[Instance], plan: RewritePlan,
                     maintainers: Maintainers) -> list[ConversionUnit]:
    planned = {e.instance for e in plan.edits}
    units: dict[tuple[str, str], ConversionUnit] = {}
    for inst in instances:
        if inst.id not in planned:
            continue
        key = unit_key(inst, maintainers)
        units.setdefault(key, ConversionUnit(key[0], "")).instances.append(inst)
    for unit in units.values():
        unit.prefix = common_prefix(sorted({prefix_file(i) for i in unit.instances}))
    return sorted(units.values(), key=lambda u: (u.prefix, u.section))


def file_owners(plan: RewritePlan, units: list[ConversionUnit]) -> dict[str, set[int]]:
    """file -> indexes of the units whose instances have edits in it."""
    unit_of = {iid: n for n, u in enumerate(units) for iid in u.ids}
    owners: dict[str, set[int]] = {}
    for e in plan.edits:
        if e.instance in unit_of:
            owners.setdefault(e.file, set()).add(unit_of[e.instance])
    return owners


def mutex_in(plan: RewritePlan, file: str) -> bool:
    return any(plan.targets.get(e.instance) == MUTEX for e in plan.edits if e.file == file)


def unit_view(whole: RewriteResult, unit: ConversionUnit, files: list[str]) -> RewriteResult:
    """The part of a whole-tree rewrite result that one unit commits."""
    return RewriteResult(
        files_changed=files,
        instances=[r for r in whole.instances if r.instance in unit.ids],
        includes=[inc for inc in whole.includes if inc.file in files],
        parse_errors={f: e for f, e in whole.parse_errors.items() if f in files},
        unplanned_changes=[l for l in whole.unplanned_changes if l.file in files],
        realigned=[r for r in whole.realigned if r.file in files],
        unconfirmed=[u for u in whole.unconfirmed if u.split(":", 1)[0] in files])
