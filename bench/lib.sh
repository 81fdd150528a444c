#!/usr/bin/env bash
# lib.sh: what every benchmark script shares. Sourced, it gives
#   - rounds and verdicts: bench_add METRIC VALUE collects one value per round,
#     bench_check compares the values of a metric with a target and prints its median,
#     spread (min..max and relative) and a verdict:
#       ok         every round is on the right side of the target (and the rounds agree);
#       MISSED     every round is on the wrong side (and the rounds agree);
#       too noisy  the rounds straddle the target; or they disagree by more than NOISE
#                  (10% by default) and the target lies within that disagreement of them
#                  (within max-min of a round); or they include an impossible value (a
#                  negative overhead); or are too few to show a spread; or the machine was
#                  busy;
#       invalid    a round produced no number (a recorder that kept nothing, a command
#                  that failed);
#   - the machine's load: the load average at start and at the end, and the CPU time
#     other programs used while the benchmark ran; a busy machine turns every verdict
#     into "too noisy";
#   - processes: CPU time of a command's process tree (/usr/bin/time) or of a
#     running process (/proc/PID/stat), its resident memory, stax built from this
#     repository, a check that perf may record, the samples perf kept and lost, temporary
#     files removed and started processes stopped on exit.
#
# Run directly, `bench/lib.sh selftest` checks the verdicts on fixed numbers and, when perf
# may record, that the samples perf lost are read right on a recording made to lose some.
#
# Environment read by every script: ROUNDS (rounds; each script has its own default),
# NOISE (largest relative spread for a verdict, default 0.10), BUSY_SHARE (share of the
# machine's CPU time other programs may use before the machine counts as busy, default
# 0.25), CC (C compiler, default cc), STAX_BIN (a stax binary built elsewhere, for a
# machine without Go: used instead of building this tree's).

BENCH_NOISE=${NOISE:-0.10}
BENCH_BUSY_SHARE=${BUSY_SHARE:-0.25}
BENCH_CC=${CC:-cc}
BENCH_PIDS=()
BENCH_NCPU=$(nproc 2>/dev/null || echo 1)
declare -A BENCH_V=()
BENCH_TALLY_OK=0 BENCH_TALLY_MISSED=0 BENCH_TALLY_NOISY=0 BENCH_TALLY_INVALID=0
BENCH_BUSY=""
BENCH_NAME=$(basename "$0" .sh)

bench_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench_root=$(cd "$bench_here/.." && pwd)

# bench_die MESSAGE: prints MESSAGE and exits 2 (a usage or set-up error).
bench_die() {
	echo "$BENCH_NAME: $*" >&2
	exit 2
}

# bench_skip MESSAGE: says why the benchmark cannot run here and exits 4.
bench_skip() {
	echo "SKIPPED $BENCH_NAME: $*"
	exit 4
}

# bench_log MESSAGE: progress, on stderr.
bench_log() { echo "$BENCH_NAME: $*" >&2; }

# bench_uint NAME VALUE: exits 2 unless VALUE is a positive integer.
bench_uint() {
	case $2 in '' | *[!0-9]* | 0) bench_die "$1 must be a positive integer, got '$2'" ;; esac
}

# bench_cpu_ticks: busy ticks of all CPUs since boot (everything but idle and iowait).
bench_cpu_ticks() {
	awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat
}

# bench_own_ticks: the benchmark's own CPU time so far, in ticks: its cgroup's (see
# bench_cgroup_init), else this shell's and that of every child it has reaped (which have
# reaped theirs).
bench_own_ticks() {
	case ${BENCH_CG_KIND:-} in
	v1) awk -v hz="$BENCH_HZ" '{ printf "%.0f\n", $1 * hz / 1e9 }' "$BENCH_CG/cpuacct.usage" ;;
	v2) awk -v hz="$BENCH_HZ" '$1 == "usage_usec" { printf "%.0f\n", $2 * hz / 1e6 }' "$BENCH_CG/cpu.stat" ;;
	*) sed 's/.*) //' "/proc/$$/stat" | awk '{ print $12 + $13 + $14 + $15 }' ;;
	esac
}

# bench_cgroup_init: puts this shell, and so every process it starts from now, in a cgroup
# of its own where one can be made (root), so that the benchmark's own CPU time counts the
# processes it started whether this shell reaped them or not: a browser's renderers are
# re-parented when it closes, and their time never reached this shell's children's, where
# it counted as other programs' (47% of 2 CPUs in bench/web-drill.sh).
bench_cgroup_init() {
	local base cg
	for base in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/cpu,cpuacct; do
		[ -f "$base/cpuacct.usage" ] || continue
		cg="$base/stax-bench-$$"
		if mkdir "$cg" 2>/dev/null; then
			if echo $$ >"$cg/cgroup.procs" 2>/dev/null; then
				BENCH_CG=$cg BENCH_CG_BASE=$base BENCH_CG_KIND=v1
				return 0
			fi
			rmdir "$cg" 2>/dev/null || true
		fi
	done
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		base=/sys/fs/cgroup$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
		base=${base%/}
		cg="$base/stax-bench-$$"
		if mkdir "$cg" 2>/dev/null; then
			if echo $$ >"$cg/cgroup.procs" 2>/dev/null; then
				BENCH_CG=$cg BENCH_CG_BASE=$base BENCH_CG_KIND=v2
				return 0
			fi
			rmdir "$cg" 2>/dev/null || true
		fi
	fi
	return 0
}

# bench_cgroup_end: moves this shell back and removes its cgroup once the processes it
# started have left it (for a few seconds at most).
bench_cgroup_end() {
	[ -n "${BENCH_CG:-}" ] || return 0
	echo $$ >"$BENCH_CG_BASE/cgroup.procs" 2>/dev/null || true
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		rmdir "$BENCH_CG" 2>/dev/null && break
		sleep 0.3
	done
	BENCH_CG="" BENCH_CG_KIND=""
}

bench_loadavg() { cut -d' ' -f1 /proc/loadavg; }

# bench_init NAME [DEFAULT_ROUNDS]: sets up a run of benchmark NAME: $tmp (removed on
# exit), $root (the repository), $ROUNDS (from the environment, else DEFAULT_ROUNDS), the
# load at start.
bench_init() {
	BENCH_NAME=$1
	local default_rounds=${2:-3}
	ROUNDS=${ROUNDS:-$default_rounds}
	bench_uint ROUNDS "$ROUNDS"
	root=$bench_root
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/stax-$BENCH_NAME.XXXXXX")
	trap bench_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	BENCH_HZ=$(getconf CLK_TCK)
	bench_cgroup_init
	BENCH_LOAD0=$(bench_loadavg)
	BENCH_T0=$(date +%s.%N)
	BENCH_TICKS0=$(bench_cpu_ticks)
	BENCH_OWN0=$(bench_own_ticks)
	echo "$BENCH_NAME: $(date -u +%Y-%m-%dT%H:%M:%SZ), $BENCH_NCPU CPUs, load average $BENCH_LOAD0 at start, rounds: $ROUNDS"
	if awk -v l="$BENCH_LOAD0" -v n="$BENCH_NCPU" 'BEGIN { exit !(l > n) }'; then
		BENCH_BUSY="load average $BENCH_LOAD0 at start > $BENCH_NCPU CPUs"
		echo "$BENCH_NAME: the machine is busy ($BENCH_BUSY): every verdict will be \"too noisy\""
	fi
}

# bench_cleanup: stops the processes the benchmark started that still run (by PID) and
# removes the temporary directory.
bench_cleanup() {
	local p
	for p in "${BENCH_PIDS[@]}"; do
		if kill -0 "$p" 2>/dev/null; then
			kill -TERM "$p" 2>/dev/null || true
			wait "$p" 2>/dev/null || true
		fi
	done
	[ -n "${tmp:-}" ] && rm -rf "$tmp"
	bench_cgroup_end
}

# bench_track PID: stop PID on exit if it still runs.
bench_track() { BENCH_PIDS+=("$1"); }

# bench_stop PID: stops PID (started by this benchmark) and reaps it.
bench_stop() {
	kill -TERM "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# bench_end_load: the load at the end, once, after the measurements: the load average
# (which counts this benchmark's own threads too) and the share of the CPUs' time that
# other programs used while it ran (busy time of all CPUs less this benchmark's own).
bench_end_load() {
	[ -n "${BENCH_LOAD1:-}" ] && return 0
	BENCH_LOAD1=$(bench_loadavg)
	local t1 ticks1 own1
	t1=$(date +%s.%N)
	ticks1=$(bench_cpu_ticks)
	own1=$(bench_own_ticks)
	BENCH_OTHERS=$(awk -v t0="$BENCH_T0" -v t1="$t1" -v a="$BENCH_TICKS0" -v b="$ticks1" \
		-v o0="$BENCH_OWN0" -v o1="$own1" -v hz="$BENCH_HZ" -v n="$BENCH_NCPU" \
		'BEGIN { d = t1 - t0; if (d <= 0) d = 1e-9; s = ((b - a) - (o1 - o0)) / hz / d / n; if (s < 0) s = 0; printf "%.2f", s }')
	echo
	echo "load average $BENCH_LOAD0 at start, $BENCH_LOAD1 at the end (with this benchmark's own threads);" \
		"other programs used $(awk -v s="$BENCH_OTHERS" 'BEGIN { printf "%.0f", s * 100 }')% of the $BENCH_NCPU CPUs meanwhile"
	if [ -z "$BENCH_BUSY" ] && awk -v s="$BENCH_OTHERS" -v m="$BENCH_BUSY_SHARE" 'BEGIN { exit !(s > m) }'; then
		BENCH_BUSY="other programs used $(awk -v s="$BENCH_OTHERS" 'BEGIN { printf "%.0f", s * 100 }')% of the CPUs (more than $(awk -v m="$BENCH_BUSY_SHARE" 'BEGIN { printf "%.0f", m * 100 }')%)"
	fi
	[ -n "$BENCH_BUSY" ] && echo "the machine was busy ($BENCH_BUSY): the verdicts below are \"too noisy\"; rerun on an idle machine"
	echo
	return 0
}

# bench_add METRIC VALUE: one round's value of METRIC (a number; anything else marks the
# round invalid).
bench_add() { BENCH_V[$1]+="${2:-none} "; }

# bench_values METRIC: the values of METRIC, one line.
bench_values() { echo "${BENCH_V[$1]:-}"; }

# bench_fmt NUMBER: a number with as many decimals as its size calls for.
bench_fmt() {
	awk -v x="$1" 'BEGIN {
		if (x !~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/ || x ~ /^-?[0-9]+$/) { print x; exit }
		a = x < 0 ? -x : x
		if (a >= 1000) printf "%.0f\n", x; else if (a >= 100) printf "%.1f\n", x
		else if (a >= 10) printf "%.2f\n", x; else if (a >= 0.01 || a == 0) printf "%.3f\n", x
		else printf "%.2g\n", x }'
}

# bench_verdict OP TARGET OPTIONS VALUE...: the verdict on VALUEs (one per round) against
# "VALUE OP TARGET", OP one of <= < >= >. Prints one line:
#   VERDICT|MEDIAN|MIN|MAX|RELSPREAD|REASON
# OPTIONS, comma-separated (or "-"):
#   any        values may be zero or negative (a difference); default: values must be > 0
#   zero       values may be zero (a count, a share); default: values must be > 0
#   floor=F    values under F are impossible (a slowdown under 2-TARGET: noise larger than
#              the effect measured) and make the verdict "too noisy"
#   spread=S   largest relative spread (max-min)/|median| (default $NOISE), unless the
#              target is farther from every round than the rounds are apart; "none": no bound
#   one        one value is enough (a value computed over all rounds); default: two
#   busy=WHY   the machine was busy: "too noisy" unless invalid
bench_verdict() {
	local op=$1 target=$2 opts=$3
	shift 3
	awk -v op="$op" -v target="$target" -v opts="$opts" -v noise="$BENCH_NOISE" -v vals="$*" '
	function num(s) { return s ~ /^-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ }
	function good(v) {
		if (op == "<=") return v <= target + 0
		if (op == "<") return v < target + 0
		if (op == ">=") return v >= target + 0
		if (op == ">") return v > target + 0
		return 0
	}
	function out(verdict, reason) {
		printf "%s|%s|%s|%s|%s|%s\n", verdict, med, mn, mx, rel, reason
		exit
	}
	BEGIN {
		sign = "positive"; floor = ""; spread = noise; minn = 2; busy = ""
		no = split(opts, o, ",")
		for (i = 1; i <= no; i++) {
			if (o[i] == "any" || o[i] == "zero") sign = o[i]
			else if (o[i] ~ /^floor=/) floor = substr(o[i], 7)
			else if (o[i] ~ /^spread=/) spread = substr(o[i], 8)
			else if (o[i] == "one") minn = 1
			else if (o[i] ~ /^busy=/) busy = substr(o[i], 6)
		}
		med = mn = mx = rel = "-"
		if (op !~ /^(<=|<|>=|>)$/ || !num(target)) out("invalid", "bad target " op " " target)
		n = split(vals, raw, " ")
		if (n == 0) out("invalid", "no values")
		for (i = 1; i <= n; i++)
			if (!num(raw[i])) out("invalid", "round " i " gave no number (" raw[i] ")")
		for (i = 1; i <= n; i++) v[i] = raw[i] + 0
		for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
		mn = v[1]; mx = v[n]
		med = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
		if (med != 0) rel = (mx - mn) / (med < 0 ? -med : med)
		else rel = (mx == mn) ? 0 : "inf"
		if (sign == "positive" && mn <= 0) out("too noisy", "impossible value " mn " (must be > 0)" (busy != "" ? "; " busy : ""))
		if (sign == "zero" && mn < 0) out("too noisy", "impossible value " mn " (must be >= 0)" (busy != "" ? "; " busy : ""))
		if (floor != "" && mn < floor + 0) out("too noisy", "impossible value " mn " (under " floor ": noise larger than the effect)" (busy != "" ? "; " busy : ""))
		if (n < minn) out("too noisy", n " round: no spread to judge; run more rounds")
		ngood = 0
		for (i = 1; i <= n; i++) ngood += good(v[i])
		if (ngood == n) verdict = "ok"; else if (ngood == 0) verdict = "MISSED"; else verdict = "too noisy"
		reason = ""
		if (busy != "") reason = busy
		if (verdict == "too noisy") reason = reason (reason != "" ? "; " : "") "the rounds straddle the target"
		# Rounds that disagree by more than the bound still decide when the target is
		# farther from every round than the rounds are from each other: the range widened
		# by its own width on both sides lies on one side of the target.
		w = mx - mn
		far = verdict != "too noisy" && good(mn - w) == good(mx + w) && good(mn - w) == (verdict == "ok")
		if (spread != "none" && (rel == "inf" || rel > spread + 0) && !far)
			reason = reason (reason != "" ? "; " : "") sprintf("the rounds spread by %s, more than %.0f%%, and the target is within that distance", rel == "inf" ? "inf" : sprintf("%.0f%%", rel * 100), spread * 100)
		if (reason != "" && verdict != "too noisy") {
			reason = reason "; every round: " verdict
			verdict = "too noisy"
		}
		out(verdict, reason)
	}'
}

# bench_check [-o OPTIONS] [-u UNIT] LABEL METRIC OP TARGET: prints METRIC's median, its
# spread and the verdict against "OP TARGET" (see bench_verdict for OPTIONS).
bench_check() {
	local opts="" unit="" OPTIND=1 o
	while getopts 'o:u:' o; do
		case $o in o) opts=$OPTARG ;; u) unit=$OPTARG ;; *) bench_die "bench_check: bad option" ;; esac
	done
	shift $((OPTIND - 1))
	local label=$1 metric=$2 op=$3 target=$4
	bench_end_load
	[ -n "$BENCH_BUSY" ] && opts="${opts:+$opts,}busy=machine busy"
	local line verdict med mn mx rel reason
	# shellcheck disable=SC2046
	line=$(bench_verdict "$op" "$target" "${opts:--}" $(bench_values "$metric"))
	IFS='|' read -r verdict med mn mx rel reason <<<"$line"
	case $verdict in
	ok) BENCH_TALLY_OK=$((BENCH_TALLY_OK + 1)) ;;
	MISSED) BENCH_TALLY_MISSED=$((BENCH_TALLY_MISSED + 1)) ;;
	"too noisy") BENCH_TALLY_NOISY=$((BENCH_TALLY_NOISY + 1)) ;;
	*) BENCH_TALLY_INVALID=$((BENCH_TALLY_INVALID + 1)) ;;
	esac
	bench_print_row "$label" "$med" "$mn" "$mx" "$rel" "$unit" "$op $target" "$verdict${reason:+ ($reason)}"
}

# bench_show [-u UNIT] LABEL METRIC: prints METRIC's median and spread, without a target.
bench_show() {
	local unit="" OPTIND=1 o
	while getopts 'u:' o; do
		case $o in u) unit=$OPTARG ;; *) bench_die "bench_show: bad option" ;; esac
	done
	shift $((OPTIND - 1))
	local line verdict med mn mx rel reason
	# shellcheck disable=SC2046
	line=$(bench_verdict "<=" 0 "any,spread=none,one" $(bench_values "$2"))
	IFS='|' read -r verdict med mn mx rel reason <<<"$line"
	[ "$verdict" = invalid ] && med="invalid" mn="-" mx="-" rel="-"
	bench_print_row "$1" "$med" "$mn" "$mx" "$rel" "$unit" "" ""
}

bench_print_row() {
	local label=$1 med=$2 mn=$3 mx=$4 rel=$5 unit=$6 target=$7 verdict=$8 sp
	if [ "$rel" = "-" ]; then sp="-"; elif [ "$rel" = inf ]; then sp="inf"; else sp=$(awk -v r="$rel" 'BEGIN { printf "%.0f%%", r * 100 }'); fi
	printf '  %-44s %10s %-3s [%s .. %s] %5s  %-8s %s\n' "$label" "$(bench_fmt "$med")" "$unit" \
		"$(bench_fmt "$mn")" "$(bench_fmt "$mx")" "$sp" "$target" "$verdict"
}

# bench_header: the column heads for bench_check and bench_show rows.
bench_header() {
	printf '  %-44s %10s %-3s %s\n' "${1:-measure}" median "" "[min .. max] spread  target   verdict"
}

# bench_finish: the tally of verdicts; exits 0 if all were ok, 1 if one was MISSED or
# invalid, 3 if one was too noisy (and none MISSED).
bench_finish() {
	bench_end_load >/dev/null
	echo
	echo "verdicts: $BENCH_TALLY_OK ok, $BENCH_TALLY_MISSED MISSED, $BENCH_TALLY_NOISY too noisy, $BENCH_TALLY_INVALID invalid"
	if [ $((BENCH_TALLY_MISSED + BENCH_TALLY_INVALID)) -gt 0 ]; then exit 1; fi
	if [ "$BENCH_TALLY_NOISY" -gt 0 ]; then exit 3; fi
	exit 0
}

# bench_time OUT CMD...: runs CMD and times it; OUT gets "WALL USER SYS" (seconds, to the
# microsecond, of CMD's whole process tree: cputime.c, else /usr/bin/time's hundredths).
# Returns CMD's exit status.
bench_time() {
	local out=$1
	shift
	if [ ! -x "$tmp/cputime" ] && command -v "$BENCH_CC" >/dev/null; then
		"$BENCH_CC" -O1 -o "$tmp/cputime" "$bench_here/cputime.c" || rm -f "$tmp/cputime"
	fi
	if [ -x "$tmp/cputime" ]; then
		"$tmp/cputime" "$out" "$@"
		return
	fi
	# Hundredths of a second only: 10 ms is a fifth of what a recorder spends on 200,000
	# samples.
	[ -x /usr/bin/time ] || bench_die "neither a C compiler ($BENCH_CC) nor /usr/bin/time to time a command with"
	/usr/bin/time -f '%e %U %S' -o "$out.raw" "$@"
	local rc=$?
	tail -n 1 "$out.raw" >"$out"
	return $rc
}
# bench_wall OUT / bench_cpu OUT: wall seconds / user+system seconds from bench_time's OUT.
bench_wall() { awk '{ print $1 }' "$1"; }
bench_cpu() { awk '{ printf "%.4f\n", $2 + $3 }' "$1"; }

# bench_proc_cpu PID: user+system seconds of the running process PID (all its threads,
# not its children), from /proc/PID/stat.
bench_proc_cpu() {
	local hz
	hz=$(getconf CLK_TCK)
	sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk -v hz="$hz" '{ printf "%.3f\n", ($12 + $13) / hz }'
}

# bench_rss_kb PID: resident memory of PID in KiB (VmRSS), or nothing once it exited.
bench_rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || true; }

# bench_cc OUT SOURCE FLAGS...: compiles a C program.
bench_cc() {
	local out=$1 src=$2
	shift 2
	command -v "$BENCH_CC" >/dev/null || bench_skip "no C compiler ($BENCH_CC)"
	"$BENCH_CC" "$@" -o "$out" "$src" -pthread
}

# bench_build_stax: builds stax from this repository into $tmp/stax; sets STAX and points
# STAX_HOME at a temporary run store.
bench_build_stax() {
	export STAX_HOME=$tmp/home
	if [ -n "${STAX_BIN:-}" ]; then
		[ -x "$STAX_BIN" ] || bench_die "STAX_BIN=$STAX_BIN is not an executable"
		STAX=$(cd "$(dirname "$STAX_BIN")" && pwd)/$(basename "$STAX_BIN")
		bench_log "stax: $STAX (STAX_BIN)"
		return 0
	fi
	command -v go >/dev/null || bench_skip "go is not installed (or set STAX_BIN to a stax built elsewhere)"
	bench_log "building stax..."
	(cd "$root" && go build -o "$tmp/stax" ./cmd/stax) || bench_die "go build ./cmd/stax failed"
	STAX=$tmp/stax
}

# bench_need_perf: skips the benchmark unless perf is installed and may record.
bench_need_perf() {
	command -v perf >/dev/null || bench_skip "perf is not installed (apt-get install linux-perf)"
	perf record -q -o "$tmp/probe.data" -- true >/dev/null 2>&1 ||
		bench_skip "perf may not record here (kernel.perf_event_paranoid is $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null))"
	rm -f "$tmp/probe.data"
}

# bench_freq HZ: HZ capped by kernel.perf_event_max_sample_rate.
bench_freq() {
	local max
	max=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo "$1")
	if [ "$1" -gt "$max" ]; then echo "$max"; else echo "$1"; fi
}

# bench_perf_counts PERF_DATA: "KEPT LOST" samples of a perf.data file. KEPT counts the
# PERF_RECORD_SAMPLE records. The samples lost are reported twice by perf 6.x on kernels
# 6.0 and later: in PERF_RECORD_LOST records the kernel writes to the ring once it has
# room again (id, lost), and in PERF_RECORD_LOST_SAMPLES records perf record writes at the
# end from each event's PERF_FORMAT_LOST count, which counts the same samples (both are
# incremented where a sample does not fit the ring). The first misses losses the kernel
# had no room left to report; the second is missing on older kernels. LOST is the larger
# of the two sums, never their sum; and never the number of records (which perf report
# --stats prints as "LOST_SAMPLES events" in its aggregated section).
bench_perf_counts() {
	local data=$1 stats kept lost_samples lost_records
	stats=$(perf report -i "$data" --stats 2>/dev/null) || { echo "none none"; return 0; }
	kept=$(awk '/^ *SAMPLE events:/ { print $3; exit }' <<<"$stats")
	# After the aggregated section, one section per event ("cpu-clock:ppp stats:") whose
	# LOST_SAMPLES line is the sum of the lost fields of its PERF_RECORD_LOST_SAMPLES.
	lost_samples=$(awk '/ stats:$/ && !/^Aggregated/ { per = 1 } per && /LOST_SAMPLES events:/ { s += $3 } END { print s + 0 }' <<<"$stats")
	lost_records=$(perf script -i "$data" --show-lost-events -F pid 2>/dev/null |
		awk '/PERF_RECORD_LOST/ && $NF ~ /^[0-9]+$/ { s += $NF } END { print s + 0 }')
	awk -v k="${kept:-0}" -v a="$lost_samples" -v b="$lost_records" 'BEGIN { print k, (a > b ? a : b) }'
}

# bench_stax_counts [ARGS...]: "SAMPLES LOST" of a stax run (the newest, or --run ID).
bench_stax_counts() {
	"$STAX" status --json "$@" 2>/dev/null | python3 -c 'import json,sys
try:
    m = json.load(sys.stdin)["meta"]; print(m.get("samples", 0), m.get("lost", 0))
except Exception:
    print("none none")'
}

# bench_div A B [SCALE]: A*SCALE/B, or "none" when B is not a positive number.
bench_div() {
	awk -v a="$1" -v b="$2" -v s="${3:-1}" 'BEGIN {
		if (a !~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/ || b !~ /^[0-9.]+([eE][-+]?[0-9]+)?$/ || b + 0 <= 0) print "none"
		else printf "%.6g\n", a * s / b }'
}

# bench_sub A B: A-B, or "none".
bench_sub() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a !~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/ || b !~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/) print "none"
		else printf "%.6g\n", a - b }'
}

# bench_now_ms: milliseconds since the epoch.
bench_now_ms() { echo $(($(date +%s%N) / 1000000)); }

# bench_ms CMD...: runs CMD (output discarded) and prints its wall-clock milliseconds, or
# "none" if it failed.
bench_ms() {
	local t0 t1
	t0=$(date +%s%N)
	if ! "$@" >/dev/null 2>&1; then
		echo none
		return 0
	fi
	t1=$(date +%s%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", (b - a) / 1e6 }'
}

# --- self-test ----------------------------------------------------------------------------

bench_selftest_case() {
	local want=$1 op=$2 target=$3 opts=$4
	shift 4
	local got
	got=$(bench_verdict "$op" "$target" "$opts" "$@" | cut -d'|' -f1)
	if [ "$got" = "$want" ]; then
		printf '  pass  %-10s %-3s %-5s %-22s %s\n' "$want" "$op" "$target" "$opts" "$*"
	else
		printf '  FAIL  want %s, got %s: %s %s [%s] %s\n' "$want" "$got" "$op" "$target" "$opts" "$*"
		BENCH_SELFTEST_FAILED=1
	fi
}

bench_selftest() {
	BENCH_SELFTEST_FAILED=0
	echo "verdicts on fixed numbers:"
	bench_selftest_case ok "<=" 2 - 1.2 1.25 1.3
	bench_selftest_case MISSED "<=" 2 - 2.4 2.5 2.6
	bench_selftest_case "too noisy" "<=" 2 - 1.9 2.0 2.1 # straddles
	bench_selftest_case "too noisy" "<=" 0.1 - 0.095 0.117 0.1
	bench_selftest_case MISSED "<" 0.1 - 0.117 0.118 0.116 # save.sh's 0.117
	bench_selftest_case "too noisy" "<=" 2 - 1.0 1.6 1.1     # all under, but 55% apart
	bench_selftest_case ok "<=" 2 spread=none 1.0 1.6 1.1
	bench_selftest_case ok "<=" 1 - 0.16 0.28 0.22          # 55% apart, but far from the target
	bench_selftest_case "too noisy" ">=" 2 - 2.4 2.5 3.5   # all over, but 44% apart
	bench_selftest_case MISSED ">=" 2 - 1.0 1.3 1.1        # 27% apart, far under the target
	bench_selftest_case ok ">=" 0.98 - 0.99 1.0 1.01
	bench_selftest_case MISSED ">=" 0.98 - 0.95 0.96 0.955
	bench_selftest_case "too noisy" "<=" 1.05 - -0.2 0.1 0.3    # a negative overhead
	bench_selftest_case "too noisy" "<=" 0.1 - -1.5 -1.2 -1.4   # unwind.sh's negative time ratio
	bench_selftest_case "too noisy" "<=" 1.05 floor=0.95 0.91 0.93 0.92 # slower without the profiler
	bench_selftest_case ok "<=" 1.05 floor=0.95 0.99 1.01 1.02
	bench_selftest_case "too noisy" "<=" 2 - 0 0 0         # zero where impossible
	bench_selftest_case ok "<=" 0 zero,spread=none 0 0 0     # nothing lost
	bench_selftest_case "too noisy" "<=" 0 zero,spread=none 0 12 0
	bench_selftest_case MISSED "<=" 0 zero,spread=none 7023 6000 6500
	bench_selftest_case ok "<=" 0 any,spread=none -3.1 -0.5 0 # stax's loss minus perf's
	bench_selftest_case "too noisy" "<=" 0 any,spread=none -3.1 0.5 0
	bench_selftest_case invalid "<=" 2 - 1.1 none 1.2        # a recorder kept nothing
	bench_selftest_case invalid "<=" 2 - 1.1 inf 1.2
	bench_selftest_case invalid "<=" 2 -                    # no rounds at all
	bench_selftest_case "too noisy" "<=" 2 - 1.2            # one round: no spread
	bench_selftest_case ok "<" 5 one,zero,spread=none 2.5  # a spread across rounds
	bench_selftest_case "too noisy" "<=" 2 "busy=machine busy" 1.2 1.25 1.3
	bench_selftest_case "too noisy" "<=" 2 "busy=machine busy" 2.4 2.5 2.6
	bench_selftest_case invalid "<=" 2 "busy=machine busy" 1.2 none
	bench_selftest_case ok "<" 50 - 8.1 12.0 10.2            # status under 50 ms
	bench_selftest_case "too noisy" "<" 50 - 8.1 31.0 12.0   # under 50 ms, but 31 ms wide
	bench_selftest_case "too noisy" "<" 50 - 8.1 51.0 12.0

	echo "perf's lost samples:"
	if ! command -v perf >/dev/null || ! perf record -q -o "$tmp/probe.data" -- true >/dev/null 2>&1; then
		echo "  skipped: perf is not installed or may not record"
	else
		# A ring of one page cannot hold a sample with 8 KiB of stack: every sample is lost.
		# 2 threads x 500 ms of CPU at 1,000 Hz: about 1,000 samples.
		bench_cc "$tmp/busy" "$bench_here/busy.c" -O1 -fno-omit-frame-pointer
		local kept lost
		perf record -q -m 1 --call-graph dwarf,8192 -F 1000 -o "$tmp/lost.data" -- "$tmp/busy" 2 500 >/dev/null 2>&1
		read -r kept lost < <(bench_perf_counts "$tmp/lost.data")
		if [ "$kept" = 0 ] && [ "$lost" -ge 800 ] && [ "$lost" -le 1200 ]; then
			echo "  pass  all lost: kept $kept, lost $lost of about 1000"
		else
			echo "  FAIL  all lost: kept $kept, lost $lost; want 0 kept and about 1000 lost"
			BENCH_SELFTEST_FAILED=1
		fi
		# A ring of one page and 2 KiB stacks at 4,000 Hz: about 2 of 3 samples kept.
		perf record -q -m 1 --call-graph dwarf,2048 -F 4000 -o "$tmp/lost.data" -- "$tmp/busy" 2 500 >/dev/null 2>&1
		read -r kept lost < <(bench_perf_counts "$tmp/lost.data")
		if [ "$kept" -gt 0 ] && [ "$lost" -gt 0 ] && [ $((kept + lost)) -ge 3200 ] && [ $((kept + lost)) -le 4800 ]; then
			echo "  pass  some lost: kept $kept + lost $lost = $((kept + lost)), about 4000"
		else
			echo "  FAIL  some lost: kept $kept, lost $lost; want both > 0, about 4000 in all"
			BENCH_SELFTEST_FAILED=1
		fi
	fi
	if [ "$BENCH_SELFTEST_FAILED" = 0 ]; then echo "selftest: all passed"; else echo "selftest: FAILED"; fi
	return "$BENCH_SELFTEST_FAILED"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -uo pipefail
	case ${1:-} in
	selftest)
		BENCH_NAME=lib.sh
		tmp=$(mktemp -d "${TMPDIR:-/tmp}/stax-lib.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		bench_selftest
		;;
	*)
		echo "usage: bench/lib.sh selftest   (the library is sourced by the bench scripts)" >&2
		exit 2
		;;
	esac
fi
