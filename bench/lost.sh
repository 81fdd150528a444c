#!/usr/bin/env bash
# lost.sh: samples kept and lost by stax and by perf record -g on the same CPU-bound
# program (one thread per CPU), at rising frequencies, and each recorder's own CPU time per
# sample. Both tools attach (-p) to a fresh copy of the program, so their CPU time is
# theirs alone; ROUNDS rounds per frequency, which tool goes first alternating.
#   lost share, stax - perf   per round, in points of lost / (kept + lost); target <= 0
#   stax lost at 10,000 Hz    (fp only) target 0, as internal/e2e's TestNoLossAt10kHz
#   CPU per sample            user+system time of the recorder per kept sample, and the
#                             ratio stax/perf (printed; bench/fp-cost.sh judges it)
# perf's samples lost are the samples its PERF_RECORD_LOST and PERF_RECORD_LOST_SAMPLES
# records count (see bench_perf_counts in lib.sh), not the number of those records.
#
# Usage: bench/lost.sh [MS]
#   MS  CPU time each thread burns, in milliseconds (default 3000)
# Environment:
#   ROUNDS=3                        rounds per frequency
#   FREQS="1000 10000 20000 40000"  frequencies (each capped by kernel.perf_event_max_sample_rate)
#   THREADS=$(nproc)                threads of the program
#   CALL_GRAPH=fp                   fp: stax --call-graph fp against perf -g; dwarf: both
#                                   copy 8 KiB of user stack per sample and unwind it
# and those of lib.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ms=${1:-3000}
bench_uint MS "$ms"
bench_init lost 3
freqs=${FREQS:-1000 10000 20000 40000}
threads=${THREADS:-$(nproc)}
bench_uint THREADS "$threads"
callgraph=${CALL_GRAPH:-fp}
case $callgraph in
fp) stax_cg=(--call-graph fp) perf_cg=(-g) ;;
dwarf) stax_cg=(--call-graph dwarf --stack-size 8192) perf_cg=(--call-graph dwarf,8192) ;;
*) bench_die "CALL_GRAPH must be fp or dwarf, got '$callgraph'" ;;
esac
bench_need_perf
bench_build_stax
bench_cc "$tmp/busy" "$bench_here/busy.c" -O1 -fno-omit-frame-pointer

stax_round() {
	"$tmp/busy" "$threads" "$ms" >/dev/null &
	pid=$!
	bench_track "$pid"
	if bench_time "$tmp/t.stax" "$STAX" record -q "${stax_cg[@]}" -F "$f" -p "$pid" 2>"$tmp/stax.err"; then
		read -r skept slost < <(bench_stax_counts)
		scpu=$(bench_cpu "$tmp/t.stax")
	else
		cat "$tmp/stax.err" >&2
	fi
	wait "$pid" || true
}
perf_round() {
	"$tmp/busy" "$threads" "$ms" >/dev/null &
	pid=$!
	bench_track "$pid"
	rm -f "$tmp/perf.data"
	if bench_time "$tmp/t.perf" perf record -q "${perf_cg[@]}" -F "$f" -o "$tmp/perf.data" -p "$pid" 2>"$tmp/perf.err"; then
		read -r pkept plost < <(bench_perf_counts "$tmp/perf.data")
		pcpu=$(bench_cpu "$tmp/t.perf")
	else
		cat "$tmp/perf.err" >&2
	fi
	wait "$pid" || true
}
share() { bench_div "$1" "$(awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9]+$/ && b ~ /^[0-9]+$/) print a + b; else print "none" }')" 100; }

echo "call graph: $callgraph, $threads threads x $ms ms of CPU"
printf '%8s %5s | %10s %8s %7s %12s | %10s %8s %7s %12s | %s\n' HZ ROUND "STAX KEPT" LOST "LOST%" "CPU/SAMPLE" "PERF KEPT" LOST "LOST%" "CPU/SAMPLE" "CPU RATIO"
fs=()
for f0 in $freqs; do
	bench_uint FREQ "$f0"
	f=$(bench_freq "$f0")
	fs+=("$f")
	for ((r = 1; r <= ROUNDS; r++)); do
		skept=none slost=none scpu=none pkept=none plost=none pcpu=none
		if ((r % 2)); then stax_round; perf_round; else perf_round; stax_round; fi
		sper=$(bench_div "$scpu" "$skept" 1e6) pper=$(bench_div "$pcpu" "$pkept" 1e6)
		sshare=$(share "$slost" "$skept") pshare=$(share "$plost" "$pkept")
		bench_add "diff_$f" "$(bench_sub "$sshare" "$pshare")"
		bench_add "slost_$f" "$slost"
		bench_add "plost_$f" "$plost"
		bench_add "ratio_$f" "$(bench_div "$sper" "$pper")"
		printf '%8s %5s | %10s %8s %7s %12s | %10s %8s %7s %12s | %s\n' "$f" "$r" "$skept" "$slost" "$(bench_fmt "$sshare")" "$(bench_fmt "$sper") us" \
			"$pkept" "$plost" "$(bench_fmt "$pshare")" "$(bench_fmt "$pper") us" "$(bench_fmt "$(bench_div "$sper" "$pper")")"
	done
done
echo "CPU/SAMPLE: the recorder's own user+system time per kept sample; CPU RATIO: stax's over perf's."

bench_end_load
for f in "${fs[@]}"; do
	bench_header "$f Hz"
	bench_show "stax samples lost" "slost_$f"
	bench_show "perf samples lost" "plost_$f"
	bench_check -o any,spread=none -u pt "lost share, stax - perf" "diff_$f" "<=" 0
	[ "$callgraph" = fp ] && [ "$f" = 10000 ] && bench_check -o zero,spread=none "stax samples lost at 10000 Hz" "slost_$f" "<=" 0
	bench_show "CPU per sample, stax/perf" "ratio_$f"
done
bench_finish
