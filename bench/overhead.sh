#!/usr/bin/env bash
# overhead.sh: the wall-clock overhead of `stax record` (and of `perf record -g`, when perf
# may record) on a single-threaded CPU-bound C program that does a fixed amount of work.
# ROUNDS rounds; in each, the program runs alone, under stax and under perf, in an order
# that rotates from round to round, so drifts of the machine hit all alike. Each round
# gives the ratios of its own runs; the verdicts judge all rounds (see lib.sh).
#   stax/baseline wall   target <= 1.05 (a round under 0.95, a negative overhead larger
#                        than the margin, makes the verdict "too noisy")
#   stax/perf wall       target <= 1.00
#   cpu ratios           printed: they count the profiler's own work as well
#
# Usage: bench/overhead.sh [ITERATIONS]
#   ITERATIONS  work units for the test program (default 170: about 5 s of CPU on a
#               2020s x86-64 server core; about 30 ms per unit)
# Environment: ROUNDS=5 (RUNS is read too), FREQ=999, and those of lib.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

iters=${1:-170}
bench_uint ITERATIONS "$iters"
[ -z "${ROUNDS:-}" ] && [ -n "${RUNS:-}" ] && ROUNDS=$RUNS
bench_init overhead 5
freq=${FREQ:-999}
bench_uint FREQ "$freq"
bench_build_stax

# The test program: nested loops over a few small functions, one thread, deterministic.
cat >"$tmp/burn.c" <<'EOF'
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

NOINLINE static uint64_t mix(uint64_t x) {
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

NOINLINE static uint64_t inner(uint64_t seed, int n) {
	uint64_t acc = seed;
	for (int i = 0; i < n; i++)
		acc += mix(acc + (uint64_t)i);
	return acc;
}

NOINLINE static uint64_t middle(uint64_t seed, int n) {
	uint64_t acc = 0;
	for (int j = 0; j < n; j++)
		acc ^= inner(seed + (uint64_t)j, 1000);
	return acc;
}

NOINLINE static uint64_t outer(int units) {
	uint64_t acc = 1;
	for (int u = 0; u < units; u++)
		for (int k = 0; k < 100; k++)
			acc += middle(acc + (uint64_t)k, 100);
	return acc;
}

int main(int argc, char **argv) {
	int units = argc > 1 ? atoi(argv[1]) : 60;
	sink = outer(units);
	printf("%llu\n", (unsigned long long)sink);
	return 0;
}
EOF

bench_cc "$tmp/burn" "$tmp/burn.c" -O2 -g -fno-omit-frame-pointer

names=(baseline stax)
have_perf=0
if command -v perf >/dev/null && perf record -q -o "$tmp/probe.data" -- true >/dev/null 2>&1; then
	have_perf=1
	names+=(perf)
else
	echo "perf is not installed or may not record: stax against the baseline only"
fi

# run NAME: one run of configuration NAME under /usr/bin/time into $tmp/t.NAME.
run() {
	case $1 in
	baseline) bench_time "$tmp/t.$1" "$tmp/burn" "$iters" >/dev/null ;;
	stax) bench_time "$tmp/t.$1" "$STAX" record --call-graph fp -F "$freq" -q -- "$tmp/burn" "$iters" >/dev/null ;;
	perf) bench_time "$tmp/t.$1" perf record -q -F "$freq" -g -o "$tmp/perf.data" -- "$tmp/burn" "$iters" >/dev/null 2>&1 ;;
	esac
}

echo "burn.c, $iters work units, -F $freq; a warm-up run each, then $ROUNDS rounds"
for n in "${names[@]}"; do run "$n" || bench_die "the $n run failed"; done
declare -A wall cpu
for ((r = 1; r <= ROUNDS; r++)); do
	bench_log "round $r/$ROUNDS..."
	k=${#names[@]}
	for ((i = 0; i < k; i++)); do
		n=${names[$(((i + r - 1) % k))]}
		if run "$n"; then
			wall[$n]=$(bench_wall "$tmp/t.$n") cpu[$n]=$(bench_cpu "$tmp/t.$n")
		else
			wall[$n]=none cpu[$n]=none
		fi
		bench_add "wall_$n" "${wall[$n]}"
		bench_add "cpu_$n" "${cpu[$n]}"
	done
	bench_add stax_base_wall "$(bench_div "${wall[stax]}" "${wall[baseline]}")"
	bench_add stax_base_cpu "$(bench_div "${cpu[stax]}" "${cpu[baseline]}")"
	if [ "$have_perf" = 1 ]; then
		bench_add perf_base_wall "$(bench_div "${wall[perf]}" "${wall[baseline]}")"
		bench_add perf_base_cpu "$(bench_div "${cpu[perf]}" "${cpu[baseline]}")"
		bench_add stax_perf_wall "$(bench_div "${wall[stax]}" "${wall[perf]}")"
		bench_add stax_perf_cpu "$(bench_div "${cpu[stax]}" "${cpu[perf]}")"
	fi
done

bench_end_load
bench_header "run (seconds)"
for n in "${names[@]}"; do
	bench_show -u s "$n wall" "wall_$n"
	bench_show -u s "$n cpu (program + profiler)" "cpu_$n"
done
bench_header "ratios"
bench_check -o floor=0.95 "stax/baseline wall" stax_base_wall "<=" 1.05
bench_show "stax/baseline cpu" stax_base_cpu
if [ "$have_perf" = 1 ]; then
	bench_show "perf/baseline wall" perf_base_wall
	bench_show "perf/baseline cpu" perf_base_cpu
	bench_check "stax/perf wall" stax_perf_wall "<=" 1.00
	bench_show "stax/perf cpu" stax_perf_cpu
fi
bench_finish
