#!/usr/bin/env bash
# python-perf.sh: CPython 3.12 and 3.13 with perf support (`python -X perf`: a perf map of
# its trampolines), stax against `perf record --call-graph dwarf` + `perf script` (perf's
# own reading of the perf map; no `perf inject`, which a perf map does not need), on the
# same script (pyspin.py: spin_b does twice spin_a's work, both called from module level),
# for MS milliseconds of the program's CPU time, ROUNDS rounds (which goes first alternates),
# both at 999 Hz with their default stack copy (8192 bytes). For each CPython found:
#   program CPU per work unit   the program's own CPU time (time.process_time: user and
#                               system, the samples' stack copies in its context included)
#                               over the work it did, stax/perf; target <= 1.05
#   stacks reaching the start   the share of the samples under spin_a or spin_b whose stack
#                               goes through <module> down to _start; stax: target >= 95%,
#                               and stax's share less perf's >= 0
#
# Usage: bench/python-perf.sh [MS]     CPU time of each recording (default 3000)
# Environment: ROUNDS=3; PYTHONS="/path/python3.12 ..." (default: the newest 3.12 and 3.13
# pyenv installed, else python3.12 and python3.13 on PATH); and those of lib.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ms=${1:-3000}
bench_uint MS "$ms"
bench_init python-perf 3
command -v python3 >/dev/null || bench_skip "python3 (which reads the results) is not installed"

# The CPythons: PYTHONS, else the newest pyenv build of each minor, else PATH's.
pythons=()
if [ -n "${PYTHONS:-}" ]; then
	read -r -a pythons <<<"$PYTHONS"
else
	for minor in 3.12 3.13; do
		p=""
		for d in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$minor".*; do
			[ -x "$d/bin/python$minor" ] && p="$d/bin/python$minor"
		done
		[ -z "$p" ] && p=$(command -v "python$minor" || true)
		[ -n "$p" ] && pythons+=("$p")
	done
fi
[ ${#pythons[@]} -gt 0 ] || bench_skip "no CPython 3.12 or 3.13 (pyenv install 3.12, or set PYTHONS)"
bench_need_perf
bench_build_stax
cp "$bench_here/pyspin.py" "$tmp/pyspin.py"
secs=$(awk -v m="$ms" 'BEGIN { printf "%.3f", m / 1000 }')

# reach.py FORMAT: reads stacks on stdin (FORMAT folded: stax's folded export, root first,
# Python frames NAME (FILE)_[j]; perf: perf script -F ip,sym, leaf first, Python frames
# py::NAME:FILE) and prints the share (percent) of the samples under spin_a or spin_b
# whose stack holds <module> and ends at _start, and how many samples were under them.
cat >"$tmp/reach.py" <<'PY'
import sys
fmt = sys.argv[1]
def py_name(f):
    if fmt == "folded":
        if not f.endswith(".py)_[j]") or " (" not in f:
            return ""
        return f[: f.index(" (")]
    if not f.startswith("py::"):
        return ""
    return f[4:].split(":", 1)[0]
stacks = []  # (frames root first, weight)
if fmt == "folded":
    for line in sys.stdin:
        line = line.rstrip("\n")
        if " " not in line:
            continue
        st, n = line.rsplit(" ", 1)
        stacks.append((st.split(";"), int(n)))
else:
    for block in sys.stdin.read().split("\n\n"):
        frames = []
        for l in block.split("\n"):
            parts = l.strip().split(None, 1)
            if len(parts) == 2:
                frames.append(parts[1])
        if frames:
            stacks.append((frames[::-1], 1))
under = reach = 0
for frames, n in stacks:
    names = [py_name(f) for f in frames]
    inner = next((x for x in reversed(names) if x), "")
    if inner not in ("spin_a", "spin_b"):
        continue
    under += n
    if "<module>" in names and frames[0] == "_start":
        reach += n
print("%.3f %d" % (reach * 100 / under if under else float("nan"), under))
PY

# round PY TAG: one recording of each, in the order the round's parity says.
cpu_per_work() { awk '{ if ($1 > 0) printf "%.9g\n", $2 / $1; else print "none" }' "$1"; }
stax_run() {
	local py=$1 tag=$2 out=$tmp/stax.out
	rm -rf "$STAX_HOME"
	(cd "$tmp" && "$STAX" record -q -F 999 -- "$py" -X perf pyspin.py "$secs" >"$out") || { echo none >"$tmp/stax.cpw"; return 0; }
	cpu_per_work "$out" >"$tmp/stax.cpw"
	read -r reach n < <("$STAX" export --format folded -o - | python3 "$tmp/reach.py" folded)
	bench_add "stax_reach_$tag" "$reach"
	bench_add "stax_n_$tag" "$n"
	echo "$reach" >"$tmp/stax.reach"
}
perf_run() {
	local py=$1 tag=$2 out=$tmp/perf.out
	(cd "$tmp" && perf record -q -F 999 --call-graph dwarf -o perf.data -- "$py" -X perf pyspin.py "$secs" >"$out" 2>/dev/null) || { echo none >"$tmp/perf.cpw"; return 0; }
	cpu_per_work "$out" >"$tmp/perf.cpw"
	read -r reach n < <(perf script -i "$tmp/perf.data" -F ip,sym 2>/dev/null | python3 "$tmp/reach.py" perf)
	bench_add "perf_reach_$tag" "$reach"
	bench_add "perf_n_$tag" "$n"
	echo "$reach" >"$tmp/perf.reach"
	rm -f "$tmp/perf.data"
}

tags=()
for py in "${pythons[@]}"; do
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	tag=${ver//./_}
	tags+=("$tag:$ver:$py")
done
for ((r = 1; r <= ROUNDS; r++)); do
	for t in "${tags[@]}"; do
		IFS=: read -r tag ver py <<<"$t"
		bench_log "round $r/$ROUNDS, CPython $ver..."
		if ((r % 2)); then stax_run "$py" "$tag"; perf_run "$py" "$tag"; else perf_run "$py" "$tag"; stax_run "$py" "$tag"; fi
		bench_add "cpu_$tag" "$(bench_div "$(cat "$tmp/stax.cpw")" "$(cat "$tmp/perf.cpw")")"
		bench_add "reach_diff_$tag" "$(bench_sub "$(cat "$tmp/stax.reach" 2>/dev/null || echo none)" "$(cat "$tmp/perf.reach" 2>/dev/null || echo none)")"
		rm -f "$tmp"/stax.* "$tmp"/perf.*
	done
done
# CPython leaves its perf maps in /tmp: remove those of the programs recorded here.
grep -l -F "$tmp/pyspin.py" /tmp/perf-*.map 2>/dev/null | while read -r f; do rm -f "$f"; done || true

bench_end_load
for t in "${tags[@]}"; do
	IFS=: read -r tag ver py <<<"$t"
	echo "CPython $ver ($py -X perf), $ms ms of CPU per recording, 999 Hz"
	bench_header
	bench_check "stax/perf program CPU per work unit" "cpu_$tag" "<=" 1.05
	bench_check -o zero -u % "stax: under spin_a/b, reaching _start" "stax_reach_$tag" ">=" 95
	bench_show -u % "perf: under spin_a/b, reaching _start" "perf_reach_$tag"
	bench_check -o any,spread=none -u pt "stax's share less perf's" "reach_diff_$tag" ">=" 0
	bench_show "stax: samples under spin_a/b" "stax_n_$tag"
	bench_show "perf: samples under spin_a/b" "perf_n_$tag"
	echo
done
bench_finish
