package dwarfline

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
	// Imported from a file, as stax does: mapped.
	cache := filepath.Join(t.TempDir(), "c.dwl")
	if err := os.WriteFile(cache, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(cache)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opened := 0
	imp, err := Import(f, func() (*dwarf.Data, error) {
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

// TestCacheDamagedUnit: a unit damaged inside (its length whole) is found when it is first
// decoded, and decoded from the DWARF instead; it is not exported again as it was.
func TestCacheDamagedUnit(t *testing.T) {
	p := build(t, "g++", "-O2", "-g", "testdata/inline.cc")
	tab, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := textRange(t, p)
	var addrs []uint64
	want := map[uint64]string{}
	for a := lo; a < hi; a += 7 {
		fr, _ := tab.Frames(a)
		addrs = append(addrs, a)
		want[a] = fmt.Sprint(fr)
	}
	var buf bytes.Buffer
	if err := tab.Export(&buf); err != nil {
		t.Fatal(err)
	}
	imp, err := Import(bytes.NewReader(buf.Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Damage every unit: its fields, not its length, all 0xff (a varint that never ends).
	damaged := bytes.Clone(buf.Bytes())
	n := 0
	for _, ue := range imp.units {
		i := bytes.Index(damaged, ue.raw)
		if i < 0 {
			t.Fatal("unit not found in its export")
		}
		_, a := binary.Uvarint(ue.raw)
		_, b := binary.Uvarint(ue.raw[a:])
		for k := i + a + b; k < i+len(ue.raw); k++ {
			damaged[k] = 0xff
		}
		n++
	}
	opened := 0
	bad, err := Import(bytes.NewReader(damaged), func() (*dwarf.Data, error) {
		opened++
		full, err := Open(p)
		if err != nil {
			return nil, err
		}
		return full.Data(), nil
	})
	if err != nil {
		t.Fatalf("a cache with damaged units is read lazily: %v", err)
	}
	broken := 0
	for _, ue := range bad.units {
		if _, err := importUnit(ue.raw); err != nil {
			broken++
		}
	}
	if broken == 0 {
		t.Fatalf("damaging %d units broke none", n)
	}
	for _, a := range addrs {
		if fr, _ := bad.Frames(a); fmt.Sprint(fr) != want[a] {
			t.Fatalf("%#x: %v from a damaged cache, want %s", a, fr, want[a])
		}
	}
	if opened != 1 {
		t.Errorf("the DWARF was opened %d times for the damaged units, want once", opened)
	}
	var again bytes.Buffer
	if err := bad.Export(&again); err != nil {
		t.Fatal(err)
	}
	re, err := Import(bytes.NewReader(again.Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ue := range re.units {
		if _, err := importUnit(ue.raw); err != nil {
			t.Fatalf("a damaged unit was exported again: %v", err)
		}
	}
}

// TestCacheFormat1: a cache written before units had lengths is read, answers as the
// current one does, and says it is worth exporting again.
func TestCacheFormat1(t *testing.T) {
	v1, err := os.ReadFile("testdata/cache/inline-v1.dwl")
	if err != nil {
		t.Fatal(err)
	}
	old, err := Import(bytes.NewReader(v1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if old.Decoded() == 0 {
		t.Error("a format 1 cache does not ask to be written again")
	}
	var buf bytes.Buffer
	if err := old.Export(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte(cacheMagic)) {
		t.Fatalf("exported as %q", buf.Bytes()[:8])
	}
	cur, err := Import(bytes.NewReader(buf.Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Decoded() != 0 || len(cur.units) != len(old.units) || len(cur.units) == 0 {
		t.Fatalf("%d units from format 1, %d in the current format (decoded %d)", len(old.units), len(cur.units), cur.Decoded())
	}
	found := 0
	for _, s := range old.spans {
		for _, pc := range []uint64{s.lo, (s.lo + s.hi) / 2, s.hi - 1} {
			a, _ := old.Frames(pc)
			b, _ := cur.Frames(pc)
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("%#x: %v from format 1, %v now", pc, a, b)
			}
			found += len(a)
		}
	}
	if found == 0 {
		t.Fatal("no frames found in the format 1 cache")
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
		for _, ue := range tab.units { // a unit is checked as it is decoded
			importUnit(ue.raw)
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
	os.MkdirAll("testdata/cache", 0o755) // inline-v1.dwl is the same, written by format 1
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

// manyUnits is a table of n decoded units of a few functions and rows each, as a large
// program's cache holds after a few runs.
func manyUnits(n int) *Table {
	t := &Table{units: map[dwarf.Offset]*unitEntry{}}
	for i := range n {
		lo := uint64(0x1000 + i*0x100)
		off := dwarf.Offset(i * 0x40)
		t.spans = append(t.spans, span{lo, lo + 0x100, off})
		u := &unit{name: fmt.Sprintf("src/file%d.c", i), compDir: "/build", files: []string{"src/a.h", "src/b.c"}, callFiles: []string{"", "src/a.h"}}
		for k := range 20 {
			u.rows = append(u.rows, row{addr: lo + uint64(k*8), file: int32(k % 2), line: int32(10 + k)})
		}
		u.funcs = []fn{
			{name: fmt.Sprintf("function_%d", i), parent: -1, end: 2, callFile: -1, ranges: [][2]uint64{{lo, lo + 0x100}}},
			{name: "inlined_helper", parent: 0, end: 2, callFile: 1, callLine: 7, inlined: true, ranges: [][2]uint64{{lo + 0x10, lo + 0x20}}},
		}
		u.tops = []topRange{{lo, lo + 0x100, 0}}
		ue := &unitEntry{u: u}
		ue.once.Do(func() {})
		t.units[off] = ue
	}
	t.maxHi = make([]uint64, len(t.spans))
	for i, s := range t.spans {
		t.maxHi[i] = s.hi
	}
	t.indexOnce.Do(func() {})
	return t
}

// TestImportDecodesUnitsOnDemand: importing a cache checks it but decodes a unit only when
// an address in it is looked up, and exporting again writes the same bytes.
func TestImportDecodesUnitsOnDemand(t *testing.T) {
	orig := manyUnits(3000)
	var buf bytes.Buffer
	if err := orig.Export(&buf); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	imp, err := Import(bytes.NewReader(buf.Bytes()), nil)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 3*uint64(buf.Len()) {
		t.Errorf("importing a %d-byte cache of 3,000 units allocated %d bytes, want at most 3 times the cache", buf.Len(), got)
	}
	for _, pc := range []uint64{0x1000 + 5*0x100 + 0x14, 0x1000 + 2999*0x100 + 8} {
		got, err := imp.Frames(pc)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := orig.Frames(pc)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%#x: imported %v, original %v", pc, got, want)
		}
	}
	var again bytes.Buffer
	if err := imp.Export(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Errorf("exported again: %d bytes differ from the %d imported", again.Len(), buf.Len())
	}
}

// BenchmarkImport imports a cache of 3,000 units and looks up one address.
func BenchmarkImport(b *testing.B) {
	var buf bytes.Buffer
	if err := manyUnits(3000).Export(&buf); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		imp, err := Import(bytes.NewReader(buf.Bytes()), nil)
		if err != nil {
			b.Fatal(err)
		}
		imp.Frames(0x1000 + 5*0x100 + 0x14)
	}
}

// BenchmarkImportFile imports a cache of 3,000 units from its file, as stax does, and
// looks up one address.
func BenchmarkImportFile(b *testing.B) {
	var buf bytes.Buffer
	if err := manyUnits(3000).Export(&buf); err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(b.TempDir(), "c.dwl")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		imp, err := Import(f, nil)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		imp.Frames(0x1000 + 5*0x100 + 0x14)
	}
}

// TestDecodeAllAfterCacheMiss: once a run misses the cache and loads the DWARF, the table
// decodes every unit, so a table imported from its export answers for every unit without
// loading the DWARF again.
func TestDecodeAllAfterCacheMiss(t *testing.T) {
	dir := t.TempDir()
	var srcs []string
	for _, name := range []string{"alpha", "beta", "gamma"} {
		src := filepath.Join(dir, name+".c")
		code := fmt.Sprintf("int %s(int x) { return x * %d + 1; }\n", name, len(name))
		if name == "alpha" {
			code += "int beta(int); int gamma(int);\nint main(int c, char **v) { (void)v; return alpha(c) + beta(c) + gamma(c); }\n"
		}
		if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, src)
	}
	p := build(t, "gcc", append([]string{"-O0", "-g"}, srcs...)...)
	ef, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := ef.Symbols()
	ef.Close()
	if err != nil {
		t.Fatal(err)
	}
	addr := map[string]uint64{}
	for _, s := range syms {
		addr[s.Name] = s.Value
	}
	open := func(loads *int) func() (*dwarf.Data, error) {
		return func() (*dwarf.Data, error) {
			*loads++
			full, err := Open(p)
			if err != nil {
				return nil, err
			}
			return full.Data(), nil
		}
	}
	frameFunc := func(tab *Table, name string) string {
		t.Helper()
		fr, err := tab.Frames(addr[name])
		if err != nil || len(fr) == 0 {
			t.Fatalf("%s at %#x: %v, %v", name, addr[name], fr, err)
		}
		return fr[len(fr)-1].Func
	}

	first, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	frameFunc(first, "alpha")
	var cache bytes.Buffer
	if err := first.Export(&cache); err != nil {
		t.Fatal(err)
	}

	loads := 0
	second, err := Import(bytes.NewReader(cache.Bytes()), open(&loads))
	if err != nil {
		t.Fatal(err)
	}
	if frameFunc(second, "alpha"); loads != 0 || second.MissedCache() {
		t.Fatalf("a unit in the cache loaded the DWARF (%d loads)", loads)
	}
	if got := frameFunc(second, "beta"); got != "beta" || loads != 1 || !second.MissedCache() {
		t.Fatalf("beta: %q after %d loads, missed %v", got, loads, second.MissedCache())
	}
	if !second.DecodeAll() {
		t.Fatal("DecodeAll declined a three-unit table")
	}
	cache.Reset()
	if err := second.Export(&cache); err != nil {
		t.Fatal(err)
	}

	loads = 0
	third, err := Import(bytes.NewReader(cache.Bytes()), open(&loads))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alpha", "beta", "gamma", "main"} {
		if got := frameFunc(third, name); got != name {
			t.Errorf("%s: named %q", name, got)
		}
	}
	if loads != 0 || third.MissedCache() {
		t.Errorf("a table exported after DecodeAll loaded the DWARF %d times", loads)
	}
}
