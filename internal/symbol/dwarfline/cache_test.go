package dwarfline

import (
	"bytes"
	"debug/dwarf"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestCacheRoundTrip exports a table after looking up half of a program's addresses, imports
// it, and expects the same frames everywhere: from the cache for the units it holds, from
// the DWARF (opened lazily) for the others.
func TestCacheRoundTrip(t *testing.T) {
	p := build(t, "g++", "-O2", "-g", "testdata/inline.cc")
	orig, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := textRange(t, p)
	var addrs []uint64
	for a := lo; a < hi; a += 3 {
		addrs = append(addrs, a)
	}
	want := make([]string, len(addrs))
	for i, a := range addrs[:len(addrs)/2] {
		fr, _ := orig.Frames(a)
		want[i] = fmt.Sprint(fr)
	}
	var buf bytes.Buffer
	if err := orig.Export(&buf); err != nil {
		t.Fatal(err)
	}
	opened := 0
	imp, err := Import(bytes.NewReader(buf.Bytes()), func() (*dwarf.Data, error) {
		opened++
		full, err := Open(p)
		if err != nil {
			return nil, err
		}
		return full.Data(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range addrs[:len(addrs)/2] {
		if fr, _ := imp.Frames(a); fmt.Sprint(fr) != want[i] {
			t.Fatalf("%#x: cached %v, decoded %s", a, fr, want[i])
		}
	}
	if opened != 0 || imp.Decoded() != 0 {
		t.Errorf("cached lookups opened the DWARF %d times, decoded %d units", opened, imp.Decoded())
	}
	for _, a := range addrs[len(addrs)/2:] {
		got, _ := imp.Frames(a)
		exp, _ := orig.Frames(a)
		if fmt.Sprint(got) != fmt.Sprint(exp) {
			t.Fatalf("%#x: imported %v, original %v", a, got, exp)
		}
	}
	// Exporting the imported table again keeps everything.
	var again bytes.Buffer
	if err := imp.Export(&again); err != nil {
		t.Fatal(err)
	}
	if again.Len() < buf.Len() {
		t.Errorf("re-export shrank from %d to %d bytes", buf.Len(), again.Len())
	}
}

func TestCacheDamaged(t *testing.T) {
	p := build(t, "g++", "-O2", "-g", "testdata/inline.cc")
	tab, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	lo, _ := textRange(t, p)
	tab.Frames(lo + 16)
	var buf bytes.Buffer
	if err := tab.Export(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	for _, bad := range [][]byte{
		nil,
		[]byte("STAXDWL0"),
		good[:len(good)/2],
		append(append([]byte{}, good...), 0x01),
		append([]byte(cacheMagic), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
	} {
		if _, err := Import(bytes.NewReader(bad), nil); err == nil {
			t.Errorf("Import(%d bytes) accepted a damaged cache", len(bad))
		}
	}
}

func FuzzImport(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/cache/*.dwl")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(cacheMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := Import(bytes.NewReader(b), nil)
		if err != nil {
			return
		}
		for _, pc := range []uint64{0, 1, 0x1000, 0x401000, ^uint64(0)} {
			tab.Frames(pc)
		}
		var out bytes.Buffer
		tab.Export(&out)
	})
}

// TestWriteCacheSeed writes the fuzz seed: a small exported table (STAX_WRITE_SEEDS=1).
func TestWriteCacheSeed(t *testing.T) {
	if os.Getenv("STAX_WRITE_SEEDS") == "" {
		t.Skip("set STAX_WRITE_SEEDS=1 to rewrite testdata/cache")
	}
	p := build(t, "g++", "-O2", "-g", "-fdebug-prefix-map="+filepath.Dir(p0(t))+"=/src", "testdata/inline.cc")
	tab, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := textRange(t, p)
	for a := lo; a < hi; a += 64 {
		tab.Frames(a)
	}
	var buf bytes.Buffer
	if err := tab.Export(&buf); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll("testdata/cache", 0o755)
	if err := os.WriteFile("testdata/cache/inline.dwl", buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func p0(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "x")
}
