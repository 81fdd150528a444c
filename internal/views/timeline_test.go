package views

import (
	"fmt"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

func TestTimelinePhases(t *testing.T) {
	r := agg.NewRun()
	const ms = 1_000_000
	// a for 1 s, b for 1 s, a for 1 s, each 100 samples per 100 ms; in the middle of b, a
	// quiet bucket holds one sample of a, which must not split b. In the second a, one
	// bucket is led by c (60 samples to a's 40), as the kernel can lead one on a busy
	// machine: it must not split that a either.
	for i := 0; i < 300; i++ {
		stack := chainOf(1, 0) // a
		if i >= 100 && i < 200 {
			stack = chainOf(2, 0) // b
		}
		if i >= 140 && i < 150 {
			continue // the quiet bucket: 400-500 ms of b
		}
		for k := 0; k < 10; k++ {
			st := stack
			if i >= 250 && i < 260 && k < 6 {
				st = chainOf(3, 0) // c
			}
			r.AddSample(1, 1, 0, uint64(i)*10*ms+uint64(k)*ms, 0, st)
		}
	}
	r.AddSample(1, 1, 0, 1450*ms, 0, chainOf(1, 0))
	r.Resolve(newFakeResolver(16))
	p := r.Profile([]agg.ThreadInfo{{Tid: 1, Pid: 1, Name: "main"}})
	tl, err := MakeTimeline(p, Filter{}, 0, 3000*ms, 100*ms, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Buckets != 30 || len(tl.Threads) != 1 || tl.Threads[0].Name != "main" || tl.Threads[0].Samples != 2901 {
		t.Fatalf("timeline: %d buckets, threads %+v", tl.Buckets, tl.Threads)
	}
	var got []string
	for _, ph := range tl.Phases {
		got = append(got, fmt.Sprintf("%s %d-%d", ph.Func, ph.FirstBucket, ph.LastBucket))
	}
	if len(tl.Phases) != 3 || tl.Phases[0].LastBucket != 9 || tl.Phases[1].FirstBucket != 10 || tl.Phases[1].LastBucket != 19 ||
		tl.Phases[2].FirstBucket != 20 || tl.Phases[2].LastBucket != 29 || tl.Phases[2].Samples != 940 {
		t.Errorf("phases %v (the last with %d samples), want a 0-9, b 10-19, a 20-29 with 940", got, tl.Phases[len(tl.Phases)-1].Samples)
	}
}
