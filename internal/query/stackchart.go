package query

import (
	"fmt"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

// maxStackBoxes bounds a stack chart's answer: past it the boxes stop (the answer says so).
const maxStackBoxes = 200_000

// maxStackChartWidth bounds the width asked for: no screen is wider.
const maxStackChartWidth = 100_000

// AnswerStackChart answers a stack chart request: one thread's stacks over time.
func AnswerStackChart(run *store.Run, r api.StackChartRequest) (api.StackChart, error) {
	w := Window(r.Window)
	if w.Span != "" {
		return api.StackChart{}, fmt.Errorf("the stack chart takes no span: give from and to")
	}
	if r.Width < 1 || r.Width > maxStackChartWidth {
		return api.StackChart{}, fmt.Errorf("parameter width: %d pixels: give 1 to %d", r.Width, maxStackChartWidth)
	}
	t, err := CompileTransform(r.Transform)
	if err != nil {
		return api.StackChart{}, err
	}
	run, ev, err := EventView(run, r.Event)
	if err != nil {
		return api.StackChart{}, err
	}
	off := r.OffCPU || r.Wall || r.Runnable
	if off && (run.OffCPU == nil || run.OffCPUIntervals == nil) {
		return api.StackChart{}, notRecorded("run %s has no off-CPU intervals (recorded with --no-off-cpu or -a, or by an older stax): record it again without those to see threads wait over time", run.Meta.ID)
	}
	from, to, err := w.bounds(run)
	if err != nil {
		return api.StackChart{}, err
	}
	if off && r.Window.To == "" {
		// Intervals may run past the last sample: the chart ends at the later of the two.
		for _, iv := range run.OffCPUIntervals {
			to = max(to, iv.End)
		}
	}
	p := &run.Profile
	tid := r.Tid
	if tid == 0 {
		tid = busiestThread(p)
	}
	period := uint64(1e6)
	if run.Meta.Freq > 0 {
		period = uint64(1e9 / run.Meta.Freq)
	}
	o := views.StackChartOptions{Tid: tid, From: from, To: to, PeriodNs: period, MinNs: (to - from) / uint64(r.Width),
		CPU: !(r.OffCPU || r.Runnable) || r.Wall, Transform: t, MaxBoxes: maxStackBoxes}
	if off {
		o.Off, o.Intervals, o.Reasons = run.OffCPU, run.OffCPUIntervals, views.StackReasons(run.OffCPU)
		if r.Runnable && !r.Wall {
			o.Intervals = runnableOnly(run.OffCPUIntervals, o.Reasons)
		}
	}
	c, err := views.MakeStackChart(p, o)
	if err != nil {
		return api.StackChart{}, err
	}
	start := runStart(run)
	res := api.StackChart{Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Tid: tid,
		StartSec: secs(from, start), EndSec: secs(to, start), PeriodNs: period, MinNs: o.MinNs, OffCPU: r.OffCPU, Wall: r.Wall, Event: ev, StackChartData: api.StackChartOf(c)}
	if !w.IsAll() {
		res.Window = &api.Window{FromSec: res.StartSec, ToSec: res.EndSec}
	}
	if !r.Transform.IsZero() {
		tr := r.Transform
		res.Transform = &tr
	}
	for _, th := range p.Threads {
		if th.Tid == tid {
			res.Pid, res.Name = th.Pid, th.Name
		}
	}
	if res.Pid == 0 {
		for i := range p.Entries {
			if p.Entries[i].Tid == tid {
				res.Pid = p.Entries[i].Pid
				break
			}
		}
	}
	return res, nil
}

// busiestThread is the thread with the most samples (the lowest id among equals).
func busiestThread(p *agg.Profile) uint32 {
	by := map[uint32]uint64{}
	for i := range p.Entries {
		by[p.Entries[i].Tid] += p.Entries[i].Count
	}
	var best uint32
	for tid, n := range by {
		if n > by[best] || n == by[best] && (best == 0 || tid < best) {
			best = tid
		}
	}
	return best
}

// runnableOnly keeps the intervals in which a thread waited for a CPU.
func runnableOnly(ivs []agg.Interval, reasons []uint8) []agg.Interval {
	var out []agg.Interval
	for _, iv := range ivs {
		if iv.Stack != agg.NoStack && int(iv.Stack) < len(reasons) && views.Reasons[reasons[iv.Stack]] == views.ReasonRunnable {
			out = append(out, iv)
		}
	}
	return out
}
