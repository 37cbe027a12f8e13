#!/bin/sh
# The review loop (issue 10): on the default tree (or TREE), the audit plus
# series cold (an empty cache), rerun unchanged, rerun after a reviewer's
# verdict (on the first instance it can pin, then on the one in the biggest
# file), and rerun after editing one file of a copy of the tree; the
# verdicts' outputs are compared with runs without cache, the unchanged
# rerun's with the cold run's (scripts/compare-outputs).
# Prints the figures; asserts nothing.
#
#   benchmarks/rerun.sh [TREE]
set -eu
cd "$(dirname "$0")/.."
tree=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/sem2mutex/linux-source-6.1}
[ -n "${SEM2MUTEX_CACHE:-}" ] && tree=${1:-$SEM2MUTEX_CACHE/linux-source-6.1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
identity="sem2mutex bench <bench@sem2mutex.invalid>"

timed() {  # LABEL OUT TREE ARGS... ; prints "LABEL: N.N s"
	label=$1 out=$2 t=$3; shift 3
	start=$(date +%s.%N)
	SEM2MUTEX_CACHE="$work/cache" ./convert.py -q -o "$work/$out" --identity "$identity" \
		"$t" "$@" 2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
	end=$(date +%s.%N)
	printf '%-44s %6.1f s\n' "$label:" "$(echo "$end - $start" | bc)"
}

# a verdict on an instance the cold run calls ambiguous only because no one
# could tell the context of its trylock: the first one (PICK=first), or the
# one in the biggest file, the slowest to rewrite again (PICK=biggest)
verdict() {
	/usr/bin/python3 - "$work/cold/audit.json" "$tree" "$1" <<'PY'
import json, os, sys
audit = json.load(open(sys.argv[1]))
tree, pick_by = sys.argv[2], sys.argv[3]
only_trylock = [i for i in audit["instances"] if i["class"] == "ambiguous"
                and [r["code"] for r in i["reasons"]] == ["trylock-context-unknown"]]
size = lambda i: max((os.path.getsize(os.path.join(tree, s["file"])) for s in i["sites"]),
                     default=0)
pick = max(only_trylock, key=size, default=None) if pick_by == "biggest" else \
    next(iter(only_trylock), None)
if pick:
    print(f'[[verdict]]\ninstance = "{pick["id"]}"\nclass = "mutex"\n'
          'reviewer = "A Reviewer <reviewer@example.invalid>"\n'
          'reason = "benchmarks/rerun.sh: a verdict to rerun after"')
PY
}

echo "tree: $tree, $(nproc) CPUs"
timed "cold (empty cache)" cold "$tree"
timed "rerun, nothing changed" warm "$tree"
verdict first >"$work/decisions.toml"
timed "rerun after a verdict" verdict "$tree" --decisions "$work/decisions.toml"
verdict biggest >"$work/biggest.toml"
timed "rerun after a verdict in $(sed -n 's/^instance = "\(.*\)"/\1/p' "$work/biggest.toml" |
	sed 's/.*://')" biggest "$tree" --decisions "$work/biggest.toml"
mkdir -p "$work/copy" && cp -al "$tree" "$work/copy/linux"
file=$(/usr/bin/python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); print(next(i["sites"][0]["file"] for i in a["instances"] if i["class"] == "counting" and i["sites"]))' "$work/cold/audit.json")
# a new file, not the hard link: the tree itself stays as it is
{ cat "$tree/$file"; echo "/* edited by benchmarks/rerun.sh */"; } >"$work/copy/edited"
mv "$work/copy/edited" "$work/copy/linux/$file"
timed "rerun after editing $file" edited "$work/copy/linux" --decisions "$work/decisions.toml"
for run in verdict:decisions biggest:biggest; do
	SEM2MUTEX_CACHE="$work/nocache" ./convert.py -q --no-cache -o "$work/${run%%:*}-cold" \
		--identity "$identity" "$tree" --decisions "$work/${run#*:}.toml" 2>/dev/null
	printf 'rerun after a verdict (%s) vs a run without cache: ' "${run#*:}"
	scripts/compare-outputs "$work/${run%%:*}-cold" "$work/${run%%:*}" | tail -1
done
printf 'rerun unchanged vs the cold run:             '
scripts/compare-outputs "$work/cold" "$work/warm" | tail -1
