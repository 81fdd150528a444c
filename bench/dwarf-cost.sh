#!/usr/bin/env bash
# dwarf-cost.sh: what DWARF recording costs, stax against perf. The program (recurse.c,
# built -O2 -fomit-frame-pointer) spends its time at the bottom of a recursion DEPTH calls
# deep; it burns MS milliseconds of CPU time and counts the work it got done. At each
# frequency, in each round, `stax record --call-graph dwarf -- PROG` and
# `perf record --call-graph dwarf -- PROG` run it in turn (which goes first alternates):
#   target CPU per work unit  the program's own CPU time (getrusage) over the work it did:
#                             what the samples cost the program (stack copies in its
#                             context, caches); target: stax/perf <= 1
#   recorder CPU per sample   the recorder's user+system time (the process tree's, from
#                             /usr/bin/time, less the program's) per sample it kept;
#                             target: stax/perf <= 1 (perf only writes the stacks to its
#                             file; stax unwinds them as it records)
#   complete stacks           the share of stax's samples whose stack reaches main, and of
#                             stacks its unwinder ended at the outermost frame (printed)
#
# Each frequency starts with warm-up runs of each recorder (two of stax), not counted.
#
# The program runs pinned to the last CPU (it sets its own affinity, RECURSE_CPU), under
# both recorders; the recorder is not pinned. CPUs of one machine need not be equal: on a 2-CPU VM, the same program did
# 4-5% less work per CPU second on CPU 0 (where the interrupts go) than on CPU 1, so which
# CPU the scheduler gave it, not the recorder, decided a round.
#
# Usage: bench/dwarf-cost.sh [MS]     CPU time of each recording (default 5000)
# Environment: ROUNDS=3 FREQS="999 4999" DEPTH=30; STACK_SIZE=BYTES gives both recorders
# the same stack copy (default: each its own default: 8192 for perf; for stax 8192 until
# it has seen 500 stacks, then fitted to them).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ms=${1:-5000}
bench_uint MS "$ms"
bench_init dwarf-cost 3
depth=${DEPTH:-30}
bench_uint DEPTH "$depth"
freqs=${FREQS:-999 4999}
bench_need_perf
bench_build_stax
bench_cc "$tmp/recurse" "$bench_here/recurse.c" -O2 -g -fomit-frame-pointer
stax_cg=(--call-graph dwarf) perf_cg=(--call-graph dwarf)
if [ -n "${STACK_SIZE:-}" ]; then
	bench_uint STACK_SIZE "$STACK_SIZE"
	stax_cg+=(--stack-size "$STACK_SIZE")
	perf_cg=(--call-graph "dwarf,$STACK_SIZE")
fi
prog=("$tmp/recurse")
pinned="not pinned"
if ((BENCH_NCPU > 1)); then
	export RECURSE_CPU=$((BENCH_NCPU - 1)) # the program pins itself: no taskset in the recording
	pinned="pinned to CPU $RECURSE_CPU"
fi
echo "recursion $depth deep, $ms ms of CPU per recording, stack copy: ${STACK_SIZE:-the default of each recorder}, program $pinned"

# shares.py STAX: the share of the newest run's samples whose stack reaches main, and of
# its stacks that the unwinder ended at the outermost frame (percent); its stack copy at the
# end (fitted to the stacks unless STACK_SIZE fixes it).
cat >"$tmp/shares.py" <<'PY'
import json, subprocess, sys
stax = sys.argv[1]
try:
    top = json.loads(subprocess.run([stax, "top", "--json", "--sort", "total", "-n", "1000000"], capture_output=True, text=True).stdout)
    st = json.loads(subprocess.run([stax, "status", "--json"], capture_output=True, text=True).stdout)
    n = top["samples"]
    main = sum(r["total"] for r in top["rows"] if r["func"] == "main")
    ends = st["meta"].get("stack_ends") or {}
    print("%.2f" % (100.0 * main / n) if n else "none",
          "%.2f" % (100.0 * ends.get("complete", 0) / sum(ends.values())) if ends else "none",
          st["meta"].get("stack_size") or "none")
except Exception:
    print("none none none")
PY

# field NAME FILE: the number after NAME in the program's output line.
field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' "$2"; }

stax_round() {
	if ! bench_time "$tmp/t.stax" "$STAX" record -q "${stax_cg[@]}" -F "$f" -- "${prog[@]}" "$depth" "$ms" >"$tmp/out.stax" 2>"$tmp/stax.err"; then
		cat "$tmp/stax.err" >&2
		return 0
	fi
	read -r skept _ < <(bench_stax_counts)
	swork=$(field work "$tmp/out.stax")
	sprog=$(field cpu_s "$tmp/out.stax")
	srec=$(bench_sub "$(bench_cpu "$tmp/t.stax")" "$sprog")
	read -r smain scomplete scopy < <(python3 "$tmp/shares.py" "$STAX")
}
perf_round() {
	rm -f "$tmp/perf.data"
	if ! bench_time "$tmp/t.perf" perf record -q "${perf_cg[@]}" -F "$f" -o "$tmp/perf.data" -- "${prog[@]}" "$depth" "$ms" >"$tmp/out.perf" 2>"$tmp/perf.err"; then
		cat "$tmp/perf.err" >&2
		return 0
	fi
	read -r pkept _ < <(bench_perf_counts "$tmp/perf.data")
	pwork=$(field work "$tmp/out.perf")
	pprog=$(field cpu_s "$tmp/out.perf")
	prec=$(bench_sub "$(bench_cpu "$tmp/t.perf")" "$pprog")
}

for f0 in $freqs; do
	bench_uint FREQ "$f0"
	f=$(bench_freq "$f0")
	echo
	echo "== $f Hz"
	# Warm-up runs, not counted: the first run on a machine fills stax's symbol cache and
	# perf's build-id cache, which a user pays once, not per recording. stax takes two:
	# the first decodes the DWARF units its samples meet; a later run that meets one it did
	# not loads that DWARF again and then completes the cache, most often the second.
	stax_round
	stax_round
	perf_round
	printf '%6s | %10s %10s %12s %10s %8s | %10s %10s %12s %10s\n' round "stax kept" "work" "ns/work" "rec cpu s" "main %" "perf kept" work "ns/work" "rec cpu s"
	for ((r = 1; r <= ROUNDS; r++)); do
		skept=none swork=none sprog=none srec=none smain=none scomplete=none scopy=none
		pkept=none pwork=none pprog=none prec=none
		if ((r % 2)); then stax_round; perf_round; else perf_round; stax_round; fi
		sunit=$(bench_div "$sprog" "$swork" 1e9)
		punit=$(bench_div "$pprog" "$pwork" 1e9)
		bench_add "unit_$f" "$(bench_div "$sunit" "$punit")"
		bench_add "srec_$f" "$(bench_div "$srec" "$skept" 1e6)"
		bench_add "prec_$f" "$(bench_div "$prec" "$pkept" 1e6)"
		bench_add "rec_$f" "$(bench_div "$(bench_div "$srec" "$skept")" "$(bench_div "$prec" "$pkept")")"
		bench_add "main_$f" "$smain"
		bench_add "complete_$f" "$scomplete"
		bench_add "copy_$f" "$scopy"
		printf '%6s | %10s %10s %12s %10s %8s | %10s %10s %12s %10s\n' "$r" "$skept" "$swork" "$(bench_fmt "$sunit")" "$srec" "$smain" \
			"$pkept" "$pwork" "$(bench_fmt "$punit")" "$prec"
	done
done

bench_end_load
for f0 in $freqs; do
	f=$(bench_freq "$f0")
	bench_header "$f Hz"
	bench_check "target CPU per work unit, stax/perf" "unit_$f" "<=" 1
	bench_show -u us "stax recorder CPU per sample" "srec_$f"
	bench_show -u us "perf recorder CPU per sample" "prec_$f"
	bench_check "recorder CPU per sample, stax/perf" "rec_$f" "<=" 1
	bench_show -u % "stax samples whose stack reaches main" "main_$f"
	bench_show -u % "stax stacks unwound to the outermost frame" "complete_$f"
	bench_show -u B "stax stack copy at the end" "copy_$f"
done
bench_finish
