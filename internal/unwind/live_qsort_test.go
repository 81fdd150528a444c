package unwind

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/testutil"
)

func TestLiveQsortOmitFramePointer(t *testing.T) {
	dir := t.TempDir()
	prog := testutil.CC(t, dir, "qsort", "gcc", "-O2", "-fomit-frame-pointer", "-g", filepath.Join("testdata", "qsort.c"))
	samples, maps := capture(t, prog, 200)
	proc := &Maps{Mappings: maps, Loader: &FileLoader{}}
	sym := newSymbolizer(t, prog)
	var u Unwinder
	buf := make([]uint64, 0, 256)
	inCmp, cmpComplete := 0, 0
	for _, s := range samples {
		pcs, end := u.Unwind(proc, &Sample{Regs: s.Regs, Stack: s.Stack, FPChain: s.FPChain}, buf)
		ns := names(proc, prog, sym, pcs)
		if end == EndGarbage {
			t.Errorf("garbage frame ends %v", ns)
		}
		if end == EndComplete && ns[len(ns)-1] != "_start" {
			t.Errorf("complete stack ends in %q: %v", ns[len(ns)-1], ns)
		}
		if len(ns) > 0 && ns[0] == "cmp" {
			inCmp++
			joined := strings.Join(ns, " ")
			if !strings.Contains(joined, "cmp lib:libc") || !strings.Contains(joined, "main") {
				t.Errorf("cmp sample: %v (%v)", ns, end)
				continue
			}
			if end == EndComplete && slices.Contains(ns, "main") {
				cmpComplete++
			}
		}
	}
	t.Logf("%d samples in cmp, %d complete; counts complete=%d truncated=%d nocfi=%d bad=%d garbage=%d",
		inCmp, cmpComplete, u.Counts[EndComplete].Load(), u.Counts[EndTruncated].Load(), u.Counts[EndNoCFI].Load(),
		u.Counts[EndBadMemory].Load(), u.Counts[EndGarbage].Load())
	if inCmp < len(samples)/10 {
		t.Errorf("only %d of %d samples in cmp", inCmp, len(samples))
	}
	if cmpComplete < inCmp*9/10 {
		t.Errorf("%d of %d cmp samples complete", cmpComplete, inCmp)
	}
}
