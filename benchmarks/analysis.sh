#!/bin/sh
# Wall time of the full-tree analysis of the default tree (issue: at most
# 90 s on 2 cores).  Prints the figures; asserts nothing.
set -eu
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
./convert.py --analyze-only -q -o "$out" "$@" >/dev/null 2>"$out/stderr" &
pid=$!
start=$(date +%s.%N)
wait $pid || { cat "$out/stderr" >&2; exit 1; }
end=$(date +%s.%N)
/usr/bin/python3 - "$out/audit.json" "$start" "$end" <<'PY'
import json, os, sys
audit = json.load(open(sys.argv[1]))
s = audit["summary"]
print(f"analysis wall time: {float(sys.argv[3]) - float(sys.argv[2]):.1f} s "
      f"on {os.cpu_count()} CPUs (tool's own timer: {s['seconds']} s)")
print(f"instances: {s['instances']} (mutex {s['mutex']}, counting {s['counting']}, "
      f"signal {s['signal']}, ambiguous {s['ambiguous']}); files scanned: {s['files_scanned']}; "
      f"parse failures: {s['parse_failures']}")
PY
