package query

import (
	"errors"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil/synthrun"
)

// spanRun has thread 1 run func_1 from 1.0 to 1.3 s and func_2 from 1.3 to 1.9 s, and
// thread 2 run func_3 the whole time, one sample a millisecond; thread 1 reports a frame
// span over it all, with physics (func_1) and render (func_2) inside.
func spanRun() *store.Run {
	r := agg.NewRun()
	for i := range 900 {
		at := uint64(1e9 + i*1e6)
		fn := uint64(1)
		if i >= 300 {
			fn = 2
		}
		r.AddSample(1, 1, 0, at, 0, []uint64{^uint64(511), fn << 8, 9 << 8})
		r.AddSample(1, 2, 1, at, 0, []uint64{^uint64(511), 3 << 8, 9 << 8})
	}
	r.Resolve(synthrun.Names{})
	run := &store.Run{Meta: store.Meta{ID: "s", Finished: true, StartNs: 1e9}, Profile: *r.Profile(nil)}
	run.Spans = spans.ListOf([]spans.Span{
		{Name: "frame", Pid: 1, Tid: 1, Start: 1e9, End: 1.9e9},
		{Name: "physics", Pid: 1, Tid: 1, Start: 1e9, End: 1.3e9, Depth: 1},
		{Name: "render", Pid: 1, Tid: 1, Start: 1.3e9, End: 1.9e9, Depth: 1},
		{Name: "tick", Pid: 1, Start: 1.5e9, End: 1.5e9},
	})
	return run
}

func TestSpansByName(t *testing.T) {
	res, err := Spans(spanRun(), SpansOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []api.SpanStat{
		{Name: "frame", Count: 1, TotalNs: 900e6, AvgNs: 900e6, MaxNs: 900e6, Samples: 900, Threads: 1},
		{Name: "render", Count: 1, TotalNs: 600e6, AvgNs: 600e6, MaxNs: 600e6, Samples: 600, Threads: 1},
		{Name: "physics", Count: 1, TotalNs: 300e6, AvgNs: 300e6, MaxNs: 300e6, Samples: 300, Threads: 1},
		{Name: "tick", Count: 1, Threads: 1},
	}
	if len(res.Rows) != len(want) || res.Sort != "time" || res.Samples != 1800 {
		t.Fatalf("%+v", res)
	}
	for i := range want {
		if res.Rows[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, res.Rows[i], want[i])
		}
	}
	if _, err := Spans(spanRun(), SpansOptions{By: "name"}); err == nil {
		t.Error("--by name was taken")
	}
}

// --span keeps the samples of the span's thread inside it: render's are func_2's alone,
// and thread 2's samples at the same times are not in.
func TestTopInSpan(t *testing.T) {
	top, err := Top(spanRun(), TopOptions{N: 10, Window: Window{Span: "render"}})
	if err != nil {
		t.Fatal(err)
	}
	if top.Samples != 600 || len(top.Rows) == 0 || top.Rows[0].Func != "func_2" || top.Rows[0].Self != 600 {
		t.Errorf("top --span render: %d samples, rows %+v", top.Samples, top.Rows)
	}
	for _, r := range top.Rows {
		if r.Func == "func_1" || r.Func == "func_3" {
			t.Errorf("top --span render has %s", r.Func)
		}
	}
	if top.Window == nil || top.Window.Span != "render" {
		t.Errorf("window %+v", top.Window)
	}
	// With a time window too: the second half of render.
	top, err = Top(spanRun(), TopOptions{N: 10, Window: Window{Span: "render", From: "0.6"}})
	if err != nil || top.Samples != 300 {
		t.Errorf("--span render --from 0.6: %v, %d samples, want 300", err, top.Samples)
	}
	if _, err := Top(spanRun(), TopOptions{Window: Window{Span: "tick"}}); !errors.Is(err, ErrNoSpan) {
		t.Errorf("--span of a marker: %v", err)
	}
	if _, err := Flame(spanRun(), FlameOptions{Depth: 5, Window: Window{Span: "nothing"}}); !errors.Is(err, ErrNoSpan) {
		t.Errorf("--span of no span: %v", err)
	}
}
