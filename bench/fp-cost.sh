#!/usr/bin/env bash
# fp-cost.sh: what a frame-pointer recording costs the recorder, stax against perf. One
# program with 2 busy threads runs for the whole benchmark; in each round
# `stax record --call-graph fp -p PID -l SECS` and `perf record -g -p PID -- sleep SECS`
# attach to it in turn (which goes first alternates), at FREQ Hz. Each recorder's CPU time
# (user+system of its process, from /usr/bin/time) per sample it kept, their ratio, and
# the samples each lost.
#
# Usage: bench/fp-cost.sh [SECS]      SECS per recording (default 10)
# Environment: ROUNDS=3 FREQ=10000 THREADS=2, and those of lib.sh.
# Targets: stax's CPU per sample at most 2x perf's; stax loses no sample.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

secs=${1:-10}
bench_uint SECS "$secs"
bench_init fp-cost 3
threads=${THREADS:-2}
bench_uint THREADS "$threads"
bench_need_perf
freq=$(bench_freq "${FREQ:-10000}")
bench_build_stax
bench_cc "$tmp/busy" "$bench_here/busy.c" -O1 -fno-omit-frame-pointer

"$tmp/busy" "$threads" 0 >/dev/null &
prog=$!
bench_track "$prog"
sleep 0.5
echo "$threads busy threads (pid $prog), $freq Hz, $secs s per recording: at most $((threads * freq * secs)) samples each (when the threads have their CPUs)"
echo

stax_round() {
	bench_time "$tmp/t.stax" "$STAX" record -q --call-graph fp -F "$freq" -p "$prog" -l "$secs" >/dev/null 2>"$tmp/stax.err" ||
		{ cat "$tmp/stax.err" >&2; return 0; }
	read -r skept slost < <(bench_stax_counts)
	scpu=$(bench_cpu "$tmp/t.stax")
}
perf_round() {
	rm -f "$tmp/perf.data"
	bench_time "$tmp/t.perf" perf record -q -g -F "$freq" -o "$tmp/perf.data" -p "$prog" -- sleep "$secs" >/dev/null 2>"$tmp/perf.err" ||
		{ cat "$tmp/perf.err" >&2; return 0; }
	read -r pkept plost < <(bench_perf_counts "$tmp/perf.data")
	pcpu=$(bench_cpu "$tmp/t.perf")
}

# A warm-up recording, not counted, fills stax's symbol caches (kernel symbols, the
# program's and libc's tables), which a user fills once per machine, as perf keeps its
# build-id cache: without it the first round also pays for them (0.81 s against 0.59).
"$STAX" record -q --call-graph fp -F "$freq" -p "$prog" -l 1 >/dev/null 2>&1 || true

printf '%6s | %10s %8s %10s %12s | %10s %8s %10s %12s\n' round "stax kept" lost "cpu s" "us/sample" "perf kept" lost "cpu s" "us/sample"
for ((r = 1; r <= ROUNDS; r++)); do
	skept=none slost=none scpu=none pkept=none plost=none pcpu=none
	if ((r % 2)); then stax_round; perf_round; else perf_round; stax_round; fi
	sper=$(bench_div "$scpu" "$skept" 1e6)
	pper=$(bench_div "$pcpu" "$pkept" 1e6)
	bench_add stax_per "$sper"
	bench_add perf_per "$pper"
	bench_add ratio "$(bench_div "$sper" "$pper")"
	bench_add stax_lost "$slost"
	bench_add perf_lost "$plost"
	printf '%6s | %10s %8s %10s %12s | %10s %8s %10s %12s\n' "$r" "$skept" "$slost" "$scpu" "$(bench_fmt "$sper")" \
		"$pkept" "$plost" "$pcpu" "$(bench_fmt "$pper")"
done
bench_stop "$prog"

bench_end_load
bench_header
bench_show -u us "stax CPU per sample" stax_per
bench_show -u us "perf CPU per sample" perf_per
bench_check "stax/perf CPU per sample" ratio "<=" 2
bench_check -o zero,spread=none "stax samples lost" stax_lost "<=" 0
bench_show "perf samples lost" perf_lost
bench_finish
