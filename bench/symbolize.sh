#!/usr/bin/env bash
# symbolize.sh: naming N distinct libc addresses (names, file:line, inline chains through
# libc's separate debug file): stax symbolize against addr2line -i -f and llvm-symbolizer,
# each in a fresh process. stax is timed cold (no symbol cache) and warm (its decoded-table
# cache from a previous run). ROUNDS rounds, the order of the tools rotating; each round
# gives its own ratios:
#   stax cold / addr2line   target at most 1.00
#   stax warm / addr2line   target under 0.20
#   stax cold / llvm-symbolizer   printed
#
# Usage: bench/symbolize.sh [N_ADDRESSES [ROUNDS]]     (10000 and 3 by default)
# Environment: ROUNDS (the second argument wins), and those of lib.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

n=${1:-10000}
bench_uint N_ADDRESSES "$n"
[ -n "${2:-}" ] && ROUNDS=$2
bench_init symbolize 3
libc=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6 2>/dev/null || true)
[ -f "$libc" ] || bench_skip "no libc at /lib/x86_64-linux-gnu/libc.so.6"
command -v addr2line >/dev/null || bench_skip "addr2line is not installed (binutils)"
bench_build_stax

# Distinct addresses spread over libc's .text (fixed seed, so every run uses the same list).
read -r start size < <(readelf -SW "$libc" | awk '$2 == ".text" { print $4, $6 }')
python3 - "$start" "$size" "$n" >"$tmp/addrs" <<'PY'
import random, sys
start, size, n = int(sys.argv[1], 16), int(sys.argv[2], 16), int(sys.argv[3])
random.seed(1)
for a in random.sample(range(start, start + size), n):
    print(hex(a))
PY

# once CMD...: wall-clock milliseconds of one run of CMD on the addresses, or "none".
once() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" <"$tmp/addrs" >"$tmp/out" 2>/dev/null || { echo none; return 0; }
	t1=$(date +%s%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", (b - a) / 1e6 }'
}
cold() { STAX_SYMBOL_CACHE=off once "$STAX" symbolize -e "$libc"; }
warm() { XDG_CACHE_HOME="$tmp/cache" once "$STAX" symbolize -e "$libc"; }
a2l() { once addr2line -i -f -e "$libc"; }
llvm() { once llvm-symbolizer --obj="$libc" --inlining; }

XDG_CACHE_HOME="$tmp/cache" "$STAX" symbolize -e "$libc" <"$tmp/addrs" >/dev/null # fills the cache
tools=(cold warm a2l)
command -v llvm-symbolizer >/dev/null && tools+=(llvm)
declare -A ms
for ((r = 1; r <= ROUNDS; r++)); do
	bench_log "round $r/$ROUNDS..."
	k=${#tools[@]}
	for ((i = 0; i < k; i++)); do
		t=${tools[$(((i + r - 1) % k))]}
		ms[$t]=$($t)
		bench_add "$t" "${ms[$t]}"
	done
	bench_add cold_a2l "$(bench_div "${ms[cold]}" "${ms[a2l]}")"
	bench_add warm_a2l "$(bench_div "${ms[warm]}" "${ms[a2l]}")"
	[ -n "${ms[llvm]:-}" ] && bench_add cold_llvm "$(bench_div "${ms[cold]}" "${ms[llvm]}")"
done

bench_end_load
bench_header "$n addresses"
bench_show -u ms "stax (cold)" cold
bench_show -u ms "stax (warm)" warm
bench_show -u ms "addr2line -i -f" a2l
[ -n "${ms[llvm]:-}" ] && bench_show -u ms "llvm-symbolizer --inlining" llvm
bench_check "stax cold / addr2line" cold_a2l "<=" 1.00
bench_check "stax warm / addr2line" warm_a2l "<" 0.20
[ -n "${ms[llvm]:-}" ] && bench_show "stax cold / llvm-symbolizer" cold_llvm
bench_finish
