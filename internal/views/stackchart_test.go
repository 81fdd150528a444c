package views

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

// chartNames names address a>>8 "f<N>" in /bin/app.
type chartNames struct{}

func (chartNames) Resolve(_ uint32, _ uint64, chain []uint64, out []agg.Site) ([]agg.Site, int, uint64, int) {
	for _, a := range chain[1:] {
		out = append(out, agg.Site{Frame: agg.Frame{Func: fmt.Sprintf("f%d", a>>8), Image: "/bin/app", Kind: agg.KindUser}, Addr: a})
	}
	return out, 0, chain[1], 0
}
func (chartNames) Version() uint64 { return 1 }

// chartProfile: thread 7 samples every ms from t=0: 5 ms in f1>f2, 3 ms in f1>f3, 2 ms in
// f1>f2; thread 8 samples f9 in the same milliseconds.
func chartProfile() *agg.Profile {
	r := agg.NewRun()
	stack := func(fs ...uint64) []uint64 { // root first
		chain := []uint64{^uint64(511)}
		for i := len(fs) - 1; i >= 0; i-- {
			chain = append(chain, fs[i]<<8)
		}
		return chain
	}
	at := uint64(0)
	for _, w := range []struct {
		n     int
		stack []uint64
	}{{5, stack(1, 2)}, {3, stack(1, 3)}, {2, stack(1, 2)}} {
		for range w.n {
			r.AddSample(1, 7, 0, at, 0, w.stack)
			r.AddSample(1, 8, 1, at, 0, stack(9))
			at += 1e6
		}
	}
	r.Resolve(chartNames{})
	return r.Profile(nil)
}

func chartString(c StackChart) string {
	var parts []string
	for _, b := range c.Boxes {
		s := fmt.Sprintf("%d:%s@%g-%g", b.Depth, c.Frames[b.Frame].Func, float64(b.Start)/1e6, float64(b.End)/1e6)
		if b.Reason != "" {
			s += "/" + b.Reason
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestMakeStackChart(t *testing.T) {
	p := chartProfile()
	c, err := MakeStackChart(p, StackChartOptions{Tid: 7, From: 0, To: 20e6, PeriodNs: 1e6, CPU: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := chartString(c), "0:f1@0-10 1:f2@0-5 1:f3@5-8 1:f2@8-10"; got != want {
		t.Errorf("boxes %s\nwant  %s", got, want)
	}
	if c.Samples != 10 || c.Hidden != 0 {
		t.Errorf("%d samples, %d hidden", c.Samples, c.Hidden)
	}
	// A window; boxes shorter than 2.5 ms left out, and counted.
	c, _ = MakeStackChart(p, StackChartOptions{Tid: 7, From: 4e6, To: 20e6, PeriodNs: 1e6, CPU: true, MinNs: 2500e3})
	if got, want := chartString(c), "0:f1@0-6 1:f3@1-4"; got != want || c.Hidden != 2 {
		t.Errorf("window: %s (%d hidden)\nwant    %s (2 hidden)", got, c.Hidden, want)
	}
	// Time off CPU: an interval under f1>f4 between the samples, in its reason.
	off := &agg.Profile{Frames: []agg.Frame{{Func: "f1", Image: "/bin/app", Kind: agg.KindUser}, {Func: "f4", Image: "/bin/app", Kind: agg.KindUser}},
		Stacks: [][]uint32{{1, 0}}, Entries: []agg.Entry{{Tid: 7, Stack: 0, Count: 5e6}}}
	off.LocateFrameStacks()
	reasons := []uint8{uint8(reasonIndex(ReasonRunnable))}
	ivs := []agg.Interval{{Tid: 7, Stack: 0, Start: 10e6, End: 15e6}, {Tid: 8, Stack: 0, Start: 0, End: 1e6}}
	c, _ = MakeStackChart(p, StackChartOptions{Tid: 7, From: 0, To: 20e6, PeriodNs: 1e6, CPU: true, Off: off, Intervals: ivs, Reasons: reasons})
	if got, want := chartString(c), "0:f1@0-15 1:f2@0-5 1:f3@5-8 1:f2@8-10 1:f4@10-15/runnable"; got != want || c.OffNs != 5e6 {
		t.Errorf("with time off CPU: %s (%d ns off)\nwant %s", got, c.OffNs, want)
	}
	// A transform rewrites the stacks: f2 hidden, its time is f1's alone.
	tr := &Transform{Hide: regexp.MustCompile("^f2$")}
	c, _ = MakeStackChart(p, StackChartOptions{Tid: 7, From: 0, To: 20e6, PeriodNs: 1e6, CPU: true, Transform: tr})
	if got, want := chartString(c), "0:f1@0-10 1:f3@5-8"; got != want {
		t.Errorf("f2 hidden: %s\nwant %s", got, want)
	}
	// Bounded.
	c, _ = MakeStackChart(p, StackChartOptions{Tid: 7, From: 0, To: 20e6, PeriodNs: 1e6, CPU: true, MaxBoxes: 2})
	if len(c.Boxes) != 2 || !c.Truncated {
		t.Errorf("bounded to 2: %d boxes, truncated %v", len(c.Boxes), c.Truncated)
	}
}
