#!/bin/sh
# What each spatch start costs before it reads a line of C: the processor
# time of the fact program (as sem2mutex combines cocci/facts/) and of each
# fact rule alone, on a file of one line, as sem2mutex starts spatch (the
# isomorphisms no rule uses turned off, tools/isos.py) and with all of
# standard.iso.  Every fact pass pays the fact program's once (1.0 s at
# c79bba2, 2.1 s after the lock-wrapper checks, whose isomorphisms it
# compiled, 1.0-1.25 s since b365504); until the passes became one spatch
# each, every chunk of a pass paid it.  Prints figures; asserts nothing.
set -eu
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'int sem2mutex_startup;\n' >"$work/one.c"
/usr/bin/python3 - "$work" <<'PY'
import resource, subprocess, sys
from pathlib import Path
from sem2mutex.audit.facts import FACT_RULES
from sem2mutex.tools.isos import UNUSED_ISOS, disabled_isos
from sem2mutex.tools.spatch import PYTHON, combine_rules, find_spatch

work = Path(sys.argv[1])
spatch = str(find_spatch())
program = work / "facts.cocci"
program.write_text(combine_rules(FACT_RULES))


def start_cost(sp_file: Path, isos_off: tuple[str, ...] = UNUSED_ISOS) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([spatch, *PYTHON, *disabled_isos(isos_off), "--very-quiet", "--no-includes",
                    "--no-show-diff", "-D", "report", "--sp-file", str(sp_file),
                    str(work / "one.c")],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def both(sp_file: Path) -> str:
    return f"{start_cost(sp_file):.2f} s ({start_cost(sp_file, ()):.2f} s with every isomorphism)"


print(f"fact program: {both(program)} of processor time per spatch start")
for rule in sorted(Path("cocci/facts").glob("*.cocci")):
    print(f"  {rule.name}: {both(rule)}")
PY
