package dwarfline

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stax-profiler/stax/internal/testutil"
)

func requireTool(t testing.TB, name string) {
	t.Helper()
	testutil.RequireTool(t, name)
}

func build(t testing.TB, compiler string, args ...string) string {
	t.Helper()
	requireTool(t, compiler)
	out := filepath.Join(t.TempDir(), "prog")
	cmd := exec.Command(compiler, append(args, "-o", out)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", compiler, err, b)
	}
	return out
}

// textRange returns the address range of .text.
func textRange(t testing.TB, p string) (uint64, uint64) {
	f, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(".text")
	return s.Addr, s.Addr + s.Size
}

type a2lFrame struct {
	fn, pos string
}

// addr2line runs addr2line -i -f -a over addrs.
func addr2line(t testing.TB, p string, addrs []uint64) map[uint64][]a2lFrame {
	requireTool(t, "addr2line")
	args := []string{"-i", "-f", "-a", "-e", p}
	for _, a := range addrs {
		args = append(args, fmt.Sprintf("%#x", a))
	}
	out, err := exec.Command("addr2line", args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	res := map[uint64][]a2lFrame{}
	var cur uint64
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "0x") {
			cur, err = strconv.ParseUint(lines[i][2:], 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		if i+1 >= len(lines) {
			break
		}
		pos := lines[i+1]
		if j := strings.Index(pos, " (discriminator"); j >= 0 {
			pos = pos[:j]
		}
		res[cur] = append(res[cur], a2lFrame{lines[i], pos})
		i++
	}
	return res
}

func TestAgainstAddr2line(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"cxx-O2-dwarf5", []string{"-O2", "-g", "testdata/inline.cc"}},
		{"cxx-O2-dwarf4", []string{"-O2", "-gdwarf-4", "testdata/inline.cc"}},
		{"cxx-O3-pie", []string{"-O3", "-g", "-pie", "-fPIE", "testdata/inline.cc"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := build(t, "g++", tt.args...)
			tab, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			lo, hi := textRange(t, p)
			var addrs []uint64
			for a := lo; a < hi; a += 3 {
				addrs = append(addrs, a)
			}
			want := addr2line(t, p, addrs)
			mismatches, inl := 0, 0
			for _, a := range addrs {
				got, err := tab.Frames(a)
				if err != nil {
					t.Fatal(err)
				}
				w := want[a]
				if len(w) == 1 && (strings.HasPrefix(w[0].pos, "??:") || strings.HasSuffix(w[0].pos, ":?")) {
					// No line information: addr2line falls back to the
					// symbol table, which is not this package's job.
					if len(got) == 0 || got[0].Line == 0 {
						continue
					}
					w = nil
				}
				if len(got) > 1 {
					inl++
				}
				if !sameFrames(got, w) {
					mismatches++
					if mismatches <= 10 {
						t.Errorf("%#x:\n got  %s\n want %s", a, fmtGot(got), fmtWant(w))
					}
				}
			}
			t.Logf("%d addresses, %d with inline chains, %d mismatches", len(addrs), inl, mismatches)
			if inl == 0 {
				t.Error("no inline chains found")
			}
		})
	}
}

func sameFrames(got []Frame, want []a2lFrame) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		fn := got[i].Func
		if fn == "" {
			fn = "??"
		}
		pos := fmt.Sprintf("%s:%d", got[i].File, got[i].Line)
		if got[i].File == "" {
			pos = fmt.Sprintf("??:%d", got[i].Line)
		}
		// For the outermost function addr2line prefers the symbol table's
		// (mangled) name when DWARF only has a plain name.
		// It does the same for the innermost frame when DWARF has no
		// linkage name (static and inline-only functions), and it fills
		// in the symbol name for addresses outside any DWARF function,
		// which stax takes from the ELF symbol table instead.
		symName := want[len(want)-1].fn
		nameOK := fn == want[i].fn ||
			(i == len(got)-1 && strings.Contains(want[i].fn, fn)) ||
			(i == 0 && !strings.HasPrefix(fn, "_Z") && want[i].fn == symName) ||
			(got[i].Func == "" && len(got) == 1)
		if !nameOK || pos != want[i].pos {
			return false
		}
		if got[i].Inlined != (i < len(got)-1) {
			return false
		}
	}
	return true
}

func fmtGot(fr []Frame) string {
	var b strings.Builder
	for _, f := range fr {
		fmt.Fprintf(&b, "[%s %s:%d inl=%v] ", f.Func, f.File, f.Line, f.Inlined)
	}
	return b.String()
}

func fmtWant(fr []a2lFrame) string {
	var b strings.Builder
	for _, f := range fr {
		fmt.Fprintf(&b, "[%s %s] ", f.fn, f.pos)
	}
	return b.String()
}

func TestLazyUnits(t *testing.T) {
	p := build(t, "g++", "-O2", "-g", "testdata/inline.cc")
	tab, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	lo, _ := textRange(t, p)
	if _, err := tab.Frames(lo); err != nil {
		t.Fatal(err)
	}
	if len(tab.units) > 1 {
		t.Fatalf("%d units decoded for one lookup", len(tab.units))
	}
	if fr, err := tab.Frames(1); err != nil || fr != nil {
		t.Fatalf("Frames(1) = %v, %v", fr, err)
	}
}

func TestLibcDebug(t *testing.T) {
	// The separate debug file of the system libc, when installed.
	f, err := elf.Open(testutil.RequireLibc(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var id []byte
	if s := f.Section(".note.gnu.build-id"); s != nil {
		if b, err := s.Data(); err == nil && len(b) > 16 {
			id = b[16:]
		}
	}
	if len(id) < 2 {
		t.Fatal("libc has no build-id")
	}
	dbg := fmt.Sprintf("/usr/lib/debug/.build-id/%x/%x.debug", id[:1], id[1:])
	testutil.RequireFile(t, dbg, "libc6-dbg")
	tab, err := Open(dbg)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, s := range syms {
		if s.Name != "qsort_r" || s.Value == 0 {
			continue
		}
		fr, err := tab.Frames(s.Value + 8)
		if err != nil {
			t.Fatal(err)
		}
		if len(fr) == 0 || fr[len(fr)-1].Line == 0 || !strings.Contains(fr[len(fr)-1].Func, "qsort_r") || !strings.HasSuffix(fr[0].File, "msort.c") {
			t.Fatalf("qsort_r frames: %+v", fr)
		}
		t.Logf("qsort_r+8: %+v", fr)
		found++
	}
	if found == 0 {
		t.Fatal("qsort_r is not in libc's dynamic symbols")
	}
}

// fuzzSections names the sections passed to dwarf.New by FuzzDWARF.
var fuzzSections = []string{".debug_abbrev", ".debug_info", ".debug_line", ".debug_str"}

func FuzzDWARF(f *testing.F) {
	f.Add([]byte{}, []byte{}, []byte{}, []byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, abbrev, info, line, str []byte, pc uint64) {
		d, err := newDWARF(abbrev, info, line, str)
		if err != nil {
			return
		}
		tab := New(d)
		tab.Frames(pc)
		for _, s := range tab.spans {
			tab.Frames(s.lo)
		}
	})
}

// newDWARF builds dwarf.Data from raw sections, recovering from panics.
func newDWARF(abbrev, info, line, str []byte) (d *dwarf.Data, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return dwarf.New(abbrev, nil, nil, info, line, nil, nil, str)
}

// TestWriteFuzzSeeds regenerates testdata/fuzz/FuzzDWARF from a small
// compiled program when STAX_WRITE_SEEDS is set.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("STAX_WRITE_SEEDS") == "" {
		t.Skip("set STAX_WRITE_SEEDS=1 to regenerate the seed corpus")
	}
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "seed.c"), []byte("static inline int sq(int x){return x*x;}\nint f(int a){return sq(a)+1;}\n"), 0o644)
	for _, v := range []string{"-gdwarf-4", "-gdwarf-5"} {
		obj := filepath.Join(work, "seed")
		// Map the temporary directory away so that the seeds do not
		// depend on where they were generated.
		cmd := exec.Command("gcc", "-O2", v, "-gno-column-info", "-fdebug-prefix-map="+work+"=/src",
			"-shared", "-fPIC", "-o", obj, "seed.c")
		cmd.Dir = work
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		ef, err := elf.Open(obj)
		if err != nil {
			t.Fatal(err)
		}
		var secs [4][]byte
		for i, n := range fuzzSections {
			if s := ef.Section(n); s != nil {
				secs[i], _ = s.Data()
			}
		}
		var pc uint64
		syms, _ := ef.Symbols()
		for _, s := range syms {
			if s.Name == "f" {
				pc = s.Value + 1
			}
		}
		ef.Close()
		var b strings.Builder
		b.WriteString("go test fuzz v1\n")
		for _, s := range secs {
			fmt.Fprintf(&b, "[]byte(%q)\n", s)
		}
		fmt.Fprintf(&b, "uint64(%d)\n", pc)
		dir := filepath.Join("testdata", "fuzz", "FuzzDWARF")
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, "gcc"+v), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func BenchmarkFrames(b *testing.B) {
	p := build(b, "g++", "-O2", "-g", "testdata/inline.cc")
	tab, err := Open(p)
	if err != nil {
		b.Fatal(err)
	}
	lo, hi := textRange(b, p)
	b.ReportAllocs()
	a := lo
	for b.Loop() {
		tab.Frames(a)
		if a += 7; a >= hi {
			a = lo
		}
	}
}

// TestConcurrentFrames looks up libc's functions from several goroutines at once, as batch
// symbolization does, and expects what one goroutine alone finds.
func TestConcurrentFrames(t *testing.T) {
	f, err := elf.Open(testutil.RequireLibc(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var id []byte
	if s := f.Section(".note.gnu.build-id"); s != nil {
		if b, err := s.Data(); err == nil && len(b) > 16 {
			id = b[16:]
		}
	}
	if len(id) < 2 {
		t.Fatal("libc has no build-id")
	}
	dbg := fmt.Sprintf("/usr/lib/debug/.build-id/%x/%x.debug", id[:1], id[1:])
	testutil.RequireFile(t, dbg, "libc6-dbg")
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	var pcs []uint64
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && len(pcs) < 800 {
			pcs = append(pcs, s.Value+s.Size/2)
		}
	}
	seq, err := Open(dbg)
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]Frame, len(pcs))
	for i, pc := range pcs {
		want[i], _ = seq.Frames(pc)
	}
	par, err := Open(dbg)
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]Frame, len(pcs))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(pcs); i += 4 {
				got[i], _ = par.Frames(pcs[i])
			}
		}()
	}
	wg.Wait()
	for i := range pcs {
		if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
			t.Fatalf("%#x: concurrent %v, alone %v", pcs[i], got[i], want[i])
		}
	}
}
