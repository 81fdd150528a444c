package resolve

import (
	"bytes"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/record"
	"github.com/stax-profiler/stax/internal/symbol"
	"github.com/stax-profiler/stax/internal/symbol/elfsym"
	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/vdso"
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

// vdsoFunction returns this process's [vdso] mapping and the run-time address and symbol
// name of its clock_gettime.
func vdsoFunction(t *testing.T) (proc.Mapping, uint64, string) {
	t.Helper()
	maps, err := proc.ReadMaps(os.Getpid(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var m proc.Mapping
	for _, mm := range maps {
		if mm.Path == vdso.Name {
			m = mm
		}
	}
	own, err := vdso.Self()
	if m.Path == "" || err != nil {
		testutil.Require(t, testutil.EnvPerf, "no vdso here: %v", err)
	}
	im, err := elfsym.Load(bytes.NewReader(own), vdso.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range im.Symbols() {
		if !strings.HasSuffix(s.Name, "clock_gettime") {
			continue
		}
		for _, l := range im.Loads {
			if s.Addr >= l.Vaddr && s.Addr < l.Vaddr+l.Filesz {
				return m, m.Start + s.Addr - l.Vaddr + l.Off, s.Name
			}
		}
	}
	t.Fatal("no clock_gettime in the vdso")
	return m, 0, ""
}

// TestResolvesVDSO names an address in the vdso from the process's vdso image, and from
// stax's own when the process is gone; annotate gets the function's bytes.
func TestResolvesVDSO(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	m, addr, name := vdsoFunction(t)
	for _, pid := range []int{os.Getpid(), 1 << 30} { // 1<<30 is past any pid_max: a process that is gone
		tr := proc.NewTracker()
		tr.AddMapping(pid, m)
		r := New(tr, symbol.Options{NoDebugFiles: true})
		frames, leafFunc, _, unresolved := r.Resolve(uint32(pid), 1, []uint64{record.ContextUser, addr + 1}, nil)
		if unresolved != 0 || leafFunc != 0 || len(frames) != 1 {
			t.Fatalf("pid %d: frames %+v, %d unresolved", pid, frames, unresolved)
		}
		if want := (agg.Frame{Func: name, Image: vdso.Name, Kind: agg.KindUser}); frames[0] != want {
			t.Errorf("pid %d: frame %+v, want %+v", pid, frames[0], want)
		}
		c := r.CodeFor(uint32(pid), addr+1, 1)
		if c.Error != "" || c.Start != addr || c.Size == 0 || uint64(len(c.Bytes)) != c.Size {
			t.Fatalf("pid %d: code %+v", pid, c)
		}
		own, _ := vdso.Self()
		off := addr - m.Start
		if !bytes.Equal(c.Bytes, own[off:off+c.Size]) {
			t.Errorf("pid %d: code bytes differ from the vdso's", pid)
		}
		if errs := r.ImageErrors(); len(errs) != 0 {
			t.Errorf("pid %d: image errors: %v", pid, errs)
		}
	}
}
