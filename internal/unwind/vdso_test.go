package unwind

import (
	"testing"

	"github.com/stax-profiler/stax/internal/testutil"
)

func TestVDSOTable(t *testing.T) {
	tab, err := VDSOTable()
	if err != nil {
		testutil.Require(t, testutil.EnvPerf, "no vdso here: %v", err)
	}
	if tab.NumFDEs() == 0 || len(tab.loads) == 0 {
		t.Fatalf("vdso: %d FDEs, %d loads", tab.NumFDEs(), len(tab.loads))
	}
	for _, f := range tab.fdes {
		if _, ok := tab.rowAt(f.start); !ok {
			t.Errorf("no row at the start of the FDE at %#x", f.start)
		}
	}
}
