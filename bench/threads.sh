#!/usr/bin/env bash
# threads.sh: many busy threads, stax against perf, ROUNDS rounds each (which tool goes
# first alternates). The program (busy.c) runs N threads that each burn a fixed CPU time
# and prints how long they took.
#   1. 200 threads x MS_A ms of CPU at 10,000 Hz, DWARF stacks (stax --call-graph dwarf
#      --stack-size 8192, perf --call-graph dwarf,8192): the share of samples each lost,
#      lost / (kept + lost). Targets: in every round stax loses no larger share than perf
#      (stax's share minus perf's <= 0 points), and stax's share varies across the rounds
#      by under 5 points.
#   2. 500 threads x MS_B ms of CPU: stax with its defaults (999 Hz, DWARF stacks) against
#      `perf record -g -F 999`. Targets: stax keeps at least 98% of the samples perf keeps,
#      and the program takes at most 2% longer to finish under stax than under perf.
#
# Usage: bench/threads.sh [MS_A [MS_B]]     (defaults 50 and 100: about 5 s and 25 s per
#                                            recording on 2 CPUs)
# Environment: ROUNDS=5, THREADS_A=200 THREADS_B=500 FREQ_A=10000 STACK_SIZE=8192, and
# those of lib.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ms_a=${1:-50} ms_b=${2:-100}
bench_uint MS_A "$ms_a"
bench_uint MS_B "$ms_b"
bench_init threads 5
threads_a=${THREADS_A:-200} threads_b=${THREADS_B:-500} stack=${STACK_SIZE:-8192}
bench_uint THREADS_A "$threads_a"
bench_uint THREADS_B "$threads_b"
bench_uint STACK_SIZE "$stack"
bench_uint FREQ_A "${FREQ_A:-10000}"
freq_a=$(bench_freq "${FREQ_A:-10000}")
bench_need_perf
bench_build_stax
bench_cc "$tmp/busy" "$bench_here/busy.c" -O1 -fno-omit-frame-pointer

# field NAME FILE: the number after NAME in the program's output line.
field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' "$2"; }
# share LOST KEPT: LOST in percent of KEPT + LOST.
share() { bench_div "$1" "$(awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9]+$/ && b ~ /^[0-9]+$/) print a + b; else print "none" }')" 100; }

stax_run() { # ARGS...: stax record ARGS -- busy N MS; sets skept slost swall
	skept=none slost=none swall=none
	if "$STAX" record -q "$@" -- "$tmp/busy" "$n" "$ms" >"$tmp/out.stax" 2>"$tmp/stax.err"; then
		read -r skept slost < <(bench_stax_counts)
		swall=$(field wall_s "$tmp/out.stax")
		# A round that lost more than 1% says where and how the recorder stood.
		if awk -v k="$skept" -v l="$slost" 'BEGIN { exit !(k + l > 0 && l * 100 > k + l) }'; then
			"$STAX" status --json 2>/dev/null | python3 -c 'import json, sys
m = json.load(sys.stdin)["meta"]
keys = ("samples", "lost", "lost_by_cpu", "overload_samples", "recorder_nice", "ring_pages", "notes")
print("    stax status:", {k: m[k] for k in keys if k in m})' >&2 || true
		fi
	else
		cat "$tmp/stax.err" >&2
	fi
	# The runs are not needed after, and DWARF runs are large. The symbol caches stay, as
	# on a user's machine after its first recording (perf keeps its build-id cache too).
	rm -rf "$STAX_HOME/runs"
}
perf_run() { # ARGS...: perf record ARGS -- busy N MS; sets pkept plost pwall
	pkept=none plost=none pwall=none
	rm -f "$tmp/perf.data"
	if perf record -q "$@" -o "$tmp/perf.data" -- "$tmp/busy" "$n" "$ms" >"$tmp/out.perf" 2>"$tmp/perf.err"; then
		read -r pkept plost < <(bench_perf_counts "$tmp/perf.data")
		pwall=$(field wall_s "$tmp/out.perf")
	else
		cat "$tmp/perf.err" >&2
	fi
	rm -f "$tmp/perf.data"
}

# A warm-up run, not counted, fills stax's symbol caches (kernel symbols, the program's and
# libc's symbol tables and DWARF), which a user fills once, not per recording: without it,
# the first round's recorder loads them while 200 threads fill the rings.
n=4 ms=200
stax_run --call-graph dwarf --stack-size "$stack" -F "$freq_a"

echo
echo "== 1. $threads_a threads x $ms_a ms of CPU at $freq_a Hz, DWARF stacks of $stack bytes"
printf '%6s | %10s %10s %8s | %10s %10s %8s\n' round "stax kept" lost "lost %" "perf kept" lost "lost %"
n=$threads_a ms=$ms_a
for ((r = 1; r <= ROUNDS; r++)); do
	s_args=(--call-graph dwarf --stack-size "$stack" -F "$freq_a")
	p_args=(--call-graph "dwarf,$stack" -F "$freq_a")
	if ((r % 2)); then stax_run "${s_args[@]}"; perf_run "${p_args[@]}"; else perf_run "${p_args[@]}"; stax_run "${s_args[@]}"; fi
	sshare=$(share "$slost" "$skept") pshare=$(share "$plost" "$pkept")
	bench_add a_stax "$sshare"
	bench_add a_perf "$pshare"
	bench_add a_diff "$(bench_sub "$sshare" "$pshare")"
	printf '%6s | %10s %10s %8s | %10s %10s %8s\n' "$r" "$skept" "$slost" "$(bench_fmt "$sshare")" "$pkept" "$plost" "$(bench_fmt "$pshare")"
done
# stax's spread across the rounds, in points: one value over all rounds.
bench_add a_spread "$(bench_verdict "<=" 0 any,spread=none,one $(bench_values a_stax) | awk -F'|' '$1 != "invalid" { print $4 - $3; exit } { print "none" }')"

echo
echo "== 2. $threads_b threads x $ms_b ms of CPU: stax's defaults against perf record -g -F 999"
printf '%6s | %10s %10s %10s | %10s %10s %10s\n' round "stax kept" lost "wall s" "perf kept" lost "wall s"
n=$threads_b ms=$ms_b
for ((r = 1; r <= ROUNDS; r++)); do
	if ((r % 2)); then stax_run; perf_run -g -F 999; else perf_run -g -F 999; stax_run; fi
	bench_add b_kept "$(bench_div "$skept" "$pkept")"
	bench_add b_wall "$(bench_div "$swall" "$pwall")"
	printf '%6s | %10s %10s %10s | %10s %10s %10s\n' "$r" "$skept" "$slost" "$swall" "$pkept" "$plost" "$pwall"
done

bench_end_load
bench_header "1. $threads_a threads at $freq_a Hz, DWARF"
bench_show -u % "stax samples lost" a_stax
bench_show -u % "perf samples lost" a_perf
bench_check -o any,spread=none -u pt "stax's lost share - perf's, per round" a_diff "<=" 0
bench_check -o one,zero,spread=none -u pt "stax's lost share, max - min over rounds" a_spread "<" 5
bench_header "2. $threads_b threads, stax defaults"
bench_check "samples kept, stax/perf" b_kept ">=" 0.98
bench_check "time to finish, stax/perf" b_wall "<=" 1.02
bench_finish
