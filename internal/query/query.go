// Package query answers stax's query commands over a run, live or stored. Answers describe
// a stored run; the live server marks its own answers live.
package query

import (
	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
)

// TopOptions are the flags of `stax top`.
type TopOptions struct {
	N       int
	ByTotal bool
	Tid     uint32
	Window  Window
}

// Top answers `stax top`.
func Top(run *store.Run, o TopOptions) (api.Top, error) {
	run, win, err := o.Window.Apply(run)
	if err != nil {
		return api.Top{}, err
	}
	rows, samples := agg.Top(&run.Profile, agg.Filter{Tid: o.Tid}, o.N, o.ByTotal)
	sort := "self"
	if o.ByTotal {
		sort = "total"
	}
	if rows == nil {
		rows = []agg.TopRow{}
	}
	return api.Top{Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Window: win, Samples: samples, Sort: sort, Rows: rows}, nil
}

// FlameOptions are the flags of `stax flame`.
type FlameOptions struct {
	Depth        int
	ThresholdPct float64
	Tid          uint32
	Window       Window
}

// Flame answers `stax flame`.
func Flame(run *store.Run, o FlameOptions) (api.Flame, error) {
	run, win, err := o.Window.Apply(run)
	if err != nil {
		return api.Flame{}, err
	}
	root, samples := agg.Flame(&run.Profile, agg.Filter{Tid: o.Tid}, o.Depth, o.ThresholdPct)
	return api.Flame{Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Window: win, Samples: samples, Root: root}, nil
}

// Threads answers `stax threads`.
func Threads(run *store.Run, n int, w Window) (api.Threads, error) {
	run, win, err := w.Apply(run)
	if err != nil {
		return api.Threads{}, err
	}
	rows, samples := agg.Threads(&run.Profile, n)
	if rows == nil {
		rows = []agg.ThreadRow{}
	}
	return api.Threads{Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Window: win, Samples: samples, Rows: rows}, nil
}
