#!/usr/bin/env bash
# unwind.sh: the cost of complete stacks. The same recording (a -O2 -fomit-frame-pointer
# program whose hot path runs through libc's qsort, MS milliseconds of CPU at 999 Hz) by
# `stax record --call-graph dwarf` then `stax flame`, and by `perf record --call-graph dwarf`
# then `perf report --stdio`. Prints three ratios, stax over perf:
#   time   wall time of record + report (target: at most 0.1)
#   bytes  bytes written to disk (target: at most 0.05)
#   slowdown of the program against an unprofiled run, stax's (target: at most 1.05)
#
# Usage: bench/unwind.sh [MS]     (default 10000: a 10-second recording)
set -euo pipefail

ms=${1:-10000}
case $ms in '' | *[!0-9]*) echo "unwind.sh: MS must be a number, got '$ms'" >&2; exit 2 ;; esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stax-unwind.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
command -v perf >/dev/null || { echo "unwind.sh: perf is not installed (apt-get install linux-perf)" >&2; exit 1; }

echo "building stax and the test program..." >&2
(cd "$root" && go build -o "$tmp/stax" ./cmd/stax)
cc -O2 -g -fomit-frame-pointer -I"$root/internal/e2e/testdata" "$root/internal/e2e/testdata/qsortfp.c" -o "$tmp/qsortfp"
export STAX_HOME="$tmp/home"

now() { date +%s.%N; }
t0=$(now); "$tmp/qsortfp" "$ms" >/dev/null; t1=$(now)
alone=$(echo "$t1 - $t0" | bc -l)

echo "stax..." >&2
t0=$(now)
"$tmp/stax" record -q -F 999 --call-graph dwarf -- "$tmp/qsortfp" "$ms" >/dev/null
t1=$(now)
"$tmp/stax" flame -d 0 >/dev/null
t2=$(now)
stax_run=$(echo "$t1 - $t0" | bc -l)
stax_total=$(echo "$t2 - $t0" | bc -l)
stax_bytes=$(du -sb "$STAX_HOME" | cut -f1)

echo "perf..." >&2
t0=$(now)
perf record -q -F 999 --call-graph dwarf -o "$tmp/perf.data" -- "$tmp/qsortfp" "$ms" >/dev/null 2>&1
t1=$(now)
perf report --stdio -i "$tmp/perf.data" >/dev/null 2>&1
t2=$(now)
perf_total=$(echo "$t2 - $t0" | bc -l)
perf_bytes=$(stat -c %s "$tmp/perf.data")

# Recording time includes the program's own run: compare the profilers' work on top of it.
stax_work=$(echo "$stax_total - $alone" | bc -l)
perf_work=$(echo "$perf_total - $alone" | bc -l)
printf '%-28s %10.2f s\n' "program alone" "$alone"
printf '%-28s %10.2f s  (record %.2f s)\n' "stax record + flame" "$stax_total" "$stax_run"
printf '%-28s %10.2f s\n' "perf record + report" "$perf_total"
printf '%-28s %10.3f  (stax %.2f s / perf %.2f s beyond the program; target <= 0.1)\n' "time ratio" "$(echo "$stax_work / $perf_work" | bc -l)" "$stax_work" "$perf_work"
printf '%-28s %10.4f  (%s / %s bytes; target <= 0.05)\n' "bytes ratio" "$(echo "$stax_bytes / $perf_bytes" | bc -l)" "$stax_bytes" "$perf_bytes"
printf '%-28s %10.3f  (target <= 1.05)\n' "stax slowdown" "$(echo "$stax_run / $alone" | bc -l)"
