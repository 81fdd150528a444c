#!/usr/bin/env bash
# agent.sh: what a machine-wide `stax record -a` costs as an always-on agent, beside
# `perf record -a -g` (+ `perf report`, which names what perf recorded) and a bpftrace
# program that aggregates stacks in the kernel, on the workload of a typical server:
# two busy multi-threaded programs (busy.c, BUSY_THREADS threads each) and CHURN new short
# processes a second (each burns about a millisecond and exits), for SECS seconds at FREQ
# Hz per CPU. In each of ROUNDS rounds every recorder records the same workload in turn
# (the order rotates from round to round); each gives, from the recorder's own process:
#   CPU per sample (µs)    the recorder's CPU time (user + system, /proc/PID/stat, its
#                          children's too) over the samples it kept; for perf also with
#                          perf report's CPU added (naming the samples, as stax does live)
#   peak RSS (MB)          VmHWM of the recorder's process
#   written / kept         bytes the recorder wrote (/proc/PID/io write_bytes: its run,
#                          and the symbol cache's files of programs new to it) over the
#                          bytes its run takes on disk at the end (allocated blocks); the
#                          symbol cache is warmed by a recording before the rounds, and
#                          the target is judged on the bytes written less the symbol
#                          cache's new files (the run's own)
# with the targets of a whole-host agent:
#   stax fp CPU per sample       <= perf record + report's
#   stax dwarf CPU per sample    <= 56 µs (a third of 168 µs, measured before this bench)
#   stax peak RSS                <= 100 MB
#   stax written / kept          <= 3
# With SECS >= 600 (a long run), the recorder's CPU per second, RSS and write rate over
# the fifth minute and over the last minute are printed too, with end / 5 min <= 1.1.
# Verdicts say "too noisy" when the rounds straddle a target or spread past NOISE (lib.sh).
#
# Usage: bench/agent.sh
# Environment: SECS=60, FREQ=99, ROUNDS=3, CHURN=27, BUSY_THREADS=2,
# RECORDERS="stax-dwarf stax-fp perf bpftrace" (those to run), and those of lib.sh.
# Needs root (or CAP_PERFMON) for -a; perf and bpftrace are skipped, and said, where they
# are missing or may not record.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_init agent 3
secs=${SECS:-60} freq=${FREQ:-99} churn=${CHURN:-27} busy_threads=${BUSY_THREADS:-2}
bench_uint SECS "$secs"
bench_uint FREQ "$freq"
bench_uint CHURN "$churn"
bench_uint BUSY_THREADS "$busy_threads"
recorders=${RECORDERS:-stax-dwarf stax-fp perf bpftrace}
bench_build_stax

bench_cc "$tmp/busy" "$bench_here/busy.c" -pthread
cat >"$tmp/short.c" <<'EOF'
/* A short command: about a millisecond of CPU, then exit. */
#include <time.h>
static volatile unsigned long sink;
int main(void) {
	struct timespec a, b;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	do {
		for (int i = 0; i < 10000; i++)
			sink += i;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec) < 1e6);
	return 0;
}
EOF
cat >"$tmp/churn.c" <<'EOF'
/* Starts RATE commands a second (CMD), each waited for, until killed. Usage: churn RATE CMD */
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
extern char **environ;
int main(int argc, char **argv) {
	double rate = atof(argv[1]);
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		pid_t pid;
		char *av[] = {argv[2], 0};
		if (posix_spawn(&pid, argv[2], 0, 0, av, environ) == 0)
			waitpid(pid, 0, 0);
		long step = (long)(1e9 / rate);
		next.tv_nsec += step;
		while (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, 0);
	}
}
EOF
bench_cc "$tmp/short" "$tmp/short.c"
bench_cc "$tmp/churn" "$tmp/churn.c"

have_perf=0 have_bpf=0
if [[ " $recorders " == *" perf "* ]] && command -v perf >/dev/null && perf record -q -a -o "$tmp/probe.data" -- true >/dev/null 2>&1; then
	have_perf=1
else
	[[ " $recorders " == *" perf "* ]] && echo "agent: perf is missing or may not record -a here: left out"
fi
rm -f "$tmp/probe.data"
if [[ " $recorders " == *" bpftrace "* ]] && command -v bpftrace >/dev/null && timeout 30 bpftrace -e 'BEGIN { exit(); }' >/dev/null 2>&1; then
	have_bpf=1
else
	[[ " $recorders " == *" bpftrace "* ]] && echo "agent: bpftrace is missing or may not load programs here: left out"
fi

# The workload, started afresh for each recording.
workload_start() {
	WL=()
	local p
	for _ in 1 2; do
		"$tmp/busy" "$busy_threads" 0 >/dev/null &
		p=$!
		bench_track "$p"
		WL+=("$p")
	done
	"$tmp/churn" "$churn" "$tmp/short" &
	p=$!
	bench_track "$p"
	WL+=("$p")
	sleep 1 # the busy threads run
}
workload_stop() {
	local p
	for p in "${WL[@]}"; do bench_stop "$p"; done
}

# proc_ticks PID: user + system CPU of PID and its reaped children, in seconds.
proc_secs() {
	sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk -v hz="$(getconf CLK_TCK)" '{ printf "%.4f\n", ($12 + $13 + $14 + $15) / hz }'
}
proc_hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null || true; }
proc_rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || true; }
proc_written() { awk '/^write_bytes:/ { print $2 }' "/proc/$1/io" 2>/dev/null || true; }

# watch PID: reads the recorder's CPU, peak RSS and bytes written every second until it
# exits; the last reading is in $tmp/watch.last, and with a long run the readings at 4
# and 5 minutes and one minute before the end in $tmp/watch.mark.
watch_recorder() {
	local pid=$1 t=0 line
	: >"$tmp/watch.all"
	while kill -0 "$pid" 2>/dev/null; do
		line="$t $(proc_secs "$pid") $(proc_hwm_kb "$pid") $(proc_rss_kb "$pid") $(proc_written "$pid")"
		[ "$(wc -w <<<"$line")" -eq 5 ] && echo "$line" >>"$tmp/watch.all"
		sleep 1
		t=$((t + 1))
	done
	tail -n 1 "$tmp/watch.all" >"$tmp/watch.last"
}

# record_stax MODE: one recording of stax -a in call-graph MODE.
record_stax() {
	local mode=$1 pid
	rm -rf "$STAX_HOME/runs"
	cache_inodes >"$tmp/inodes.before"
	"$STAX" record -a -q -F "$freq" -l "$secs" --call-graph "$mode" --run-id-file "$tmp/run.id" &
	pid=$!
	bench_track "$pid"
	watch_recorder "$pid" &
	local w=$!
	wait "$pid" || true
	wait "$w" || true
	local n
	n=$("$STAX" status --json --run "$(cat "$tmp/run.id")" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["meta"]["samples"])' || echo none)
	local kept
	kept=$(du -sB1 "$STAX_HOME/runs" | awk '{ print $1 }')
	# The symbol cache's new files (new inodes: they are replaced by renaming) are bytes
	# written for programs new to it, not for the run.
	cache_inodes | awk 'NR == FNR { old[$1] = 1; next } !($1 in old) { s += $2 } END { print s + 0 }' "$tmp/inodes.before" - >"$tmp/cache.new"
	report "stax-$mode" "$n" "$kept" 0
}

# cache_inodes: the symbol cache's files, inode and size.
cache_inodes() { find "$STAX_HOME/cache" -type f -printf '%i %s\n' 2>/dev/null || true; }

# report NAME SAMPLES KEPT_BYTES EXTRA_CPU_SECS: adds the round's values.
report() {
	local name=$1 n=$2 kept=$3 extra=$4
	read -r _ cpu hwm _ written <"$tmp/watch.last" || { cpu=none hwm=none written=none; }
	bench_add "$name.us" "$(bench_div "$cpu" "$n" 1000000)"
	[ "$extra" != 0 ] && bench_add "$name+report.us" "$(bench_div "$(awk -v a="$cpu" -v b="$extra" 'BEGIN { print a + b }')" "$n" 1000000)"
	bench_add "$name.rss" "$(bench_div "$hwm" 1024)"
	bench_add "$name.samples" "$n"
	local cache=0
	if [[ $name == stax-* ]]; then
		cache=$(cat "$tmp/cache.new" 2>/dev/null || echo 0)
		bench_add "$name.ratio" "$(bench_div "$written" "$kept")"
		bench_add "$name.runratio" "$(bench_div "$(awk -v a="$written" -v b="$cache" 'BEGIN { print a - b }')" "$kept")"
	fi
	bench_log "$name: $n samples, $cpu s CPU, peak RSS ${hwm} kB, $written bytes written ($cache of them new symbol cache files), $kept kept"
	if [ "$secs" -ge 600 ]; then
		# The fifth minute against the last: CPU per second, RSS, write rate.
		awk -v end="$(wc -l <"$tmp/watch.all")" '
			NR == 240 { c4 = $2; w4 = $5 } NR == 300 { c5 = $2; w5 = $5; r5 = $4 }
			NR == end - 60 { ce = $2; we = $5 } NR == end { cl = $2; wl = $5; rl = $4 }
			END { if (c5 && cl) printf "%f %f %f %f %f %f\n", c5 - c4, cl - ce, r5, rl, (w5 - w4) / 60, (wl - we) / 60 }' \
			"$tmp/watch.all" >"$tmp/long"
		read -r c5 ce r5 re w5 we <"$tmp/long" || return 0
		bench_add "$name.cpu5" "$(bench_div "$c5" 60 100)"
		bench_add "$name.cpuend" "$(bench_div "$ce" 60 100)"
		bench_add "$name.cpugrow" "$(bench_div "$ce" "$c5")"
		bench_add "$name.rssgrow" "$(bench_div "$re" "$r5")"
		bench_add "$name.wgrow" "$(bench_div "$we" "$w5")"
		bench_log "$name: fifth minute: $(bench_div "$c5" 60 100)% CPU, RSS $r5 kB, $(bench_div "$w5" 1024) KB/s written; last minute: $(bench_div "$ce" 60 100)%, $re kB, $(bench_div "$we" 1024) KB/s"
	fi
}

record_perf() {
	local pid t0 t1
	rm -f "$tmp/perf.data"
	perf record -q -a -g -F "$freq" -o "$tmp/perf.data" -- sleep "$secs" >/dev/null 2>&1 &
	pid=$!
	bench_track "$pid"
	watch_recorder "$pid" &
	local w=$!
	wait "$pid" || true
	wait "$w" || true
	local counts n
	counts=$(bench_perf_counts "$tmp/perf.data")
	n=${counts%% *}
	bench_time "$tmp/report.time" perf report -i "$tmp/perf.data" --stdio >/dev/null 2>&1 || true
	local rep
	rep=$(bench_cpu "$tmp/report.time")
	report perf "$n" "$(du -B1 "$tmp/perf.data" | awk '{ print $1 }')" "$rep"
}

record_bpftrace() {
	local pid
	bpftrace -q -o "$tmp/bpf.out" -e "profile:hz:$freq { @[kstack, ustack, comm] = count(); @samples = count(); } interval:s:$secs { exit(); }" >/dev/null 2>&1 &
	pid=$!
	bench_track "$pid"
	watch_recorder "$pid" &
	local w=$!
	wait "$pid" || true
	wait "$w" || true
	local n
	n=$(awk '/^@samples:/ { print $2 }' "$tmp/bpf.out" 2>/dev/null)
	report bpftrace "${n:-none}" 0 0
}

run_one() {
	workload_start
	case $1 in
	stax-dwarf) record_stax dwarf ;;
	stax-fp) record_stax fp ;;
	perf) [ "$have_perf" = 1 ] && record_perf ;;
	bpftrace) [ "$have_bpf" = 1 ] && record_bpftrace ;;
	esac
	workload_stop
}

echo "workload: 2 x busy ($busy_threads threads), $churn new processes a second; ${secs}s at $freq Hz per CPU"
# A warm symbol cache, as an agent that runs for days has: the first recording fills it.
bench_log "warming the symbol cache"
workload_start
"$STAX" record -a -q -F "$freq" -l 5 >/dev/null 2>&1 || true
workload_stop
read -ra order <<<"$recorders"
for ((round = 1; round <= ROUNDS; round++)); do
	bench_log "round $round of $ROUNDS: ${order[*]}"
	for r in "${order[@]}"; do run_one "$r"; done
	order=("${order[@]:1}" "${order[0]}")
done

echo
bench_header
for r in $recorders; do
	case $r in perf) [ "$have_perf" = 1 ] || continue ;; bpftrace) [ "$have_bpf" = 1 ] || continue ;; esac
	bench_show "$r samples" "$r.samples"
	bench_show -u µs "$r CPU per sample" "$r.us"
	[ "$r" = perf ] && bench_show -u µs "perf record + report CPU per sample" "perf+report.us"
	bench_show -u MB "$r peak RSS" "$r.rss"
	case $r in stax-*) bench_show "$r written / kept (all)" "$r.ratio" ;; esac
done
for mode in dwarf fp; do
	[[ " $recorders " == *" stax-$mode "* ]] || continue
	bench_check -u MB "stax-$mode peak RSS" "stax-$mode.rss" "<=" 100
	bench_check "stax-$mode run bytes written / kept" "stax-$mode.runratio" "<=" 3
	if [ "$secs" -ge 600 ]; then
		bench_show -u % "stax-$mode CPU, fifth minute" "stax-$mode.cpu5"
		bench_show -u % "stax-$mode CPU, last minute" "stax-$mode.cpuend"
		bench_check "stax-$mode CPU per second, end / 5 min" "stax-$mode.cpugrow" "<=" 1.1
		bench_check "stax-$mode RSS, end / 5 min" "stax-$mode.rssgrow" "<=" 1.1
		bench_check "stax-$mode write rate, end / 5 min" "stax-$mode.wgrow" "<=" 1.1
	fi
done
[[ " $recorders " == *" stax-dwarf "* ]] && bench_check -u µs "stax-dwarf CPU per sample" "stax-dwarf.us" "<=" 56
if [ "$have_perf" = 1 ] && [[ " $recorders " == *" stax-fp "* ]]; then
	# Per round: stax fp's CPU per sample over perf record + report's.
	read -ra a <<<"$(bench_values stax-fp.us)"
	read -ra b <<<"$(bench_values perf+report.us)"
	for i in "${!a[@]}"; do bench_add fp-vs-perf "$(bench_div "${a[$i]}" "${b[$i]:-none}")"; done
	bench_check "stax-fp / (perf record + report) per sample" fp-vs-perf "<=" 1
fi
bench_finish
