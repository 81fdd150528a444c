package resolve

import (
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/record"
	"github.com/stax-profiler/stax/internal/symbol"
)

//go:noinline
func markerFunction() uintptr {
	pc, _, _, _ := runtime.Caller(0)
	return pc
}

// TestResolvesThisProcess names an address of this test binary through the process's own
// mappings, and leaves an address in no mapping unresolved and counted.
func TestResolvesThisProcess(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	pid := os.Getpid()
	tr := proc.NewTracker()
	maps, err := proc.ReadMaps(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps {
		tr.AddMapping(pid, m)
	}
	r := New(tr, symbol.Options{})
	pc := uint64(markerFunction())
	frames, leafFunc, leaf, unresolved := r.Resolve(uint32(pid), 1, []uint64{record.ContextUser, pc, 0x10}, nil)
	if len(frames) < 2 || leafFunc < 0 || leaf != pc {
		t.Fatalf("frames %+v, leaf func %d, leaf %#x", frames, leafFunc, leaf)
	}
	if !strings.HasSuffix(frames[leafFunc].Func, "resolve.markerFunction") || frames[leafFunc].Kind != agg.KindUser {
		t.Errorf("leaf frame %+v, want resolve.markerFunction", frames[leafFunc])
	}
	last := frames[len(frames)-1]
	if unresolved != 1 || last.Kind != agg.KindUnknown {
		t.Errorf("an address in no mapping: %+v, %d unresolved", last, unresolved)
	}
	again, _, _, _ := r.Resolve(uint32(pid), 1, []uint64{record.ContextUser, pc, 0x10}, nil)
	if !reflect.DeepEqual(again, frames) {
		t.Errorf("resolving twice differs: %+v then %+v", frames, again)
	}
	if errs := r.ImageErrors(); len(errs) != 0 {
		t.Errorf("image errors: %v", errs)
	}
}
