package spans

import (
	"runtime"
	"testing"
)

// AddAll keeps and counts as Add does, one span at a time.
func TestAddAll(t *testing.T) {
	a, b := NewSet(), NewSet()
	sa := a.Source(KindITT, 1, "/x")
	if sb := b.Source(KindITT, 1, "/x"); sb != sa {
		t.Fatalf("source ids %d and %d", sa, sb)
	}
	in := []Span{
		{Name: "x", Tid: 1, Start: 1, End: 2, Source: sa},
		{Name: "bad", Tid: 1, Start: 3, End: 2, Source: sa},
		{Name: "y", Tid: 1, Start: 4, End: 4, Source: 9}, // no such source
	}
	for _, sp := range in {
		a.Add(sp)
	}
	if kept := b.AddAll(in); kept != 1 {
		t.Errorf("AddAll kept %d, want 1", kept)
	}
	ga, srca := a.Snapshot()
	gb, srcb := b.Snapshot()
	if ga.Len() != gb.Len() || srca[0] != srcb[0] {
		t.Errorf("Add: %v %+v; AddAll: %v %+v", ga, srca, gb, srcb)
	}
}

// Keeping a span costs its own storage: the spans kept before it are never copied, and a
// snapshot taken meanwhile neither changes nor forces a copy.
func TestAddCostsNoCopies(t *testing.T) {
	s := NewSet()
	src := s.Source(KindITT, 1, "/x")
	names := []string{"frame", "update", "render"}
	const n = 1 << 18
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var first List
	for i := range n {
		s.Add(Span{Name: names[i%len(names)], Tid: 7, Start: uint64(i), End: uint64(i + 1), Depth: uint32(i % 2), Source: src})
		if i == n/2 {
			first, _ = s.Snapshot()
		}
	}
	runtime.ReadMemStats(&after)
	if per := float64(after.TotalAlloc-before.TotalAlloc) / n; per > 48 {
		t.Errorf("%.0f bytes allocated per span kept, want at most 48", per)
	}
	last, _ := s.Snapshot()
	if first.Len() != n/2+1 || last.Len() != n {
		t.Fatalf("snapshots of %d and %d spans", first.Len(), last.Len())
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		want := Span{Name: names[i%len(names)], Tid: 7, Start: uint64(i), End: uint64(i + 1), Depth: uint32(i % 2), Source: src}
		if got := last.At(i); got != want {
			t.Errorf("span %d: %+v, want %+v", i, got, want)
		}
		if i <= n/2 && first.At(i) != want {
			t.Errorf("span %d of the first snapshot: %+v", i, first.At(i))
		}
	}
	if got := last.Names(); len(got) != 3 || got[0] != "frame" || got[2] != "render" {
		t.Errorf("names %q", got)
	}
	i := 0
	for id, sp := range last.Named() {
		if last.Names()[id] != sp.Name || sp.Start != uint64(i) {
			t.Fatalf("span %d: name id %d for %+v", i, id, sp)
		}
		i++
	}
	if i != n || len(last.Slice()) != n {
		t.Errorf("Named yields %d spans, Slice %d, want %d", i, len(last.Slice()), n)
	}
}
