#!/usr/bin/env bash
# memory.sh: the recorder's memory on a long recording with many distinct stacks. The
# program (stacks.c) walks random call paths LEVELS deep: about 40,000 distinct stacks,
# each about as likely as the others, so some nine in ten of them are known after a minute
# at 999 Hz and all after four (the readings say how many). stax
# records it (`stax record -F FREQ -p PID -l SECONDS`) for MINUTES; the recorder's resident
# memory (VmRSS from /proc/PID/status) is read every EVERY seconds.
#   RSS end / RSS at 1 min   target <= 1.3: once the stacks are known, memory must not
#                            grow with the samples
# and the distinct stacks (stax status --json) at 1 minute and at the end. With MINUTES
# under 2, the first reading is taken halfway instead of at 1 minute.
#
# The recording is of user space only, so that the stacks stay those 40,000: a sample
# taken in the kernel (an interrupt, or the thread preempted: some 2% of the samples on a
# busy 2-CPU machine) is the kernel's path on top of one of the user paths, nearly always
# a pair not seen before, so with kernel frames the distinct stacks grow with the samples
# (38,889 at 1 minute and 57,695 at 10 as root), and memory with them, rightly. stax
# records user space only when kernel sampling is not permitted: as root, the program and
# the recorder run as RUN_AS (default nobody), for whom kernel.perf_event_paranoid >= 2
# forbids it. Run by another user, the recording is theirs.
#
# Nor does it record time off CPU (--no-off-cpu) unless OFFCPU=1: the threads never block,
# but each time one is preempted (by the recorder, or by anything else on a busy machine:
# some 700 times a second here) stax keeps the interval off CPU with its times, 32 bytes,
# up to 1,048,576 of them (docs/memory.md): memory that grows with the machine's load over
# the first hours, not with the program's samples or stacks.
#
# Usage: bench/memory.sh [MINUTES]     (default 10)
# Environment: ROUNDS=1 (recordings), FREQ=999, THREADS=2, LEVELS=15, EVERY=10,
# RUN_AS=nobody (when root), OFFCPU=0, and those of lib.sh. A single recording's ratio is
# judged alone (memory does not jitter as times do); the load rule still applies.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

minutes=${1:-10}
bench_uint MINUTES "$minutes"
bench_init memory 1
freq=${FREQ:-999} threads=${THREADS:-2} levels=${LEVELS:-15} every=${EVERY:-10}
offcpu=(--no-off-cpu) offcpu_say="not recorded"
case ${OFFCPU:-0} in 0) ;; 1) offcpu=() offcpu_say=recorded ;; *) bench_die "OFFCPU must be 0 or 1, got '$OFFCPU'" ;; esac
bench_uint FREQ "$freq"
bench_uint THREADS "$threads"
bench_uint LEVELS "$levels"
bench_uint EVERY "$every"
freq=$(bench_freq "$freq")
bench_build_stax
bench_cc "$tmp/stacks" "$bench_here/stacks.c" -O2 -g -fno-omit-frame-pointer
as=()
if [ "$(id -u)" = 0 ]; then
	run_as=${RUN_AS:-nobody}
	id "$run_as" >/dev/null 2>&1 || bench_die "RUN_AS: no user $run_as"
	command -v setpriv >/dev/null || bench_skip "setpriv is not installed (util-linux): needed to record as $run_as"
	chmod 755 "$tmp"
	mkdir -p "$STAX_HOME"
	chown "$run_as" "$STAX_HOME"
	as=(setpriv --reuid="$run_as" --regid="$(id -g "$run_as")" --clear-groups)
fi
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo unknown)
case $paranoid in 2 | 3 | 4) ;; *) bench_log "kernel.perf_event_paranoid is $paranoid: the recording may hold kernel stacks, whose number grows with the samples" ;; esac
dur=$((minutes * 60))
base=60
[ "$dur" -lt 120 ] && base=$((dur / 2))
echo "$threads threads over $((2 ** levels * 5 / 4)) possible stacks, $freq Hz, $minutes min, off-CPU time $offcpu_say; RSS every $every s, first reading at $base s"

distinct() { "$STAX" status --json 2>/dev/null | python3 -c 'import json,sys
try: print(json.load(sys.stdin)["distinct_stacks"])
except Exception: print("none")'; }
user_only() { "$STAX" status --json 2>/dev/null | python3 -c 'import json,sys
try: print("user space only" if json.load(sys.stdin)["meta"].get("user_only") else "user and kernel")
except Exception: print("unknown")'; }

for ((r = 1; r <= ROUNDS; r++)); do
	"${as[@]}" "$tmp/stacks" "$threads" $((dur + 60)) "$levels" &
	prog=$!
	bench_track "$prog"
	for ((i = 0; i < 100; i++)); do # setpriv has run the program, as RUN_AS
		[ "$(readlink "/proc/$prog/exe" 2>/dev/null)" = "$tmp/stacks" ] && break
		sleep 0.05
	done
	"${as[@]}" "$STAX" record -q "${offcpu[@]}" -F "$freq" -p "$prog" -l "$dur" >/dev/null 2>"$tmp/stax.err" &
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
	space=$(user_only)
	echo
	echo "recording $r: RSS$timeline"
	echo "  recorded $space; samples $samples, lost $lost; distinct stacks $stacks_base at ${base} s, $stacks_end at the end; RSS $((${rss_base/none/0} / 1024)) MiB at ${base} s, $((${rss_end/none/0} / 1024)) MiB at the end, $((rss_max / 1024)) MiB at most"
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
