package recorder

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestStackCopyNotFittedToCutStacks records a program whose every walk stops at a frame
// with no call-frame information, a few hundred bytes into a stack of some 5 KiB: those
// walks say nothing of how deep the stacks are, so the copy is not fitted to them (it
// would shrink to 1 KiB) and stays at its full size.
func TestStackCopyNotFittedToCutStacks(t *testing.T) {
	testutil.RequirePerf(t)
	t.Setenv("STAX_HOME", t.TempDir())
	prog := testutil.CC(t, t.TempDir(), "blindcall", "gcc", "-O2", "-fomit-frame-pointer", "-g", filepath.Join("testdata", "blindcall.c"))
	// 4 windows of samples at 999 Hz, at least.
	const ms = 4 * fitWindow * 1000 / 999
	r, err := Start(Options{Argv: []string{prog, fmt.Sprint(ms)}, Freq: 999, CallGraph: "dwarf"})
	if err != nil {
		t.Fatal(err)
	}
	if code := r.Loop(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	run, err := store.Load(r.StorePath())
	if err != nil {
		t.Fatal(err)
	}
	m := run.Meta
	var ends uint64
	for _, n := range m.StackEnds {
		ends += n
	}
	cut := ends - m.StackEnds["complete"]
	t.Logf("%d samples; stack copy %d, fit %+v; stack ends %v", m.Samples, m.StackSize, m.StackFit, m.StackEnds)
	if cut < 3*fitWindow || cut*100 < ends*95 {
		t.Fatalf("%d of %d stacks cut short: the program did not make the stacks the test is about (ends %v)", cut, ends, m.StackEnds)
	}
	if m.StackSize != perfevent.DefaultStackSize || m.StackFit != nil && m.StackFit.Resizes > 0 {
		t.Errorf("stack copy %d (fit %+v): fitted to walks cut short; want the full %d", m.StackSize, m.StackFit, perfevent.DefaultStackSize)
	}
}
