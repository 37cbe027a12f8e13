"""MAINTAINERS lookups: the section that groups a file's patch."""
from __future__ import annotations

from sem2mutex.tools.maintainers import (FALLBACK_SECTION, Maintainers, MaintainersFile,
                                        parse_maintainers)

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


# --------------------------------------------------------------------------
# Excerpts of MAINTAINERS for get_maintainer.pl (--mpath)

EXCERPT_SOURCE = b"""\
Descriptions of section entries and preferred order
\tF: *Files* and directories wildcard patterns.

Maintainers List
----------------

FOO DRIVER
M:\tFoo Person <foo@example.invalid>
F:\tdrivers/foo/

# a comment inside a section does not end it
F:\tinclude/linux/foo.h

BAR DRIVER
M:\tBar Person <bar@example.invalid>
F:\tdrivers/bar/bar_*.c

COMMA IN A NAME
F:\tDocumentation/devicetree/bindings/adi,baz.yaml

GLOB EARLY
F:\tdrivers/*/qux*

KEYWORD WATCHER
M:\tKey Person <key@example.invalid>
K:\t\\bfoo_magic\\b

NAME WATCHER
N:\tfoo

THE REST
M:\tChief <chief@example.invalid>
F:\t*
F:\t*/
"""


def excerpt_names(files: list[str]) -> list[str]:
    kept = MaintainersFile.parse(EXCERPT_SOURCE).excerpt(files).decode().splitlines()
    return [line for line in kept if line.isupper() and not line.startswith(("F:", "M:"))]


def test_an_excerpt_drops_only_the_sections_no_file_can_match():
    # GLOB EARLY: drivers/*/qux* may match whatever starts with drivers/
    assert excerpt_names(["drivers/foo/foo.c"]) == \
        ["FOO DRIVER", "GLOB EARLY", "KEYWORD WATCHER", "NAME WATCHER", "THE REST"]
    assert excerpt_names(["kernel/sched/core.c"]) == \
        ["KEYWORD WATCHER", "NAME WATCHER", "THE REST"]
    # the prefix before a wildcard decides: drivers/bar/bar_ may match
    assert "BAR DRIVER" in excerpt_names(["drivers/bar/bar_main.c"])
    assert "BAR DRIVER" not in excerpt_names(["drivers/bar/other.c"])
    assert "GLOB EARLY" in excerpt_names(["drivers/anything/else.c"])
    assert "COMMA IN A NAME" in excerpt_names(["Documentation/devicetree/bindings/adi,baz.yaml"])


def test_a_comment_or_a_blank_line_does_not_split_a_section():
    """get_maintainer.pl skips blank lines and comments, so FOO DRIVER's
    include/linux/foo.h entry is still FOO DRIVER's: kept for foo.h, and
    dropped with the rest of the section for other files."""
    kept = MaintainersFile.parse(EXCERPT_SOURCE).excerpt(["include/linux/foo.h"])
    assert b"FOO DRIVER\nM:\tFoo Person <foo@example.invalid>\nF:\tdrivers/foo/\n" in kept
    other = MaintainersFile.parse(EXCERPT_SOURCE).excerpt(["kernel/sched/core.c"])
    assert b"foo.h" not in other and b"Foo Person" not in other


def test_an_excerpt_keeps_the_preamble_and_the_kept_lines_byte_for_byte():
    source = EXCERPT_SOURCE.replace(b"Bar Person", "B\u00e4r Person".encode("latin-1"))
    kept = MaintainersFile.parse(source).excerpt(["drivers/bar/bar_main.c"])
    assert kept.startswith(EXCERPT_SOURCE[:EXCERPT_SOURCE.index(b"FOO DRIVER")])
    assert "B\u00e4r Person".encode("latin-1") in kept
    assert MaintainersFile.parse(source).excerpt(["drivers/foo/a.c", "drivers/bar/bar_a.c",
                                                  "include/linux/foo.h",
                                                  "drivers/x/qux.c", "Documentation/devicetree/"
                                                  "bindings/adi,baz.yaml"]) == source
