#!/bin/sh
# The review loop (issue 10): on the default tree (or TREE), the audit plus
# series cold (an empty cache), rerun unchanged, rerun after a reviewer's
# verdict, and rerun after editing one file of a copy of the tree; each
# warm output is compared with a run without cache (scripts/compare-outputs).
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

# a verdict on the first instance the cold run calls ambiguous only because
# no one could tell the context of its trylock
verdict() {
	/usr/bin/python3 - "$work/cold/audit.json" >"$work/decisions.toml" <<'PY'
import json, sys
audit = json.load(open(sys.argv[1]))
pick = next((i for i in audit["instances"] if i["class"] == "ambiguous"
             and [r["code"] for r in i["reasons"]] == ["trylock-context-unknown"]), None)
if pick:
    print(f'[[verdict]]\ninstance = "{pick["id"]}"\nclass = "mutex"\n'
          'reviewer = "A Reviewer <reviewer@example.invalid>"\n'
          'reason = "benchmarks/rerun.sh: a verdict to rerun after"')
PY
}

echo "tree: $tree, $(nproc) CPUs"
timed "cold (empty cache)" cold "$tree"
timed "rerun, nothing changed" warm "$tree"
verdict
timed "rerun after a verdict" verdict "$tree" --decisions "$work/decisions.toml"
mkdir -p "$work/copy" && cp -al "$tree" "$work/copy/linux"
file=$(/usr/bin/python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); print(next(i["sites"][0]["file"] for i in a["instances"] if i["class"] == "counting" and i["sites"]))' "$work/cold/audit.json")
# a new file, not the hard link: the tree itself stays as it is
{ cat "$tree/$file"; echo "/* edited by benchmarks/rerun.sh */"; } >"$work/copy/edited"
mv "$work/copy/edited" "$work/copy/linux/$file"
timed "rerun after editing $file" edited "$work/copy/linux" --decisions "$work/decisions.toml"
SEM2MUTEX_CACHE="$work/nocache" ./convert.py -q --no-cache -o "$work/verdict-cold" \
	--identity "$identity" "$tree" --decisions "$work/decisions.toml" 2>/dev/null
printf 'rerun after a verdict vs a run without cache: '
scripts/compare-outputs "$work/verdict-cold" "$work/verdict" | tail -1
printf 'rerun unchanged vs the cold run:             '
scripts/compare-outputs "$work/cold" "$work/warm" | tail -1
