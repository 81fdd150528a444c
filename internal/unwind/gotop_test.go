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
	prog, _, syms := buildGoProg(t)
	tab, err := LoadELF(prog, "")
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

// A Go thread's frame-pointer chain goes on above runtime.mstart (its first frame pointer is
// its creator's), into runtime.clone and whatever the creator's stack holds: the chain the
// unwinder falls back to ends at mstart, as a complete stack.
func TestFPChainEndsAtGoTopFrame(t *testing.T) {
	prog, f, syms := buildGoProg(t)
	at := map[string]uint64{}
	for _, s := range syms {
		at[s.Name] = s.Value
	}
	var maps []Mapping
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			maps = append(maps, Mapping{Start: p.Vaddr, End: p.Vaddr + p.Memsz, Offset: p.Off, Path: prog, Exec: true})
		}
	}
	view := &Maps{Mappings: maps, Loader: &FileLoader{}}
	chain := []uint64{
		at["runtime.futex.abi0"] + 4,
		at["runtime.notesleep"] + 0x40,
		at["runtime.mstart0"] + 0x20,
		at["runtime.mstart.abi0"] + 5, // returns from its call of mstart0
		at["runtime.clone.abi0"] + 0x60,
		at["runtime.main"] + 0x30,
	}
	for i, pc := range chain {
		if pc < 0x100 {
			t.Fatalf("frame %d: the program has no such symbol", i)
		}
	}
	var u Unwinder
	u.fpEnd = -1
	got, end, top := u.fpChain(view, &Sample{FPChain: chain})
	if len(got) != 4 || end != EndComplete || !top {
		t.Errorf("chain %#x ends %v (top %v), want the first 4 frames, complete", got, end, top)
	}
	// A chain with no outermost frame is kept whole.
	u.fpEnd = -1
	if got, end, top := u.fpChain(view, &Sample{FPChain: chain[:3]}); len(got) != 3 || end != EndComplete || top {
		t.Errorf("chain %#x ends %v (top %v), want it whole", got, end, top)
	}
}

// buildGoProg builds the e2e tests' Go program, and opens it with its symbols.
func buildGoProg(t *testing.T) (string, *elf.File, []elf.Symbol) {
	t.Helper()
	prog := filepath.Join(t.TempDir(), "goprog")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", prog, "./internal/e2e/testdata/goprog")
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	return prog, f, syms
}
