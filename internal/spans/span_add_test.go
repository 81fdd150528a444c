package spans

import "testing"

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
	if len(ga) != len(gb) || srca[0] != srcb[0] {
		t.Errorf("Add: %v %+v; AddAll: %v %+v", ga, srca, gb, srcb)
	}
}
