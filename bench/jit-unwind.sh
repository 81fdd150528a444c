#!/usr/bin/env bash
# jit-unwind.sh: what the unwinder's steps through JIT code without unwinding info cost it
# (CPython's perf trampolines recognised by their code, other JIT frames by a checked frame
# pointer, loops by pc and CFA), against unwinding those frames as before them (by the
# frame pointer, unchecked). In each of ROUNDS rounds, BenchmarkJITSteps
# (internal/unwind/jitcost_test.go) samples 2,000 stacks live from CPython 3.12 -X perf
# (Python calls nested 8 deep) and from node (recursion through optimized code), then
# unwinds them both ways in turns, BENCHTIME each. Per round, steps over plain:
#   python3.12 per frame   without the steps every stack ends at the first trampoline
#                          (3 frames a stack against 55), so per sample the steps cost the
#                          frames the stacks were missing; per frame they must cost no
#                          more (target <= 1.05)
#   node per sample        V8's frames keep frame pointers: the stacks are the same both
#                          ways, and the checks are all the steps add (target <= 1.05)
# No perf here: the two ways are the same unwinder's.
#
# Usage: bench/jit-unwind.sh
# Environment: ROUNDS=5, BENCHTIME=2s, and those of lib.sh. Needs go, perf_event_open,
# and CPython 3.12 (pyenv's, else python3.12 on PATH) and node; a workload that is missing
# is reported invalid.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_init jit-unwind 5
benchtime=${BENCHTIME:-2s}
command -v go >/dev/null || bench_skip "go is not installed"
bench_log "building the unwinder's benchmark..."
(cd "$root" && go test -c -o "$tmp/unwind.test" ./internal/unwind) || bench_die "go test -c ./internal/unwind failed"

# metric LINE NAME: the value before unit NAME on a benchmark's result line.
metric() { awk -v u="$2" '{ for (i = 2; i <= NF; i++) if ($i == u) { print $(i - 1); exit } }' <<<"$1"; }

printf '%6s | %12s %12s %8s | %12s %12s %8s | %s\n' round "py ns/frame" "(plain)" ratio "node ns/smp" "(plain)" ratio "frames/stack py, node"
for ((r = 1; r <= ROUNDS; r++)); do
	out=$(cd "$root/internal/unwind" && "$tmp/unwind.test" -test.run '^$' -test.bench '^BenchmarkJITSteps$' -test.benchtime "$benchtime" -test.v 2>&1) || true
	if grep -q "perf_event_open\|SKIP.*perf" <<<"$out" && ! grep -q "^BenchmarkJITSteps/.*/all" <<<"$out"; then
		bench_skip "$(grep -m1 -i "skip\|perf_event" <<<"$out")"
	fi
	py=$(grep -m1 '^BenchmarkJITSteps/python3.12/all-.*ns/op' <<<"$out" || true)
	node=$(grep -m1 '^BenchmarkJITSteps/node/same-.*ns/op' <<<"$out" || true)
	pyf=$(metric "$py" ns/frame-steps) pyp=$(metric "$py" ns/frame-plain) pyr=$(metric "$py" steps/plain-frame)
	nodes=$(metric "$node" ns/sample-steps) nodep=$(metric "$node" ns/sample-plain) noder=$(metric "$node" steps/plain-sample)
	frames=$(grep -o '[0-9.]* frames a stack with them, [0-9.]* without' <<<"$out" | awk '{ printf "%s/%s ", $1, $7 }')
	bench_add py_frame "${pyr:-none}"
	bench_add node_sample "${noder:-none}"
	bench_add node_frame "$(metric "$node" steps/plain-frame)"
	printf '%6s | %12s %12s %8s | %12s %12s %8s | %s\n' "$r" "${pyf:-none}" "${pyp:-none}" "${pyr:-none}" \
		"${nodes:-none}" "${nodep:-none}" "${noder:-none}" "${frames:-}"
	[ -n "$py" ] || bench_log "round $r: no python3.12 result: $(grep -m1 -i 'skip\|not installed' <<<"$out" || echo "see go test -bench BenchmarkJITSteps ./internal/unwind")"
	[ -n "$node" ] || bench_log "round $r: no node result: $(grep -m1 -i 'skip\|not installed' <<<"$out" || echo "see go test -bench BenchmarkJITSteps ./internal/unwind")"
done

bench_end_load
bench_header "steps/plain"
bench_check "python3.12 -X perf, per frame" py_frame "<=" 1.05
bench_check "node, per sample (same stacks)" node_sample "<=" 1.05
bench_show "node, per frame" node_frame
bench_finish
