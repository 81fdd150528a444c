package query

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil/synthrun"
)

// tracedRun is a run of syscalls:sys_enter_write whose samples keep their fields: thread
// 10 writes 1000 bytes from func_2 (under func_1) five times, thread 11 writes 10 bytes
// from func_3 (under func_1) five times, a millisecond apart, in turn.
func tracedRun(t *testing.T) *store.Run {
	t.Helper()
	format, err := os.ReadFile(filepath.Join("..", "tracefmt", "testdata", "formats", "sys_enter_write.format"))
	if err != nil {
		t.Fatal(err)
	}
	r := agg.NewRun()
	r.KeepTraces(0, 100)
	for i := range 5 {
		tm := 1e9 + uint64(i)*2e6
		r.AddTracedSample(0, 10, 10, 0, tm, 0, []uint64{^uint64(511), 2 << 8, 1 << 8}, nil, writeRaw(3, 1000))
		r.AddTracedSample(0, 10, 11, 0, tm+1e6, 0, []uint64{^uint64(511), 3 << 8, 1 << 8}, nil, writeRaw(4, 10))
	}
	r.Resolve(synthrun.Names{})
	p := r.Profile([]agg.ThreadInfo{{Tid: 10, Pid: 10, Name: "big"}, {Tid: 11, Pid: 10, Name: "small"}})
	var traces []store.TraceEvent
	for _, ring := range r.Traces() {
		traces = append(traces, store.TraceEvent{Event: ring.Event, Format: format, Cap: ring.Cap, Dropped: ring.Dropped, Samples: ring.Samples})
	}
	return &store.Run{Meta: store.Meta{ID: "traced", Event: "syscalls:sys_enter_write", StartNs: 1e9, Samples: 10, Finished: true,
		Events: []store.Event{{Name: "syscalls:sys_enter_write", Period: 1, Samples: 10, Count: 10}}}, Profile: *p, Traces: traces}
}

// counts are the samples' count fields, in order.
func counts(t *testing.T, res api.Samples) []string {
	t.Helper()
	var out []string
	for _, s := range res.Samples {
		for _, f := range s.Fields {
			if f.Name == "count" {
				out = append(out, f.Text())
			}
		}
	}
	return out
}

// A samples request selects by thread as by process, and a transform rewrites the
// samples' stacks as a view's and leaves out those it drops.
func TestSamplesByThreadAndTransform(t *testing.T) {
	run := tracedRun(t)
	ev := "syscalls:sys_enter_write"
	all, err := AnswerSamples(run, api.SamplesRequest{Event: ev})
	if err != nil || all.Matched != 10 || all.Kept != 10 || len(all.Samples) != 10 {
		t.Fatalf("all: %v, %d matched of %d kept, %d listed", err, all.Matched, all.Kept, len(all.Samples))
	}
	if s := all.Samples[0]; s.Tid != 10 || s.Comm != "big" || !slices.Equal(s.Stack, []string{"func_2", "func_1"}) || s.Func != "func_2" {
		t.Errorf("the first sample: %+v", s)
	}
	one, err := AnswerSamples(run, api.SamplesRequest{Event: ev, Tid: 11, N: 3})
	if err != nil || one.Matched != 5 || len(one.Samples) != 3 {
		t.Fatalf("thread 11: %v, %d matched, %d listed", err, one.Matched, len(one.Samples))
	}
	for _, s := range one.Samples {
		if s.Tid != 11 || s.Func != "func_3" {
			t.Errorf("thread 11's samples: %+v", s)
		}
	}
	if got := counts(t, one); !slices.Equal(got, []string{"10", "10", "10"}) {
		t.Errorf("thread 11's counts: %q", got)
	}
	// focus on func_2: thread 10's writes alone, their stacks from func_2 down.
	foc, err := AnswerSamples(run, api.SamplesRequest{Event: ev, Transform: api.Transform{Focus: "^func_2$"}})
	if err != nil || foc.Matched != 5 {
		t.Fatalf("focus: %v, %d matched", err, foc.Matched)
	}
	for _, s := range foc.Samples {
		if s.Tid != 10 || !slices.Equal(s.Stack, []string{"func_2"}) {
			t.Errorf("focus on func_2: %+v", s)
		}
	}
	// hide func_1: every sample, without it.
	hid, err := AnswerSamples(run, api.SamplesRequest{Event: ev, Transform: api.Transform{Hide: "^func_1$"}})
	if err != nil || hid.Matched != 10 || len(hid.Samples[1].Stack) != 1 || hid.Samples[1].Func != "func_3" {
		t.Fatalf("hide: %v, %d matched, %+v", err, hid.Matched, hid.Samples)
	}
	// A window and a thread together.
	win, err := AnswerSamples(run, api.SamplesRequest{Event: ev, Tid: 10, Window: api.WindowParams{From: "0.003", To: "0.0065"}})
	if err != nil || win.Matched != 2 || win.Samples[0].TimeNs != 1e9+4e6 {
		t.Errorf("window: %v, %+v", err, win)
	}
	if _, err := AnswerSamples(run, api.SamplesRequest{Event: ev, Transform: api.Transform{Focus: "("}}); err == nil {
		t.Error("a bad focus: no error")
	}
}

// The status lists the tracepoint events whose samples keep their fields, with the
// fields (the common ones left out).
func TestStatusListsTraces(t *testing.T) {
	st := api.StatusOf(tracedRun(t))
	if len(st.Traces) != 1 {
		t.Fatalf("traces: %+v", st.Traces)
	}
	tr := st.Traces[0]
	want := []api.TraceField{{Name: "__syscall_nr", Type: "int", Kind: "int", Signed: true}, {Name: "fd", Type: "unsigned int", Kind: "int"},
		{Name: "buf", Type: "const char *", Kind: "int"}, {Name: "count", Type: "size_t", Kind: "int"}}
	if tr.Event != "syscalls:sys_enter_write" || tr.Kept != 10 || tr.Cap != 100 || !slices.Equal(tr.Fields, want) {
		t.Errorf("trace: %+v", tr)
	}
	run := tracedRun(t)
	run.Traces = nil
	if st := api.StatusOf(run); st.Traces != nil {
		t.Errorf("a run without traces lists %+v", st.Traces)
	}
}
