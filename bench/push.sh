#!/usr/bin/env bash
# push.sh: what pushing costs the recorder. A 4-thread CPU-bound program (busy.c) is
# recorded at 999 Hz with and without `--push otlp+http://... --push-every 10s` to a
# loopback sink that takes every request; which goes first alternates from round to round.
# The recorder's CPU time is the recording's whole CPU time (stax and the program) less the
# program's own, which it prints.
#   recorder cpu, push/no push   target <= 1.02 (pushing every 10 s costs under 2% more)
#   pushes                       printed: requests the sink took per recording
#
# Usage: bench/push.sh [MS]   (MS: CPU milliseconds each of the 4 threads burns; default
#                              15000: about 30 s a recording on 2 CPUs, 3 pushes)
# Environment: ROUNDS=3, and those of lib.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ms=${1:-15000}
bench_uint MS "$ms"
bench_init push 3
bench_build_stax
bench_cc "$tmp/busy" "$bench_here/busy.c" -O2 -g -fno-omit-frame-pointer

# The sink: an HTTP server on 127.0.0.1 that counts and discards what it is sent.
mkdir -p "$tmp/sink"
cat >"$tmp/sink/main.go" <<'EOF'
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
)

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	var n atomic.Int64
	os.WriteFile(os.Args[1], []byte(l.Addr().String()), 0o644)
	http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		os.WriteFile(os.Args[2], []byte(fmt.Sprint(n.Add(1))), 0o644)
	}))
}
EOF
(cd "$tmp/sink" && GOWORK=off GOFLAGS= go mod init sink >/dev/null 2>&1 && go build -o "$tmp/sinkd" .) || bench_die "building the sink failed"
"$tmp/sinkd" "$tmp/sink.addr" "$tmp/sink.count" &
bench_track $!
for _ in $(seq 100); do [ -s "$tmp/sink.addr" ] && break; sleep 0.05; done
[ -s "$tmp/sink.addr" ] || bench_die "the sink did not start"
addr=$(cat "$tmp/sink.addr")

# run NAME: one recording; sets rec_cpu (the recorder's CPU seconds).
run() {
	local flags=()
	[ "$1" = push ] && flags=(--push "otlp+http://$addr" --push-every 10s)
	bench_time "$tmp/t.$1" "$STAX" record -F 999 -q "${flags[@]}" -- "$tmp/busy" 4 "$ms" >"$tmp/out.$1" || return 1
	local prog
	prog=$(awk '/cpu_s/ { for (i = 1; i < NF; i++) if ($i == "cpu_s") print $(i + 1) }' "$tmp/out.$1")
	[ -n "$prog" ] || return 1
	rec_cpu=$(bench_sub "$(bench_cpu "$tmp/t.$1")" "$prog")
}

echo "busy.c, 4 threads x $ms ms of CPU, -F 999; $ROUNDS rounds"
names=(nopush push)
for ((r = 1; r <= ROUNDS; r++)); do
	bench_log "round $r/$ROUNDS..."
	declare -A rc=()
	for ((i = 0; i < 2; i++)); do
		n=${names[$(((i + r - 1) % 2))]}
		before=$(cat "$tmp/sink.count" 2>/dev/null || echo 0)
		if run "$n"; then rc[$n]=$rec_cpu; else rc[$n]=none; fi
		bench_add "rec_$n" "${rc[$n]}"
		[ "$n" = push ] && bench_add pushes "$(($(cat "$tmp/sink.count" 2>/dev/null || echo 0) - before))"
	done
	bench_add push_ratio "$(bench_div "${rc[push]}" "${rc[nopush]}")"
done

bench_end_load
bench_header "recorder (seconds of CPU)"
bench_show -u s "recorder cpu, no push" rec_nopush
bench_show -u s "recorder cpu, push every 10 s" rec_push
bench_show "pushes per recording" pushes
bench_header "ratio"
bench_check "recorder cpu, push/no push" push_ratio "<=" 1.02
bench_finish
