#!/usr/bin/env bash
# agent-memory.sh: the recorder's CPU and memory as a whole-host agent, over process churn.
# Two busy multi-threaded programs (busy.c, THREADS threads each) run beside a shell loop
# that starts about CHURN short processes a second (/bin/true, sleep, and every tenth
# round a small pipeline), while `stax record -a -F FREQ -l SECONDS` records everything.
# Every EVERY seconds it prints the recorder's CPU seconds so far, its resident memory
# (VmRSS) and, from `stax status --json`, the samples, the processes and threads the
# recorder holds and has let go, and the aggregation keys held and folded:
#   t_s cpu_s rss_kb samples procs_held procs_released keys keys_folded
# At the end: recorder CPU per sample (µs), CPU share of one core, peak RSS (VmHWM), and
# the processes the loop started. With PROFILE=1 the recorder writes Go's CPU profile
# (STAX_CPUPROFILE) to $OUT/cpu.pprof (OUT defaults to the temporary directory, removed
# at exit: set OUT to keep it), for `go tool pprof -top STAX OUT/cpu.pprof`.
#
# Usage: bench/agent-memory.sh [SECONDS]    (default 60; root or CAP_PERFMON)
# Environment: FREQ=99, THREADS=2, CHURN=27, EVERY=10, CALLGRAPH=dwarf, PROFILE=0, OUT,
# and those of lib.sh (STAX_BIN to record with a stax built elsewhere).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

secs=${1:-60}
bench_uint SECONDS "$secs"
bench_init agent-memory 1
freq=${FREQ:-99} threads=${THREADS:-2} churn=${CHURN:-27} every=${EVERY:-10}
callgraph=${CALLGRAPH:-dwarf}
bench_uint FREQ "$freq"
bench_uint THREADS "$threads"
bench_uint CHURN "$churn"
bench_uint EVERY "$every"
out=${OUT:-$tmp}
mkdir -p "$out"
bench_build_stax
bench_cc "$tmp/busy" "$bench_here/busy.c" -O2 -g
prof=()
[ "${PROFILE:-0}" = 1 ] && prof=(env "STAX_CPUPROFILE=$out/cpu.pprof")

"$tmp/busy" "$threads" 0 >/dev/null &
bench_track $!
"$tmp/busy" "$threads" 0 >/dev/null &
bench_track $!
# Each round starts two processes (true, sleep); the sleep paces the rounds.
nap=$(awk -v c="$churn" 'BEGIN { printf "%.4f", 2 / c }')
(
	n=0
	while :; do
		/bin/true
		if ((n % 10 == 0)); then
			echo "$n" | cat >/dev/null
		fi
		sleep "$nap"
		n=$((n + 1))
		echo "$n" >"$tmp/rounds"
	done
) &
churner=$!
bench_track "$churner"

"${prof[@]}" "$STAX" record -q -a -F "$freq" --call-graph "$callgraph" -l "$secs" >/dev/null 2>"$tmp/stax.err" &
rec=$!
bench_track "$rec"
echo "stax record -a -F $freq --call-graph $callgraph for $secs s; $((threads * 2)) busy threads; about $churn new processes a second"
printf '%6s %8s %8s %9s %10s %14s %7s %11s\n' t_s cpu_s rss_kb samples procs_held procs_released keys keys_folded
field() { python3 -c 'import json,sys
try:
    d = json.load(sys.stdin)
except Exception:
    d = {}
b = d.get("bounds") or {}
print((d.get("meta") or {}).get("samples", "-"), b.get("processes_held", "-"), b.get("processes_released", "-"),
      b.get("keys", "-"), b.get("keys_folded", "-"))'; }
t0=$(date +%s)
peak=0
while kill -0 "$rec" 2>/dev/null; do
	sleep "$every"
	kill -0 "$rec" 2>/dev/null || break
	now=$(($(date +%s) - t0))
	cpu=$(bench_proc_cpu "$rec")
	rss=$(bench_rss_kb "$rec")
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$rec/status" 2>/dev/null || echo 0)
	[ -n "$hwm" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
	read -r samples held released keys folded < <("$STAX" status --json 2>/dev/null | field)
	printf '%6s %8s %8s %9s %10s %14s %7s %11s\n' "$now" "$cpu" "$rss" "$samples" "$held" "$released" "$keys" "$folded"
	last_cpu=$cpu last_samples=$samples last_now=$now
done
wait "$rec" || true
kill -TERM "$churner" 2>/dev/null || true
rounds=$(cat "$tmp/rounds" 2>/dev/null || echo 0)
samples=$("$STAX" status --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["meta"]["samples"])' || echo 0)
# The last reading before the end stands for the whole run's CPU (the recorder's own
# final save comes after it).
echo "processes started by the loop: about $((rounds * 2 + rounds / 10 * 2)) ($(awk -v r="$rounds" -v s="$secs" 'BEGIN { printf "%.1f", (r * 2 + r / 10 * 2) / s }')/s)"
awk -v c="${last_cpu:-0}" -v n="${last_samples:-0}" -v s="$samples" -v p="$peak" -v secs="${last_now:-$secs}" 'BEGIN {
	if (n > 0) printf "recorder CPU per sample: %.0f us (%.2f s over %d samples at the last reading); %.2f%% of a core\n", c / n * 1e6, c, n, c / secs * 100
	printf "samples in the stored run: %d; peak RSS (VmHWM): %.1f MB\n", s, p / 1024
}'
cat "$tmp/stax.err" | head -5
