package views

import (
	"slices"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

// The call tree's nodes sum the counters of the samples under them (total) and of those
// that end at them (self), in every shape the tree takes.
func TestFlameCounters(t *testing.T) {
	r := agg.NewRun()
	r.AddCountedSample(0, 1, 1, 0, 1, 0, chainOf(2, 1, 0), []uint64{10, 1})
	r.AddCountedSample(0, 1, 1, 0, 2, 0, chainOf(2, 1, 0), []uint64{10, 1})
	r.AddCountedSample(0, 1, 1, 0, 3, 0, chainOf(1, 0), []uint64{5, 0})
	r.AddCountedSample(0, 1, 2, 0, 4, 0, chainOf(3, 0), []uint64{7, 2})
	r.Resolve(newFakeResolver(8))
	p := r.Profile(nil)

	type want struct {
		path        []string
		total, self []uint64
	}
	check := func(name string, root *FlameNode, ws []want) {
		t.Helper()
		for _, w := range ws {
			n := root
			for _, f := range w.path {
				var next *FlameNode
				for _, c := range n.Children {
					if c.Func == f {
						next = c
					}
				}
				if next == nil {
					t.Fatalf("%s: no node %v", name, w.path)
				}
				n = next
			}
			if !slices.Equal(n.Counters, w.total) || !slices.Equal(n.SelfCounters, w.self) {
				t.Errorf("%s: %v counted %v (self %v), want %v (self %v)", name, w.path, n.Counters, n.SelfCounters, w.total, w.self)
			}
		}
	}
	root, _ := Flame(p, Filter{}, 0, 0)
	check("flame", root, []want{
		{nil, []uint64{32, 4}, nil},
		{[]string{"fn0000"}, []uint64{32, 4}, nil},
		{[]string{"fn0000", "fn0001"}, []uint64{25, 2}, []uint64{5, 0}},
		{[]string{"fn0000", "fn0001", "fn0002"}, []uint64{20, 2}, []uint64{20, 2}},
		{[]string{"fn0000", "fn0003"}, []uint64{7, 2}, []uint64{7, 2}},
	})
	root, _ = InvertedFlame(p, Filter{}, 0, 0)
	check("inverted", root, []want{
		{[]string{"fn0002"}, []uint64{20, 2}, nil},
		{[]string{"fn0002", "fn0001", "fn0000"}, []uint64{20, 2}, []uint64{20, 2}},
		{[]string{"fn0001"}, []uint64{5, 0}, nil},
	})
	root, _ = Flame(p, Filter{Tid: 2}, 0, 0)
	check("one thread", root, []want{{nil, []uint64{7, 2}, nil}, {[]string{"fn0000", "fn0003"}, []uint64{7, 2}, []uint64{7, 2}}})
	root, _ = FlameWith(p, Filter{}, FlameShape{Under: []string{"fn0000", "fn0001"}})
	check("under", root, []want{
		{nil, []uint64{32, 4}, nil}, // the root counts every sample of the view
		{[]string{"fn0000", "fn0001"}, []uint64{25, 2}, []uint64{5, 0}},
	})
	isFn1 := make([]bool, len(p.Frames))
	for i, f := range p.Frames {
		isFn1[i] = f.Func == "fn0001"
	}
	root, _ = FlameWith(p, Filter{}, FlameShape{CallersOf: isFn1})
	check("callers of", root, []want{{nil, []uint64{25, 2}, nil}, {[]string{"fn0001", "fn0000"}, []uint64{25, 2}, []uint64{25, 2}}})
	root, _ = Flame(p, Filter{}, 0, 50) // fn0003 (1 sample of 4) pruned: its parent still counts it
	check("pruned", root, []want{{[]string{"fn0000"}, []uint64{32, 4}, nil}})

	r = agg.NewRun()
	r.AddSample(1, 1, 0, 1, 0, chainOf(1, 0))
	r.Resolve(newFakeResolver(8))
	if root, _ := Flame(r.Profile(nil), Filter{}, 0, 0); root.Counters != nil || root.Children[0].Counters != nil {
		t.Errorf("a run without counters: %v, %v", root.Counters, root.Children[0].Counters)
	}
}
