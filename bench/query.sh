#!/usr/bin/env bash
# query.sh: how fast stax answers on a large stored run, against perf on the perf.data of
# the same workload. The program (funcs.c: 2 threads in a handful of functions, hot_mix the
# hottest) runs while `stax record --call-graph fp -F FREQ -p PID` records it until the run
# holds SAMPLES samples (stax wait --for-samples, then stax stop), then
# `perf record -g -F FREQ -p PID` records it for as long. Then, ROUNDS times (which tool
# goes first alternates), each query's wall-clock time:
#   stax status                                  target < 50 ms
#   stax top            / perf report -g none --stdio          target: stax/perf <= 1
#   stax annotate hot_mix / perf annotate --stdio hot_mix      target: stax/perf <= 1
#   stax flame                                   printed (perf has no counterpart)
#
# Usage: bench/query.sh [SAMPLES]     (default 1000000)
# Environment: ROUNDS=5 FREQ=20000 THREADS=2 TIMEOUT=900 (seconds to wait for the samples),
# and those of lib.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

want=${1:-1000000}
bench_uint SAMPLES "$want"
bench_init query 5
threads=${THREADS:-2} timeout=${TIMEOUT:-900}
bench_uint THREADS "$threads"
bench_uint TIMEOUT "$timeout"
bench_uint FREQ "${FREQ:-20000}"
freq=$(bench_freq "${FREQ:-20000}")
bench_need_perf
bench_build_stax
bench_cc "$tmp/funcs" "$bench_here/funcs.c" -O2 -g -fno-omit-frame-pointer
hot=hot_mix

"$tmp/funcs" "$threads" 0 &
prog=$!
bench_track "$prog"
bench_log "recording $want samples at $freq Hz with stax..."
t0=$(date +%s.%N)
"$STAX" record -q --call-graph fp -F "$freq" -p "$prog" >/dev/null 2>"$tmp/stax.err" &
rec=$!
bench_track "$rec"
code=0
"$STAX" wait --for-samples "$want" --timeout-ms $((timeout * 1000)) >/dev/null 2>&1 || code=$?
"$STAX" stop >/dev/null 2>&1 || true
wait "$rec" || cat "$tmp/stax.err" >&2
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
[ "$code" = 4 ] && bench_log "the run did not reach $want samples in $timeout s"
bench_log "recording $secs s with perf record..."
perf record -q -g -F "$freq" -o "$tmp/perf.data" -p "$prog" -- sleep "$secs" >/dev/null 2>&1 || true
bench_stop "$prog"
read -r skept slost < <(bench_stax_counts)
read -r pkept plost < <(bench_perf_counts "$tmp/perf.data")
run=$("$STAX" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["meta"]["id"])')
echo "stax run $run: $skept samples ($slost lost); perf.data: $pkept samples ($plost lost), $(($(stat -c %s "$tmp/perf.data") / 1048576)) MiB; $secs s each at $freq Hz"
echo

stax_q() {
	bench_add status "$(bench_ms "$STAX" status --run "$run")"
	bench_add top "$(bench_ms "$STAX" top --run "$run")"
	bench_add flame "$(bench_ms "$STAX" flame --run "$run")"
	bench_add annotate "$(bench_ms "$STAX" annotate "$hot" --run "$run")"
}
perf_q() {
	bench_add preport "$(bench_ms perf report -i "$tmp/perf.data" -g none --stdio)"
	bench_add pannotate "$(bench_ms perf annotate -i "$tmp/perf.data" --stdio "$hot")"
}
for ((r = 1; r <= ROUNDS; r++)); do
	bench_log "queries, round $r/$ROUNDS"
	if ((r % 2)); then stax_q; perf_q; else perf_q; stax_q; fi
done
read -ra top <<<"$(bench_values top)"
read -ra rep <<<"$(bench_values preport)"
read -ra ann <<<"$(bench_values annotate)"
read -ra pann <<<"$(bench_values pannotate)"
for i in "${!top[@]}"; do
	bench_add top_ratio "$(bench_div "${top[$i]}" "${rep[$i]}")"
	bench_add annotate_ratio "$(bench_div "${ann[$i]}" "${pann[$i]}")"
done

bench_end_load
bench_header "query (wall-clock)"
bench_check -u ms "stax status" status "<" 50
bench_show -u ms "stax top" top
bench_show -u ms "perf report -g none --stdio" preport
bench_check "stax top / perf report" top_ratio "<=" 1
bench_show -u ms "stax annotate $hot" annotate
bench_show -u ms "perf annotate --stdio $hot" pannotate
bench_check "stax annotate / perf annotate" annotate_ratio "<=" 1
bench_show -u ms "stax flame" flame
bench_finish
