package query

import (
	"errors"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

// timeRun is the run to answer a view weighted by time from: with wall, its samples (each
// its sampling period's share of a second) and its time off CPU together; with runnable,
// its runnable time alone; else its time off CPU. cpuStacks is how many of the profile's
// first stacks are on CPU (with wall), else -1.
// The run returned is already restricted to the window w, which win describes.
func timeRun(run *store.Run, wall, runnable bool, w Window, t api.Transform) (_ *store.Run, cpuStacks int, win *api.Window, err error) {
	off, err := offCPURun(run, w)
	if err != nil {
		return nil, -1, nil, err
	}
	cpu, win, err := w.Apply(run)
	if err != nil {
		return nil, -1, nil, err
	}
	switch {
	case wall:
		if !t.IsZero() {
			return nil, -1, nil, errors.New("--wall takes no stack transform: leave --focus, --ignore, --collapse and the like out, or use --off-cpu")
		}
		if run.Meta.Freq <= 0 {
			return nil, -1, nil, notRecorded("run %s has no sampling frequency to give its samples a time: use --off-cpu", run.Meta.ID)
		}
		var on *views.OnCPUTime
		if run.Meta.OffCPU != nil {
			// The threads' time on CPU from the switch records (or the scheduler's), over
			// the whole run's samples: in a window, each of its samples weighs that share.
			on = views.NewOnCPUTime(run.Meta.OffCPU.OnCPU, &run.Profile)
			if !w.IsAll() {
				on = on.InWindow()
			}
		}
		p, n := views.WallProfile(&cpu.Profile, &off.Profile, uint64(1e9/run.Meta.Freq), on)
		return &store.Run{Meta: run.Meta, Profile: *p}, n, win, nil
	case runnable:
		p := views.OnlyReason(&off.Profile, views.StackReasons(&off.Profile), views.ReasonRunnable)
		return &store.Run{Meta: run.Meta, Profile: *p}, -1, win, nil
	}
	return off, -1, win, nil
}

// timeTotals is what the time of p (from timeRun) that f keeps holds.
func timeTotals(p *agg.Profile, reasons []uint8, f views.Filter) *api.TimeTotals {
	on, runnable, blocked := views.TimeTotals(p, reasons, f)
	return &api.TimeTotals{OnCPUNs: on, OffCPUNs: runnable + blocked, RunnableNs: runnable, BlockedNs: blocked}
}

// timeReasons is the reasons of the stacks of p, from timeRun.
func timeReasons(p *agg.Profile, cpuStacks int) []uint8 {
	if cpuStacks >= 0 {
		return views.WallReasons(p, cpuStacks)
	}
	return views.StackReasons(p)
}

// OffCPUIn is run's time off CPU inside window w (all of it for the whole run), with the
// stack transform t applied; nil when the run has none, or keeps no intervals to window.
func OffCPUIn(run *store.Run, w Window, t api.Transform) (*agg.Profile, error) {
	if run.OffCPU == nil {
		return nil, nil
	}
	off, err := offCPURun(run, w)
	if err != nil {
		return nil, err
	}
	off, _, err = ApplyTransform(off, t)
	if err != nil {
		return nil, err
	}
	return &off.Profile, nil
}
