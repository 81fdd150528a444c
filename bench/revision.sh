#!/usr/bin/env bash
# revision.sh: what a change costs in memory and disk, this tree against an older revision.
# Both builds record the same program (stacks.c: random call paths LEVELS deep, tens of
# thousands of distinct stacks, so the profile's own tables dominate) for SECONDS with
# DWARF stacks, in turn (which goes first alternates), ROUNDS times:
#   peak RSS new / old           target <= 1.2: the recorder's high-water mark (VmHWM)
#   saved bytes/sample new / old target <= 1.2: stax save's file per sample kept
#   stax top on the saved file   printed: wall time of each build answering from the file
#
# Usage: bench/revision.sh REV [SECONDS]   (REV: a commit, tag or branch; SECONDS default 30)
# Environment: ROUNDS=3, FREQ=999, THREADS=2, LEVELS=15, and those of lib.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rev=${1:?usage: bench/revision.sh REV [SECONDS]}
secs=${2:-30}
bench_uint SECONDS "$secs"
bench_init revision 3
freq=${FREQ:-999} threads=${THREADS:-2} levels=${LEVELS:-15}
bench_uint FREQ "$freq"
bench_uint THREADS "$threads"
bench_uint LEVELS "$levels"
freq=$(bench_freq "$freq")
bench_need_perf
bench_build_stax
new=$STAX
git -C "$root" rev-parse --verify -q "$rev^{commit}" >/dev/null || bench_die "$rev is not a revision of this repository"
bench_log "building stax at $rev..."
mkdir -p "$tmp/old-src"
git -C "$root" archive "$rev" | tar -x -C "$tmp/old-src"
(cd "$tmp/old-src" && go build -o "$tmp/stax-old" ./cmd/stax) || bench_die "go build at $rev failed"
old=$tmp/stax-old
bench_cc "$tmp/stacks" "$bench_here/stacks.c" -O2 -g -fno-omit-frame-pointer
echo "old: $rev ($(git -C "$root" rev-parse --short "$rev")); new: this tree; $threads threads, $freq Hz, $secs s, dwarf stacks"

# one BUILD LABEL: records with BUILD, sets peak_<label>, bytes_<label>, top_<label>.
one() {
	local bin=$1 label=$2 home="$tmp/home.$2" prog rec peak=0 rss samples bytes
	rm -rf "$home" "$tmp/run.stax"
	export STAX_HOME=$home
	"$tmp/stacks" "$threads" $((secs + 30)) "$levels" &
	prog=$!
	bench_track "$prog"
	"$bin" record -q -F "$freq" --call-graph dwarf -p "$prog" -l "$secs" >/dev/null 2>"$tmp/err.$label" &
	rec=$!
	bench_track "$rec"
	while kill -0 "$rec" 2>/dev/null; do
		rss=$(awk '/^VmHWM:/ { print $2 }' "/proc/$rec/status" 2>/dev/null || true)
		[ -n "$rss" ] && [ "$rss" -gt "$peak" ] && peak=$rss
		sleep 1 &
		wait $! || true
	done
	wait "$rec" 2>/dev/null || true
	bench_stop "$prog"
	STAX=$bin
	read -r samples _ < <(bench_stax_counts)
	"$bin" save "$tmp/run.stax" >/dev/null 2>&1 || true
	bytes=$(stat -c %s "$tmp/run.stax" 2>/dev/null || echo none)
	printf -v "peak_$label" '%s' "$peak"
	printf -v "bytes_$label" '%s' "$(bench_div "$bytes" "$samples")"
	printf -v "top_$label" '%s' "$(bench_ms "$bin" top -n 10 --run "$tmp/run.stax")"
	printf '%6s %4s | %9s %12s %12s %10s\n' "$r" "$label" "${samples:-none}" "$peak" "$bytes" "$(eval echo "\$top_$label")"
	STAX=$new
}

printf '%6s %4s | %9s %12s %12s %10s\n' round build samples "peak KiB" "saved bytes" "top ms"
for ((r = 1; r <= ROUNDS; r++)); do
	if ((r % 2)); then one "$old" old; one "$new" new; else one "$new" new; one "$old" old; fi
	bench_add rss "$(bench_div "$peak_new" "$peak_old")"
	bench_add bytes "$(bench_div "$bytes_new" "$bytes_old")"
	bench_add bps_old "$bytes_old"
	bench_add bps_new "$bytes_new"
	bench_add top_old "$top_old"
	bench_add top_new "$top_new"
done

echo
bench_header
bench_check "peak RSS, new / old" rss "<=" 1.2
bench_check "saved bytes per sample, new / old" bytes "<=" 1.2
bench_show -u B "saved bytes per sample, old" bps_old
bench_show -u B "saved bytes per sample, new" bps_new
bench_show -u ms "stax top on the saved run, old" top_old
bench_show -u ms "stax top on the saved run, new" top_new
bench_finish
