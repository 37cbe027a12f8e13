#!/bin/sh
# The two forms grep can be given names to find as words (tools/grep.py,
# word_options()): one -e pattern per name, and one ERE alternation.  For
# a growing number of names (identifiers sampled from the tree's
# include/linux, the same sample for both forms), the processor time of
# each over drivers/ and fs/, and whether they printed the same lines:
# what MAX_ALTERNATION is chosen from.  Around midnight of 7 December,
# the same lines every time; 6.1: 25-150 names 2.1-2.4 s as one
# alternation against 3.5-4.7 s, 200 2.5 s against 4.7 s, 300 3.6 s
# against 4.8 s, 600 92.3 s against 5.2 s; 2.6.11: 0.39-0.41 s against
# 0.66-0.86 s up to 150, 600 names 23.9 s against 0.9 s.  Prints
# figures; asserts nothing.
#
#   benchmarks/wordgrep.sh [TREE]     (default: the 6.1 tree in the cache)
set -eu
cd "$(dirname "$0")/.."
tree=${1:-${SEM2MUTEX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sem2mutex}/linux-source-6.1}
[ -d "$tree/drivers" ] || { echo "wordgrep.sh: no kernel tree at $tree" >&2; exit 2; }
/usr/bin/python3 - "$tree" <<'PY'
import random, resource, subprocess, sys
from sem2mutex.tools.grep import MAX_ALTERNATION, c_locale

tree = sys.argv[1]
listing = subprocess.run(["grep", "-r", "-h", "-o", "-E", "--include=*.h",
                          r"\b[a-z_][a-z0-9_]{5,20}\b", "include/linux"],
                         cwd=tree, capture_output=True, text=True, env=c_locale())
identifiers = sorted(set(listing.stdout.split()))
sample = random.Random(2).sample(identifiers, 600)


def run(options: list[str]) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(["grep", "-r", "-I", "--include=*.c", "--include=*.h", "-o",
                           *options, "--", "drivers", "fs"],
                          cwd=tree, capture_output=True, text=True, env=c_locale(),
                          errors="replace")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, done.stdout


print(f"{tree}: names as words over drivers/ and fs/, processor time "
      f"(word_options() makes one alternation up to {MAX_ALTERNATION} names)")
for count in (25, 50, 100, 150, 200, 300, 600):
    names = sorted(sample[:count])
    each, each_out = run(["-w", *[a for n in names for a in ("-e", n)]])
    alternation, alternation_out = run(["-w", "-E", "-e", "|".join(names)])
    same = "same lines" if each_out == alternation_out else "DIFFERENT LINES"
    print(f"  {count:4d} names: a pattern each {each:6.2f} s, one alternation "
          f"{alternation:6.2f} s ({same}, {len(each_out.splitlines())})")
PY
