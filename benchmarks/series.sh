#!/bin/sh
# Wall time of analysis plus series generation on the default tree (or
# TREE), the main job without a proof stage (issue: at most 3 minutes on 2
# cores).  Prints the figures; asserts nothing.
#
#   benchmarks/series.sh [TREE]
set -eu
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
start=$(date +%s.%N)
./convert.py -q -o "$out/series" --identity "sem2mutex bench <bench@sem2mutex.invalid>" "$@" \
    2>"$out/stderr" || { cat "$out/stderr" >&2; exit 1; }
end=$(date +%s.%N)
/usr/bin/python3 - "$out/series" "$start" "$end" <<'PY'
import json, os, sys
from pathlib import Path
out = Path(sys.argv[1])
wall = float(sys.argv[3]) - float(sys.argv[2])
audit = json.load(open(out / "audit.json"))["summary"]
scope = json.load(open(out / "scope.json"))
patches = (out / "series").read_text().split()
print(f"analysis + series wall time: {wall:.1f} s on {os.cpu_count()} CPUs "
      f"(analysis {audit['seconds']} s, series {wall - audit['seconds']:.1f} s)")
print(f"{audit['instances']} instances; {len(patches)} patches; "
      f"{scope['diffstat']['files']} files +{scope['diffstat']['insertions']}/-{scope['diffstat']['deletions']}; "
      f"checkpatch errors {len(scope['checkpatch']['errors'])}, "
      f"warnings {len(scope['checkpatch']['warnings'])}")
PY
