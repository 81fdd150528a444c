package query

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
)

// Panels asking one view at once compute it once; another transform, window or run is
// computed again; the cache keeps its last few views.
func TestViewCacheComputesAViewOnce(t *testing.T) {
	c := viewCache{max: 2}
	var computed atomic.Int32
	compute := func() (*store.Run, *api.Window, *api.Transform, error) {
		computed.Add(1)
		return &store.Run{}, nil, &api.Transform{}, nil
	}
	a, b := &store.Run{}, &store.Run{}
	hide := api.Transform{Hide: "x"}
	var wg sync.WaitGroup
	got := make([]*store.Run, 8)
	for i := range got {
		wg.Go(func() { got[i], _, _, _ = c.get(a, Window{}, hide, 0, compute) })
	}
	wg.Wait()
	if n := computed.Load(); n != 1 {
		t.Fatalf("8 askers of one view computed it %d times", n)
	}
	for _, r := range got[1:] {
		if r != got[0] {
			t.Fatal("askers of one view got different runs")
		}
	}
	c.get(a, Window{}, api.Transform{Hide: "y"}, 0, compute)
	c.get(b, Window{}, hide, 0, compute)
	c.get(a, Window{From: "1"}, hide, 0, compute)
	if n := computed.Load(); n != 4 {
		t.Errorf("three other views: %d computations in all, want 4", n)
	}
	c.get(a, Window{From: "1"}, hide, 0, compute) // kept
	c.get(a, Window{}, hide, 0, compute)          // the first: pushed out by the two after it
	if n := computed.Load(); n != 5 {
		t.Errorf("%d computations in all, want 5", n)
	}
	c.get(a, Window{}, hide, 101, compute) // one thread's view is a view of its own
	if n := computed.Load(); n != 6 {
		t.Errorf("a thread's view: %d computations in all, want 6", n)
	}
}
