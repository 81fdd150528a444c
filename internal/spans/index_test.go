package spans

import "testing"

func TestIndexAndStats(t *testing.T) {
	sp := []Span{
		{Name: "frame", Tid: 1, Start: 100, End: 200},
		{Name: "frame", Tid: 1, Start: 150, End: 180, Depth: 1}, // nested in the first
		{Name: "frame", Tid: 2, Start: 300, End: 400},
		{Name: "render", Tid: 1, Start: 120, End: 140, Depth: 1},
		{Name: "tick", Tid: 1, Start: 500, End: 500},
	}
	ix := IndexOf(ListOf(sp), "frame")
	for _, c := range []struct {
		t    uint64
		tid  uint32
		want bool
	}{{100, 1, true}, {199, 1, true}, {200, 1, false}, {99, 1, false}, {350, 1, false}, {350, 2, true}, {150, 3, false}} {
		if got := ix.Contains(c.t, c.tid); got != c.want {
			t.Errorf("Contains(%d, %d) = %v", c.t, c.tid, got)
		}
	}
	times := map[uint32][]uint64{1: {110, 125, 160, 250, 500}, 2: {310, 390, 400}}
	st := Stats(ListOf(sp), times)
	want := map[string]Stat{
		"frame":  {Name: "frame", Count: 3, TotalNs: 230, AvgNs: 76, MaxNs: 100, Samples: 5, Threads: 2},
		"render": {Name: "render", Count: 1, TotalNs: 20, AvgNs: 20, MaxNs: 20, Samples: 1, Threads: 1},
		"tick":   {Name: "tick", Count: 1, Threads: 1},
	}
	if len(st) != len(want) {
		t.Fatalf("stats %+v", st)
	}
	for _, s := range st {
		if s != want[s.Name] {
			t.Errorf("%+v, want %+v", s, want[s.Name])
		}
	}
}

func TestNamedFrom(t *testing.T) {
	var b Builder
	for i := range 3*4096 + 7 {
		b.Add(Span{Name: string(rune('a' + i%5)), Start: uint64(i)})
	}
	l := b.List()
	for _, from := range []int{0, 1, 4095, 4096, 4097, 3 * 4096, l.Len() - 1, l.Len(), l.Len() + 3} {
		want := uint64(from)
		for id, s := range l.NamedFrom(from) {
			if s.Start != want || l.Names()[id] != s.Name {
				t.Fatalf("from %d: span %d is %+v (name id %d)", from, want, s, id)
			}
			want++
		}
		if int(want) != max(l.Len(), from) {
			t.Fatalf("from %d: ended at %d of %d", from, want, l.Len())
		}
	}
}
