#!/bin/sh
# Cold speed (issue 12): the default tree's audit plus series and the
# 2.6.x audit (SEM2MUTEX_TREE_2_6), each with an empty cache, the median of
# RUNS runs (default 3); then one facts rule run by hand with
# `spatch --dir` on the same tree, and the ratio.  HAND=0 skips the hand
# run (it takes about seven minutes on 2 cores); SKIP_6_1=1 measures only
# the 2.6.x tree.  Each run also prints the processor time it used (user +
# system, of every process it started): that over the number of CPUs is
# the least wall time the same work can take on this machine.  Before
# each run it times a fixed Python loop on one core, the machine's pace:
# this machine's pace changes within the hour (the 2.6.11 audit took 130 s
# and 180 s on one afternoon), and runs are only comparable at a like
# pace.  Prints figures; asserts nothing.
#
#   SEM2MUTEX_TREE_2_6=/path/to/linux-2.6.11 benchmarks/cold.sh
set -eu
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
tree=${XDG_CACHE_HOME:-$HOME/.cache}/sem2mutex/linux-source-6.1
[ -n "${SEM2MUTEX_CACHE:-}" ] && tree=$SEM2MUTEX_CACHE/linux-source-6.1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
identity="sem2mutex bench <bench@sem2mutex.invalid>"

timed() {  # COMMAND... ; prints its wall time and processor time, in seconds
	/usr/bin/python3 - "$@" 2>"$work/stderr" <<'PY' || { cat "$work/stderr" >&2; exit 1; }
import resource, subprocess, sys, time
start = time.monotonic()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall = time.monotonic() - start
if done.returncode != 0:
    sys.exit(done.stderr)
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{wall:.1f} {used.ru_utime + used.ru_stime:.1f}")
PY
}

cold_run() {  # ARGS... ; convert.py with a cache of its own, emptied first
	rm -rf "$work/cache" "$work/out"
	SEM2MUTEX_CACHE="$work/cache" timed ./convert.py -q -o "$work/out" \
		--identity "$identity" "$@"
}

pace() {  # seconds a fixed loop takes on one core: the machine's pace now
	/usr/bin/python3 -c 'import time
start = time.monotonic()
sum(i * i for i in range(30_000_000))
print(f"{time.monotonic() - start:.2f}")'
}

median() {  # [-2] SECONDS... ; their median and each, to 1 decimal (-2: to 2)
	/usr/bin/python3 - "$@" <<'PY'
import statistics, sys
digits = 2 if sys.argv[1] == "-2" else 1
times = [float(x) for x in sys.argv[1:] if x != "-2"]
shown = ", ".join(f"{t:.{digits}f}" for t in times)
print(f"{statistics.median(times):.{digits}f} s (runs: {shown})")
PY
}

least() {  # CPU_SECONDS... ; their median over the number of CPUs
	/usr/bin/python3 - "$(nproc)" "$@" <<'PY'
import statistics, sys
print(f"{statistics.median(float(x) for x in sys.argv[2:]) / int(sys.argv[1]):.1f}")
PY
}

by_hand() {  # TREE ; one facts rule over the whole tree, as a user would run it
	# in the scratch directory: with -j, spatch keeps its workers' output
	# in a directory of the current one, and leaves it there when it
	# crashes.  With the stack limit raised to the hard limit: under the
	# default 8 MB, on 6.1 spatch died of signal 11 twice, after reporting
	# stack overflows in amdgpu's *_sh_mask.h headers (over 100,000
	# #defines), as a user running it by hand would first meet.
	rules=$PWD/cocci/facts/calls.cocci
	dir=$(cd "$1" && pwd)
	(cd "$work" && ulimit -s "$(ulimit -H -s)" &&
		spatch --python /usr/bin/python3 --sp-file "$rules" -D report \
		--dir "$dir" -j "$(nproc)" --no-includes --include-headers --very-quiet)
}

report() {  # LABEL TREE ARGS...
	label=$1 t=$2; shift 2
	times="" cpu="" paces=""
	i=0
	while [ "$i" -lt "$runs" ]; do
		p=$(pace)
		one=$(cold_run "$t" "$@")
		echo "  run $((i + 1)): ${one% *} s, processor time ${one#* } s, pace $p s" >&2
		times="$times ${one% *}"
		cpu="$cpu ${one#* }"
		paces="$paces $p"
		i=$((i + 1))
	done
	med=$(median $times)
	echo "$label: $med on $(nproc) CPUs"
	echo "  processor time: $(median $cpu), at least $(least $cpu) s of wall time" \
		"on $(nproc) CPUs"
	echo "  pace (a fixed loop on one core, before each run): $(median -2 $paces)"
	if [ "${HAND:-1}" != 0 ]; then
		# timed even when spatch fails (on the whole 6.1 tree one of its
		# -j workers died with End_of_file once): said, not fatal
		start=$(date +%s.%N)
		status=0
		by_hand "$t" >/dev/null 2>"$work/hand.stderr" || status=$?
		hand=$(printf "%.1f" "$(echo "$(date +%s.%N) - $start" | bc)")
		ratio=$(printf "%.2f" "$(echo "scale=4; $hand / ${med%% *}" | bc)")
		echo "  one rule by hand (spatch --dir, cocci/facts/calls.cocci): $hand s" \
			"(exit status $status); ratio $ratio"
	fi
}

[ "${SKIP_6_1:-0}" = 1 ] || report "Linux 6.1, audit + series, cold" "$tree"
if [ -n "${SEM2MUTEX_TREE_2_6:-}" ]; then
	report "Linux 2.6.x, audit, cold" "$SEM2MUTEX_TREE_2_6" --analyze-only
else
	echo "SEM2MUTEX_TREE_2_6 is not set: the 2.6.x audit is skipped"
fi
