#!/bin/sh
# Build and boot times of the --boot kernels, cold (empty build dir) and
# warm (the same tree again), for the default and the CONFIG_MUTEX_SIMPLE
# kernel.  Prints the figures; asserts nothing.
#
#   benchmarks/boot.sh [SERIES_DIR]
#
# Without SERIES_DIR it first makes a flag-day series limited to the
# directories these kernels build (as tests/test_boot.py does).  It uses
# cache dirs of its own (scratch/build boot-timing-*), so the cold run
# wipes nothing the tool or the tests use.
set -eu
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
series=${1:-}
if [ -z "$series" ]; then
	series=$work/series
	start=$(date +%s)
	./convert.py -q -o "$series" --identity 'Boot Timing <timing@example.invalid>' \
		--dir kernel --dir arch/x86 --dir drivers/parport --dir drivers/acpi
	echo "series (convert.py --dir ...): $(( $(date +%s) - start )) s"
fi
cache=${SEM2MUTEX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sem2mutex}
name=boot-timing
rm -rf "$cache/build/$name-default" "$cache/build/$name-simple-mutex"
for run in cold warm; do
	out=$work/$run
	./convert.py -q --from-series "$series" --boot --boot-name "$name" -o "$out" \
		--boot-timeout 900 || true
	for variant in default simple-mutex; do
		json=$out/boot.json
		[ "$variant" = simple-mutex ] && json=$out/simple-mutex/boot.json
		/usr/bin/python3 - "$json" "$variant" "$run" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r.get("seconds", {})
t = r.get("tests", {})
print(f"{sys.argv[2]:13} {sys.argv[3]:4}: passed={r['passed']} "
      f"tests {t.get('passed')}/{t.get('total')}  "
      + "  ".join(f"{k} {v:.1f}s" for k, v in s.items()))
PY
	done
done
