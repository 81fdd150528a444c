#!/usr/bin/env bash
# itt.sh: what ITT tasks cost a program that stax records. collector/testdata/ittrate.c runs
# THREADS threads for SECONDS seconds, each unit of work inside an ITT task (begin and end),
# WORK calibrated so that the threads make about RATE tasks per second when nothing records
# them (by default 500,000 tasks: 1 M ITT calls a second, a begin and an end each). Each
# round runs it alone (the ITT calls skipped, as ittapi's static part skips them
# without a collector) and under `stax record` (stax's collector writing every task), in an
# order that rotates from round to round, and compares the work done per second: a rate, so
# the verdict does not depend on the machine's speed.
#   baseline/stax units per second   target <= 1.10
#   tasks per second             printed (stax status; each round's drops in the log)
# Then collector/testdata/ittpair.c times each task's begin and end pair, on one thread
# under `stax record` (and alone, where the pairs are skipped and the clock alone is timed):
#   pair p50 under stax          target <= 300 ns
#   pair p99 under stax          target <= 5000 ns
#
# Usage: bench/itt.sh [THREADS [SECONDS]]   (default 16 threads, 3 s)
# Environment: ROUNDS=5, RATE=500000 (tasks per second aimed at), and those of lib.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

threads=${1:-16}
secs=${2:-3}
rate=${RATE:-500000}
bench_uint THREADS "$threads"
bench_uint SECONDS "$secs"
bench_uint RATE "$rate"
bench_init itt 5
bench_need_perf
bench_build_stax
export STAX_JIT_DIR=$tmp # the spans files (tens of MB a run) go with the rest
"$root/collector/build.sh" "$tmp" || bench_die "collector/build.sh failed"
bench_cc "$tmp/ittrate" "$root/collector/testdata/ittrate.c" -std=gnu11 -O2 -ldl
bench_cc "$tmp/ittpair" "$root/collector/testdata/ittpair.c" -std=gnu11 -O2 -ldl

# Calibrate: the work per task that makes RATE tasks a second here, without stax.
work=400
for _ in 1 2 3; do
	got=$("$tmp/ittrate" "$threads" 0.5 "$work" | awk '{ print $4 }')
	work=$(awk -v w="$work" -v g="$got" -v r="$rate" 'BEGIN { v = int(w * g / r); print (v < 1 ? 1 : v) }')
done
echo "ittrate: $threads threads, $secs s, work $work per task (about $rate tasks/s, $((2 * rate)) ITT calls/s, without stax); $ROUNDS rounds"

# run NAME: one run; prints units per second, and for stax tasks received and dropped.
run() {
	case $1 in
	baseline) "$tmp/ittrate" "$threads" "$secs" "$work" | awk '{ print $4 }' ;;
	stax)
		rm -f "$tmp"/itt-*.spans
		"$STAX" record -q -- "$tmp/ittrate" "$threads" "$secs" "$work" | awk '{ printf "%s ", $4 }'
		"$STAX" status --json 2>/dev/null | python3 -c 'import json,sys
m = json.load(sys.stdin)["meta"]
r = d = 0
for s in m.get("span_sources") or []:
    r += s.get("received", 0); d += s.get("dropped", 0)
print(r, d)'
		;;
	esac
}

names=(baseline stax)
declare -A out
for ((r = 1; r <= ROUNDS; r++)); do
	bench_log "round $r/$ROUNDS..."
	for ((i = 0; i < 2; i++)); do
		n=${names[$(((i + r - 1) % 2))]}
		out[$n]=$(run "$n") || out[$n]="none"
	done
	read -r base <<<"${out[baseline]}"
	read -r with received dropped _ <<<"${out[stax]} none none none"
	bench_add rate_baseline "$base"
	bench_add rate_stax "$with"
	bench_add tasks_per_sec "$(bench_div "$received" "$secs")"
	bench_log "round $r: stax received $received tasks, dropped $dropped (kept past 1M: dropped by design)"
	bench_add slowdown "$(bench_div "$base" "$with")"
done

# The pairs: one thread, some 2 us of work between pairs.
for ((r = 1; r <= ROUNDS; r++)); do
	read -r _ _ _ p50 _ p99 _ <<<"$("$tmp/ittpair" 1 1 "$work") none none none none none none"
	bench_add pair_p50_alone "$p50"
	bench_add pair_p99_alone "$p99"
	read -r _ pairs _ p50 _ p99 _ <<<"$("$STAX" record -q -- "$tmp/ittpair" 1 "$secs" "$work") none none none none none none"
	bench_add pair_p50 "$p50"
	bench_add pair_p99 "$p99"
	bench_log "pairs round $r: $pairs pairs under stax, p50 $p50 ns, p99 $p99 ns"
	rm -f "$tmp"/itt-*.spans
done

bench_end_load
bench_header "units (tasks) per second"
bench_show "baseline" rate_baseline
bench_show "under stax" rate_stax
bench_show "tasks received by stax per second" tasks_per_sec
bench_header "ratio"
bench_check "baseline/stax units per second" slowdown "<=" 1.10
bench_header "a task's begin and end, ns (the clock's own cost included)"
bench_show -u ns "p50 alone (the clock alone)" pair_p50_alone
bench_show -u ns "p99 alone (the clock alone)" pair_p99_alone
bench_check -u ns "p50 under stax" pair_p50 "<=" 300
bench_check -u ns "p99 under stax" pair_p99 "<=" 5000
bench_finish
