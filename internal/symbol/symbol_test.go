package symbol

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stax-profiler/stax/internal/symbol/debugfile"
	"github.com/stax-profiler/stax/internal/symbol/kallsyms"
	"github.com/stax-profiler/stax/internal/testutil"
)

const libcPath = "/lib/x86_64-linux-gnu/libc.so.6"

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(testutil.RequireTool(t, name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestLibcInternals(t *testing.T) {
	c := NewCache(Options{})
	im, err := c.Open(testutil.RequireLibc(t))
	if err != nil {
		t.Fatal(err)
	}
	if im.DebugPath == "" {
		testutil.Require(t, testutil.EnvPerf, "libc's debug file is not installed (apt-get install libc6-dbg): %v", im.DebugErr)
	}
	if !strings.HasPrefix(im.DebugPath, "/usr/lib/debug/.build-id/") {
		t.Errorf("debug file %s not found by build-id", im.DebugPath)
	}
	// GCC outlines part of it as msort_with_tmp.part.0.
	var msort uint64
	var name string
	for _, s := range im.ELF().Symbols() {
		if strings.HasPrefix(s.Name, "msort_with_tmp") {
			msort, name = s.Addr, s.Name
		}
	}
	if msort == 0 {
		t.Fatal("msort_with_tmp not among the merged symbols")
	}
	loc := im.Locate(msort + 16)
	if loc.Symbol.Name != name || loc.Symbol.Start != msort || loc.Symbol.Size == 0 {
		t.Fatalf("symbol %+v", loc.Symbol)
	}
	if len(loc.Frames) == 0 || loc.Frames[len(loc.Frames)-1].Func != name || !strings.HasSuffix(loc.Frames[0].File, "msort.c") {
		t.Fatalf("frames %+v", loc.Frames)
	}
	t.Logf("%s+16: %+v", name, loc.Frames)
}

// strippedFixture builds testdata/inline.cc, moves its debug information
// into <root>/usr/lib/debug/.build-id/ and strips the image.
func strippedFixture(t testing.TB, extra ...string) (img, unstripped, root string) {
	dir := t.TempDir()
	unstripped = filepath.Join(dir, "inline.full")
	img = filepath.Join(dir, "inline")
	dbg := filepath.Join(dir, "inline.debug")
	run(t, "g++", append(append([]string{"-O2", "-g", "-Wl,--build-id"}, extra...), "-o", unstripped, "testdata/inline.cc")...)
	run(t, "objcopy", "--only-keep-debug", unstripped, dbg)
	run(t, "objcopy", "--strip-all", unstripped, img)
	id, err := debugfile.ReadBuildID(img)
	if err != nil {
		t.Fatal(err)
	}
	root = t.TempDir()
	copyFile(t, dbg, debugfile.Finder{Root: root}.BuildIDPath(id))
	return img, unstripped, root
}

// execMapping returns how the kernel would map the first executable
// segment of path at base.
func execMapping(t testing.TB, path string, base uint64) (Mapping, elf.ProgHeader) {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			start := base + p.Vaddr&^0xfff
			end := base + (p.Vaddr+p.Memsz+0xfff)&^0xfff
			return Mapping{Start: start, Len: end - start, Pgoff: p.Off &^ 0xfff}, p.ProgHeader
		}
	}
	t.Fatal("no executable segment")
	return Mapping{}, elf.ProgHeader{}
}

func addr2line(t testing.TB, path string, addrs []uint64) map[uint64][]string {
	args := []string{"-i", "-a", "-e", path}
	for _, a := range addrs {
		args = append(args, fmt.Sprintf("%#x", a))
	}
	out := run(t, "addr2line", args...)
	res := map[uint64][]string{}
	var cur uint64
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "0x") {
			cur, _ = strconv.ParseUint(l[2:], 16, 64)
			continue
		}
		if i := strings.Index(l, " (discriminator"); i >= 0 {
			l = l[:i]
		}
		res[cur] = append(res[cur], l)
	}
	return res
}

func TestStrippedImageWithDebugRoot(t *testing.T) {
	for _, tt := range []struct {
		name  string
		flags []string
		base  uint64
	}{
		{"pie", []string{"-pie", "-fPIE"}, 0x555555554000},
		{"nopie", []string{"-no-pie", "-fno-pie"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			img, full, root := strippedFixture(t, tt.flags...)
			c := NewCache(Options{DebugRoot: root})
			im, err := c.Open(img)
			if err != nil {
				t.Fatal(err)
			}
			if im.DebugPath == "" {
				t.Fatalf("debug file not found: %v", im.DebugErr)
			}
			m, seg := execMapping(t, img, tt.base)
			var total Symbol
			for _, s := range im.ELF().Symbols() {
				if strings.Contains(s.Name, "5total") {
					total, _ = im.Symbol(s.Addr)
				}
			}
			if total.Size == 0 {
				t.Fatal("geo::total not found through the debug file")
			}
			if want := "geo::total(std::vector<geo::Point, std::allocator<geo::Point> > const&)"; total.Name != want {
				t.Errorf("name %q, want %q", total.Name, want)
			}
			var addrs []uint64
			for a := total.Start; a < total.Start+total.Size; a++ {
				addrs = append(addrs, a)
			}
			want := addr2line(t, full, addrs)
			inlined := 0
			for _, va := range addrs {
				sampled := tt.base + va
				if !m.Contains(sampled) || va < seg.Vaddr {
					t.Fatalf("%#x outside the mapping", sampled)
				}
				loc, err := c.Resolve(img, m, sampled)
				if err != nil {
					t.Fatal(err)
				}
				if loc.VAddr != va || loc.Symbol.Start != total.Start {
					t.Fatalf("%#x: vaddr %#x symbol %+v", sampled, loc.VAddr, loc.Symbol)
				}
				var got []string
				for _, f := range loc.Frames {
					got = append(got, fmt.Sprintf("%s:%d", f.File, f.Line))
				}
				if strings.Join(got, "|") != strings.Join(want[va], "|") {
					t.Errorf("%#x: frames %v, addr2line %v", va, got, want[va])
				}
				if len(loc.Frames) > 1 {
					inlined++
					if !loc.Frames[0].Inlined || loc.Frames[len(loc.Frames)-1].Inlined {
						t.Errorf("%#x: inline flags %+v", va, loc.Frames)
					}
				}
				if loc.Frames[len(loc.Frames)-1].Func != total.Name {
					t.Errorf("%#x: outer function %q", va, loc.Frames[len(loc.Frames)-1].Func)
				}
			}
			if inlined == 0 {
				t.Error("no inline frames")
			}
		})
	}
}

func TestCacheSharing(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "m.c")
	os.WriteFile(src, []byte("int main(void){return 0;}\n"), 0o644)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	noid := filepath.Join(dir, "noid")
	run(t, "gcc", "-O1", "-Wl,--build-id", "-o", a, src)
	copyFile(t, a, b)
	run(t, "gcc", "-O1", "-Wl,--build-id=none", "-o", noid, src)
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("not an ELF image"), 0o644)

	c := NewCache(Options{})
	imA, errA := c.Open(a)
	imB, errB := c.Open(b)
	if errA != nil || errB != nil || imA != imB {
		t.Fatalf("same build-id loaded twice: %p %p %v %v", imA, imB, errA, errB)
	}
	imN, err := c.Open(noid)
	if err != nil || imN == imA || len(imN.BuildID) != 0 {
		t.Fatalf("image without build-id: %v %v", imN, err)
	}
	if viaID, err := c.OpenBuildID(filepath.Join(dir, "elsewhere"), imA.BuildID); err != nil || viaID != imA {
		t.Fatalf("OpenBuildID = %p, %v", viaID, err)
	}
	if _, err := NewCache(Options{}).OpenBuildID(noid, imA.BuildID); err == nil {
		t.Fatal("build-id mismatch not reported")
	}
	if again, _ := c.Open(noid); again != imN {
		t.Fatal("image without build-id loaded twice")
	}
	_, err1 := c.Open(bad)
	_, err2 := c.Open(bad)
	if err1 == nil || err1 != err2 {
		t.Fatalf("load error not remembered: %v / %v", err1, err2)
	}
	_, err1 = c.Open(filepath.Join(dir, "missing"))
	if err1 == nil {
		t.Fatal("missing file opened")
	}
	if n := c.Len(); n != 4 {
		t.Fatalf("%d cache entries, want 4", n)
	}
	// A rebuilt file without build-id is a new image.
	run(t, "gcc", "-O2", "-Wl,--build-id=none", "-o", noid, src)
	if again, _ := c.Open(noid); again == imN {
		t.Fatal("changed file not reloaded")
	}
}

func TestNoDWARFOption(t *testing.T) {
	img, _, root := strippedFixture(t)
	c := NewCache(Options{DebugRoot: root, NoDWARF: true})
	im, err := c.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range im.ELF().Symbols() {
		loc := im.Locate(s.Addr)
		if len(loc.Frames) != 1 || loc.Frames[0].Line != 0 || loc.Frames[0].Func != loc.Symbol.Name {
			t.Fatalf("%#x: %+v", s.Addr, loc)
		}
	}
}

func TestKernelLocation(t *testing.T) {
	tab, err := kallsyms.Parse(strings.NewReader("ffffffff81000000 T _stext\nffffffffc0a00000 t ext4_open\t[ext4]\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		addr uint64
		fn   string
	}{
		{0xffffffff81000010, "_stext"},
		{0xffffffffc0a00010, "ext4_open [ext4]"},
		{0x1000, ""},
	}
	for _, tt := range tests {
		loc := KernelLocation(tab, tt.addr)
		got := ""
		if len(loc.Frames) == 1 {
			got = loc.Frames[0].Func
		}
		if got != tt.fn {
			t.Errorf("KernelLocation(%#x) = %q, want %q", tt.addr, got, tt.fn)
		}
	}
}

func TestConcurrentOpen(t *testing.T) {
	testutil.RequireLibc(t)
	c := NewCache(Options{NoDWARF: true})
	var wg sync.WaitGroup
	ims := make([]*Image, 8)
	for i := range ims {
		wg.Go(func() {
			im, err := c.Open(libcPath)
			if err != nil {
				t.Error(err)
			}
			ims[i] = im
			im.Locate(im.ELF().Symbols()[i].Addr)
		})
	}
	wg.Wait()
	for _, im := range ims[1:] {
		if im != ims[0] {
			t.Fatal("image loaded more than once")
		}
	}
}

// benchLibc returns 10,000 distinct addresses spread over libc's text.
func benchLibc(b *testing.B, opts Options) (*Image, []uint64) {
	if _, err := os.Stat(libcPath); err != nil {
		b.Skip(err)
	}
	im, err := NewCache(opts).Open(libcPath)
	if err != nil {
		b.Fatal(err)
	}
	syms := im.ELF().Symbols()
	lo, hi := syms[0].Addr, syms[len(syms)-1].End()
	addrs := make([]uint64, 10000)
	for i := range addrs {
		addrs[i] = lo + uint64(i)*((hi-lo)/uint64(len(addrs)))
	}
	return im, addrs
}

func BenchmarkLibcSymbol10k(b *testing.B) {
	im, addrs := benchLibc(b, Options{NoDWARF: true})
	b.ReportAllocs()
	for b.Loop() {
		for _, a := range addrs {
			im.Symbol(a)
		}
	}
}

func BenchmarkLibcLocate10k(b *testing.B) {
	im, addrs := benchLibc(b, Options{})
	for _, a := range addrs { // decode the DWARF units once
		im.Locate(a)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, a := range addrs {
			im.Locate(a)
		}
	}
}

// TestTableCachePersists: a second cache over the same image answers from the table cache
// written by the first, decoding nothing.
func TestTableCachePersists(t *testing.T) {
	dir := t.TempDir()
	src, err := filepath.Abs("testdata/inline.cc")
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "inline")
	if out, err := exec.Command(testutil.RequireTool(t, "g++"), "-O2", "-g", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	cacheDir := filepath.Join(dir, "cache")
	first := NewCache(Options{TableCache: cacheDir})
	im, err := first.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	var pcs []uint64
	for _, s := range im.ELF().Symbols() {
		pcs = append(pcs, s.Addr+s.Size/2)
	}
	want := make([]string, len(pcs))
	for i, pc := range pcs {
		want[i] = fmt.Sprint(im.Frames(pc))
	}
	if err := first.Persist(); err != nil {
		t.Fatal(err)
	}
	second := NewCache(Options{TableCache: cacheDir})
	im2, err := second.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	for i, pc := range pcs {
		if got := fmt.Sprint(im2.Frames(pc)); got != want[i] {
			t.Fatalf("%#x: from the table cache %s, decoded %s", pc, got, want[i])
		}
	}
	if dw, err := im2.DWARF(); err != nil || dw.Decoded() != 0 {
		t.Errorf("second run decoded %d units (err %v), want 0", dw.Decoded(), err)
	}
}

// TestTableCacheCompletedAfterAMiss: a run that misses the table cache pays for loading
// the image's DWARF once, and saves every unit, so the next run meets none missing.
func TestTableCacheCompletedAfterAMiss(t *testing.T) {
	dir := t.TempDir()
	var args []string
	for _, name := range []string{"alpha", "beta", "gamma"} {
		code := fmt.Sprintf("int %s(int x) { return x * %d + 1; }\n", name, len(name))
		if name == "alpha" {
			code += "int beta(int); int gamma(int);\nint main(int c, char **v) { (void)v; return alpha(c) + beta(c) + gamma(c); }\n"
		}
		src := filepath.Join(dir, name+".c")
		if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, src)
	}
	prog := filepath.Join(dir, "prog")
	if out, err := exec.Command(testutil.RequireTool(t, "gcc"), append([]string{"-O0", "-g", "-o", prog}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	cacheDir := filepath.Join(dir, "cache")
	// run looks up the function name in a new cache, as a new process does, and saves it.
	run := func(name string) *Image {
		t.Helper()
		c := NewCache(Options{TableCache: cacheDir})
		im, err := c.Open(prog)
		if err != nil {
			t.Fatal(err)
		}
		var pc uint64
		for _, s := range im.ELF().Symbols() {
			if s.Name == name {
				pc = s.Addr
			}
		}
		fr := im.Frames(pc)
		if len(fr) == 0 || fr[len(fr)-1].Func != name {
			t.Fatalf("%s at %#x: frames %v", name, pc, fr)
		}
		if err := c.Persist(); err != nil {
			t.Fatal(err)
		}
		return im
	}
	run("alpha")
	if dw, _ := run("beta").DWARF(); dw.Decoded() == 0 || !dw.MissedCache() {
		t.Fatalf("beta was not missing from the cache: decoded %d", dw.Decoded())
	}
	for _, name := range []string{"gamma", "main"} {
		if dw, _ := run(name).DWARF(); dw.Decoded() != 0 || dw.MissedCache() {
			t.Errorf("%s: the run after a miss decoded %d units again", name, dw.Decoded())
		}
	}
}

// TestKernelFromTheTableCache: the kernel's symbols are saved in the table cache by the
// first run and read from there by the next; a lookup that misses reads /proc/kallsyms
// again, once.
func TestKernelFromTheTableCache(t *testing.T) {
	if _, err := kallsyms.Load(kallsyms.DefaultPath); err != nil {
		testutil.Require(t, testutil.EnvRoot, "read the kernel's symbols: %v", err)
	}
	dir := t.TempDir()
	first := NewCache(Options{TableCache: dir})
	k1, err := first.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	if k1.FromCache() {
		t.Fatal("the first run read a copy that did not exist")
	}
	if _, again := first.KernelRefresh(); again {
		t.Error("a table read from /proc/kallsyms was read again")
	}
	second := NewCache(Options{TableCache: dir})
	k2, err := second.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	if !k2.FromCache() || k2.Len() != k1.Len() {
		t.Fatalf("second run: from the copy %v, %d symbols, want %d", k2.FromCache(), k2.Len(), k1.Len())
	}
	if k3, again := second.KernelRefresh(); !again || k3.FromCache() {
		t.Fatal("a miss did not read /proc/kallsyms again")
	}
	if _, again := second.KernelRefresh(); again {
		t.Error("a second miss read /proc/kallsyms again")
	}
}
