package elfsym

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"github.com/stax-profiler/stax/internal/symbol/dwarfline"
	"github.com/stax-profiler/stax/internal/testutil"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const (
	stbGlobal = 1
	stbWeak   = 2
	sttFunc   = 2
	sttObject = 1
	sttIFunc  = 10
)

func TestTinyELF(t *testing.T) {
	data := tinyELF([]tinySym{
		{name: "alias_local", value: 0x401000, size: 0x20, bind: 0, typ: sttFunc, sectionIdx: 1},
		{name: "alias_weak", value: 0x401000, size: 0x20, bind: stbWeak, typ: sttFunc, sectionIdx: 1},
		{name: "first@@VER_2", value: 0x401000, size: 0x20, bind: stbGlobal, typ: sttFunc, sectionIdx: 1},
		{name: "first_hidden@VER_1", value: 0x401000, size: 0x20, bind: stbGlobal, typ: sttFunc, sectionIdx: 1},
		{name: "zero_size", value: 0x401040, bind: stbGlobal, typ: sttFunc, sectionIdx: 1},
		{name: "ifunc", value: 0x401080, size: 0x10, bind: stbGlobal, typ: sttIFunc, sectionIdx: 1},
		{name: "data_obj", value: 0x4010a0, size: 0x10, bind: stbGlobal, typ: sttObject, sectionIdx: 1},
		{name: "last_zero", value: 0x4010c0, bind: stbGlobal, typ: sttFunc, sectionIdx: 1},
		{name: "stub@plt", value: 0x402100, size: 0x10, bind: 0, typ: sttFunc, sectionIdx: 2},
		{name: "undef", value: 0, bind: stbGlobal, typ: sttFunc},
	})
	im, err := Load(bytes.NewReader(data), "tiny")
	if err != nil {
		t.Fatal(err)
	}
	if got := im.BuildIDHex(); got != "0102030405060708" {
		t.Errorf("build-id %q", got)
	}
	if im.DebugLink != "prog.debug" || im.DebugLinkCRC != 0x12345678 {
		t.Errorf("debuglink %q %#x", im.DebugLink, im.DebugLinkCRC)
	}
	if im.Machine != elf.EM_X86_64 || len(im.Loads) != 2 {
		t.Errorf("machine %v loads %d", im.Machine, len(im.Loads))
	}
	tests := []struct {
		addr uint64
		name string // "" for no symbol
		size uint64
	}{
		{0x400fff, "", 0},
		{0x401000, "first", 0x20},
		{0x40101f, "first", 0x20},
		{0x401020, "", 0},
		{0x401040, "zero_size", 0x40}, // extends to the next symbol
		{0x40107f, "zero_size", 0x40},
		{0x401085, "ifunc", 0x10},
		{0x4010a5, "", 0},             // objects are not functions
		{0x4010ff, "last_zero", 0x40}, // extends to the end of .text
		{0x401100, "", 0},             // but not past it
		{0x402105, "stub", 0x10},
	}
	for _, tt := range tests {
		s, ok := im.Lookup(tt.addr)
		if tt.name == "" {
			if ok {
				t.Errorf("Lookup(%#x) = %q, want nothing", tt.addr, s.Name)
			}
			continue
		}
		if !ok || s.Name != tt.name || s.Size != tt.size {
			t.Errorf("Lookup(%#x) = %q size %#x (%v), want %q size %#x", tt.addr, s.Name, s.Size, ok, tt.name, tt.size)
		}
	}
	// Translation through two executable segments.
	for _, tt := range []struct {
		m          Mapping
		addr, want uint64
	}{
		{Mapping{Start: 0x401000, Len: 0x1000, Pgoff: 0x1000}, 0x401010, 0x401010},
		{Mapping{Start: 0x7f0000001000, Len: 0x1000, Pgoff: 0x1000}, 0x7f0000001110, 0x402110},
	} {
		got, ok := im.MappedToVaddr(tt.m, tt.addr)
		if !ok || got != tt.want {
			t.Errorf("MappedToVaddr(%+v, %#x) = %#x, %v; want %#x", tt.m, tt.addr, got, ok, tt.want)
		}
	}
}

func TestStripSuffix(t *testing.T) {
	tests := []struct {
		in, want string
		hidden   bool
	}{
		{"memcpy", "memcpy", false},
		{"memcpy@@GLIBC_2.14", "memcpy", false},
		{"memcpy@GLIBC_2.2.5", "memcpy", true},
		{"puts@plt", "puts", false},
		{"@odd", "@odd", false},
	}
	for _, tt := range tests {
		got, hidden := stripSuffix(tt.in)
		if got != tt.want || hidden != tt.hidden {
			t.Errorf("stripSuffix(%q) = %q, %v; want %q, %v", tt.in, got, hidden, tt.want, tt.hidden)
		}
	}
}

func TestParseNotesMalformed(t *testing.T) {
	for _, b := range [][]byte{
		nil,
		{1, 2, 3},
		{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 3, 0, 0, 0},
		{4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0, 'G', 'N', 'U', 0},
	} {
		if id := parseNotes(b, binaryLE); id != nil {
			t.Errorf("parseNotes(%x) = %x", b, id)
		}
	}
}

// requireTool skips the test when a build tool is missing (fails it on CI).
func requireTool(t testing.TB, name string) {
	t.Helper()
	testutil.RequireTool(t, name)
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// nmFuncs returns address -> names of text symbols as listed by nm.
func nmFuncs(t testing.TB, path string, dynamic bool) map[uint64][]string {
	t.Helper()
	args := []string{"--defined-only"}
	if dynamic {
		args = append(args, "-D")
	}
	out := run(t, "nm", append(args, path)...)
	m := map[uint64][]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || !strings.ContainsAny(f[1], "TtWwi") {
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil || a == 0 {
			continue
		}
		name, _ := stripSuffix(f[2])
		m[a] = append(m[a], name)
	}
	return m
}

func checkAgainstNM(t *testing.T, im *Image, want map[uint64][]string) {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("nm listed no functions")
	}
	n := 0
	for addr, names := range want {
		if !inExec(im, addr) {
			continue // weak data symbols such as data_start
		}
		s, ok := im.Lookup(addr)
		if !ok {
			t.Errorf("Lookup(%#x) found nothing, nm has %v", addr, names)
			continue
		}
		found := false
		for _, nm := range names {
			found = found || nm == s.Name
		}
		if !found || s.Addr != addr {
			t.Errorf("Lookup(%#x) = %q at %#x, nm has %v", addr, s.Name, s.Addr, names)
		}
		n++
	}
	t.Logf("%d addresses match nm", n)
}

func inExec(im *Image, addr uint64) bool {
	for _, l := range im.Loads {
		if l.Flags&elf.PF_X != 0 && addr >= l.Vaddr && addr < l.Vaddr+l.Memsz {
			return true
		}
	}
	return false
}

type cBuild struct {
	name  string
	flags []string
}

var cBuilds = []cBuild{
	{"pie", []string{"-O1", "-pie", "-fPIE"}},
	{"nopie", []string{"-O1", "-no-pie", "-fno-pie"}},
	{"nopie-noseparate", []string{"-O1", "-no-pie", "-fno-pie", "-Wl,-z,noseparate-code"}},
	{"nopie-twotext", []string{"-O1", "-no-pie", "-fno-pie", "-DOTHER_SECTION", "-Wl,--section-start=othertext=0x800000"}},
	{"pie-lib", []string{"-O1", "-pie", "-fPIE", "-DWITH_LIB"}},
}

// buildC compiles testdata/prog.c (and for -DWITH_LIB testdata/lib.c as a
// shared library) into dir.
func buildC(t testing.TB, dir string, b cBuild) (exe, lib string) {
	t.Helper()
	requireTool(t, "gcc")
	exe = filepath.Join(dir, "prog-"+b.name)
	args := append([]string{}, b.flags...)
	for _, f := range b.flags {
		if f == "-DWITH_LIB" {
			lib = filepath.Join(dir, "libsq.so")
			run(t, "gcc", "-O1", "-shared", "-fPIC", "-o", lib, "testdata/lib.c")
			args = append(args, "-L"+dir, "-lsq", "-Wl,-rpath,"+dir)
		}
	}
	args = append(args, "-o", exe, "testdata/prog.c")
	// Libraries must follow the sources that use them.
	for i, a := range args {
		if a == "-lsq" {
			args = append(append(args[:i:i], args[i+1:]...), "-lsq")
			break
		}
	}
	run(t, "gcc", args...)
	return exe, lib
}

func TestGCCAgainstNM(t *testing.T) {
	requireTool(t, "nm")
	dir := t.TempDir()
	for _, b := range cBuilds {
		t.Run(b.name, func(t *testing.T) {
			exe, lib := buildC(t, dir, b)
			for _, p := range []string{exe, lib} {
				if p == "" {
					continue
				}
				im, err := Open(p)
				if err != nil {
					t.Fatal(err)
				}
				checkAgainstNM(t, im, nmFuncs(t, p, false))
				if len(im.BuildID) == 0 {
					t.Errorf("%s: no build-id", p)
				}
			}
		})
	}
}

func TestLibcAgainstNM(t *testing.T) {
	requireTool(t, "nm")
	libc := testutil.RequireLibc(t)
	im, err := Open(libc)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstNM(t, im, nmFuncs(t, libc, true))
}

// TestLiveTranslation runs each program, reads its mappings and checks
// that the printed function addresses translate to the right symbols.
func TestLiveTranslation(t *testing.T) {
	dir := t.TempDir()
	for _, b := range cBuilds {
		t.Run(b.name, func(t *testing.T) {
			exe, _ := buildC(t, dir, b)
			cmd := exec.Command(exe)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				stdin.Close()
				cmd.Wait()
			}()
			addrs := map[string]uint64{}
			sc := bufio.NewScanner(stdout)
			for sc.Scan() && sc.Text() != "end" {
				var name string
				var a uint64
				if _, err := fmt.Sscanf(sc.Text(), "%s %v", &name, &a); err != nil {
					t.Fatalf("parse %q: %v", sc.Text(), err)
				}
				addrs[name] = a
			}
			maps, err := readMaps(cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			images := map[string]*Image{}
			for name, addr := range addrs {
				m, ok := findMapping(maps, addr)
				if !ok {
					t.Fatalf("%s at %#x is not mapped", name, addr)
				}
				im := images[m.path]
				if im == nil {
					if im, err = Open(m.path); err != nil {
						t.Fatal(err)
					}
					images[m.path] = im
				}
				for _, delta := range []uint64{0, 1} {
					va, ok := im.MappedToVaddr(m.Mapping, addr+delta)
					if !ok {
						t.Fatalf("%s: %#x does not translate", name, addr)
					}
					s, ok := im.Lookup(va)
					if !ok || s.Name != name {
						t.Errorf("%s: %#x -> vaddr %#x -> %q (%v)", name, addr+delta, va, s.Name, ok)
					}
				}
			}
		})
	}
}

type procMap struct {
	Mapping
	path string
}

func readMaps(pid int) ([]procMap, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []procMap
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || !strings.HasPrefix(fs[5], "/") {
			continue
		}
		var lo, hi, off uint64
		if _, err := fmt.Sscanf(fs[0], "%x-%x", &lo, &hi); err != nil {
			return nil, err
		}
		if off, err = strconv.ParseUint(fs[2], 16, 64); err != nil {
			return nil, err
		}
		out = append(out, procMap{Mapping{Start: lo, Len: hi - lo, Pgoff: off}, fs[5]})
	}
	return out, sc.Err()
}

func findMapping(maps []procMap, addr uint64) (procMap, bool) {
	for _, m := range maps {
		if m.Contains(addr) {
			return m, true
		}
	}
	return procMap{}, false
}

func TestGo(t *testing.T) {
	requireTool(t, "go")
	dir := t.TempDir()
	full := filepath.Join(dir, "gofull")
	stripped := filepath.Join(dir, "gostripped")
	run(t, "go", "build", "-o", full, "testdata/main.go")
	run(t, "go", "build", "-ldflags=-s -w", "-o", stripped, "testdata/main.go")
	imFull, err := Open(full)
	if err != nil {
		t.Fatal(err)
	}
	imStripped, err := Open(stripped)
	if err != nil {
		t.Fatal(err)
	}
	if !imFull.IsGo || !imStripped.IsGo {
		t.Fatal("not detected as Go")
	}
	for _, tt := range []struct {
		name string
		im   *Image
	}{{"symtab", imFull}, {"pclntab", imStripped}} {
		t.Run(tt.name, func(t *testing.T) {
			var spin Symbol
			for _, s := range tt.im.Symbols() {
				if s.Name == "main.spin" {
					spin = s
				}
			}
			if spin.Addr == 0 || spin.Size == 0 {
				t.Fatal("main.spin not found")
			}
			got, ok := tt.im.Lookup(spin.Addr + spin.Size/2)
			if !ok || got.Name != "main.spin" {
				t.Fatalf("Lookup inside main.spin = %q", got.Name)
			}
			fn, file, line, ok := tt.im.GoLine(spin.Addr + 4)
			if !ok || fn != "main.spin" || filepath.Base(file) != "main.go" || line < 9 || line > 15 {
				t.Fatalf("GoLine = %q %s:%d %v", fn, file, line, ok)
			}
		})
	}
	// Both builds must agree on every function in package main and runtime.
	n := 0
	for _, s := range imFull.Symbols() {
		if !strings.HasPrefix(s.Name, "main.") && !strings.HasPrefix(s.Name, "runtime.mallocgc") {
			continue
		}
		n++
		var other Symbol
		for _, o := range imStripped.Symbols() {
			if o.Name == s.Name {
				other = o
			}
		}
		// .gopclntab sizes include the alignment padding after a function.
		if other.Name == "" || other.Addr != s.Addr || other.Size < s.Size || other.Size > s.Size+64 {
			t.Errorf("%s: stripped build has %+v, full build %+v", s.Name, other, s)
		}
	}
	if n == 0 {
		t.Fatal("no main.* symbols")
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "load image empty: not an ELF file (it is empty)"},
		{"not elf", []byte("#!/bin/sh\necho hi\n"), `load image not elf: not an ELF file (it starts with "#!/b")`},
		{"text", []byte("root:x:0:0:root:/root:/bin/sh\n"), `load image text: not an ELF file (it starts with "root")`},
		{"control bytes", []byte("\x1b[2J\x00"), `load image control bytes: not an ELF file (it starts with "\x1b[2J")`},
		{"short", []byte("\x7fE"), "load image short: not an ELF file (it has only 2 bytes)"},
		{"truncated", tinyELF(nil)[:40], "load image truncated: the ELF file is truncated"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(bytes.NewReader(tt.data), tt.name)
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tt.want {
				t.Fatalf("error %q, want %q", err, tt.want)
			}
		})
	}
	if _, err := Load(bytes.NewReader(tinyELF(nil)[:100]), "cut"); err == nil || !strings.HasPrefix(err.Error(), "load image cut: ") {
		t.Fatalf("error %v for a file cut inside its section headers", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("no error for missing file")
	}
}

func FuzzLoad(f *testing.F) {
	f.Add(tinyELF([]tinySym{{name: "f", value: 0x401000, size: 0x10, bind: stbGlobal, typ: sttFunc, sectionIdx: 1}}))
	f.Add(tinyELF(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := Load(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		for _, s := range im.Symbols() {
			im.Lookup(s.Addr)
			im.GoLine(s.Addr)
		}
		im.MappedToVaddr(Mapping{Start: 0x1000, Len: 0x1000}, 0x1800)
	})
}

// TestWriteFuzzSeeds regenerates testdata/fuzz/FuzzLoad when
// STAX_WRITE_SEEDS is set.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("STAX_WRITE_SEEDS") == "" {
		t.Skip("set STAX_WRITE_SEEDS=1 to regenerate the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzLoad")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	seeds := map[string][]byte{
		"tiny-one-symbol": tinyELF([]tinySym{{name: "f", value: 0x401000, size: 0x10, bind: stbGlobal, typ: sttFunc, sectionIdx: 1}}),
		"tiny-aliases": tinyELF([]tinySym{
			{name: "a@@V", value: 0x401000, bind: stbGlobal, typ: sttFunc, sectionIdx: 1},
			{name: "b", value: 0x401000, size: 4, bind: stbWeak, typ: sttIFunc, sectionIdx: 1},
			{name: "c@plt", value: 0x402100, bind: 0, typ: sttFunc, sectionIdx: 2},
		}),
		"tiny-empty": tinyELF(nil),
	}
	for name, data := range seeds {
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func BenchmarkLookupLibc(b *testing.B) {
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	im, err := Open(libc)
	if err != nil {
		b.Skip(err)
	}
	addrs := benchAddrs(im, 10000)
	b.ReportAllocs()
	for b.Loop() {
		for _, a := range addrs {
			im.Lookup(a)
		}
	}
}

func BenchmarkOpenLibc(b *testing.B) {
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(libc); err != nil {
		b.Skip(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Open(libc); err != nil {
			b.Fatal(err)
		}
	}
}

// benchAddrs spreads n distinct addresses over the image's symbols.
func benchAddrs(im *Image, n int) []uint64 {
	syms := im.Symbols()
	lo, hi := syms[0].Addr, syms[len(syms)-1].End()
	out := make([]uint64, n)
	step := (hi - lo) / uint64(n)
	for i := range out {
		out[i] = lo + uint64(i)*step
	}
	return out
}

// TestGoInline compares inline chains decoded from .gopclntab of a
// stripped build with the DWARF of the same build without -s -w.
func TestGoInline(t *testing.T) {
	requireTool(t, "go")
	dir := t.TempDir()
	full := filepath.Join(dir, "gofull")
	stripped := filepath.Join(dir, "gostripped")
	run(t, "go", "build", "-o", full, "testdata/main.go")
	run(t, "go", "build", "-ldflags=-s -w", "-o", stripped, "testdata/main.go")
	im, err := Open(stripped)
	if err != nil {
		t.Fatal(err)
	}
	if im.goinl == nil {
		t.Fatal("inline tree not found")
	}
	dw, err := dwarfline.Open(full)
	if err != nil {
		t.Fatal(err)
	}
	imFull, err := Open(full)
	if err != nil {
		t.Fatal(err)
	}
	var spin, spinFull Symbol
	for _, s := range im.Symbols() {
		if s.Name == "main.spin" {
			spin = s
		}
	}
	for _, s := range imFull.Symbols() {
		if s.Name == "main.spin" {
			spinFull = s
		}
	}
	if spin.Size == 0 || spinFull.Size == 0 {
		t.Fatal("main.spin not found")
	}
	inlined, compared := 0, 0
	for off := uint64(0); off < spinFull.Size; off++ {
		got, ok := im.GoFrames(spin.Addr + off)
		if !ok {
			t.Fatalf("no frames at main.spin+%#x", off)
		}
		want, err := dw.Frames(spinFull.Addr + off)
		if err != nil || len(want) == 0 {
			continue
		}
		compared++
		if len(got) > 1 {
			inlined++
		}
		var g, w []string
		for _, f := range got {
			g = append(g, fmt.Sprintf("%s %s:%d %v", f.Func, filepath.Base(f.File), f.Line, f.Inlined))
		}
		for _, f := range want {
			w = append(w, fmt.Sprintf("%s %s:%d %v", f.Func, filepath.Base(f.File), f.Line, f.Inlined))
		}
		if strings.Join(g, "|") != strings.Join(w, "|") {
			t.Errorf("main.spin+%#x:\n got  %v\n want %v", off, g, w)
		}
	}
	t.Logf("%d offsets compared, %d with inline chains", compared, inlined)
	if inlined == 0 {
		t.Fatal("no inline chains")
	}
}
