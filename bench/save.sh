#!/usr/bin/env bash
# save.sh: the size of a saved stax run against perf.data for the same workload, and the
# time stax takes to save and open it. Both tools record the phases program (two functions
# in turn) with frame-pointer stacks at the same frequency, ROUNDS times (which goes first
# alternates).
#   size ratio   saved run / perf.data, target under 0.1
#   stax save, stax open, bytes per sample: printed
#
# Usage: bench/save.sh [MS]
#   MS  CPU time of each phase, in milliseconds (default 5000: 10 s of samples)
# Environment: ROUNDS=3, FREQ=4000 (capped by kernel.perf_event_max_sample_rate), and those
# of lib.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ms=${1:-5000}
bench_uint MS "$ms"
bench_init save 3
bench_uint FREQ "${FREQ:-4000}"
freq=$(bench_freq "${FREQ:-4000}")
bench_need_perf
bench_build_stax
bench_cc "$tmp/phases" "$root/internal/e2e/testdata/phases.c" -O2 -g -fno-omit-frame-pointer -I"$root/internal/e2e/testdata"

stax_run() {
	export STAX_HOME="$tmp/home.$r"
	rm -f "$tmp/run.stax"
	"$STAX" record -q --call-graph fp -F "$freq" -- "$tmp/phases" "$ms" 1 >/dev/null || return 0
	save_ms=$(bench_ms "$STAX" save "$tmp/run.stax")
	open_ms=$(bench_ms "$STAX" open "$tmp/run.stax")
	read -r samples _ < <(bench_stax_counts)
	stax_bytes=$(stat -c %s "$tmp/run.stax" 2>/dev/null || echo none)
	rm -rf "$STAX_HOME"
}
perf_run() {
	rm -f "$tmp/perf.data"
	perf record -q -g -F "$freq" -o "$tmp/perf.data" -- "$tmp/phases" "$ms" 1 >/dev/null 2>&1 || return 0
	perf_bytes=$(stat -c %s "$tmp/perf.data")
	read -r perf_samples _ < <(bench_perf_counts "$tmp/perf.data")
}

printf '%6s | %10s %12s %10s %10s | %10s %12s\n' round samples "stax bytes" "save ms" "open ms" "perf kept" "perf bytes"
for ((r = 1; r <= ROUNDS; r++)); do
	samples=none stax_bytes=none save_ms=none open_ms=none perf_bytes=none perf_samples=none
	if ((r % 2)); then stax_run; perf_run; else perf_run; stax_run; fi
	bench_add ratio "$(bench_div "$stax_bytes" "$perf_bytes")"
	bench_add per_sample "$(bench_div "$stax_bytes" "$samples")"
	bench_add perf_per_sample "$(bench_div "$perf_bytes" "$perf_samples")"
	bench_add save "$save_ms"
	bench_add open "$open_ms"
	printf '%6s | %10s %12s %10s %10s | %10s %12s\n' "$r" "$samples" "$stax_bytes" "$save_ms" "$open_ms" "$perf_samples" "$perf_bytes"
done

bench_end_load
bench_header
bench_show -u B "stax run file per sample" per_sample
bench_show -u B "perf.data per sample" perf_per_sample
bench_check "size ratio (stax/perf)" ratio "<" 0.1
bench_show -u ms "stax save" save
bench_show -u ms "stax open" open
bench_finish
