#!/usr/bin/env bash
# save.sh: the size of a saved stax run against perf.data for the same workload, and the
# time stax takes to save and open it. Both tools record the phases program (two functions
# in turn) with frame-pointer stacks at the same frequency.
#
# Usage: bench/save.sh [MS]
#   MS  CPU time of each phase, in milliseconds (default 5000: 10 s of samples)
# Environment:
#   FREQ=4000   sampling frequency (capped by kernel.perf_event_max_sample_rate)
set -euo pipefail

ms=${1:-5000}
freq=${FREQ:-4000}
case $ms in '' | *[!0-9]*) echo "save.sh: MS must be a number, got '$ms'" >&2; exit 2 ;; esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stax-save.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
command -v perf >/dev/null || { echo "save.sh: perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
max=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
[ "$freq" -gt "$max" ] && freq=$max

echo "building stax and the test program..." >&2
(cd "$root" && go build -o "$tmp/stax" ./cmd/stax)
cc -O2 -g -fno-omit-frame-pointer -I"$root/internal/e2e/testdata" "$root/internal/e2e/testdata/phases.c" -o "$tmp/phases"
export STAX_HOME="$tmp/home"

"$tmp/stax" record -q -F "$freq" -- "$tmp/phases" "$ms" 1 >/dev/null
start=$(date +%s.%N)
"$tmp/stax" save "$tmp/run.stax" >/dev/null
saved=$(date +%s.%N)
"$tmp/stax" open "$tmp/run.stax" >/dev/null
opened=$(date +%s.%N)
samples=$("$tmp/stax" status --json | sed -n 's/.*"samples": \([0-9]*\).*/\1/p' | head -1)

perf record -q -g -F "$freq" -o "$tmp/perf.data" -- "$tmp/phases" "$ms" 1 >/dev/null 2>&1
stax_bytes=$(stat -c %s "$tmp/run.stax")
perf_bytes=$(stat -c %s "$tmp/perf.data")

printf 'samples            %12s\n' "$samples"
printf 'stax run file      %12s bytes  (%.1f bytes/sample)\n' "$stax_bytes" "$(echo "$stax_bytes / $samples" | bc -l)"
printf 'perf.data          %12s bytes\n' "$perf_bytes"
printf 'size ratio         %12.3f  (stax / perf; target under 0.1)\n' "$(echo "$stax_bytes / $perf_bytes" | bc -l)"
printf 'stax save          %12.3f s\n' "$(echo "$saved - $start" | bc -l)"
printf 'stax open          %12.3f s\n' "$(echo "$opened - $saved" | bc -l)"
