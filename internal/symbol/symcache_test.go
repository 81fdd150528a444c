package symbol

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/symbol/debugfile"
	"github.com/stax-profiler/stax/internal/symbol/debuginfod"
	"github.com/stax-profiler/stax/internal/symbol/elfsym"
	"github.com/stax-profiler/stax/internal/testutil"
)

// snapshot is everything an image's users see, for comparing a loaded image with one
// read from the table cache.
type snapshot struct {
	desc    string
	lookups []string
	frames  []string
}

func snap(t testing.TB, im *Image) snapshot {
	t.Helper()
	el := im.ELF()
	s := snapshot{desc: fmt.Sprintf("path %s build-id %x debug %q err %v dw %q machine %v type %v loads %+v link %q %#x dwarf %v go %v symbols %d",
		im.Path, im.BuildID, im.DebugPath, im.DebugErr, im.dwPath, el.Machine, el.Type, el.Loads,
		el.DebugLink, el.DebugLinkCRC, el.HasDWARF, el.IsGo, len(el.Symbols()))}
	for _, sym := range el.Symbols() {
		s.lookups = append(s.lookups, fmt.Sprintf("%+v", sym))
		for _, a := range []uint64{sym.Addr, sym.Addr + sym.Size/2, sym.End() - 1, sym.End()} {
			got, ok := el.Lookup(a)
			named, nok := im.Symbol(a)
			s.lookups = append(s.lookups, fmt.Sprintf("%#x %v %+v %v %+v", a, ok, got, nok, named))
		}
		s.frames = append(s.frames, fmt.Sprint(im.Frames(sym.Addr+sym.Size/2)))
	}
	return s
}

func sameSnapshot(t testing.TB, got, want snapshot) {
	t.Helper()
	if got.desc != want.desc {
		t.Fatalf("from the cache:\n%s\nparsed:\n%s", got.desc, want.desc)
	}
	if !slices.Equal(got.lookups, want.lookups) {
		for i := range min(len(got.lookups), len(want.lookups)) {
			if got.lookups[i] != want.lookups[i] {
				t.Fatalf("from the cache %s, parsed %s", got.lookups[i], want.lookups[i])
			}
		}
		t.Fatalf("%d lookups from the cache, %d parsed", len(got.lookups), len(want.lookups))
	}
	if !slices.Equal(got.frames, want.frames) {
		t.Fatalf("frames from the cache %v, parsed %v", got.frames, want.frames)
	}
}

// open loads path in a new Cache with opts, as a new process would, and says whether its
// symbols came from the table cache.
func open(t testing.TB, path string, opts Options) (*Image, bool) {
	t.Helper()
	im, err := NewCache(opts).Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return im, im.ELF().FromCache()
}

func symFile(t testing.TB, dir, img string) string {
	t.Helper()
	id, err := debugfile.ReadBuildID(img)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, fmt.Sprintf("%x.sym", id))
}

// TestSymCacheSecondLoad: the second load of an image, by its path or another, reads its
// table from the cache and gives its users the same answers, for a stripped image with a
// debug file, one without, and one with its own DWARF.
func TestSymCacheSecondLoad(t *testing.T) {
	img, full, root := strippedFixture(t)
	for _, tt := range []struct {
		name, path, root string
		debug            bool
	}{
		{"debug file", img, root, true},
		{"no debug file", img, t.TempDir(), false},
		{"own DWARF", full, root, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{DebugRoot: tt.root, TableCache: t.TempDir()}
			parsed, cached := open(t, tt.path, opts)
			if cached {
				t.Fatal("the first load came from the cache")
			}
			if (parsed.DebugPath != "") != tt.debug {
				t.Fatalf("debug file %q (%v)", parsed.DebugPath, parsed.DebugErr)
			}
			want := snap(t, parsed)
			if _, err := os.Stat(symFile(t, opts.TableCache, tt.path)); err != nil {
				t.Fatalf("no table saved: %v", err)
			}
			again, cached := open(t, tt.path, opts)
			if !cached {
				t.Fatal("the second load did not come from the cache")
			}
			sameSnapshot(t, snap(t, again), want)

			// The recorder reaches a process's files by paths that change from run to run.
			other := "/proc/self/root" + tt.path
			parsed, _ = open(t, other, Options{DebugRoot: tt.root})
			again, cached = open(t, other, opts)
			if !cached {
				t.Fatal("the same file by another path did not come from the cache")
			}
			sameSnapshot(t, snap(t, again), snap(t, parsed))
		})
	}
}

// TestSymCacheDebugFileChanges: a debug file that appears, changes or goes after the table
// was saved makes the next load parse the image again, and save what it made.
func TestSymCacheDebugFileChanges(t *testing.T) {
	img, _, root := strippedFixture(t)
	id, err := debugfile.ReadBuildID(img)
	if err != nil {
		t.Fatal(err)
	}
	dbg := debugfile.Finder{Root: root}.BuildIDPath(id)
	data, err := os.ReadFile(dbg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dbg); err != nil {
		t.Fatal(err)
	}
	opts := Options{DebugRoot: root, TableCache: t.TempDir()}
	step := func(name string, wantCached, wantDebug bool) {
		t.Helper()
		im, cached := open(t, img, opts)
		if cached != wantCached || (im.DebugPath != "") != wantDebug {
			t.Fatalf("%s: from the cache %v, debug file %q (%v); want %v, %v", name, cached, im.DebugPath, im.DebugErr, wantCached, wantDebug)
		}
		want, _ := open(t, img, Options{DebugRoot: root})
		sameSnapshot(t, snap(t, im), snap(t, want))
	}
	step("without a debug file", false, false)
	step("again", true, false)
	if err := os.MkdirAll(filepath.Dir(dbg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dbg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	step("debug file installed", false, true)
	step("again", true, true)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(dbg, later, later); err != nil {
		t.Fatal(err)
	}
	step("debug file touched", false, true)
	step("again", true, true)
	if err := os.Remove(dbg); err != nil {
		t.Fatal(err)
	}
	step("debug file removed", false, false)
	step("again", true, false)
	opts.NoDebugFiles = true
	if err := os.WriteFile(dbg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if im, cached := open(t, img, opts); !cached || im.DebugPath != "" || im.DebugErr != nil {
		t.Fatalf("debug files off: from the cache %v, debug file %q (%v)", cached, im.DebugPath, im.DebugErr)
	}
}

// TestSymCacheImageReplaced: a table saved for a file is not used for another file of the
// same build-id (the image before and after strip), nor for an image of another build-id.
func TestSymCacheImageReplaced(t *testing.T) {
	img, full, _ := strippedFixture(t)
	dir := t.TempDir()
	opts := Options{DebugRoot: t.TempDir(), TableCache: t.TempDir()}
	path := filepath.Join(dir, "prog")
	copyFile(t, full, path)
	open(t, path, opts)
	copyFile(t, img, path)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	im, cached := open(t, path, opts)
	if cached || im.ELF().HasDWARF {
		t.Fatalf("the stripped file read the unstripped one's table: from the cache %v, DWARF %v", cached, im.ELF().HasDWARF)
	}

	other := filepath.Join(dir, "other")
	run(t, "gcc", "-O2", "-Wl,--build-id", "-o", other, "-x", "c", "elfsym/testdata/prog.c")
	want := snap(t, func() *Image { im, _ := open(t, other, Options{}); return im }())
	if err := os.Rename(symFile(t, opts.TableCache, path), symFile(t, opts.TableCache, other)); err != nil {
		t.Fatal(err)
	}
	im, cached = open(t, other, opts)
	if cached {
		t.Fatal("an image read the table of another build-id")
	}
	sameSnapshot(t, snap(t, im), want)
}

// TestSymCacheDamaged: a damaged table is not used, and replaced.
func TestSymCacheDamaged(t *testing.T) {
	img, _, root := strippedFixture(t)
	opts := Options{DebugRoot: root, TableCache: t.TempDir()}
	parsed, _ := open(t, img, opts)
	want := snap(t, parsed)
	file := symFile(t, opts.TableCache, img)
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"truncated", good[:len(good)-1]},
		{"longer", append(bytes.Clone(good), 0)},
		{"magic", flip(0)},
		{"meta", flip(9)},
		{"symbol order", flip(len(good) - 2*33 + 7)},
		{"name offset", flip(len(good) - 33 + 27)},
	} {
		if err := os.WriteFile(file, tt.data, 0o600); err != nil {
			t.Fatal(err)
		}
		im, cached := open(t, img, opts)
		if cached {
			t.Fatalf("%s: a damaged table was used", tt.name)
		}
		sameSnapshot(t, snap(t, im), want)
		if b, err := os.ReadFile(file); err != nil || !bytes.Equal(b, good) {
			t.Fatalf("%s: the damaged table was not replaced (%v)", tt.name, err)
		}
		if _, cached := open(t, img, opts); !cached {
			t.Fatalf("%s: the replaced table was not used", tt.name)
		}
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("table file mode %v (%v), want 0600", fi.Mode(), err)
	}
}

// TestSymCacheFetched: a table made with a fetched debug file is used while that file is
// still there, without asking the fetcher again.
func TestSymCacheFetched(t *testing.T) {
	img, full, _ := strippedFixture(t)
	id, err := debugfile.ReadBuildID(img)
	if err != nil {
		t.Fatal(err)
	}
	dbg := filepath.Join(t.TempDir(), "inline.debug")
	run(t, "objcopy", "--only-keep-debug", full, dbg)
	var requests atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != "/buildid/"+hex.EncodeToString(id)+"/debuginfo" {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, dbg)
	}))
	defer ts.Close()
	fetcher := debuginfod.New([]string{ts.URL}, t.TempDir())
	opts := Options{DebugRoot: t.TempDir(), Fetcher: fetcher, TableCache: t.TempDir()}
	parsed, cached := open(t, img, opts)
	if cached || parsed.DebugPath != fetcher.CachePath(id) {
		t.Fatalf("first load: from the cache %v, debug file %q (%v)", cached, parsed.DebugPath, parsed.DebugErr)
	}
	want := snap(t, parsed)
	im, cached := open(t, img, opts)
	if !cached {
		t.Fatal("the second load did not come from the cache")
	}
	sameSnapshot(t, snap(t, im), want)
	if n := requests.Load(); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	if err := os.Remove(fetcher.CachePath(id)); err != nil {
		t.Fatal(err)
	}
	im, cached = open(t, img, opts)
	if cached || im.DebugPath != fetcher.CachePath(id) || requests.Load() != 2 {
		t.Fatalf("fetched file gone: from the cache %v, debug file %q (%v), %d requests", cached, im.DebugPath, im.DebugErr, requests.Load())
	}
}

// FuzzSymCache decodes foreign bytes as a saved table: an error or a table, never a panic,
// and a table answers lookups.
func FuzzSymCache(f *testing.F) {
	f.Add([]byte("STAXELF1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decodeSymCache(data, "fuzz")
		if err != nil {
			return
		}
		for _, s := range st.el.Symbols() {
			st.el.Lookup(s.Addr)
			st.el.Lookup(s.End())
		}
		st.el.Lookup(0)
		st.el.Lookup(^uint64(0))
	})
}

// TestWriteSymCacheSeeds regenerates testdata/fuzz/FuzzSymCache when STAX_WRITE_SEEDS is
// set: the tables of a small C program, with and without a debug file.
func TestWriteSymCacheSeeds(t *testing.T) {
	if os.Getenv("STAX_WRITE_SEEDS") == "" {
		t.Skip("set STAX_WRITE_SEEDS=1 to regenerate the seed corpus")
	}
	dir := t.TempDir()
	full := filepath.Join(dir, "prog.full")
	img := filepath.Join(dir, "prog")
	run(t, "gcc", "-O2", "-g", "-Wl,--build-id", "-o", full, "-x", "c", "elfsym/testdata/prog.c")
	run(t, "objcopy", "--strip-all", full, img)
	id, err := debugfile.ReadBuildID(img)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dbg := debugfile.Finder{Root: root}.BuildIDPath(id)
	copyFile(t, full, dbg)
	seeds := filepath.Join("testdata", "fuzz", "FuzzSymCache")
	if err := os.MkdirAll(seeds, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]Options{"stripped": {}, "debug-file": {DebugRoot: root}} {
		o.TableCache = t.TempDir()
		open(t, img, o)
		data, err := os.ReadFile(symFile(t, o.TableCache, img))
		if err != nil {
			t.Fatal(err)
		}
		// The same table, with the temporary directories' paths replaced.
		st, err := decodeSymCache(data, img)
		if err != nil {
			t.Fatal(err)
		}
		st.meta.image.path = "/usr/bin/prog"
		if st.meta.has(metaDebug) {
			st.meta.debug.path = "/usr/lib/debug/.build-id/prog.debug"
		}
		var buf bytes.Buffer
		if err := elfsym.WriteCache(&buf, st.el, st.meta.encode()); err != nil {
			t.Fatal(err)
		}
		data = buf.Bytes()
		if err := os.WriteFile(filepath.Join(seeds, name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func benchLoad(b *testing.B, fromCache bool) {
	path := testutil.RequireLibc(b)
	id, err := debugfile.ReadBuildID(path)
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{}
	if fromCache {
		opts.TableCache = b.TempDir()
		if _, err := NewCache(opts).load(path, id); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		im, err := NewCache(opts).load(path, id)
		if err != nil {
			b.Fatal(err)
		}
		if im.ELF().FromCache() != fromCache {
			b.Fatalf("from the cache %v", !fromCache)
		}
	}
	b.StopTimer()
	if fromCache {
		// Each load maps the file for good, as a process does once.
		b.Logf("%d mappings", b.N)
	}
}

// BenchmarkLoadLibc compares loading libc's symbols (with its debug file, when installed)
// from the ELF files with reading them from the table cache.
func BenchmarkLoadLibc(b *testing.B) {
	b.Run("elf", func(b *testing.B) { benchLoad(b, false) })
	b.Run("cache", func(b *testing.B) { benchLoad(b, true) })
}
