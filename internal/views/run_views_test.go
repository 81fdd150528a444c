package views

import (
	"reflect"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

// TestRunToViews goes from raw samples through resolution to the views.
func TestRunToViews(t *testing.T) {
	r := agg.NewRun()
	res := newFakeResolver(8)
	// fn1 recurses through fn2: fn1 <- fn2 <- fn1 <- fn0 (leaf first).
	rec := []uint64{ctxUser, addr(1, 0), addr(2, 0), addr(1, 8), addr(0, 0)}
	for i := 0; i < 6; i++ {
		r.AddSample(1, 1, 0, uint64(i), 0, rec)
	}
	for i := 0; i < 4; i++ {
		r.AddSample(1, 2, 0, uint64(10+i), uint32(i%2), chainOf(3, 0))
	}
	r.Resolve(res)
	p := r.Profile([]agg.ThreadInfo{{Tid: 1, Pid: 1, Name: "main"}, {Tid: 2, Pid: 1, Name: "pool"}})

	rows, n := Top(p, Filter{}, 0, true)
	var got []topRow
	for _, row := range rows {
		got = append(got, topRow{row.Func, row.Self, row.Total})
	}
	want := []topRow{{"fn0000", 0, 10}, {"fn0001", 6, 6}, {"fn0002", 0, 6}, {"fn0003", 4, 4}}
	if n != 10 || !reflect.DeepEqual(got, want) {
		t.Errorf("top = %v (%d samples)\nwant %v", got, n, want)
	}
	root, _ := Flame(p, Filter{Tid: 1}, 0, 0)
	if s := flameString(root); s != "all:6/0(fn0000:6/0(fn0001:6/0(fn0002:6/0(fn0001:6/6))))" {
		t.Errorf("flame = %s", s)
	}
	threads, _ := Threads(p, 0)
	if len(threads) != 2 || threads[0].Name != "main" || threads[0].TopFunc != "fn0001" ||
		threads[1].Name != "pool" || threads[1].Samples != 4 || threads[1].TopFunc != "fn0003" {
		t.Errorf("threads = %+v", threads)
	}
}
