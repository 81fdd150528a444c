package resolve

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/perfrecord"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/symbol"
	"github.com/stax-profiler/stax/internal/symbol/ehframe"
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
	frames, leafFunc, leaf, unresolved := r.Resolve(uint32(pid), 1, []uint64{perfrecord.ContextUser, pc, 0x10}, nil)
	if len(frames) < 2 || leafFunc < 0 || leaf != pc {
		t.Fatalf("frames %+v, leaf func %d, leaf %#x", frames, leafFunc, leaf)
	}
	if !strings.HasSuffix(frames[leafFunc].Frame.Func, "resolve.markerFunction") || frames[leafFunc].Frame.Kind != agg.KindUser {
		t.Errorf("leaf frame %+v, want resolve.markerFunction", frames[leafFunc].Frame)
	}
	if s := frames[leafFunc]; s.Addr != pc || s.Line <= 0 || s.Mapping.File == "" || s.Mapping.Pid != uint32(pid) ||
		pc < s.Mapping.Start || pc >= s.Mapping.Limit {
		t.Errorf("leaf site %+v: want address %#x, a line, and the mapping holding it", s, pc)
	}
	last := frames[len(frames)-1]
	if unresolved != 1 || last.Frame.Kind != agg.KindUnknown || last.Addr != 0x10-1 {
		t.Errorf("an address in no mapping: %+v, %d unresolved (want the call at the return address minus one)", last, unresolved)
	}
	again, _, _, _ := r.Resolve(uint32(pid), 1, []uint64{perfrecord.ContextUser, pc, 0x10}, nil)
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
		frames, leafFunc, _, unresolved := r.Resolve(uint32(pid), 1, []uint64{perfrecord.ContextUser, addr + 1}, nil)
		if unresolved != 0 || leafFunc != 0 || len(frames) != 1 {
			t.Fatalf("pid %d: frames %+v, %d unresolved", pid, frames, unresolved)
		}
		if want := (agg.Frame{Func: name, Image: vdso.Name, Kind: agg.KindUser}); frames[0].Frame != want {
			t.Errorf("pid %d: frame %+v, want %+v", pid, frames[0].Frame, want)
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

// strippedProgram builds a program whose static function helper no symbol names once it
// is stripped, and returns the stripped image, a mapping of its code at a made-up base,
// the run-time address of a virtual address, and helper's start and size.
func strippedProgram(t *testing.T) (path string, m proc.Mapping, at func(uint64) uint64, start, size uint64) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "prog.c")
	code := `__attribute__((noinline)) static long helper(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * i ^ (s >> 3); return s; }
int main(int argc, char **argv) { (void)argv; return (int)helper(argc * 1000); }
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	full := testutil.CC(t, dir, "prog.full", "gcc", "-O2", src)
	path = filepath.Join(dir, "prog")
	testutil.Run(t, "", testutil.RequireTool(t, "strip"), "-o", path, full)
	ef, err := elf.Open(full)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, _ := ef.Symbols()
	for _, s := range syms {
		if s.Name == "helper" {
			start, size = s.Value, s.Size
		}
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			const base = 0x555500000000
			m = proc.Mapping{Start: base + p.Vaddr&^0xfff, End: base + (p.Vaddr+p.Memsz+0xfff)&^0xfff, Pgoff: p.Off &^ 0xfff, Path: path}
			at = func(v uint64) uint64 { return m.Start + p.Off + (v - p.Vaddr) - m.Pgoff }
		}
	}
	if start == 0 || at == nil {
		t.Fatalf("no helper or no code segment in %s", full)
	}
	return path, m, at, start, size
}

// TestResolvesStrippedFunctionRange names addresses no symbol covers after the function
// range of .eh_frame holding them: one frame for the whole function, counted unresolved
// (it has no name), whose code for annotate is the whole range; an address no range holds
// stays its own row.
func TestResolvesStrippedFunctionRange(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	path, m, at, start, size := strippedProgram(t)
	pid := 1 << 30 // past any pid_max: the image is read from its path
	tr := proc.NewTracker()
	tr.AddMapping(pid, m)
	r := New(tr, symbol.Options{NoDebugFiles: true})
	want := agg.Frame{Func: fmt.Sprintf("prog+%#x", start), Image: "prog", Kind: agg.KindUser}
	var keys []CodeKey
	for _, v := range []uint64{start, start + size/2, start + size - 1} {
		frames, leafFunc, leaf, unresolved := r.Resolve(uint32(pid), 1, []uint64{perfrecord.ContextUser, at(v)}, nil)
		if len(frames) != 1 || frames[0].Frame != want || leafFunc != -1 || leaf != at(v) || unresolved != 1 {
			t.Errorf("%#x: frames %+v, leaf func %d, %d unresolved; want %+v, unresolved", v, frames, leafFunc, unresolved, want)
		}
		keys = append(keys, r.CodeKey(uint32(pid), at(v), 1))
	}
	if keys[0] != keys[1] || keys[0] != keys[2] || keys[0].Start != at(start) {
		t.Errorf("code keys %+v: want one, starting at %#x", keys, at(start))
	}
	c := r.CodeFor(uint32(pid), at(start+size/2), 1)
	if c.Error != "" || c.Start != at(start) || c.Size != size || c.Vaddr != start || c.Path != path {
		t.Errorf("code %+v: want %#x..%#x of %s", c, start, start+size, path)
	}

	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	init := ef.Section(".init") // _init, which no symbol (once stripped) and no FDE covers
	if init == nil {
		t.Fatal("no .init section")
	}
	frames, _, _, unresolved := r.Resolve(uint32(pid), 1, []uint64{perfrecord.ContextUser, at(init.Addr + 4)}, nil)
	if want := (agg.Frame{Func: fmt.Sprintf("prog+%#x", init.Addr+4), Image: "prog", Kind: agg.KindUnknown}); len(frames) != 1 || frames[0].Frame != want || unresolved != 1 {
		t.Errorf("an address in no range: %+v, %d unresolved; want %+v", frames, unresolved, want)
	}
}

// TestResolvesVDSOFunctionRange names an address of the vdso that no symbol covers (the
// out-of-line clock reading of recent kernels) after its .eh_frame range, and keeps the
// range's bytes for annotate, from the process's vdso and from stax's own when it is gone.
func TestResolvesVDSOFunctionRange(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	m, _, _ := vdsoFunction(t)
	own, _ := vdso.Self()
	im, err := elfsym.Load(bytes.NewReader(own), vdso.Name)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := ehframe.Read(bytes.NewReader(own))
	if err != nil {
		t.Fatal(err)
	}
	var fn ehframe.Range
	for _, r := range rs {
		if _, ok := im.Lookup(r.Start); !ok {
			fn = r
		}
	}
	if fn.Start == 0 {
		t.Skipf("every function of this kernel's vdso has a symbol: %x", rs)
	}
	var load elfsym.Segment
	for _, l := range im.Loads {
		if fn.Start >= l.Vaddr && fn.Start < l.Vaddr+l.Filesz {
			load = l
		}
	}
	at := func(v uint64) uint64 { return m.Start + v - load.Vaddr + load.Off }
	for _, pid := range []int{os.Getpid(), 1 << 30} {
		tr := proc.NewTracker()
		tr.AddMapping(pid, m)
		r := New(tr, symbol.Options{NoDebugFiles: true})
		frames, _, _, unresolved := r.Resolve(uint32(pid), 1, []uint64{perfrecord.ContextUser, at(fn.End - 1)}, nil)
		want := agg.Frame{Func: fmt.Sprintf("[vdso]+%#x", fn.Start), Image: vdso.Name, Kind: agg.KindUser}
		if len(frames) != 1 || frames[0].Frame != want || unresolved != 1 {
			t.Errorf("pid %d: frames %+v, %d unresolved; want %+v", pid, frames, unresolved, want)
		}
		c := r.CodeFor(uint32(pid), at(fn.End-1), 1)
		off := fn.Start - load.Vaddr + load.Off
		if c.Error != "" || c.Start != at(fn.Start) || c.Size != fn.End-fn.Start || c.Origin != "vdso" || !bytes.Equal(c.Bytes, own[off:off+c.Size]) {
			t.Errorf("pid %d: code %+v, want the range %x's bytes", pid, c, fn)
		}
	}
}
