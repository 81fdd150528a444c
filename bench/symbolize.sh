#!/usr/bin/env bash
# Symbolizing 10,000 distinct libc addresses (names, file:line, inline chains through libc's
# separate debug file): stax symbolize against addr2line -i -f and llvm-symbolizer, each in a
# fresh process. stax is timed cold (no symbol cache) and warm (its decoded-table cache from a
# previous run). Prints wall-clock milliseconds (best of RUNS) and the ratios.
#   bench/symbolize.sh [N_ADDRESSES] [RUNS]
set -euo pipefail
n=${1:-10000}
runs=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
libc=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)
(cd "$root" && go build -o "$tmp/stax" ./cmd/stax)

# Distinct addresses spread over libc's .text (fixed seed, so every run uses the same list).
read -r start size < <(readelf -SW "$libc" | awk '$2 == ".text" { print $4, $6 }')
python3 - "$start" "$size" "$n" >"$tmp/addrs" <<'PY'
import random, sys
start, size, n = int(sys.argv[1], 16), int(sys.argv[2], 16), int(sys.argv[3])
random.seed(1)
for a in random.sample(range(start, start + size), n):
    print(hex(a))
PY

best() { # best wall-clock seconds of $runs runs of the command
	local b=""
	for _ in $(seq "$runs"); do
		local t0 t1 d
		t0=$(date +%s%N)
		"$@" <"$tmp/addrs" >"$tmp/out" 2>/dev/null
		t1=$(date +%s%N)
		d=$(((t1 - t0) / 1000000))
		if [ -z "$b" ] || [ "$d" -lt "$b" ]; then b=$d; fi
	done
	echo "$b"
}

stax_ms=$(STAX_SYMBOL_CACHE=off best "$tmp/stax" symbolize -e "$libc")
export XDG_CACHE_HOME="$tmp/cache"
"$tmp/stax" symbolize -e "$libc" <"$tmp/addrs" >/dev/null # fills the cache
warm_ms=$(best "$tmp/stax" symbolize -e "$libc")
a2l_ms=$(best addr2line -i -f -e "$libc")
if command -v llvm-symbolizer >/dev/null; then
	llvm_ms=$(best llvm-symbolizer --obj="$libc" --inlining)
else
	llvm_ms=""
fi
printf '%-16s %10s\n' tool "ms ($n addresses, best of $runs)"
printf '%-16s %10s\n' "stax (cold)" "$stax_ms" "stax (warm)" "$warm_ms" addr2line "$a2l_ms"
[ -n "$llvm_ms" ] && printf '%-16s %10s\n' llvm-symbolizer "$llvm_ms"
awk -v s="$stax_ms" -v a="$a2l_ms" 'BEGIN { printf "stax cold / addr2line = %.2f (target: at most 1.00)\n", s / a }'
awk -v s="$warm_ms" -v a="$a2l_ms" 'BEGIN { printf "stax warm / addr2line = %.2f (target: under 0.20)\n", s / a }'
[ -n "$llvm_ms" ] && awk -v s="$stax_ms" -v l="$llvm_ms" 'BEGIN { printf "stax / llvm-symbolizer = %.2f\n", s / l }'
exit 0
