// Package query answers stax's query commands over a run, live or stored. Answers describe
// a stored run; the live server marks its own answers live.
package query

import (
	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
)

// Processes restricts a query to some processes: one pid, or every process whose main
// thread has the name Comm. Zero values: every process.
type Processes struct {
	Pid  uint32
	Comm string
}

// filter is the agg filter for these processes and thread tid.
func (ps Processes) filter(p *agg.Profile, tid uint32) agg.Filter {
	f := agg.Filter{Tid: tid}
	if ps.Pid != 0 {
		f.Pids = map[uint32]bool{ps.Pid: true}
	}
	if ps.Comm != "" {
		if f.Pids == nil {
			f.Pids = map[uint32]bool{}
			for pid, name := range agg.ProcessNames(p) {
				if name == ps.Comm {
					f.Pids[pid] = true
				}
			}
		} else {
			for pid := range f.Pids {
				if agg.ProcessNames(p)[pid] != ps.Comm {
					delete(f.Pids, pid)
				}
			}
		}
	}
	return f
}

// TopOptions are the flags of `stax top`.
type TopOptions struct {
	N         int
	ByTotal   bool
	ByProcess bool // list processes, not functions
	Tid       uint32
	Processes Processes
	Window    Window
}

// Top answers `stax top`.
func Top(run *store.Run, o TopOptions) (api.Top, error) {
	run, win, err := o.Window.Apply(run)
	if err != nil {
		return api.Top{}, err
	}
	f := o.Processes.filter(&run.Profile, o.Tid)
	if o.ByProcess {
		procs, samples := agg.Processes(&run.Profile, f, o.N)
		return api.Top{Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Window: win, Samples: samples,
			Sort: "samples", By: "process", Rows: []agg.TopRow{}, Processes: procs}, nil
	}
	rows, samples := agg.Top(&run.Profile, f, o.N, o.ByTotal)
	sort := "self"
	if o.ByTotal {
		sort = "total"
	}
	if rows == nil {
		rows = []agg.TopRow{}
	}
	return api.Top{Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Window: win, Samples: samples, Sort: sort, By: "function", Rows: rows}, nil
}

// FlameOptions are the flags of `stax flame`.
type FlameOptions struct {
	Depth        int
	ThresholdPct float64
	Tid          uint32
	Processes    Processes
	Window       Window
}

// Flame answers `stax flame`.
func Flame(run *store.Run, o FlameOptions) (api.Flame, error) {
	run, win, err := o.Window.Apply(run)
	if err != nil {
		return api.Flame{}, err
	}
	root, samples := agg.Flame(&run.Profile, o.Processes.filter(&run.Profile, o.Tid), o.Depth, o.ThresholdPct)
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
