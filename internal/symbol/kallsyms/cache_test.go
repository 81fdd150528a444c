package kallsyms

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sameTables(t *testing.T, got, want *Table) {
	t.Helper()
	if got.Len() != want.Len() {
		t.Fatalf("%d symbols, want %d", got.Len(), want.Len())
	}
	g, w := got.Symbols(), want.Symbols()
	for i := range w {
		if g[i] != w[i] {
			t.Fatalf("symbol %d: %+v, want %+v", i, g[i], w[i])
		}
	}
}

// TestCacheRoundTrip: a table read back from its saved copy holds the same symbols, with
// the same ends, as the one parsed, across several chunks of symbols and of names.
func TestCacheRoundTrip(t *testing.T) {
	for _, text := range []string{sample, synthetic(3*entChunk+17, true)} {
		want, err := Parse(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteCache(&buf, want, []byte("key")); err != nil {
			t.Fatal(err)
		}
		got, err := ReadCache(bytes.NewReader(buf.Bytes()), []byte("key"))
		if err != nil {
			t.Fatal(err)
		}
		sameTables(t, got, want)
		if _, err := ReadCache(bytes.NewReader(buf.Bytes()), []byte("other")); err == nil {
			t.Error("a copy saved under another key was read")
		}
	}
}

// TestLoadCached: the first load reads the text and saves it; the next one reads the saved
// copy; a new boot or another set of modules reads the text again; a damaged copy is
// replaced, and a reader denied the addresses is not given the saved ones.
func TestLoadCached(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "kallsyms")
	if err := os.WriteFile(text, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	boot := filepath.Join(dir, "boot_id")
	mods := filepath.Join(dir, "modules")
	os.WriteFile(boot, []byte("b1\n"), 0o644)
	os.WriteFile(mods, []byte("ext4 1000 2 - Live 0xffffffffc0a00000\n"), 0o644)
	oldBoot, oldMods := bootIDPath, modulesPath
	bootIDPath, modulesPath = boot, mods
	t.Cleanup(func() { bootIDPath, modulesPath = oldBoot, oldMods })
	cache := filepath.Join(dir, "cache")

	want, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	load := func(wantCached bool) {
		t.Helper()
		got, err := LoadCached(text, cache)
		if err != nil {
			t.Fatal(err)
		}
		sameTables(t, got, want)
		if got.FromCache() != wantCached {
			t.Fatalf("from the saved copy: %v, want %v", got.FromCache(), wantCached)
		}
	}
	load(false)
	if fi, err := os.Stat(filepath.Join(cache, CacheFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved copy: %v, %v", fi, err)
	}
	load(true)
	// A module's use count changes as it is used: the same kernel.
	os.WriteFile(mods, []byte("ext4 1000 7 a,b Live 0xffffffffc0a00000\n"), 0o644)
	load(true)
	// Another address for the module: the table differs.
	os.WriteFile(mods, []byte("ext4 1000 7 a,b Live 0xffffffffc0b00000\n"), 0o644)
	load(false)
	load(true)
	os.WriteFile(boot, []byte("b2\n"), 0o644)
	load(false)
	load(true)
	if err := os.WriteFile(filepath.Join(cache, CacheFile), []byte(cacheMagic+"garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	load(false)
	load(true)

	var zeroed strings.Builder
	for line := range strings.Lines(sample) {
		zeroed.WriteString("0000000000000000" + line[16:])
	}
	os.WriteFile(text, []byte(zeroed.String()), 0o644)
	if _, err := LoadCached(text, cache); !errors.Is(err, ErrRestricted) {
		t.Fatalf("a reader denied the addresses: %v, want ErrRestricted", err)
	}
}

func FuzzReadCache(f *testing.F) {
	for _, text := range []string{sample, synthetic(40, false), "ffffffff81000000 w only\n"} {
		tab, err := Parse(strings.NewReader(text))
		if err != nil {
			f.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteCache(&buf, tab, []byte("k")); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		tab, err := ReadCache(bytes.NewReader(in), []byte("k"))
		if err != nil {
			return
		}
		for _, s := range tab.Symbols() {
			if got, ok := tab.Lookup(s.Addr); !ok || got.Addr != s.Addr {
				t.Fatalf("Lookup(%#x) = %v, %v", s.Addr, got, ok)
			}
		}
	})
}

// BenchmarkLoadProc loads this machine's kernel symbols as a run does: from the text, and
// from the saved copy.
func BenchmarkLoadProc(b *testing.B) {
	if _, ok := cacheKey(DefaultPath); !ok {
		b.Skip("the kernel's symbol addresses are not readable here")
	}
	dir := b.TempDir()
	b.Run("text", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Load(DefaultPath); err != nil {
				b.Fatal(err)
			}
		}
	})
	if _, err := LoadCached(DefaultPath, dir); err != nil {
		b.Fatal(err)
	}
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tab, err := LoadCached(DefaultPath, dir)
			if err != nil || !tab.FromCache() {
				b.Fatal(err, " or not from the saved copy")
			}
		}
	})
}

// TestReloadSavesWhatWasLoadedSince: a symbol loaded after the copy was saved (a BPF
// program: the kernel's key does not change) is missing from the copy until Reload reads
// the text again and saves it.
func TestReloadSavesWhatWasLoadedSince(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "kallsyms")
	os.WriteFile(text, []byte(sample), 0o644)
	boot := filepath.Join(dir, "boot_id")
	os.WriteFile(boot, []byte("b1\n"), 0o644)
	oldBoot, oldMods := bootIDPath, modulesPath
	bootIDPath, modulesPath = boot, filepath.Join(dir, "none")
	t.Cleanup(func() { bootIDPath, modulesPath = oldBoot, oldMods })
	cache := filepath.Join(dir, "cache")
	if _, err := LoadCached(text, cache); err != nil {
		t.Fatal(err)
	}
	const bpf = 0xffffffffc0c00000
	os.WriteFile(text, []byte(sample+"ffffffffc0c00000 t bpf_prog_6deef7357e7b4530_sd_fw_ingress\t[bpf]\n"), 0o644)
	tab, err := LoadCached(text, cache)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tab.Lookup(bpf); ok || !tab.FromCache() {
		t.Fatalf("the saved copy (from it: %v) names a symbol loaded after it was saved", tab.FromCache())
	}
	if tab, err = Reload(text, cache); err != nil || tab.FromCache() {
		t.Fatalf("Reload: %v", err)
	}
	for _, tab := range []*Table{tab, must(LoadCached(text, cache))} {
		if s, ok := tab.Lookup(bpf); !ok || s.Module != "bpf" {
			t.Errorf("after Reload: %v, %v", s, ok)
		}
	}
}

func must(t *Table, err error) *Table {
	if err != nil {
		panic(err)
	}
	return t
}
