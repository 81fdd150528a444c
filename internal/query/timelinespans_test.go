package query

import (
	"errors"
	"testing"

	"github.com/stax-profiler/stax/internal/spans"
)

func TestTimelineSpans(t *testing.T) {
	run := spanRun()
	// A marker after the last sample widens the timeline to it.
	sp := append(run.Spans.Slice(), spans.Span{Name: "late", Pid: 1, Tid: 2, Start: 2.5e9, End: 2.5e9})
	// One with a wild time does not widen it to years.
	sp = append(sp, spans.Span{Name: "wild", Pid: 1, Tid: 3, Start: 1 << 62, End: 1 << 62})
	run.Spans = spans.ListOf(sp)
	tl, err := Timeline(run, TimelineOptions{BucketMs: 100})
	if err != nil {
		t.Fatal(err)
	}
	lanes := map[string]int{}
	for _, s := range tl.Spans {
		lanes[s.Name] = s.Lane
	}
	if len(tl.Spans) != 3 || lanes["frame"] != 0 || lanes["physics"] != 1 || lanes["render"] != 1 {
		t.Errorf("spans %+v: want frame in lane 0, physics and render below it", tl.Spans)
	}
	if len(tl.Markers) != 2 || tl.Markers[0].Name != "tick" || tl.Markers[0].AtSec != 0.5 || tl.Markers[1].AtSec != 1.5 {
		t.Errorf("markers %+v: want tick at 0.5 s and late at 1.5 s", tl.Markers)
	}
	if end := tl.StartSec + float64(tl.Buckets)*tl.BucketSec; end < 1.5 || end > 2 {
		t.Errorf("the timeline ends at %.2f s: want it past the late marker (1.5 s), not at the wild one", end)
	}

	// --from mark:NAME starts at a marker, --to mark:NAME ends with a span.
	tl, err = Timeline(run, TimelineOptions{BucketMs: 100, Window: Window{From: "mark:tick", To: "mark:render"}})
	if err != nil {
		t.Fatal(err)
	}
	if tl.Window == nil || tl.Window.FromSec != 0.5 || tl.Window.ToSec != 0.9 || len(tl.Markers) != 1 || len(tl.Spans) != 2 {
		t.Errorf("mark:tick to mark:render: window %+v, %d markers, spans %+v", tl.Window, len(tl.Markers), tl.Spans)
	}
	if _, err := Timeline(run, TimelineOptions{Window: Window{From: "mark:nothing"}}); !errors.Is(err, ErrNoSpan) {
		t.Errorf("mark:nothing: %v, want ErrNoSpan", err)
	}

	// Only thread 2's markers with --tid 2; the bound on what is listed is counted.
	tl, _ = Timeline(run, TimelineOptions{Tid: 2, BucketMs: 100})
	if len(tl.Spans) != 0 || len(tl.Markers) != 1 || tl.Markers[0].Name != "late" {
		t.Errorf("--tid 2: spans %+v, markers %+v", tl.Spans, tl.Markers)
	}
	for range maxTimelineSpans {
		sp = append(sp, spans.Span{Name: "many", Pid: 1, Tid: 1, Start: 1.2e9, End: 1.2e9})
	}
	run.Spans = spans.ListOf(sp)
	if tl, _ = Timeline(run, TimelineOptions{BucketMs: 100}); tl.Omitted != 5 || len(tl.Spans)+len(tl.Markers) != maxTimelineSpans {
		t.Errorf("%d spans past the bound: %d omitted, %d listed", 5, tl.Omitted, len(tl.Spans)+len(tl.Markers))
	}
}
