#!/usr/bin/env bash
# overhead.sh: wall-clock overhead of `stax record` (and of `perf record -g`, when perf is
# installed) on a single-threaded CPU-bound C program.
#
# Usage: bench/overhead.sh [ITERATIONS]
#   ITERATIONS  work units for the test program (default 170: about 5 s of CPU on a
#               2020s x86-64 server core; about 30 ms per unit)
# Environment:
#   RUNS=5      runs per configuration; the median wall-clock time is reported
#   FREQ=999    sampling frequency for both profilers
#   CC=cc       C compiler
set -euo pipefail

iters=${1:-170}
runs=${RUNS:-5}
freq=${FREQ:-999}
cc=${CC:-cc}

case $iters in '' | *[!0-9]*) echo "overhead.sh: ITERATIONS must be a number, got '$iters'" >&2; exit 2 ;; esac
case $runs in '' | *[!0-9]* | 0) echo "overhead.sh: RUNS must be a positive number, got '$runs'" >&2; exit 2 ;; esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stax-overhead.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

command -v go >/dev/null || { echo "overhead.sh: go is not installed" >&2; exit 1; }
command -v "$cc" >/dev/null || { echo "overhead.sh: no C compiler ($cc)" >&2; exit 1; }

echo "building stax..." >&2
(cd "$root" && go build -o "$tmp/stax" ./cmd/stax)

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
"$cc" -O2 -g -fno-omit-frame-pointer -o "$tmp/burn" "$tmp/burn.c"

have_perf=0
if command -v perf >/dev/null && perf record -q -o "$tmp/probe.data" -- true >/dev/null 2>&1; then
	have_perf=1
fi
mkdir -p "$tmp/home"

# Each configuration is a command line run by a shell (`bash -c` here, hyperfine's shell
# there), so all three pay the same shell start-up.
cmd_base="exec '$tmp/burn' $iters >/dev/null"
cmd_stax="STAX_HOME='$tmp/home' exec '$tmp/stax' record --call-graph fp -F $freq -q -- '$tmp/burn' $iters >/dev/null"
cmd_perf="exec perf record -q -F $freq -g -o '$tmp/perf.data' -- '$tmp/burn' $iters >/dev/null 2>&1"

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# time_once CMD: wall-clock seconds of one run, a space, and the CPU seconds (user+system)
# of the run's whole process tree.
time_once() {
	local t0 t1 cpu
	t0=$(date +%s.%N)
	if ! { TIMEFORMAT='%U %S'; time bash -c "$1" 2>"$tmp/cmd.err"; } 2>"$tmp/time.out"; then
		echo "overhead.sh: command failed: $1" >&2
		cat "$tmp/cmd.err" >&2
		exit 1
	fi
	cpu=$(tail -n 1 "$tmp/time.out")
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" -v c="$cpu" 'BEGIN { split(c, f, " "); printf "%.4f %.4f\n", b - a, f[1] + f[2] }'
}

# hyperfine_median CMD: median wall-clock seconds over $runs runs, a space, and the mean CPU
# seconds (user+system), measured by hyperfine.
hyperfine_median() {
	local out="$tmp/hf.json" m u s
	hyperfine --style none --runs "$runs" --warmup 1 --export-json "$out" "$1" >/dev/null
	m=$(grep -m1 '"median"' "$out" | sed -E 's/.*: *([0-9.eE+-]+).*/\1/')
	u=$(grep -m1 '"user"' "$out" | sed -E 's/.*: *([0-9.eE+-]+).*/\1/')
	s=$(grep -m1 '"system"' "$out" | sed -E 's/.*: *([0-9.eE+-]+).*/\1/')
	awk -v m="$m" -v u="$u" -v s="$s" 'BEGIN { printf "%.4f %.4f\n", m, u + s }'
}

names=(baseline stax)
cmds=("$cmd_base" "$cmd_stax")
if [ "$have_perf" = 1 ]; then
	names+=(perf)
	cmds+=("$cmd_perf")
fi

declare -A med cpu
if command -v hyperfine >/dev/null; then
	tool="hyperfine; CPU is the mean"
	for i in "${!names[@]}"; do
		echo "timing ${names[$i]} with hyperfine ($runs runs)..." >&2
		out=$(hyperfine_median "${cmds[$i]}")
		read -r "med[${names[$i]}]" "cpu[${names[$i]}]" <<<"$out"
	done
else
	tool="bash loop, date +%s.%N; CPU is the median"
	# One warm-up run each, then the configurations interleaved round by round, so slow
	# drifts of the machine (frequency, other load) hit all of them alike.
	for i in "${!names[@]}"; do
		bash -c "${cmds[$i]}" || { echo "overhead.sh: ${names[$i]} run failed: ${cmds[$i]}" >&2; exit 1; }
	done
	declare -A walls cpus
	for ((r = 1; r <= runs; r++)); do
		echo "round $r/$runs..." >&2
		for i in "${!names[@]}"; do
			out=$(time_once "${cmds[$i]}") # a failed run stops the script (set -e)
			read -r w c <<<"$out"
			walls[${names[$i]}]+="$w "
			cpus[${names[$i]}]+="$c "
		done
	done
	for n in "${names[@]}"; do
		med[$n]=$(tr ' ' '\n' <<<"${walls[$n]}" | grep . | median)
		cpu[$n]=$(tr ' ' '\n' <<<"${cpus[$n]}" | grep . | median)
	done
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
verdict() { awk -v r="$1" -v t="$2" 'BEGIN { print (r <= t) ? "ok" : "OVER" }'; }

printf '\nstax overhead: %s, %s work units, -F %s, %d runs each, median wall-clock (%s)\n' \
	"burn.c" "$iters" "$freq" "$runs" "$tool"
printf '  %-16s %9s   %9s\n' "" "wall" "cpu"
printf '  %-16s %9.3f s %9.3f s\n' baseline "${med[baseline]}" "${cpu[baseline]}"
printf '  %-16s %9.3f s %9.3f s\n' "stax record" "${med[stax]}" "${cpu[stax]}"
if [ "$have_perf" = 1 ]; then
	printf '  %-16s %9.3f s %9.3f s\n' "perf record -g" "${med[perf]}" "${cpu[perf]}"
else
	printf '  %-16s %9s\n' "perf record -g" "n/a (perf not installed or not permitted)"
fi
echo
printf '  %-16s %9s   %9s\n' "ratios" "wall" "cpu"
r=$(ratio "${med[stax]}" "${med[baseline]}")
printf '  %-16s %8sx  %8sx   target (wall) <= 1.05x   %s\n' stax/baseline "$r" \
	"$(ratio "${cpu[stax]}" "${cpu[baseline]}")" "$(verdict "$r" 1.05)"
if [ "$have_perf" = 1 ]; then
	printf '  %-16s %8sx  %8sx\n' perf/baseline "$(ratio "${med[perf]}" "${med[baseline]}")" \
		"$(ratio "${cpu[perf]}" "${cpu[baseline]}")"
	r=$(ratio "${med[stax]}" "${med[perf]}")
	printf '  %-16s %8sx  %8sx   target (wall) <= 1.00x   %s\n' stax/perf "$r" \
		"$(ratio "${cpu[stax]}" "${cpu[perf]}")" "$(verdict "$r" 1.00)"
fi
