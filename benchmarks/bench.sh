#!/bin/sh
# The issue-5 benchmark on the converted kernel: semaphore (down_sem/up_sem)
# vs the 6.1 generic mutex vs the seed's simple mutex, in one boot of the
# bench kernel (no lock debugging, 4 CPUs).  Prints the ratios from
# bench.json; asserts nothing.  Under TCG only the ratios mean anything.
#
#   benchmarks/bench.sh [SERIES_DIR] [--accel kvm]
#
# Without SERIES_DIR it first makes a flag-day series limited to the
# directories the bench kernel builds.
set -eu
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
series=
case "${1:-}" in
-*|"") ;;
*) series=$1; shift ;;
esac
if [ -z "$series" ]; then
	series=$work/series
	./convert.py -q -o "$series" --identity 'Bench <bench@example.invalid>' \
		--dir kernel --dir arch/x86 --dir drivers/acpi
fi
./convert.py -q --from-series "$series" --bench -o "$work/out" --boot-timeout 1200 "$@"
/usr/bin/python3 - "$work/out/bench.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
env = b["environment"]
print(f"accelerator {b['accel']}, {env['cpus']} CPUs, struct mutex: {env['mutex']}, "
      f"lock debugging: {env['lock_debugging']}")
for note in b["notes"]:
    print(f"note: {note}")
print("uncontended lock+unlock, ns per op (median):")
for impl, v in b["uncontended"].items():
    print(f"  {impl:13} {v['median_ns_per_op']:10.1f}")
print("uncontended cost ratios (< 1: left side cheaper):")
for pair, v in b["ratios"]["uncontended_cost"].items():
    print(f"  {pair:24} {v['median']:6.3f}  ({v['rounds']})")
print("contended throughput ratios (> 1: left side gets more done):")
for threads, pairs in b["ratios"]["contended_throughput"].items():
    for pair, v in pairs.items():
        print(f"  {threads} thread(s) {pair:24} {v['median']:6.3f}  ({v['rounds']})")
PY
