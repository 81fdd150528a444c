package unwind

import (
	"debug/elf"
	"path/filepath"
	"testing"

	"github.com/stax-profiler/stax/internal/testutil"
)

// A Go program's table knows the runtime's outermost functions from its symbol table:
// runtime.mstart, runtime.goexit and runtime.rt0_go, and no others.
func TestGoTopFrames(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "goprog")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", prog, "./internal/e2e/testdata/goprog")
	tab, err := LoadELF(prog, "")
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 {
			continue
		}
		want := goTops[s.Name]
		if got := tab.isTop(s.Value); got != want {
			t.Errorf("%s at %#x: top %v, want %v", s.Name, s.Value, got, want)
		}
		if want {
			seen++
			if !tab.isTop(s.Value + s.Size - 1) {
				t.Errorf("%s: its last byte is not top", s.Name)
			}
		}
	}
	if seen != 3 {
		t.Errorf("%d of the runtime's outermost functions found, want 3", seen)
	}
	// A C program has none.
	if libc := testutil.RequireLibc(t); libc != "" {
		if ct, err := LoadELF(libc, ""); err == nil && len(ct.tops) != 0 {
			t.Errorf("libc has outermost functions %v", ct.tops)
		}
	}
}
