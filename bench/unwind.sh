#!/usr/bin/env bash
# unwind.sh: the cost of complete stacks. The same recording (a -O2 -fomit-frame-pointer
# program whose hot path runs through libc's qsort, MS milliseconds of CPU at 999 Hz) by
# `stax record --call-graph dwarf` then `stax flame`, and by `perf record --call-graph dwarf`
# then `perf report --stdio`, and the program alone, in each of ROUNDS rounds (in an order
# that rotates). Three ratios per round, stax over perf:
#   time      wall time of record + report beyond the program's own run (target at most
#             0.1); a round where a profiler seems to take less than the program alone
#             gives an impossible value, and the verdict "too noisy"
#   bytes     bytes written to disk (target at most 0.05)
#   slowdown  of the program under stax against an unprofiled run (target at most 1.05;
#             under 0.95 is impossible, "too noisy")
#
# Usage: bench/unwind.sh [MS]     (default 10000: a 10-second recording)
# Environment: ROUNDS=3, and those of lib.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ms=${1:-10000}
bench_uint MS "$ms"
bench_init unwind 3
bench_need_perf
bench_build_stax
bench_cc "$tmp/qsortfp" "$root/internal/e2e/testdata/qsortfp.c" -O2 -g -fomit-frame-pointer -I"$root/internal/e2e/testdata"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f\n", b - a }'; }

alone_run() {
	local t0
	t0=$(now)
	"$tmp/qsortfp" "$ms" >/dev/null
	alone=$(since "$t0")
}
stax_run() {
	local t0
	export STAX_HOME="$tmp/home.$r"
	t0=$(now)
	"$STAX" record -q -F 999 --call-graph dwarf -- "$tmp/qsortfp" "$ms" >/dev/null
	stax_rec=$(since "$t0")
	"$STAX" flame -d 0 >/dev/null
	stax_total=$(since "$t0")
	stax_bytes=$(du -sb "$STAX_HOME" | cut -f1)
	rm -rf "$STAX_HOME"
}
perf_run() {
	local t0
	rm -f "$tmp/perf.data"
	t0=$(now)
	perf record -q -F 999 --call-graph dwarf -o "$tmp/perf.data" -- "$tmp/qsortfp" "$ms" >/dev/null 2>&1
	perf report --stdio -i "$tmp/perf.data" >/dev/null 2>&1
	perf_total=$(since "$t0")
	perf_bytes=$(stat -c %s "$tmp/perf.data")
}

printf '%6s | %8s | %10s %10s %12s | %10s %12s\n' round "alone s" "stax rec s" "+flame s" "stax bytes" "perf s" "perf bytes"
runs=(alone_run stax_run perf_run)
for ((r = 1; r <= ROUNDS; r++)); do
	alone=none stax_rec=none stax_total=none stax_bytes=none perf_total=none perf_bytes=none
	for ((i = 0; i < 3; i++)); do "${runs[$(((i + r - 1) % 3))]}"; done
	# The profilers' work beyond the program's own run; when it comes out zero or negative
	# the round's ratio is impossible (-1), not a small number.
	bench_add time "$(awk -v s="$stax_total" -v p="$perf_total" -v a="$alone" 'BEGIN {
		if (s - a <= 0 || p - a <= 0) print -1; else printf "%.6g\n", (s - a) / (p - a) }')"
	bench_add bytes "$(bench_div "$stax_bytes" "$perf_bytes")"
	bench_add slowdown "$(bench_div "$stax_rec" "$alone")"
	bench_add stax_work "$(bench_sub "$stax_total" "$alone")"
	bench_add perf_work "$(bench_sub "$perf_total" "$alone")"
	printf '%6s | %8s | %10s %10s %12s | %10s %12s\n' "$r" "$alone" "$stax_rec" "$stax_total" "$stax_bytes" "$perf_total" "$perf_bytes"
done

bench_end_load
bench_header
bench_show -u s "stax record + flame beyond the program" stax_work
bench_show -u s "perf record + report beyond the program" perf_work
bench_check "time ratio (stax/perf)" time "<=" 0.1
bench_check "bytes ratio (stax/perf)" bytes "<=" 0.05
bench_check -o floor=0.95 "stax slowdown" slowdown "<=" 1.05
bench_finish
