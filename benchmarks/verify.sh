#!/bin/sh
# Wall time of the --verify stage on a series (git format-patch output with
# a series file): two runs, the first as the cache finds it, the second warm
# (scratch repository reset, old-API results cached per file, make finds
# the objects current).  Prints the figures; asserts nothing.
#
#   benchmarks/verify.sh SERIES_DIR [TREE]
#
# Cold first run: COLD=1 benchmarks/verify.sh SERIES_DIR removes the build
# dirs (verify-allmodconfig and verify-allmodconfig-base) and the scratch
# repository from the cache before it starts.  COLD=build removes only the
# build dirs (the scratch repository costs about a minute to remake).
set -eu
[ $# -ge 1 ] || { echo "usage: $0 SERIES_DIR [TREE]" >&2; exit 2; }
series=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
cache=$(/usr/bin/python3 -c 'from sem2mutex.paths import cache_layout; print(cache_layout().root)')
case "${COLD:-}" in
    1) rm -rf "$cache/build/verify-allmodconfig" "$cache/build/verify-allmodconfig-base" \
              "$cache/scratch/verify" ;;
    build) rm -rf "$cache/build/verify-allmodconfig" "$cache/build/verify-allmodconfig-base" ;;
esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
tree_arg=""
[ $# -ge 2 ] && tree_arg="$2"

for run in first warm; do
    start=$(date +%s.%N)
    # Exit status 1 only says the series did not pass: the times still count.
    ./convert.py -q --from-series "$series" --verify -o "$out/$run" $tree_arg \
        >"$out/$run.summary" 2>"$out/$run.stderr" || [ $? -eq 1 ] || {
        cat "$out/$run.stderr" >&2; exit 1; }
    end=$(date +%s.%N)
    /usr/bin/python3 - "$out/$run/verify.json" "$run" "$start" "$end" <<'PY'
import json, os, sys
v = json.load(open(sys.argv[1]))
c, t = v["counts"], v["timings"]
print(f"{sys.argv[2]} run: {float(sys.argv[4]) - float(sys.argv[3]):.1f} s wall on "
      f"{os.cpu_count()} CPUs; applied={v['applied']} passed={v['passed']}; "
      f"{c['patches']} patches, {c['touched']} files touched, {c['compiled']} compiled "
      f"({c['compile_failures']} failed), {c['not_buildable']} not buildable, "
      f"{c['old_api_left']} old-API callers left; {c['mtimes_kept']} touched files kept "
      f"their last mtime")
print("  steps (s): " + ", ".join(f"{k} {val}" for k, val in t.items()))
PY
done
