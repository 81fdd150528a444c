package elfsym

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tinyInline builds the tables of one function (main.f at 0x1000, 0x100
// bytes) whose first 0x10 bytes run inlined code of main.g, called from
// main.f+0x20.
func tinyInline() (pclntable, pctab, gofunc, names []byte) {
	le := binary.LittleEndian
	pclntable = le.AppendUint32(pclntable, 0)     // entry of main.f
	pclntable = le.AppendUint32(pclntable, 16)    // its _func offset
	pclntable = le.AppendUint32(pclntable, 0x100) // end
	pclntable = le.AppendUint32(pclntable, 0)
	fn := make([]byte, 44)
	le.PutUint32(fn[28:], 3) // npcdata
	fn[43] = 4               // nfuncdata
	pclntable = append(pclntable, fn...)
	for _, v := range []uint32{0, 0, 1, ^uint32(0), ^uint32(0), ^uint32(0), 0} {
		pclntable = le.AppendUint32(pclntable, v)
	}
	// Inline index: 0 for [0, 0x10), -1 for [0x10, 0x20).
	pctab = []byte{0, 2, 0x10, 1, 0x10, 0}
	gofunc = make([]byte, 16)
	le.PutUint32(gofunc[4:], 7)    // name: main.g
	le.PutUint32(gofunc[8:], 0x20) // call site
	names = []byte("main.f\x00main.g\x00")
	return
}

func newTinyInline(pclntable, pctab, gofunc, names []byte) *goInline {
	return &goInline{bo: binary.LittleEndian, ptr: 8, quantum: 1, textStart: 0x1000, nfunc: 1,
		pclntable: pclntable, pctab: pctab, gofunc: gofunc, funcnames: names}
}

func TestInlineChain(t *testing.T) {
	g := newTinyInline(tinyInline())
	tests := []struct {
		pc    uint64
		names string
		outer string
	}{
		{0x1005, "[main.g] [4128]", "main.f"},
		{0x1015, "[] []", "main.f"},
		{0x0fff, "[] []", ""},
	}
	for _, tt := range tests {
		names, sites, outer := g.chain(tt.pc)
		if got := fmt.Sprint(names, " ", sites); got != tt.names || outer != tt.outer {
			t.Errorf("chain(%#x) = %s %q, want %s %q", tt.pc, got, outer, tt.names, tt.outer)
		}
	}
}

func FuzzGoInline(f *testing.F) {
	a, b, c, d := tinyInline()
	f.Add(a, b, c, d, uint64(0x1005))
	f.Fuzz(func(t *testing.T, pclntable, pctab, gofunc, names []byte, pc uint64) {
		g := newTinyInline(pclntable, pctab, gofunc, names)
		g.nfunc = len(pclntable) / 8
		names2, sites, _ := g.chain(pc)
		if len(names2) != len(sites) || len(names2) > 64 {
			t.Fatalf("%d names, %d sites", len(names2), len(sites))
		}
	})
}

// TestWriteInlineSeeds regenerates testdata/fuzz/FuzzGoInline when
// STAX_WRITE_SEEDS is set.
func TestWriteInlineSeeds(t *testing.T) {
	if os.Getenv("STAX_WRITE_SEEDS") == "" {
		t.Skip("set STAX_WRITE_SEEDS=1 to regenerate the seed corpus")
	}
	a, b, c, d := tinyInline()
	dir := filepath.Join("testdata", "fuzz", "FuzzGoInline")
	os.MkdirAll(dir, 0o755)
	content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\n[]byte(%q)\n[]byte(%q)\nuint64(%d)\n", a, b, c, d, 0x1005)
	if err := os.WriteFile(filepath.Join(dir, "one-inlined-call"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// withGoVersion copies the Go binary at src to dst with the version in its .go.buildinfo
// section changed to v, of the same length.
func withGoVersion(t *testing.T, src, dst, v string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(".go.buildinfo")
	if s == nil {
		t.Fatal("no .go.buildinfo section")
	}
	hdr := b[s.Offset:]
	n, k := binary.Uvarint(hdr[32:])
	old := string(hdr[32+k : 32+k+int(n)])
	if len(v) != len(old) {
		t.Fatalf("version %q is not as long as %q", v, old)
	}
	copy(hdr[32+k:], v)
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// spinFrames returns the Go frames of every instruction of main.spin in im.
func spinFrames(t *testing.T, im *Image) [][]GoFrame {
	t.Helper()
	var spin Symbol
	for _, s := range im.Symbols() {
		if s.Name == "main.spin" {
			spin = s
		}
	}
	if spin.Size == 0 {
		t.Fatal("main.spin not found")
	}
	var out [][]GoFrame
	for off := range spin.Size {
		fr, ok := im.GoFrames(spin.Addr + off)
		if !ok || len(fr) == 0 || fr[len(fr)-1].Func != "main.spin" {
			t.Fatalf("main.spin+%#x: frames %+v, ok %v", off, fr, ok)
		}
		out = append(out, fr)
	}
	return out
}

func inlinedAt(frames [][]GoFrame) int {
	n := 0
	for _, fr := range frames {
		if len(fr) > 1 {
			n++
		}
	}
	return n
}

// A Go binary built here (inlining on) gives inline frames; the same binary claiming a Go
// version whose runtime layout stax does not know gives the same functions without them,
// and says why; with its DWARF, which confirms the layout, it gives them again.
func TestGoInlineVersion(t *testing.T) {
	requireTool(t, "go")
	dir := t.TempDir()
	stripped := filepath.Join(dir, "stripped")
	full := filepath.Join(dir, "full")
	run(t, "go", "build", "-ldflags=-s -w", "-o", stripped, "testdata/main.go")
	run(t, "go", "build", "-o", full, "testdata/main.go")

	im, err := Open(stripped)
	if err != nil {
		t.Fatal(err)
	}
	if im.GoInlineNote != "" || im.goinl == nil {
		t.Fatalf("this toolchain's binary: inline tree %v, note %q", im.goinl != nil, im.GoInlineNote)
	}
	known := spinFrames(t, im)
	if inlinedAt(known) == 0 {
		t.Fatal("no inline frames in main.spin")
	}

	for _, v := range []string{"go0.", "go2."} {
		unknown := filepath.Join(dir, "unknown-"+v)
		withGoVersion(t, stripped, unknown, v+strings.TrimPrefix(goVersionOf(t, stripped), "go1."))
		im, err := Open(unknown)
		if err != nil {
			t.Fatal(err)
		}
		if im.goinl != nil || !strings.Contains(im.GoInlineNote, "not go1.20 to go1.26") ||
			!strings.Contains(im.GoInlineNote, "no DWARF type info") || !strings.Contains(im.GoInlineNote, "without inline functions") {
			t.Errorf("version %s: inline tree %v, note %q", v, im.goinl != nil, im.GoInlineNote)
		}
		fr := spinFrames(t, im)
		if n := inlinedAt(fr); n != 0 {
			t.Errorf("version %s: %d instructions with inline frames", v, n)
		}
		for i := range fr {
			if fr[i][0].Func != "main.spin" || fr[i][0].Line == 0 {
				t.Fatalf("version %s: main.spin+%#x is %+v", v, i, fr[i])
			}
		}
	}

	unknownFull := filepath.Join(dir, "unknown-full")
	withGoVersion(t, full, unknownFull, "go0."+strings.TrimPrefix(goVersionOf(t, full), "go1."))
	im, err = Open(unknownFull)
	if err != nil {
		t.Fatal(err)
	}
	if im.goinl == nil || im.GoInlineNote != "" {
		t.Fatalf("unknown version with DWARF: inline tree %v, note %q", im.goinl != nil, im.GoInlineNote)
	}
	if n := inlinedAt(spinFrames(t, im)); n != inlinedAt(known) {
		t.Errorf("unknown version with DWARF: %d instructions with inline frames, %d without -s -w", n, inlinedAt(known))
	}
}

func goVersionOf(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v := goVersion(f)
	if !strings.HasPrefix(v, "go1.") {
		t.Fatalf("%s: Go version %q", path, v)
	}
	return v
}

func TestKnownGoLayout(t *testing.T) {
	for v, want := range map[string]bool{
		"go1.20": true, "go1.22.5": true, "go1.26.8": true, "go1.23rc1": true, "go1.21beta2": true,
		"go1.24.1 X:nocoverageredesign": true,
		"go1.19.13":                     false, "go1.27": false, "go1.200": false, "go1.2": false, "devel go1.27-abcdef": false,
		"go2.0": false, "": false, "go1.": false, "go1.22x": false, "go1.99999999999999999999": false,
	} {
		if got := knownGoLayout(v); got != want {
			t.Errorf("knownGoLayout(%q) = %v", v, got)
		}
	}
}

func FuzzBuildInfoVersion(f *testing.F) {
	hdr := []byte(buildInfoMagic + "\x08\x02" + strings.Repeat("\x00", 16))
	f.Add(append(append(append([]byte{}, hdr...), 8), "go1.26.8"...))
	f.Add(append(append(append([]byte{}, hdr...), 0xff, 0xff, 0xff, 0x0f), "go"...))
	f.Add(hdr[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		v := parseBuildInfoVersion(b)
		if len(v) > 256 || len(v) > len(b) {
			t.Fatalf("version of %d bytes from %d", len(v), len(b))
		}
	})
}

func TestParseBuildInfoVersion(t *testing.T) {
	hdr := buildInfoMagic + "\x08\x02" + strings.Repeat("\x00", 16)
	for in, want := range map[string]string{
		hdr + "\x08go1.26.8": "go1.26.8",
		hdr + "\x09go1.26.8": "", // longer than the section
		hdr[:20]:             "",
		buildInfoMagic + "\x08\x00" + hdr[16:] + "x": "", // pointers to the strings, before Go 1.18
	} {
		if got := parseBuildInfoVersion([]byte(in)); got != want {
			t.Errorf("parseBuildInfoVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

// The DWARF check finds the runtime's structures in a binary built here, and tells a field
// or a size that is not where goInline reads it, or a structure that is missing.
func TestDWARFLayout(t *testing.T) {
	requireTool(t, "go")
	dir := t.TempDir()
	full, stripped := filepath.Join(dir, "full"), filepath.Join(dir, "stripped")
	run(t, "go", "build", "-o", full, "testdata/main.go")
	run(t, "go", "build", "-ldflags=-w", "-o", stripped, "testdata/main.go")
	f, err := elf.Open(full)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := dwarfGoLayout(f, 8); err != nil {
		t.Fatalf("this toolchain's layout: %v", err)
	}
	for _, c := range []struct {
		want     map[string]map[string]int64
		wantSize map[string]int64
		err      string
	}{
		{map[string]map[string]int64{"runtime.inlinedCall": {"parentPc": 12}}, nil, "puts runtime.inlinedCall.parentPc at 8, not 12"},
		{map[string]map[string]int64{"runtime._func": {"npcdata": 28}}, map[string]int64{"runtime._func": 48}, "gives runtime._func 44 bytes, not 48"},
		{map[string]map[string]int64{"runtime.noSuchType": {"x": 0}}, nil, "no DWARF type info"},
		{map[string]map[string]int64{"runtime._func": {"noSuchField": 0}}, nil, "has no runtime._func.noSuchField"},
	} {
		if err := dwarfLayout(f, c.want, c.wantSize); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%v %v: %v, want %q", c.want, c.wantSize, err, c.err)
		}
	}
	g, err := elf.Open(stripped)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := dwarfGoLayout(g, 8); err != errNoTypeInfo {
		t.Errorf("without DWARF: %v", err)
	}
}
