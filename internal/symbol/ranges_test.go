package symbol

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"

	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/vdso"
)

const rangesC = `
__attribute__((noinline)) static long helper(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * i ^ (s >> 3); return s; }
int main(int argc, char **argv) { (void)argv; return (int)helper(argc * 1000); }
`

// staticFunc builds rangesC with flags, strips a copy, and returns the stripped image and
// the start and size of helper, which only the unstripped one names.
func staticFunc(t *testing.T, dir, name string, flags ...string) (string, uint64, uint64) {
	t.Helper()
	src := filepath.Join(dir, name+".c")
	if err := os.WriteFile(src, []byte(rangesC), 0o644); err != nil {
		t.Fatal(err)
	}
	full := testutil.CC(t, dir, name+".full", "gcc", append(flags, "-O2", src)...)
	stripped := filepath.Join(dir, name)
	run(t, "strip", "-o", stripped, full)
	f, err := elf.Open(full)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	for _, s := range syms {
		if s.Name == "helper" {
			return stripped, s.Value, s.Size
		}
	}
	t.Fatalf("no helper in %s", full)
	return "", 0, 0
}

// TestFuncRange bounds code no symbol covers by its .eh_frame range: in a stripped program
// (with a build-id and without), and not from a file replaced since the image was loaded.
func TestFuncRange(t *testing.T) {
	dir := t.TempDir()
	for _, flags := range [][]string{nil, {"-Wl,--build-id=none"}} {
		path, start, size := staticFunc(t, dir, "prog", flags...)
		im, err := NewCache(Options{NoDebugFiles: true}).Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := im.Symbol(start + 1); ok {
			t.Fatalf("%v: a symbol covers helper: %+v", flags, s)
		}
		for _, a := range []uint64{start, start + size/2, start + size - 1} {
			if lo, hi, ok := im.FuncRange(a); !ok || lo != start || hi != start+size {
				t.Errorf("%v: FuncRange(%#x) = %#x..%#x %v, want helper's %#x..%#x", flags, a, lo, hi, ok, start, start+size)
			}
		}
		if _, _, ok := im.FuncRange(0x10); ok {
			t.Errorf("%v: a range holds the ELF header", flags)
		}

		// The file is replaced by another program before the ranges are read.
		im, err = NewCache(Options{NoDebugFiles: true}).Open(path)
		if err != nil {
			t.Fatal(err)
		}
		other := testutil.CC(t, dir, "other", "gcc", append(flags, "-O0", filepath.Join(dir, "prog.c"))...)
		copyFile(t, other, path+".new")
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
		if lo, hi, ok := im.FuncRange(start); ok {
			t.Errorf("%v: a range %#x..%#x read from the file that replaced the image", flags, lo, hi)
		}
	}
}

// TestFuncRangeInMemory reads the ranges of an image loaded from bytes (the vdso): each of
// its functions starts a range.
func TestFuncRangeInMemory(t *testing.T) {
	data, err := vdso.Self()
	if err != nil {
		testutil.Require(t, testutil.EnvPerf, "no vdso here: %v", err)
	}
	im, err := NewCache(Options{NoDebugFiles: true}).OpenMemory(vdso.Name, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range im.ELF().Symbols() {
		if lo, hi, ok := im.FuncRange(s.Addr); !ok || lo != s.Addr || hi < s.Addr+s.Size {
			t.Errorf("%s at %#x (%d bytes): range %#x..%#x %v", s.Name, s.Addr, s.Size, lo, hi, ok)
		}
	}
}
