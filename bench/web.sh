#!/usr/bin/env bash
# stax web on a 1,000,000-sample run with 50,000 distinct stacks: the page's first paint,
# first flame graph and each render (headless Chromium), the server's flame answer (time,
# bytes), and the bytes of each view. perf has no web view to compare with; the targets are
# first paint under 1 s, a full flame graph render under 100 ms, and a change of thread,
# mode or transform redrawn in under 300 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== in the browser (go test -run TestLargeRunInBrowser -v ./internal/web)"
go test -count=1 -run 'TestLargeRunInBrowser' -v ./internal/web | grep -E 'first contentful|changes of|PASS|FAIL|SKIP'
echo "== the server's side (go test -bench FlameView1M ./internal/web)"
go test -run '^$' -bench 'FlameView1M' -benchtime 10x ./internal/web | grep -E '^Benchmark|ok'
