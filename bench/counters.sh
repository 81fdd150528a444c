#!/usr/bin/env bash
# counters.sh: what reading a group of counters with each sample costs the profiled
# program. A single-threaded CPU-bound C program (burn.c: a fixed amount of work, with a
# page touched now and then) runs under cputime.c, which gives its own user and system
# CPU time (the kernel's sampling and group reads happen in its time), in four ways a
# round, in an order that rotates from round to round:
#   stax           stax record -F FREQ (cpu-clock), no counters
#   stax+counters  stax record -F FREQ --counters task-clock,page-faults,context-switches
#   perf           perf record -F FREQ -e cpu-clock
#   perf+group     perf record -F FREQ -e '{cpu-clock,task-clock,page-faults,context-switches}:S'
#                  (the leader's samples read the group, as stax's do)
# Each round gives the ratios of its own runs; the verdicts judge all rounds (lib.sh):
#   stax+counters/stax cpu   target <= 1.02 (a round under 0.98, a negative cost larger
#                            than the margin, makes the verdict "too noisy")
#   perf+group/perf cpu      printed beside it
#
# Usage: bench/counters.sh [ITERATIONS]
#   ITERATIONS  work units (default 100: a few seconds of CPU on a 2020s x86-64 core)
# Environment: ROUNDS=5, FREQ=999, and those of lib.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

iters=${1:-100}
bench_uint ITERATIONS "$iters"
bench_init counters 5
freq=${FREQ:-999}
bench_uint FREQ "$freq"
bench_build_stax
counters=task-clock,page-faults,context-switches

cat >"$tmp/burn.c" <<'CEOF'
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

NOINLINE static uint64_t mix(uint64_t x) {
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

NOINLINE static void touch(void) {
	char *p = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int i = 0; i < (1 << 20); i += 4096)
		p[i] = 1;
	munmap(p, 1 << 20);
}

int main(int argc, char **argv) {
	int units = argc > 1 ? atoi(argv[1]) : 100;
	uint64_t acc = 1;
	for (int u = 0; u < units; u++) {
		for (int i = 0; i < 10000000; i++)
			acc += mix(acc + (uint64_t)i);
		touch();
	}
	sink = acc;
	printf("%llu\n", (unsigned long long)sink);
	return 0;
}
CEOF
bench_cc "$tmp/burn" "$tmp/burn.c" -O2 -g -fno-omit-frame-pointer
"$BENCH_CC" -O1 -o "$tmp/cputime" "$bench_here/cputime.c" || bench_die "cannot build cputime.c"

names=(stax stax+counters)
have_perf=0
if command -v perf >/dev/null && perf record -q -o "$tmp/probe.data" -e "{cpu-clock,$counters}:S" -- true >/dev/null 2>&1; then
	have_perf=1
	names+=(perf perf+group)
else
	echo "perf is not installed or may not record a group: stax alone"
fi

# run NAME: one run of configuration NAME; the program's own CPU seconds in $tmp/c.NAME.
run() {
	local out="$tmp/c.$1"
	case $1 in
	stax) "$STAX" record --call-graph fp -F "$freq" -q -- "$tmp/cputime" "$out" "$tmp/burn" "$iters" >/dev/null ;;
	stax+counters) "$STAX" record --call-graph fp -F "$freq" -q --counters "$counters" -- "$tmp/cputime" "$out" "$tmp/burn" "$iters" >/dev/null ;;
	perf) perf record -q -F "$freq" -g -e cpu-clock -o "$tmp/perf.data" -- "$tmp/cputime" "$out" "$tmp/burn" "$iters" >/dev/null 2>&1 ;;
	perf+group) perf record -q -F "$freq" -g -e "{cpu-clock,$counters}:S" -o "$tmp/perf.data" -- "$tmp/cputime" "$out" "$tmp/burn" "$iters" >/dev/null 2>&1 ;;
	esac
}

echo "burn.c, $iters work units, -F $freq, counters $counters; a warm-up run each, then $ROUNDS rounds"
for n in "${names[@]}"; do run "$n" || bench_die "the $n run failed"; done
declare -A cpu
for ((r = 1; r <= ROUNDS; r++)); do
	bench_log "round $r/$ROUNDS..."
	k=${#names[@]}
	for ((i = 0; i < k; i++)); do
		n=${names[$(((i + r - 1) % k))]}
		if run "$n"; then
			cpu[$n]=$(bench_cpu "$tmp/c.$n")
		else
			cpu[$n]=none
		fi
		bench_add "cpu_$n" "${cpu[$n]}"
	done
	bench_add stax_ratio "$(bench_div "${cpu[stax+counters]}" "${cpu[stax]}")"
	if [ "$have_perf" = 1 ]; then
		bench_add perf_ratio "$(bench_div "${cpu[perf+group]}" "${cpu[perf]}")"
	fi
done

bench_end_load
bench_header "the program's own CPU time (seconds)"
for n in "${names[@]}"; do
	bench_show -u s "$n" "cpu_$n"
done
bench_header "ratios"
bench_check -o floor=0.98 "stax+counters/stax cpu" stax_ratio "<=" 1.02
if [ "$have_perf" = 1 ]; then
	bench_show "perf+group/perf cpu" perf_ratio
fi
bench_finish
