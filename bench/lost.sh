#!/usr/bin/env bash
# lost.sh: samples kept and lost by stax and by perf record -g on the same CPU-bound
# program (one thread per CPU), at rising frequencies, and each recorder's own CPU time per
# sample. Both tools attach (-p) to a fresh copy of the program, so their CPU time is
# theirs alone.
#
# Usage: bench/lost.sh [MS]
#   MS  CPU time each thread burns, in milliseconds (default 3000)
# Environment:
#   FREQS="1000 10000 20000 40000"  frequencies (each capped by kernel.perf_event_max_sample_rate)
#   THREADS=$(nproc)                threads of the program
#   CALL_GRAPH=fp                   fp: stax --call-graph fp against perf -g; dwarf: both
#                                   copy 8 KiB of user stack per sample and unwind it
set -euo pipefail

ms=${1:-3000}
freqs=${FREQS:-1000 10000 20000 40000}
threads=${THREADS:-$(nproc)}
callgraph=${CALL_GRAPH:-fp}
case $callgraph in
fp) stax_cg=(--call-graph fp) perf_cg=(-g) ;;
dwarf) stax_cg=(--call-graph dwarf --stack-size 8192) perf_cg=(--call-graph dwarf,8192) ;;
*) echo "lost.sh: CALL_GRAPH must be fp or dwarf, got '$callgraph'" >&2; exit 2 ;;
esac
case $ms in '' | *[!0-9]*) echo "lost.sh: MS must be a number, got '$ms'" >&2; exit 2 ;; esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stax-lost.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
command -v perf >/dev/null || { echo "lost.sh: perf is not installed (apt-get install linux-perf)" >&2; exit 1; }

echo "building stax and the test program..." >&2
(cd "$root" && go build -o "$tmp/stax" ./cmd/stax)
cc -O1 -fno-omit-frame-pointer -pthread "$root/internal/e2e/testdata/spin.c" -o "$tmp/spin"
max=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
export STAX_HOME="$tmp/home"

# run_timed OUTFILE CMD...: runs CMD, writing its user and system seconds to OUTFILE.
run_timed() {
	local out=$1
	shift
	/usr/bin/time -f '%U %S' -o "$out" "$@"
}

echo "call graph: $callgraph" >&2
printf '%8s %8s | %10s %8s %12s | %10s %8s %12s | %s\n' HZ THREADS "STAX KEPT" LOST "CPU/SAMPLE" "PERF KEPT" LOST "CPU/SAMPLE" "CPU RATIO"
for f in $freqs; do
	[ "$f" -gt "$max" ] && f=$max
	"$tmp/spin" "$threads" "$ms" >/dev/null &
	pid=$!
	run_timed "$tmp/t.stax" "$tmp/stax" record -q "${stax_cg[@]}" -F "$f" -p "$pid"
	wait "$pid" || true
	read -r skept slost < <("$tmp/stax" status --json | python3 -c 'import json,sys; m=json.load(sys.stdin)["meta"]; print(m["samples"], m["lost"])')

	"$tmp/spin" "$threads" "$ms" >/dev/null &
	pid=$!
	run_timed "$tmp/t.perf" perf record -q "${perf_cg[@]}" -F "$f" -o "$tmp/perf.data" -p "$pid" 2>/dev/null
	wait "$pid" || true
	stats=$(perf report -i "$tmp/perf.data" --stats 2>/dev/null)
	pkept=$(sed -n 's/^ *SAMPLE events: *\([0-9]*\).*/\1/p' <<<"$stats" | head -1)
	plost=$(sed -n 's/^ *LOST_SAMPLES events: *\([0-9]*\).*/\1/p' <<<"$stats" | head -1)
	plost=${plost:-0}
	plostrec=$(sed -n 's/^ *LOST events: *\([0-9]*\).*/\1/p' <<<"$stats" | head -1)
	[ -n "$plostrec" ] && [ "$plostrec" != 0 ] && plost="$plost (+$plostrec LOST records)"

	scpu=$(awk '{print $1+$2}' "$tmp/t.stax")
	pcpu=$(awk '{print $1+$2}' "$tmp/t.perf")
	sper=$(awk -v c="$scpu" -v n="$skept" 'BEGIN{printf "%.2f us", n ? c*1e6/n : 0}')
	pper=$(awk -v c="$pcpu" -v n="${pkept:-0}" 'BEGIN{printf "%.2f us", n ? c*1e6/n : 0}')
	ratio=$(awk -v a="$scpu" -v b="$pcpu" -v sn="$skept" -v pn="${pkept:-0}" 'BEGIN{ if (b>0 && sn>0 && pn>0) printf "%.2f", (a/sn)/(b/pn); else print "-" }')
	printf '%8s %8s | %10s %8s %12s | %10s %8s %12s | %s\n' "$f" "$threads" "$skept" "$slost" "$sper" "${pkept:-?}" "$plost" "$pper" "$ratio"
done
echo "CPU/SAMPLE: the recorder's own user+system time per kept sample; CPU RATIO: stax's over perf's." >&2
