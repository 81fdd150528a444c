package jit

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

func tableFrom(t testing.TB, d *dumpBuilder) *Table {
	_, recs := mustRecords(t, d.bytes())
	tab := NewTable()
	tab.Apply(1, SourceJitdump, recs)
	return tab
}

func name(f *Func, ok bool) string {
	if !ok {
		return "-"
	}
	return f.Name
}

func TestTableLookupTimes(t *testing.T) {
	le := binary.LittleEndian
	d := newDump(le, 1, 0).
		load(100, 0x1000, "a", make([]byte, 0x100)).
		load(200, 0x2000, "b", make([]byte, 0x100)).
		load(300, 0x1080, "c", make([]byte, 0x100)). // overlaps a: ends it at 300
		move(400, 0x2000, 0x3000, 0x100).            // b moves
		load(500, 0x5000, "d", make([]byte, 0x10)).
		unload(600, 0x5000, 0x10)
	tab := tableFrom(t, d)
	tests := []struct {
		addr, ts uint64
		want     string
	}{
		{0x1000, 150, "a"},
		{0x10ff, 299, "a"},
		{0x1090, 300, "c"},
		{0x1090, 250, "a"},  // before c, a was there
		{0x1010, 350, "a"},  // a ended, nothing live: nearest before
		{0x1100, 50, "c"},   // only c covers it: loaded after
		{0x1000, 50, "a"},   // before any load: nearest after
		{0x2010, 350, "b"},  // b live
		{0x2010, 450, "b"},  // b moved away: nearest before
		{0x3010, 450, "b"},  // b at its new home
		{0x3010, 350, "b"},  // new home, before the move: nearest after
		{0x5000, 550, "d"},  // live
		{0x5000, 650, "-"},  // unloaded: no longer resolves
		{0x5000, 450, "d"},  // before load: nearest after
		{0x4000, 450, "-"},  // nothing there
		{0x0fff, 450, "-"},  // below everything
		{0x6000, 450, "-"},  // above everything
		{0x10ff0, 450, "-"}, // far above
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%#x@%d", tt.addr, tt.ts), func(t *testing.T) {
			if got := name(tab.Lookup(tt.addr, tt.ts)); got != tt.want {
				t.Errorf("Lookup = %s, want %s", got, tt.want)
			}
		})
	}
	gens := []struct{ ts, want uint64 }{{0, 0}, {299, 0}, {300, 1}, {399, 1}, {400, 2}, {600, 3}, {1 << 62, 3}}
	for _, g := range gens {
		if got := tab.Generation(g.ts); got != g.want {
			t.Errorf("Generation(%d) = %d, want %d", g.ts, got, g.want)
		}
	}
	st := tab.Stats()
	if st.Loads != 4 || st.Moves != 1 || st.Unloads != 1 || st.Overlaps != 1 || st.Funcs != 5 || st.Live != 2 {
		t.Errorf("stats = %+v", st)
	}
	// IDs are unique and moved code is shared.
	fs := tab.Funcs()
	ids := map[uint64]bool{}
	for _, f := range fs {
		if ids[f.ID] {
			t.Errorf("duplicate id %d", f.ID)
		}
		ids[f.ID] = true
	}
	b1, _ := tab.Lookup(0x2010, 350)
	b2, _ := tab.Lookup(0x3010, 450)
	if b1 == b2 || &b1.Code[0] != &b2.Code[0] || b1.EndTime != 400 || b2.LoadTime != 400 {
		t.Errorf("moved function: %+v / %+v", b1, b2)
	}
}

func TestTablePerfMap(t *testing.T) {
	tab := tableFrom(t, newDump(binary.LittleEndian, 1, 0).
		load(100, 0x1000, "jit", make([]byte, 0x100)).
		unload(200, 0x1000, 0x100))
	tab.AddPerfMap(2, []PerfMapEntry{
		{0x1000, 0x200, "map-old"},
		{0x4000, 0x100, "x"},
		{0x4000, 0x100, "x"}, // written again: another object, which replaces the first
		{0x4080, 0x100, "y"}, // overlaps x: replaces it
	}, 0)
	tests := []struct {
		addr, ts uint64
		want     string
	}{
		{0x1000, 150, "jit"},    // jitdump live wins
		{0x1000, 50, "map-old"}, // jitdump not live: the map entry
		{0x1000, 250, "map-old"},
		{0x1180, 150, "map-old"},
		{0x4000, 1, "-"},
		{0x4100, 1, "y"},
	}
	for _, tt := range tests {
		if got := name(tab.Lookup(tt.addr, tt.ts)); got != tt.want {
			t.Errorf("Lookup(%#x, %d) = %s, want %s", tt.addr, tt.ts, got, tt.want)
		}
	}
	if g := tab.Generation(0); g != 2 {
		t.Errorf("Generation(0) = %d, want 2 (two map entries replaced)", g)
	}
	tab.Reset(2)
	if got := name(tab.Lookup(0x4100, 1)); got != "-" {
		t.Errorf("after reset: %s", got)
	}
	if got := name(tab.Lookup(0x1000, 150)); got != "jit" {
		t.Errorf("after resetting the map, jitdump entry: %s", got)
	}
	if g := tab.Generation(0); g != 3 {
		t.Errorf("Generation(0) after reset = %d, want 3", g)
	}
	tab.Reset(1)
	if n := len(tab.Funcs()); n != 0 {
		t.Errorf("%d functions left after resetting both", n)
	}
	if _, ok := tab.Lookup(0x1000, 150); ok {
		t.Error("lookup after reset found something")
	}
}

func TestTableDebugInfo(t *testing.T) {
	code := make([]byte, 0x20)
	d := newDump(binary.LittleEndian, 1, 0).
		// exact addresses (JVMTI)
		debug(1, 0x1000, dbgEntry{0x1000, 10, "a.java"}, dbgEntry{0x1010, 12, "\xff"}).
		load(1, 0x1000, "exact", code).
		// +0x40 addresses (V8, LLVM)
		debug(2, 0x2000, dbgEntry{0x2040, 20, "b.js"}, dbgEntry{0x2050, 21, "\xff"}, dbgEntry{0x205f, 22, "c.js"}).
		load(2, 0x2000, "quirk", code).
		// debug info for code never loaded: stays pending
		debug(3, 0x9000, dbgEntry{0x9000, 1, "z"})
	tab := tableFrom(t, d)
	ex, _ := tab.Lookup(0x1000, 5)
	qu, _ := tab.Lookup(0x2000, 5)
	tests := []struct {
		f    *Func
		addr uint64
		file string
		line int
		ok   bool
	}{
		{ex, 0x1000, "a.java", 10, true},
		{ex, 0x100f, "a.java", 10, true},
		{ex, 0x1010, "a.java", 12, true},
		{ex, 0x101f, "a.java", 12, true},
		{ex, 0x1020, "", 0, false},
		{qu, 0x2000, "b.js", 20, true},
		{qu, 0x2012, "b.js", 21, true},
		{qu, 0x201f, "c.js", 22, true},
		{nil, 0x2000, "", 0, false},
	}
	for _, tt := range tests {
		file, line, ok := tab.LineAt(tt.f, tt.addr)
		if file != tt.file || line != tt.line || ok != tt.ok {
			t.Errorf("LineAt(%#x) = %s:%d %v, want %s:%d %v", tt.addr, file, line, ok, tt.file, tt.line, tt.ok)
		}
	}
	if st := tab.Stats(); st.QuirkDebug != 1 || st.DroppedDebug != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestTableUnwindAndMethod(t *testing.T) {
	d := newDump(binary.LittleEndian, 1, 0).
		unwind(1, []byte{9, 9}).
		load(1, 0x1000, "f", make([]byte, 0x10)).
		methodID(1, 0x1000, 0x10, 7).
		methodID(1, 0x7000, 0x10, 8) // orphan
	tab := tableFrom(t, d)
	f, _ := tab.Lookup(0x1000, 1)
	if !bytes.Equal(f.Unwind, []byte{9, 9}) || f.MethodID != 7 {
		t.Errorf("func = %+v", f)
	}
	if st := tab.Stats(); st.Orphans != 1 {
		t.Errorf("orphans = %d", st.Orphans)
	}
}

func TestInlineChain(t *testing.T) {
	// method 1 at [0x1000,0x1100): inline 2 at [0x1010,0x1080), inside it
	// inline 3 at [0x1020,0x1030). Records arrive child first. Inline 4
	// and 5 form a cycle under method 9 (which has no code).
	d := newDump(binary.LittleEndian, 1, 0).
		inline(1, 3, 2, 0x1020, 0x10, "inner", "c.js").
		load(1, 0x1000, "top", make([]byte, 0x100)).
		methodID(1, 0x1000, 0x100, 1).
		inline(1, 2, 1, 0x1010, 0x70, "middle", "b.js").
		inline(1, 4, 1, 0x10c0, 0x10, "loop-a", "").
		inline(1, 5, 4, 0x10c0, 0x10, "loop-b", "").
		inline(1, 4, 5, 0x10c0, 0x10, "loop-a-again", "").
		load(1, 0x2000, "nomethod", make([]byte, 0x10))
	tab := tableFrom(t, d)
	top, _ := tab.Lookup(0x1000, 1)
	nom, _ := tab.Lookup(0x2000, 1)
	tests := []struct {
		f    *Func
		addr uint64
		want []string
	}{
		{top, 0x1000, nil},
		{top, 0x1010, []string{"middle"}},
		{top, 0x1025, []string{"inner", "middle"}},
		{top, 0x1030, []string{"middle"}},
		{top, 0x10c5, []string{"loop-b", "loop-a"}},
		{nom, 0x2000, nil},
		{top, 0x5000, nil},
	}
	for _, tt := range tests {
		var got []string
		for _, fr := range tab.InlineChain(tt.f, tt.addr) {
			got = append(got, fr.Name)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("InlineChain(%s, %#x) = %v, want %v", tt.f.Name, tt.addr, got, tt.want)
		}
	}
	if ch := tab.InlineChain(top, 0x1025); ch[0].File != "c.js" || ch[0].MethodID != 3 {
		t.Errorf("inner frame = %+v", ch[0])
	}
}

func TestTableReuseManyTimes(t *testing.T) {
	d := newDump(binary.LittleEndian, 1, 0)
	for i := range 1000 {
		d.load(uint64(i*10), 0x1000, fmt.Sprint("gen", i), make([]byte, 16))
	}
	tab := tableFrom(t, d)
	for _, i := range []int{0, 1, 500, 999} {
		if got := name(tab.Lookup(0x1008, uint64(i*10+5))); got != fmt.Sprint("gen", i) {
			t.Errorf("at %d: %s", i, got)
		}
	}
	if g := tab.Generation(1 << 40); g != 999 {
		t.Errorf("generation = %d", g)
	}
}

// benchTable builds a table of n functions laid out like a JIT's code
// space, with realistic names and 200-byte bodies.
func benchDump(n int) []byte {
	d := newDump(binary.LittleEndian, 1, 0)
	d.buf = slices.Grow(d.buf, n*300)
	code := bytes.Repeat([]byte{0xcc}, 200)
	for i := range n {
		addr := 0x7f0000000000 + uint64(i)*256
		d.load(uint64(i)*1000, addr, fmt.Sprintf("LazyCompile:*handleRequest%d /srv/app/node_modules/framework/lib/router.js:%d:%d", i, i%5000, i%80), code)
	}
	return d.bytes()
}

func BenchmarkLookup100k(b *testing.B) {
	const n = 100_000
	tab := NewTable()
	_, recs := mustRecords(b, benchDump(n))
	tab.Apply(1, SourceJitdump, recs)
	tab.Lookup(0, 0) // build the index
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		i = (i*2654435761 + 1) % n
		f, ok := tab.Lookup(0x7f0000000000+i*256+17, i*1000+1)
		if !ok || f.Start != 0x7f0000000000+i*256 {
			b.Fatal("wrong function")
		}
	}
}

func BenchmarkGeneration(b *testing.B) {
	tab := NewTable()
	d := newDump(binary.LittleEndian, 1, 0)
	for i := range 100_000 {
		d.load(uint64(i), 0x1000+uint64(i%100)*16, "f", make([]byte, 16))
	}
	_, recs := mustRecords(b, d.bytes())
	tab.Apply(1, SourceJitdump, recs)
	b.ReportAllocs()
	var ts uint64
	for b.Loop() {
		ts = (ts + 7919) % 100_000
		tab.Generation(ts)
	}
}

// BenchmarkLoad100k parses a 100,000-function dump into a table and builds
// its index; it reports the heap the table holds.
func BenchmarkLoad100k(b *testing.B) {
	buf := benchDump(100_000)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	var heap uint64
	for b.Loop() {
		tab := loadAll(b, buf)
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = ms.HeapAlloc
		runtime.KeepAlive(tab)
	}
	b.ReportMetric(float64(heap)/(1<<20), "heapMiB")
}

func loadAll(tb testing.TB, buf []byte) *Table {
	h, err := ParseHeader(buf)
	if err != nil {
		tb.Fatal(err)
	}
	recs, _, _, err := ParseRecords(h.Order, buf[h.TotalSize:], nil)
	if err != nil {
		tb.Fatal(err)
	}
	tab := NewTable()
	tab.Apply(1, SourceJitdump, recs)
	tab.Lookup(0, 0)
	return tab
}

func TestLoad100kBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	buf := benchDump(100_000)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	tab := loadAll(t, buf)
	elapsed := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("100k functions: %v, %.1f MiB held", elapsed, float64(held)/(1<<20))
	if n := len(tab.Funcs()); n != 100_000 {
		t.Fatalf("%d functions", n)
	}
	if held > 100<<20 {
		t.Errorf("table holds %d bytes, budget 100 MiB", held)
	}
	// The time it takes is BenchmarkLoad100k's to judge, not a test's: it depends on the
	// machine and what else runs on it.
	runtime.KeepAlive(tab)
	runtime.KeepAlive(buf)
}

func TestTablePathologicalNesting(t *testing.T) {
	// Each load is a range inside the previous one, and every range is
	// reused: the index must stay bounded and lookups must still find the
	// newest code.
	d := newDump(binary.LittleEndian, 1, 0)
	const n = 3000
	for i := range n {
		d.load(uint64(i), 0x100000-uint64(n-i)*16, fmt.Sprint("f", i), make([]byte, uint64(n-i)*32))
	}
	tab := tableFrom(t, d)
	if got := name(tab.Lookup(0x100000-16, n)); got != fmt.Sprint("f", n-1) {
		t.Errorf("newest = %s", got)
	}
	tab.mu.RLock()
	items := len(tab.segItems)
	tab.mu.RUnlock()
	if items > indexBudgetPerFunc*n+indexBudgetBase {
		t.Errorf("index holds %d items", items)
	}
}

func TestInlines(t *testing.T) {
	d := newDump(binary.LittleEndian, 1, 0).
		load(1, 0x1000, "top", make([]byte, 0x100)).
		methodID(1, 0x1000, 0x100, 1).
		inline(1, 2, 1, 0x1010, 0x70, "middle", "b.js").
		inline(1, 3, 2, 0x1020, 0x10, "inner", "c.js").
		inline(1, 4, 1, 0x9000, 0x10, "elsewhere", "").
		inline(1, 1, 3, 0x1020, 0x10, "cycle", "")
	tab := tableFrom(t, d)
	top, _ := tab.Lookup(0x1000, 1)
	var got []string
	for _, fr := range tab.Inlines(top) {
		got = append(got, fr.Name)
	}
	slices.Sort(got)
	if want := []string{"cycle", "inner", "middle"}; !slices.Equal(got, want) {
		t.Errorf("Inlines = %v, want %v", got, want)
	}
}

// bruteLookup applies Lookup's rules by scanning every entry.
func bruteLookup(fs []*Func, addr, ts uint64) *Func {
	var live, perf, after, before *Func
	for _, f := range fs {
		if !f.Contains(addr) {
			continue
		}
		if f.Source == SourcePerfMap {
			perf = f
			continue
		}
		if f.LoadTime <= ts && f.EndTime > ts {
			live = f
		}
		if f.LoadTime > ts && (after == nil || f.LoadTime < after.LoadTime) {
			after = f
		}
		if f.LoadTime <= ts && (before == nil || f.LoadTime > before.LoadTime) {
			before = f
		}
	}
	switch {
	case live != nil:
		return live
	case perf != nil:
		return perf
	case after != nil:
		return after
	case before != nil && before.endReason != endUnload:
		return before
	}
	return nil
}

func TestTableAgainstBruteForce(t *testing.T) {
	for seed := range uint64(20) {
		rng := seed*2654435761 + 1
		next := func(n uint64) uint64 {
			rng ^= rng << 13
			rng ^= rng >> 7
			rng ^= rng << 17
			return rng % n
		}
		d := newDump(binary.LittleEndian, 1, 0)
		var starts []uint64
		for i := range 300 {
			ts := uint64(i+1) * 10
			switch op := next(10); {
			case op < 6 || len(starts) == 0:
				a := next(0x1000)
				d.load(ts, a, fmt.Sprint("f", i), make([]byte, 1+next(0x80)))
				starts = append(starts, a)
			case op < 8:
				d.unload(ts, starts[next(uint64(len(starts)))], 1)
			default:
				d.move(ts, starts[next(uint64(len(starts)))], next(0x1000), 1+next(0x80))
			}
		}
		tab := tableFrom(t, d)
		tab.AddPerfMap(2, []PerfMapEntry{{0x200, 0x40, "m1"}, {0x800, 0x100, "m2"}}, 0)
		fs := tab.Funcs()
		for range 2000 {
			addr, ts := next(0x1100), next(3100)
			got, ok := tab.Lookup(addr, ts)
			want := bruteLookup(fs, addr, ts)
			if ok != (want != nil) || (ok && got != want) {
				t.Fatalf("seed %d: Lookup(%#x, %d) = %+v, want %+v", seed, addr, ts, got, want)
			}
		}
		// Live timed entries never overlap.
		for _, ts := range []uint64{500, 1500, 2999} {
			var live []*Func
			for _, f := range fs {
				if f.Source != SourcePerfMap && f.LoadTime <= ts && f.EndTime > ts {
					live = append(live, f)
				}
			}
			for i, a := range live {
				for _, b := range live[i+1:] {
					if a.Start < b.End() && b.Start < a.End() {
						t.Fatalf("seed %d: live %+v and %+v overlap at %d", seed, a, b, ts)
					}
				}
			}
		}
	}
}

// Perf map lines count from when they were read: a later line over the same addresses ends
// the earlier one then, so samples taken before keep the earlier name.
func TestTablePerfMapReuseOverTime(t *testing.T) {
	tab := NewTable()
	tab.AddPerfMap(1, []PerfMapEntry{{0x1000, 0x100, "old"}, {0x3000, 0x100, "stays"}}, 100)
	tab.AddPerfMap(1, []PerfMapEntry{{0x1080, 0x100, "new"}}, 200) // reuses half of old's range
	tab.AddPerfMap(1, []PerfMapEntry{{0x1000, 0x100, "old"}}, 300) // old comes back
	tests := []struct {
		addr, ts uint64
		want     string
	}{
		{0x1000, 50, "old"},  // before any line was read: the first line
		{0x1000, 150, "old"}, // old's time
		{0x1090, 150, "old"}, // old's time, in the part new reuses
		{0x1090, 250, "new"}, // new's time
		{0x1000, 250, "-"},   // old ended; new does not cover it
		{0x1150, 250, "new"}, // new's own part
		{0x1000, 350, "old"}, // old again
		{0x1090, 350, "old"}, // old again over new
		{0x1150, 350, "-"},   // new ended
		{0x3000, 1000, "stays"},
	}
	for _, tt := range tests {
		if got := name(tab.Lookup(tt.addr, tt.ts)); got != tt.want {
			t.Errorf("Lookup(%#x, %d) = %s, want %s", tt.addr, tt.ts, got, tt.want)
		}
	}
}

// A perf map line written again, identical to the live one at its address, is a new code
// object there (V8 compiles a function again into the space its old code left): it ends
// the earlier entry, so the two are told apart by time.
func TestTablePerfMapSameLineAgain(t *testing.T) {
	tab := NewTable()
	tab.AddPerfMap(1, []PerfMapEntry{{0x1000, 0x100, "JS:*f"}}, 100)
	tab.AddPerfMap(1, []PerfMapEntry{{0x1000, 0x100, "JS:*f"}}, 200)
	first, ok1 := tab.Lookup(0x1010, 150)
	second, ok2 := tab.Lookup(0x1010, 250)
	if !ok1 || !ok2 || first == second {
		t.Fatalf("Lookup before and after the line was written again: %+v, %+v: want two entries", first, second)
	}
	if l1, e1 := tab.Span(first); l1 != 100 || e1 != 200 {
		t.Errorf("the first object spans %d-%d, want 100-200", l1, e1)
	}
	if l2, e2 := tab.Span(second); l2 != 200 || e2 != Forever {
		t.Errorf("the second object spans %d-%d, want 200-forever", l2, e2)
	}
	if n := len(tab.Funcs()); n != 2 {
		t.Errorf("%d entries, want 2", n)
	}
}
