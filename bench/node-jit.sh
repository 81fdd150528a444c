#!/usr/bin/env bash
# node-jit.sh: names for Node's JIT'd code: stax (live jitdump tailing) against perf record
# -k mono + perf inject --jit + perf report, on the same script, ROUNDS rounds (which goes
# first alternates). For each: the share of samples in JIT code that stayed unnamed, the
# time to the first report after the run, and how many files were left on disk.
#   stax unnamed share of JIT samples   target under 2%
#
# Usage: bench/node-jit.sh [SECONDS]     (default 5: the script's CPU time)
# Environment: ROUNDS=3, and those of lib.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

secs=${1:-5}
bench_uint SECONDS "$secs"
bench_init node-jit 3
command -v node >/dev/null || bench_skip "node is not installed"
bench_need_perf
bench_build_stax

stax_run() {
	local d="$tmp/stax-run.$r" t0 t1 jit unnamed pid
	mkdir -p "$d"
	cp "$root/internal/e2e/testdata/bench.js" "$d/"
	(cd "$d" && "$STAX" record -q -- node --perf-prof --interpreted-frames-native-stack bench.js $((secs * 1000)) >/dev/null) || return 0
	t0=$(bench_now_ms)
	"$STAX" top -n 10 >/dev/null
	t1=$(bench_now_ms)
	read -r jit unnamed pid < <("$STAX" status --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["jit_samples"], s["jit_unnamed"], s["meta"]["pid"])')
	bench_add stax_unnamed "$(bench_div "$unnamed" "$jit" 100)"
	bench_add stax_jit "$jit"
	bench_add stax_report $((t1 - t0))
	bench_add stax_files "$(find "$d" -name 'jitted-*.so' | wc -l)"
	rm -f "/tmp/jit-$pid.dump" "/tmp/perf-$pid.map"
	rm -rf "$d"
}
perf_run() {
	local d="$tmp/perf-run.$r" t0 t1 jit un
	mkdir -p "$d"
	cp "$root/internal/e2e/testdata/bench.js" "$d/"
	(cd "$d" && perf record -q -k mono -F 999 -g -o perf.data -- node --perf-prof --interpreted-frames-native-stack bench.js $((secs * 1000)) >/dev/null 2>&1) || return 0
	t0=$(bench_now_ms)
	(cd "$d" && perf inject --jit -i perf.data -o perf.jit.data 2>/dev/null &&
		perf report -i perf.jit.data --stdio --no-children --sort dso,sym -g none 2>/dev/null >"$tmp/perf-report.txt")
	t1=$(bench_now_ms)
	# JIT samples: those in jitted-*.so (named) or in anonymous memory (unnamed), in percent
	# of all samples.
	read -r jit un < <(awk '
		/^ *[0-9.]+%/ {
			pct = $1; sub("%", "", pct)
			if ($2 ~ /^jitted-/) jit += pct
			else if ($2 ~ /^(\[JIT\]|\/\/anon|\[anon|perf-[0-9]+\.map)/) { jit += pct; un += pct }
		}
		END { printf "%.4f %.4f\n", jit, un }' "$tmp/perf-report.txt")
	bench_add perf_unnamed "$(bench_div "$un" "$jit" 100)"
	bench_add perf_report $((t1 - t0))
	bench_add perf_files "$(find "$d" -name 'jitted-*.so' | wc -l)"
	rm -rf "$d"
}

for ((r = 1; r <= ROUNDS; r++)); do
	bench_log "round $r/$ROUNDS..."
	if ((r % 2)); then stax_run; perf_run; else perf_run; stax_run; fi
done

bench_end_load
bench_header "node, $secs s of CPU"
bench_show "stax: JIT samples" stax_jit
bench_check -o zero,spread=none -u % "stax: unnamed share of JIT samples" stax_unnamed "<" 2
bench_show -u % "perf: unnamed share of JIT samples" perf_unnamed
bench_show -u ms "stax: report after the run (stax top)" stax_report
bench_show -u ms "perf: report after the run (inject+report)" perf_report
bench_show "stax: jitted-*.so files left" stax_files
bench_show "perf: jitted-*.so files left" perf_files
bench_finish
