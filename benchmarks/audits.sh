#!/bin/sh
# The audit alone, cold (an empty facts cache), on the default 6.1 tree and
# on a 2.6.x tree (SEM2MUTEX_TREE_2_6, the flag day's era): wall time and
# the ambiguous split of each (doubtful code / not all uses seen).  Prints
# figures; asserts nothing.  RUNS=3 reports the median of three runs.
#
#   SEM2MUTEX_TREE_2_6=/path/to/linux-2.6.11 benchmarks/audits.sh
set -eu
cd "$(dirname "$0")/.."
runs=${RUNS:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

audit_once() {  # TREE-ARGS... ; prints seconds, leaves $work/out/audit.json
	rm -rf "$work/out" "$work/cache"
	start=$(date +%s.%N)
	SEM2MUTEX_CACHE="$work/cache" ./convert.py --analyze-only -q -o "$work/out" "$@" \
		>/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
	end=$(date +%s.%N)
	echo "$end - $start" | bc
}

report() {  # LABEL TREE-ARGS...
	label=$1; shift
	times=""
	i=0
	while [ "$i" -lt "$runs" ]; do
		times="$times $(audit_once "$@")"
		i=$((i + 1))
	done
	/usr/bin/python3 - "$label" "$work/out/audit.json" $times <<'PY'
import json, os, statistics, sys
label, path, times = sys.argv[1], sys.argv[2], [float(t) for t in sys.argv[3:]]
s = json.load(open(path))["summary"]
audit = json.load(open(path))
shown = ", ".join(f"{t:.1f}" for t in times)
print(f"{label}: audit {statistics.median(times):.1f} s cold (median of {len(times)}: {shown}) "
      f"on {os.cpu_count()} CPUs")
print(f"  instances {s['instances']}: mutex {s['mutex']}, counting {s['counting']}, "
      f"signal {s['signal']}, ambiguous {s['ambiguous']} = doubtful "
      f"{s['ambiguous_doubtful']} + not all uses seen {s['ambiguous_unseen']}")
unresolved = sum(1 for i in audit["instances"] if i["kind"] == "unresolved")
pointer = sum(1 for i in audit["instances"] if i["kind"] == "pointer")
print(f"  unresolved instances {unresolved}, pointer instances {pointer}, "
      f"files scanned {s['files_scanned']}, files with parse failures {s['parse_failures']}, "
      f"calls on other types {len(audit.get('other_type_calls', []))}")
PY
}

report "Linux 6.1 (default tree)"
if [ -n "${SEM2MUTEX_TREE_2_6:-}" ]; then
	report "Linux 2.6.x ($SEM2MUTEX_TREE_2_6)" "$SEM2MUTEX_TREE_2_6"
else
	echo "SEM2MUTEX_TREE_2_6 is not set: the 2.6.x audit is skipped"
fi
