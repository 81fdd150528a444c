package unwind

import (
	"bufio"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/testutil"
)

// collapse joins a stack's names, folding runs of frames in shared libraries into one.
func collapse(ns []string) string {
	var out []string
	for _, n := range ns {
		if strings.HasPrefix(n, "lib:") {
			n = "lib"
		}
		if len(out) > 0 && out[len(out)-1] == "lib" && n == "lib" {
			continue
		}
		out = append(out, n)
	}
	return strings.Join(out, ";")
}

// perfStacks records prog with perf --call-graph=dwarf and returns the collapsed stacks of
// samples whose leaf is leaf.
func perfStacks(t *testing.T, prog, leaf string) map[string]int {
	perf := testutil.RequireTool(t, "perf")
	dir := t.TempDir()
	data := filepath.Join(dir, "perf.data")
	testutil.Run(t, dir, perf, "record", "-q", "--call-graph=dwarf,16384", "-F", "999", "-o", data, "--", prog, "1")
	out := testutil.Run(t, dir, perf, "script", "-i", data, "-F", "ip,sym,dso")
	stacks := map[string]int{}
	var cur []string
	flush := func() {
		if len(cur) > 0 && cur[0] == leaf {
			stacks[collapse(cur)]++
		}
		cur = cur[:0]
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			flush()
			continue
		}
		name := ""
		if len(f) >= 3 {
			name = strings.SplitN(f[1], "+", 2)[0]
		}
		dso := strings.Trim(f[len(f)-1], "()")
		if filepath.Base(dso) != filepath.Base(prog) {
			name = "lib:" + filepath.Base(dso)
		}
		cur = append(cur, name)
	}
	flush()
	return stacks
}

// TestCompareWithPerf checks that stax's stacks of the qsort comparator have the shape
// perf record --call-graph=dwarf gives them.
func TestCompareWithPerf(t *testing.T) {
	dir := t.TempDir()
	prog := testutil.CC(t, dir, "qsort", "gcc", "-O2", "-fomit-frame-pointer", filepath.Join("testdata", "qsort.c"))
	samples, maps := capture(t, prog, 200)
	proc := &Maps{Mappings: maps, Loader: &FileLoader{}}
	sym := newSymbolizer(t, prog)
	var u Unwinder
	ours := map[string]int{}
	for _, s := range samples {
		pcs, _ := u.Unwind(proc, &Sample{Regs: s.Regs, Stack: s.Stack}, make([]uint64, 0, 256))
		ns := names(proc, prog, sym, pcs)
		if ns[0] == "cmp" {
			ours[collapse(ns)]++
		}
	}
	theirs := perfStacks(t, prog, "cmp")
	top := func(m map[string]int) (string, int, int) {
		best, n, total := "", 0, 0
		for k, v := range m {
			total += v
			if v > n {
				best, n = k, v
			}
		}
		return best, n, total
	}
	ob, on, ot := top(ours)
	pb, pn, pt := top(theirs)
	t.Logf("stax: %q %d/%d; perf: %q %d/%d", ob, on, ot, pb, pn, pt)
	if ot == 0 || pt == 0 {
		t.Fatalf("no comparator samples: stax %d, perf %d", ot, pt)
	}
	if ob != pb || on < ot*9/10 || pn < pt*9/10 {
		t.Errorf("stacks differ: stax %v, perf %v", ours, theirs)
	}
}
