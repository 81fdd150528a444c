package query

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil/synthrun"
)

// writeRaw is sys_enter_write's raw data for a write of count bytes to fd.
func writeRaw(fd, count uint64) []byte {
	raw := make([]byte, 40)
	binary.LittleEndian.PutUint64(raw[16:], fd)
	binary.LittleEndian.PutUint64(raw[32:], count)
	return raw
}

// top and flame --weight sum a tracepoint's field over the samples kept with their fields,
// per function, in the window asked; a field that is no number, or a run without the
// fields, is refused.
func TestWeightByField(t *testing.T) {
	format, err := os.ReadFile(filepath.Join("..", "tracefmt", "testdata", "formats", "sys_enter_write.format"))
	if err != nil {
		t.Fatal(err)
	}
	r := agg.NewRun()
	big := []uint64{^uint64(511), 2 << 8, 1 << 8}   // big_writes <- main
	small := []uint64{^uint64(511), 3 << 8, 1 << 8} // small_writes <- main
	for i := range 10 {
		tm := 1e9 + uint64(i)*1e6
		r.AddSample(10, 10, 0, tm, 0, big)
		r.AddSample(10, 10, 0, tm+1, 0, small)
	}
	r.Resolve(synthrun.Names{})
	p := r.Profile(nil)
	// The keys of the two stacks, as the run numbered them: the first sample's and the second's.
	var keys [2]uint32
	n := 0
	p.Series.Each(0, 0, func(s agg.Sample) {
		if n < 2 {
			keys[n] = s.Key
		}
		n++
	})
	ev := store.TraceEvent{Event: 0, Format: format, Cap: 100, Dropped: 3}
	for i := range 10 {
		tm := 1e9 + uint64(i)*1e6
		ev.Samples = append(ev.Samples, agg.TraceSample{Time: tm, Pid: 10, Tid: 10, Key: keys[0], Raw: writeRaw(3, 1000)},
			agg.TraceSample{Time: tm + 1, Pid: 10, Tid: 10, Key: keys[1], Raw: writeRaw(3, 10)})
	}
	run := &store.Run{Meta: store.Meta{ID: "w", Event: "syscalls:sys_enter_write", StartNs: 1e9, Samples: 20,
		Events: []store.Event{{Name: "syscalls:sys_enter_write", Period: 1, Samples: 20, Count: 20}}}, Profile: *p, Traces: []store.TraceEvent{ev}}

	top, err := AnswerTop(run, api.TopRequest{N: 10, Sort: "total", Weight: "count"})
	if err != nil {
		t.Fatal(err)
	}
	totals := map[string]uint64{}
	for _, row := range top.Rows {
		totals[row.Func] = row.Total
	}
	bigFn, smallFn, mainFn := "func_2", "func_3", "func_1"
	if top.Weight == nil || top.Weight.Sum != 10_100 || top.Weight.Samples != 20 || top.Weight.Dropped != 3 || top.Samples != 10_100 ||
		totals[bigFn] != 10_000 || totals[smallFn] != 100 || totals[mainFn] != 10_100 {
		t.Errorf("top --weight count: weight %+v, %d in all, rows %v", top.Weight, top.Samples, totals)
	}
	// A window: the first five milliseconds' writes.
	top, err = AnswerTop(run, api.TopRequest{N: 10, Weight: "count", View: api.View{Window: api.WindowParams{To: "0.005"}}})
	if err != nil || top.Weight.Sum != 5*1010 || top.Window == nil {
		t.Errorf("a window: %v, weight %+v, window %+v", err, top.Weight, top.Window)
	}
	fl, err := AnswerFlame(run, api.FlameRequest{Depth: 0, Weight: "count"})
	if err != nil || fl.Root == nil || fl.Root.Total != 10_100 || len(fl.Root.Children) != 1 || fl.Root.Children[0].Total != 10_100 {
		t.Fatalf("flame --weight count: %v, %+v", err, fl.Root)
	}
	for _, c := range fl.Root.Children[0].Children {
		if want := map[string]uint64{bigFn: 10_000, smallFn: 100}[c.Func]; c.Total != want {
			t.Errorf("flame --weight count: %s weighs %d, want %d", c.Func, c.Total, want)
		}
	}
	for _, bad := range []api.TopRequest{
		{Weight: "nosuch"},
		{Weight: "count", View: api.View{TimeMode: api.TimeMode{OffCPU: true}}},
	} {
		if _, err := AnswerTop(run, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	run.Traces = nil
	if _, err := AnswerTop(run, api.TopRequest{Weight: "count"}); err == nil {
		t.Error("a run without fields weighed")
	}
}
