#!/usr/bin/env bash
# memory.sh: the recorder's memory on a long recording with many distinct stacks. The
# program (stacks.c) walks random call paths LEVELS deep: about 40,000 distinct stacks,
# each as likely as the others, so nearly all of them are known after a minute. stax
# records it (`stax record -F FREQ -p PID -l SECONDS`) for MINUTES; the recorder's resident
# memory (VmRSS from /proc/PID/status) is read every EVERY seconds.
#   RSS end / RSS at 1 min   target <= 1.3: once the stacks are known, memory must not
#                            grow with the samples
# and the distinct stacks (stax status --json) at 1 minute and at the end. With MINUTES
# under 2, the first reading is taken halfway instead of at 1 minute.
#
# Usage: bench/memory.sh [MINUTES]     (default 10)
# Environment: ROUNDS=1 (recordings), FREQ=999, THREADS=2, LEVELS=15, EVERY=10, and those
# of lib.sh. A single recording's ratio is judged alone (memory does not jitter as times
# do); the load rule still applies.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

minutes=${1:-10}
bench_uint MINUTES "$minutes"
bench_init memory 1
freq=${FREQ:-999} threads=${THREADS:-2} levels=${LEVELS:-15} every=${EVERY:-10}
bench_uint FREQ "$freq"
bench_uint THREADS "$threads"
bench_uint LEVELS "$levels"
bench_uint EVERY "$every"
freq=$(bench_freq "$freq")
bench_build_stax
bench_cc "$tmp/stacks" "$bench_here/stacks.c" -O2 -g -fno-omit-frame-pointer
dur=$((minutes * 60))
base=60
[ "$dur" -lt 120 ] && base=$((dur / 2))
echo "$threads threads over $((2 ** levels * 5 / 4)) possible stacks, $freq Hz, $minutes min; RSS every $every s, first reading at $base s"

distinct() { "$STAX" status --json 2>/dev/null | python3 -c 'import json,sys
try: print(json.load(sys.stdin)["distinct_stacks"])
except Exception: print("none")'; }

for ((r = 1; r <= ROUNDS; r++)); do
	"$tmp/stacks" "$threads" $((dur + 60)) "$levels" &
	prog=$!
	bench_track "$prog"
	"$STAX" record -q -F "$freq" -p "$prog" -l "$dur" >/dev/null 2>"$tmp/stax.err" &
	rec=$!
	bench_track "$rec"
	start=$(date +%s)
	rss_base=none stacks_base=none rss_end=none rss_max=0
	timeline=""
	while kill -0 "$rec" 2>/dev/null; do
		sleep "$every" &
		wait $! || true
		now=$(($(date +%s) - start))
		rss=$(bench_rss_kb "$rec")
		[ -z "$rss" ] && break
		[ "$now" -ge "$dur" ] && [ "$rss_end" != none ] && break # the recording has ended: saving, not recording
		rss_end=$rss
		[ "$rss" -gt "$rss_max" ] && rss_max=$rss
		timeline+=" ${now}s:$((rss / 1024))M"
		if [ "$rss_base" = none ] && [ "$now" -ge "$base" ]; then
			rss_base=$rss
			stacks_base=$(distinct)
		fi
	done
	wait "$rec" || { cat "$tmp/stax.err" >&2; }
	bench_stop "$prog"
	read -r samples lost < <(bench_stax_counts)
	stacks_end=$(distinct)
	echo
	echo "recording $r: RSS$timeline"
	echo "  samples $samples, lost $lost; distinct stacks $stacks_base at ${base} s, $stacks_end at the end; RSS $((${rss_base/none/0} / 1024)) MiB at ${base} s, $((${rss_end/none/0} / 1024)) MiB at the end, $((rss_max / 1024)) MiB at most"
	bench_add ratio "$(bench_div "$rss_end" "$rss_base")"
	bench_add rss_base "$(bench_div "$rss_base" 1024)"
	bench_add rss_end "$(bench_div "$rss_end" 1024)"
	bench_add stacks_base "$stacks_base"
	bench_add stacks_end "$stacks_end"
done

bench_end_load
bench_header
bench_show -u MiB "RSS at ${base} s" rss_base
bench_show -u MiB "RSS at the end" rss_end
opts=""
[ "$ROUNDS" = 1 ] && opts="one"
bench_check ${opts:+-o "$opts"} "RSS at the end / RSS at ${base} s" ratio "<=" 1.3
bench_show "distinct stacks at ${base} s" stacks_base
bench_show "distinct stacks at the end" stacks_end
bench_finish
