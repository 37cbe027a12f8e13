"""The isomorphisms of Coccinelle's standard.iso that sem2mutex turns off.

spatch tries every isomorphism of standard.iso on every rule of a program
as it reads it.  Of its 51, 31 apply to none of sem2mutex's rules: they
add no variant to any rule, so turning them off (--disable-iso) changes
no match, only the reading.  A spatch start with the fact program costs
0.58-0.81 s of processor time instead of 0.86-1.28 s (benchmarks/startup.sh,
two runs), one with wrapper_pairing.cocci 0.35 s instead of 0.47 s (the
first run); a cold 6.1 audit reads the fact program twice and the wrapper
rules seven times.

That they apply to no rule is checked, not assumed: spatch --parse-cocci
prints each rule as the isomorphisms expanded it, and tests/test_isos.py
compares that text with and without UNUSED_ISOS for every program
sem2mutex runs.  A new rule one of them applies to fails that test; drop
the name from UNUSED_ISOS (scripts/unused-isos lists the names that
apply to no program).
"""
from __future__ import annotations

# Each was turned off alone, and the expansion of every program compared
# (scripts/unused-isos); these changed none.
UNUSED_ISOS = (
    "drop_cast", "add_signed", "add_int1", "add_int2", "bitor_comm", "bitand_comm",
    "plus_comm", "mult_comm", "plus_assoc", "minus_assoc", "plus_minus_assoc1",
    "plus_minus_assoc2", "times_assoc", "div_assoc", "times_div_assoc1",
    "times_div_assoc2", "gtr_lss_eq", "inc", "for_inc", "unlikely", "bsd_branch_pred",
    "zero_multiple_format", "ne_if", "extern_decl_init", "static_decl_init", "braces0",
    "braces3", "ret", "mkinit", "fld_to_ptr", "sizeof_type_expr",
)


def disabled_isos(names: tuple[str, ...] = UNUSED_ISOS) -> list[str]:
    """spatch's arguments turning NAMES off."""
    return [arg for name in names for arg in ("--disable-iso", name)]
