package unwind

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/testutil"
)

var update = flag.Bool("update", false, "capture the replay suite again from live programs")

// A replay fixture: a program built from source, sampled live in dwarf mode.
type replayFixture struct {
	name     string
	compiler string
	args     []string
	samples  int
}

var replayFixtures = []replayFixture{
	{"qsort", "gcc", []string{"-O2", "-fomit-frame-pointer", "testdata/qsort.c"}, 60},
	{"static", "gcc", []string{"-O2", "-static", "testdata/qsort.c"}, 60},
	{"recurse", "g++", []string{"-O2", "-fomit-frame-pointer", "testdata/recurse.cc"}, 12},
}

type replayFile struct {
	Mappings []Mapping
	Samples  []replaySample
}

type replaySample struct {
	Regs    Regs
	Stack   []byte
	FPChain []uint64
	Want    []uint64
	End     string
}

// storedCFI is an image's .eh_frame as saved in testdata.
type storedCFI struct {
	EHFrameAddr uint64
	Loads       [][3]uint64 // offset, vaddr, filesz
}

func cfiName(path string) string { return filepath.Base(path) }

func saveCFI(t *testing.T, dir, path string) {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(".eh_frame")
	if s == nil {
		t.Fatalf("%s has no .eh_frame", path)
	}
	data, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	meta := storedCFI{EHFrameAddr: s.Addr}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			meta.Loads = append(meta.Loads, [3]uint64{p.Off, p.Vaddr, p.Filesz})
		}
	}
	j, _ := json.MarshalIndent(meta, "", " ")
	os.WriteFile(filepath.Join(dir, cfiName(path)+".json"), j, 0o644)
	os.WriteFile(filepath.Join(dir, cfiName(path)+".eh_frame"), data, 0o644)
}

// storedLoader serves Tables from a replay fixture's directory.
type storedLoader struct {
	dir    string
	tables map[string]*Table
}

func (l *storedLoader) Table(m Mapping) *Table {
	name := cfiName(m.Path)
	if t, ok := l.tables[name]; ok {
		return t
	}
	var t *Table
	j, err1 := os.ReadFile(filepath.Join(l.dir, name+".json"))
	data, err2 := os.ReadFile(filepath.Join(l.dir, name+".eh_frame"))
	var meta storedCFI
	if err1 == nil && err2 == nil && json.Unmarshal(j, &meta) == nil {
		if t, _ = ParseEHFrame(data, meta.EHFrameAddr); t != nil {
			for _, s := range meta.Loads {
				t.loads = append(t.loads, segment{off: s[0], vaddr: s[1], filesz: s[2]})
			}
		}
	}
	l.tables[name] = t
	return t
}

func captureFixture(t *testing.T, fx replayFixture) {
	dir := t.TempDir()
	prog := testutil.CC(t, dir, fx.name, fx.compiler, fx.args...)
	samples, maps := capture(t, prog, fx.samples)
	out := filepath.Join("testdata", "replay", fx.name)
	os.RemoveAll(out)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	view := &Maps{Mappings: maps, Loader: &FileLoader{}}
	var u Unwinder
	rf := replayFile{Mappings: maps}
	used := map[string]bool{}
	for _, s := range samples {
		pcs, end := u.Unwind(view, &Sample{Regs: s.Regs, Stack: s.Stack, FPChain: s.FPChain}, make([]uint64, 0, 1024))
		for _, pc := range pcs {
			m, _ := view.Mapping(pc)
			used[m.Path] = true
		}
		stack := s.Stack[:min(uint64(len(s.Stack)), u.high)]
		rf.Samples = append(rf.Samples, replaySample{Regs: s.Regs, Stack: stack, FPChain: s.FPChain, Want: pcs, End: end.String()})
	}
	for p := range used {
		if proc.CodeOf(p) == proc.CodeFile && p != "[vdso]" {
			saveCFI(t, out, p)
		}
	}
	j, _ := json.Marshal(rf)
	os.WriteFile(filepath.Join(out, "samples.json"), j, 0o644)
}

func loadReplay(t testing.TB, name string) (*Maps, []replaySample) {
	dir := filepath.Join("testdata", "replay", name)
	j, err := os.ReadFile(filepath.Join(dir, "samples.json"))
	if err != nil {
		t.Fatalf("read replay fixture (run go test -run Replay -update as root to capture it): %v", err)
	}
	var rf replayFile
	if err := json.NewDecoder(bytes.NewReader(j)).Decode(&rf); err != nil {
		t.Fatal(err)
	}
	return &Maps{Mappings: rf.Mappings, Loader: &storedLoader{dir: dir, tables: map[string]*Table{}}}, rf.Samples
}

func TestReplay(t *testing.T) {
	for _, fx := range replayFixtures {
		t.Run(fx.name, func(t *testing.T) {
			if *update {
				captureFixture(t, fx)
			}
			view, samples := loadReplay(t, fx.name)
			var u Unwinder
			for i, s := range samples {
				pcs, end := u.Unwind(view, &Sample{Regs: s.Regs, Stack: s.Stack, FPChain: s.FPChain}, make([]uint64, 0, 1024))
				if !slices.Equal(pcs, s.Want) || end.String() != s.End {
					t.Errorf("sample %d: %#x (%v), want %#x (%s)", i, pcs, end, s.Want, s.End)
				}
				if end == EndGarbage {
					t.Errorf("sample %d ends in garbage", i)
				}
			}
		})
	}
}

// BenchmarkUnwindReplay unwinds every replayed stack; frames/s is per core.
func BenchmarkUnwindReplay(b *testing.B) {
	type input struct {
		view *Maps
		s    Sample
	}
	var in []input
	for _, fx := range replayFixtures {
		view, samples := loadReplay(b, fx.name)
		for _, s := range samples {
			in = append(in, input{view, Sample{Regs: s.Regs, Stack: s.Stack, FPChain: s.FPChain}})
		}
	}
	var u Unwinder
	out := make([]uint64, 0, 1024)
	frames, stacks := 0, 0
	b.ReportAllocs()
	for b.Loop() {
		for i := range in {
			pcs, _ := u.Unwind(in[i].view, &in[i].s, out)
			frames += len(pcs)
			stacks++
		}
	}
	b.ReportMetric(float64(frames)/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(stacks)/b.Elapsed().Seconds(), "stacks/s")
	b.ReportMetric(float64(frames)/float64(stacks), "frames/stack")
}
