"""MAINTAINERS lookups: the section that groups a file's patch."""
from __future__ import annotations

from sem2mutex.tools.maintainers import FALLBACK_SECTION, Maintainers, parse_maintainers

MAINTAINERS = """\
Descriptions of section entries and preferred order
	F: *Files* and directories wildcard patterns.

Maintainers List
----------------

NETWORKING DRIVERS
L:	netdev@vger.kernel.org
S:	Odd Fixes
F:	drivers/net/
X:	drivers/net/wireless/

NETWORKING DRIVERS (WIRELESS)
L:	linux-wireless@vger.kernel.org
F:	drivers/net/wireless/

FOO ETHERNET DRIVER
F:	drivers/net/ethernet/foo/foo_main.c

TOP LEVEL NET HEADERS
F:	include/net/*

SAME PREFIX, FIRST
F:	drivers/tie/

SAME PREFIX, SECOND
F:	drivers/tie/

ANY KCONFIG
F:	*/Kconfig

THE REST
F:	*
F:	*/
"""


def test_parse_keeps_patterns_exclusions_and_lists():
    sections = {s.name: s for s in parse_maintainers(MAINTAINERS)}
    net = sections["NETWORKING DRIVERS"]
    assert (net.files, net.excluded, net.lists, net.status) == \
        (("drivers/net/",), ("drivers/net/wireless/",), ("netdev@vger.kernel.org",), "Odd Fixes")


def test_most_specific_pattern_wins():
    m = Maintainers(parse_maintainers(MAINTAINERS))
    assert m.section_for("drivers/net/ethernet/foo/foo_main.c") == "FOO ETHERNET DRIVER"
    assert m.section_for("drivers/net/ethernet/foo/foo_hw.c") == "NETWORKING DRIVERS"
    assert m.section_for("drivers/net/wireless/ath/mac.c") == "NETWORKING DRIVERS (WIRELESS)"


def test_wildcards_do_not_match_below_their_depth():
    m = Maintainers(parse_maintainers(MAINTAINERS))
    assert m.section_for("include/net/sock.h") == "TOP LEVEL NET HEADERS"
    assert m.section_for("include/net/netfilter/nf.h") == FALLBACK_SECTION
    assert m.section_for("lib/Kconfig") == "ANY KCONFIG"


def test_ties_go_to_the_first_section_and_unknown_files_to_the_rest():
    m = Maintainers(parse_maintainers(MAINTAINERS))
    assert m.section_for("drivers/tie/a.c") == "SAME PREFIX, FIRST"
    assert m.section_for("kernel/sched/core.c") == FALLBACK_SECTION
    assert Maintainers([]).section_for("kernel/sched/core.c") == FALLBACK_SECTION
