#!/usr/bin/env bash
# web-drill.sh: stax web on a big run: 60 s at 4999 Hz, about 300,000 samples over 166,000
# distinct stacks (synthrun.Tree), in headless Chromium (TestBigRunDrill). Each round
# measures the time from navigation to the first flame graph on screen, the time from a
# click on each frame with 1% of the samples or more to its subtree on screen (the page
# asks the server for the subtree its pruned graph lacks: the median and the slowest of
# the frames), and the page's JavaScript heap. The verdicts judge all rounds (lib.sh):
#   first graph      target <= 1000 ms
#   zoom, slowest    target <= 500 ms (a zoom into any frame)
#   zoom, median     printed beside it
#   JS heap          target <= 50 MB
#
# Usage: bench/web-drill.sh
# Environment: ROUNDS=3, and those of lib.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_init web-drill 3
cd "$root"
for r in $(seq 1 "$ROUNDS"); do
	out="$tmp/round$r.txt"
	STAX_WEB_BENCH=1 go test -count=1 -timeout 20m -run '^TestBigRunDrill$' -v ./internal/web >"$out" 2>&1 || {
		cat "$out" >&2
		bench_die "round $r: TestBigRunDrill failed"
	}
	line=$(grep '^big run' "$out" || true)
	first=$(sed -n 's/.*first flame graph on screen at \([0-9.]*\) ms.*/\1/p' <<<"$line")
	zmed=$(sed -n 's/.*subtree on screen: median \([0-9.]*\) ms, max.*/\1/p' <<<"$line")
	zmax=$(sed -n 's/.*subtree on screen: median [0-9.]* ms, max \([0-9.]*\) ms.*/\1/p' <<<"$line")
	heap=$(sed -n 's/.*JS heap \([0-9.]*\) MB.*/\1/p' <<<"$line")
	bench_add first "$first"
	bench_add zmed "$zmed"
	bench_add zmax "$zmax"
	bench_add heap "$heap"
	bench_log "round $r: first graph ${first:-?} ms, zoom median ${zmed:-?} ms, slowest ${zmax:-?} ms, heap ${heap:-?} MB"
	[ "$r" = 1 ] && grep -E '^server|^CPU time|the run:' "$out" | sed 's/^ *//'
done
echo
bench_header
bench_check -u ms "first flame graph on screen" first "<=" 1000
bench_check -u ms "zoom to a subtree, slowest frame" zmax "<=" 500
bench_show -u ms "zoom to a subtree, median frame" zmed
bench_check -u MB "JS heap" heap "<=" 50
bench_finish
