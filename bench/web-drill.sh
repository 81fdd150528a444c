#!/usr/bin/env bash
# stax web on a big run: 60 s at 4999 Hz, about 300,000 samples over 166,000 distinct stacks
# (synthrun.Tree), in headless Chromium. Prints the time to the first flame graph, the time
# from a click on each frame with 1% of the samples or more to its subtree on screen (the
# page asks the server for the subtree its pruned graph lacks), a drill down to a leaf, and
# the page's JavaScript heap. Targets: first graph <= 1 s, a zoom <= 500 ms, heap <= 50 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
STAX_WEB_BENCH=1 go test -count=1 -timeout 20m -run '^TestBigRunDrill$' -v ./internal/web | grep -E '^big run|^server|^CPU time|the run:|PASS|FAIL|SKIP|Error|error'
