#!/usr/bin/env bash
# offcpu.sh: what recording off-CPU time costs.
#   1. A ping-pong of two threads that hand a token back and forth through two pipes
#      (about 200,000 context switches a second on two CPUs), run alone, under stax with
#      off-CPU time (the default), and under `perf record -e cs -c 1 -g` (the context-switch
#      event sampled at every switch with call graphs: what perf needs for blocked stacks), in an order that
#      rotates from round to round.
#        stax/baseline time   target <= 1.2
#        stax/perf time       target <= 1.0
#      and the same two of `stax record --no-wakers` (off-CPU time without the wakers, whose
#      tracepoint costs the program at each wakeup: docs/off-cpu.md).
#        switches lost        target <= 0 (stax status: off-CPU intervals not counted, and
#                             switch records found missing)
#      For the floor, the same ping-pong also runs under `stax record --no-off-cpu` and, with
#      perf, under `perf record -F FREQ -g` (a CPU profile without off-CPU time) and
#      `perf record -e dummy --switch-events` (the switch records alone): printed, no target.
#   2. A CPU-bound single thread (no switching) under stax with and without --no-off-cpu.
#        on/off time          target <= 1.01
# Each program times its own work and prints it: the ratios compare those times, so that a
# profiler's own start and end (perf record reads its symbols for about a second after the
# program ends; closing stax's tracepoint events waits out two of the kernel's grace periods,
# about 70 ms) are not charged to the program. The whole commands' times are printed beside.
# Each round gives the ratios of its own runs; the verdicts judge all rounds (see lib.sh).
#
# Usage: bench/offcpu.sh [HANDOFFS] [ITERATIONS]
#   HANDOFFS    token round trips of the ping-pong (default 400000: about 2-4 s)
#   ITERATIONS  work units of the CPU-bound program (default 100: about 3 s)
# Environment: ROUNDS=5, FREQ=999, IDLE_POLL=0, and those of lib.sh.
#   IDLE_POLL=1 holds /dev/cpu_dma_latency at 0 (root) while the script runs, so that idle
#   CPUs poll instead of halting. A ping-pong waits on a wakeup at every handoff: on a
#   virtual machine whose idle CPUs halt, waking one takes tens of microseconds, and the
#   ping-pong's time is mostly that (on a 2-CPU VM, 50,000 round trips took 3.3-3.8 s
#   halting and 0.26-0.33 s polling). Polling, its time is the cost of the switches
#   themselves, and so are the ratios.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

handoffs=${1:-400000}
iters=${2:-100}
bench_uint HANDOFFS "$handoffs"
bench_uint ITERATIONS "$iters"
bench_init offcpu 5
freq=${FREQ:-999}
bench_uint FREQ "$freq"
idle="idle CPUs as the machine has them"
if [ "${IDLE_POLL:-0}" = 1 ]; then
	exec 9>/dev/cpu_dma_latency || bench_die "IDLE_POLL=1: cannot open /dev/cpu_dma_latency (it takes root)"
	printf 0 >&9
	idle="idle CPUs polling (/dev/cpu_dma_latency held at 0)"
fi
bench_build_stax

cat >"$tmp/pingpong.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static long n;

__attribute__((noinline)) static void pong_once(void) {
	char c;
	if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
		exit(2);
}

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void *pong(void *arg) {
	(void)arg;
	for (long i = 0; i < n; i++)
		pong_once();
	return NULL;
}

__attribute__((noinline)) static void ping_once(void) {
	char c = 'x';
	if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
		exit(2);
}

int main(int argc, char **argv) {
	n = argc > 1 ? atol(argv[1]) : 100000;
	if (pipe(ab) || pipe(ba))
		return 1;
	double start = now();
	pthread_t t;
	pthread_create(&t, NULL, pong, NULL);
	for (long i = 0; i < n; i++)
		ping_once();
	pthread_join(t, NULL);
	fprintf(stderr, "elapsed %.6f\n", now() - start);
	printf("%ld\n", n);
	return 0;
}
EOF
cat >"$tmp/spin.c" <<'EOF'
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t mix(uint64_t x) {
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	return x ^ (x >> 33);
}

int main(int argc, char **argv) {
	int units = argc > 1 ? atoi(argv[1]) : 60;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	uint64_t acc = 1;
	for (int u = 0; u < units; u++)
		for (int k = 0; k < 10000000; k++)
			acc += mix(acc + (uint64_t)k);
	sink = acc;
	clock_gettime(CLOCK_MONOTONIC, &b);
	fprintf(stderr, "elapsed %.6f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	printf("%llu\n", (unsigned long long)sink);
	return 0;
}
EOF
bench_cc "$tmp/pingpong" "$tmp/pingpong.c" -O2 -g -fno-omit-frame-pointer -pthread
bench_cc "$tmp/spin" "$tmp/spin.c" -O2 -g -fno-omit-frame-pointer

pp=(baseline stax stax_nowk stax_nooff)
have_perf=0
if command -v perf >/dev/null && perf record -q -e cs -c 1 -g -o "$tmp/probe.data" -- true >/dev/null 2>&1; then
	have_perf=1
	pp+=(perf perf_cpu perf_switches)
else
	echo "perf is not installed or may not record: stax against the baseline only"
fi
export STAX_HOME="$tmp/home"

# run NAME: one run of configuration NAME: the whole command's time (the profiler's start
# and end included) into $tmp/t.NAME, the program's own time, which it prints on stderr,
# into $tmp/e.NAME.
run() {
	local e="$tmp/e.$1"
	case $1 in
	baseline) bench_time "$tmp/t.$1" "$tmp/pingpong" "$handoffs" >/dev/null 2>"$e" ;;
	stax) bench_time "$tmp/t.$1" "$STAX" record --call-graph fp -F "$freq" -q -- "$tmp/pingpong" "$handoffs" >/dev/null 2>"$e" ;;
	stax_nowk) bench_time "$tmp/t.$1" "$STAX" record --call-graph fp -F "$freq" -q --no-wakers -- "$tmp/pingpong" "$handoffs" >/dev/null 2>"$e" ;;
	stax_nooff) bench_time "$tmp/t.$1" "$STAX" record --call-graph fp -F "$freq" -q --no-off-cpu -- "$tmp/pingpong" "$handoffs" >/dev/null 2>"$e" ;;
	perf) bench_time "$tmp/t.$1" perf record -q -e cs -c 1 -g -o "$tmp/perf.data" -- "$tmp/pingpong" "$handoffs" >/dev/null 2>"$e" ;;
	perf_cpu) bench_time "$tmp/t.$1" perf record -q -F "$freq" -g -o "$tmp/perf.data" -- "$tmp/pingpong" "$handoffs" >/dev/null 2>"$e" ;;
	perf_switches) bench_time "$tmp/t.$1" perf record -q -e dummy --switch-events -o "$tmp/perf.data" -- "$tmp/pingpong" "$handoffs" >/dev/null 2>"$e" ;;
	spin_on) bench_time "$tmp/t.$1" "$STAX" record --call-graph fp -F "$freq" -q -- "$tmp/spin" "$iters" >/dev/null 2>"$e" ;;
	spin_off) bench_time "$tmp/t.$1" "$STAX" record --call-graph fp -F "$freq" -q --no-off-cpu -- "$tmp/spin" "$iters" >/dev/null 2>"$e" ;;
	esac
}

# elapsed NAME: the program's own seconds in the last run of NAME, or none.
elapsed() {
	awk '$1 == "elapsed" { e = $2 } END { print (e == "" ? "none" : e) }' "$tmp/e.$1"
}

# lost_switches: intervals the last stax run could not count and switch records it found
# missing, and the switches it read.
lost_switches() {
	"$STAX" status --json 2>/dev/null | python3 -c 'import json,sys
try:
    o = json.load(sys.stdin)["meta"].get("off_cpu") or {}; print(o.get("lost", 0) + o.get("unpaired", 0), o.get("switches", 0))
except Exception:
    print("none none")'
}

echo "ping-pong of $handoffs round trips, spin of $iters units, -F $freq, $idle; a warm-up run each, then $ROUNDS rounds"
for n in "${pp[@]}" spin_on spin_off; do run "$n" || bench_die "the $n run failed"; done
declare -A wall
for ((r = 1; r <= ROUNDS; r++)); do
	bench_log "round $r/$ROUNDS..."
	k=${#pp[@]}
	for ((i = 0; i < k; i++)); do
		n=${pp[$(((i + r - 1) % k))]}
		if run "$n"; then wall[$n]=$(elapsed "$n") tool=$(bench_wall "$tmp/t.$n"); else wall[$n]=none tool=none; fi
		bench_add "wall_$n" "${wall[$n]}"
		bench_add "tool_$n" "$tool"
		if [ "$n" = stax ]; then
			read -r lost switches < <(lost_switches)
			bench_add lost "$lost"
			bench_add rate "$(bench_div "$switches" "${wall[stax]}")"
		fi
	done
	bench_add stax_base "$(bench_div "${wall[stax]}" "${wall[baseline]}")"
	bench_add nowk_base "$(bench_div "${wall[stax_nowk]}" "${wall[baseline]}")"
	bench_add nooff_base "$(bench_div "${wall[stax_nooff]}" "${wall[baseline]}")"
	if [ "$have_perf" = 1 ]; then
		bench_add stax_perf "$(bench_div "${wall[stax]}" "${wall[perf]}")"
		bench_add nowk_perf "$(bench_div "${wall[stax_nowk]}" "${wall[perf]}")"
		bench_add perfcpu_base "$(bench_div "${wall[perf_cpu]}" "${wall[baseline]}")"
		bench_add perfsw_base "$(bench_div "${wall[perf_switches]}" "${wall[baseline]}")"
	fi
	order=(spin_on spin_off)
	[ $((r % 2)) = 0 ] && order=(spin_off spin_on)
	for n in "${order[@]}"; do
		if run "$n"; then wall[$n]=$(elapsed "$n") tool=$(bench_wall "$tmp/t.$n"); else wall[$n]=none tool=none; fi
		bench_add "wall_$n" "${wall[$n]}"
		bench_add "tool_$n" "$tool"
	done
	bench_add spin_ratio "$(bench_div "${wall[spin_on]}" "${wall[spin_off]}")"
	bench_add spin_end "$(python3 -c "import sys; print(round((float(sys.argv[1]) - float(sys.argv[2]) - float(sys.argv[3]) + float(sys.argv[4])) * 1000))" \
		"$(bench_wall "$tmp/t.spin_on")" "${wall[spin_on]}" "$(bench_wall "$tmp/t.spin_off")" "${wall[spin_off]}" 2>/dev/null || echo none)"
done

bench_end_load
bench_header "the program's own time (seconds)"
for n in "${pp[@]}" spin_on spin_off; do bench_show -u s "$n" "wall_$n"; done
bench_header "the whole command's time, the profiler's start and end included (seconds)"
for n in "${pp[@]}" spin_on spin_off; do bench_show -u s "$n" "tool_$n"; done
bench_show -u ms "stax start and end, off-CPU on less off (spin)" spin_end
bench_show "switches recorded per second (stax)" rate
bench_header "the floor: ping-pong over its time alone"
bench_show "stax --no-off-cpu" nooff_base
if [ "$have_perf" = 1 ]; then
	bench_show "perf record -F $freq -g (no off-CPU)" perfcpu_base
	bench_show "perf record -e dummy --switch-events" perfsw_base
fi
bench_header "ratios"
bench_check "ping-pong stax/baseline time" stax_base "<=" 1.2
[ "$have_perf" = 1 ] && bench_check "ping-pong stax/perf -e cs -c 1 -g time" stax_perf "<=" 1.0
bench_check "ping-pong stax --no-wakers/baseline time" nowk_base "<=" 1.2
[ "$have_perf" = 1 ] && bench_check "ping-pong stax --no-wakers/perf time" nowk_perf "<=" 1.0
bench_check -o zero,spread=none "ping-pong off-CPU intervals lost" lost "<=" 0
bench_check -o floor=0.99 "spin off-CPU on/off time" spin_ratio "<=" 1.01
bench_finish
