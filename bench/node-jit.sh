#!/usr/bin/env bash
# Names for Node's JIT'd code: stax (live jitdump tailing) against perf record -k mono +
# perf inject --jit + perf report, on the same script. Prints, for each, the share of samples
# in JIT code that stayed unnamed, the time to the first report after the run, and how many
# files were left on disk.
#   bench/node-jit.sh [SECONDS]
set -euo pipefail
secs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v node >/dev/null || { echo "node is not installed" >&2; exit 1; }
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 1; }

(cd "$root" && go build -o "$tmp/stax" ./cmd/stax)
mkdir -p "$tmp/stax-run" "$tmp/perf-run"
cp "$root/internal/e2e/testdata/bench.js" "$tmp/stax-run/"
cp "$root/internal/e2e/testdata/bench.js" "$tmp/perf-run/"
export STAX_HOME="$tmp/home"
ms() { echo $(($(date +%s%N) / 1000000)); }

# stax: record, then the first report.
mkdir -p "$tmp/stax-run"
(cd "$tmp/stax-run" && "$tmp/stax" record -q -- node --perf-prof --interpreted-frames-native-stack bench.js $((secs * 1000)) >/dev/null)
t0=$(ms)
"$tmp/stax" top -n 10 >"$tmp/stax-top.txt"
t1=$(ms)
stax_report_ms=$((t1 - t0))
read -r jit unnamed < <("$tmp/stax" status --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["jit_samples"], s["jit_unnamed"])')
stax_pid=$("$tmp/stax" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["meta"]["pid"])')
stax_files=$(find "$tmp/stax-run" -name 'jitted-*.so' | wc -l)

# perf: record with the monotonic clock, inject, report.
mkdir -p "$tmp/perf-run"
(cd "$tmp/perf-run" && perf record -q -k mono -F 999 -g -o perf.data -- node --perf-prof --interpreted-frames-native-stack bench.js $((secs * 1000)) >/dev/null 2>&1)
t0=$(ms)
(cd "$tmp/perf-run" && perf inject --jit -i perf.data -o perf.jit.data 2>/dev/null &&
	perf report -i perf.jit.data --stdio --no-children --sort dso,sym -g none 2>/dev/null >"$tmp/perf-report.txt")
t1=$(ms)
perf_report_ms=$((t1 - t0))
perf_files=$(find "$tmp/perf-run" -name 'jitted-*.so' | wc -l)
# JIT samples: those in jitted-*.so (named) or in anonymous memory (unnamed).
read -r perf_jit perf_unnamed < <(awk '
	/^ *[0-9.]+%/ {
		pct = $1; sub("%", "", pct)
		if ($2 ~ /^jitted-/) jit += pct
		else if ($2 ~ /^(\[JIT\]|\/\/anon|\[anon|perf-[0-9]+\.map)/) { jit += pct; un += pct }
	}
	END { printf "%.2f %.2f\n", jit, un }' "$tmp/perf-report.txt")

pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a * 100 / b; else print "0.00" }'; }
printf '%-6s %14s %16s %18s %16s\n' tool "jit samples" "unnamed share" "report after run" "files left"
printf '%-6s %14s %15s%% %16sms %16s\n' stax "$jit" "$(pct "$unnamed" "$jit")" "$stax_report_ms" "$stax_files"
printf '%-6s %13s%% %15s%% %16sms %16s\n' perf "$perf_jit" "$(pct "$perf_unnamed" "$perf_jit")" "$perf_report_ms" "$perf_files"
echo "(perf's JIT samples are a percentage of all samples; its report time includes perf inject)"
echo "target: stax unnamed share under 2%"
rm -f "/tmp/jit-$stax_pid.dump" "/tmp/perf-$stax_pid.map"
