// Package query answers stax's query commands over a run, live or stored. Answers describe
// a stored run; the live server marks its own answers live.
package query

import (
	"fmt"
	"regexp"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

// Processes restricts a query to some processes: one pid, or every process whose main
// thread has the name Comm. Zero values: every process.
type Processes struct {
	Pid  uint32
	Comm string
}

// filter is the agg filter for these processes and thread tid.
func (ps Processes) filter(p *agg.Profile, tid uint32) views.Filter {
	f := views.Filter{Tid: tid}
	if ps.Pid != 0 {
		f.Pids = map[uint32]bool{ps.Pid: true}
	}
	if ps.Comm != "" {
		if f.Pids == nil {
			f.Pids = map[uint32]bool{}
			for pid, name := range views.ProcessNames(p) {
				if name == ps.Comm {
					f.Pids[pid] = true
				}
			}
		} else {
			for pid := range f.Pids {
				if views.ProcessNames(p)[pid] != ps.Comm {
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
	// Granularity is what a row is (by function, source line, address or image), whether
	// inlined functions count, and whether names are short.
	Granularity agg.Granularity
	Tid         uint32
	Processes   Processes
	Window      Window
	Transform   api.Transform
	// OffCPU weighs rows by the time threads spent off CPU under them; Wall by their time
	// on CPU (their samples) and off CPU together; Runnable by their runnable time alone.
	OffCPU, Wall, Runnable bool
}

// offCPURun is run's off-CPU aggregate as a run to answer from.
func offCPURun(run *store.Run, w Window) (*store.Run, error) {
	if run.OffCPU == nil {
		return nil, notRecorded("run %s has no off-CPU time (recorded with --no-off-cpu or -a, or by an older stax): record it again without those to see where threads wait", run.Meta.ID)
	}
	if !w.IsAll() {
		if run.OffCPUIntervals == nil || w.Span != "" {
			return nil, notRecorded("--off-cpu takes no --span, nor --from or --to for a run that kept no off-CPU intervals (an older stax recorded it); leave them out")
		}
		from, to, err := w.bounds(run)
		if err != nil {
			return nil, err
		}
		return &store.Run{Meta: run.Meta, Profile: *views.IntervalsIn(run.OffCPU, run.OffCPUIntervals, from, to)}, nil
	}
	return &store.Run{Meta: run.Meta, Profile: *run.OffCPU}, nil
}

// timedView is view's run, window and transform, weighed by time (timeRun) when timed,
// wall or runnable: cpuStacks is then the number of CPU stacks a wall profile begins
// with (else -1).
func timedView(run *store.Run, timed, wall, runnable bool, w Window, t api.Transform, tid uint32) (_ *store.Run, win *api.Window, tr *api.Transform, cpuStacks int, err error) {
	cpuStacks = -1
	var timeWin *api.Window
	if timed {
		if run, cpuStacks, timeWin, err = timeRun(run, wall, runnable, w, t); err != nil {
			return nil, nil, nil, -1, err
		}
		w = Window{}
	}
	if run, win, tr, err = view(run, w, t, tid); err != nil {
		return nil, nil, nil, -1, err
	}
	if timeWin != nil {
		win = timeWin
	}
	return run, win, tr, cpuStacks, nil
}

// Top answers `stax top`.
func Top(run *store.Run, o TopOptions) (api.Top, error) {
	o.OffCPU = o.OffCPU || o.Wall || o.Runnable
	run, win, tr, cpuStacks, err := timedView(run, o.OffCPU, o.Wall, o.Runnable, o.Window, o.Transform, o.Tid)
	if err != nil {
		return api.Top{}, err
	}
	f := o.Processes.filter(&run.Profile, o.Tid)
	if o.ByProcess {
		procs, samples := views.Processes(&run.Profile, f, o.N)
		var times *api.TimeTotals
		if o.OffCPU {
			times = timeTotals(&run.Profile, timeReasons(&run.Profile, cpuStacks), f)
		}
		return api.Top{Time: times, Wall: o.Wall, Runnable: o.Runnable, Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Window: win, Transform: tr, Samples: samples,
			OffCPU: o.OffCPU, Sort: "samples", By: "process", Rows: []api.TopRow{}, Processes: api.ProcessRows(procs)}, nil
	}
	g, err := granularity(o.Granularity, true)
	if err != nil {
		return api.Top{}, err
	}
	var rows []views.TopRow
	var samples uint64
	var times *api.TimeTotals
	if o.OffCPU {
		reasons := timeReasons(&run.Profile, cpuStacks)
		rows, samples = views.OffCPUTop(views.At(&run.Profile, g), reasons, f, o.N, o.ByTotal)
		times = timeTotals(&run.Profile, reasons, f)
	} else {
		rows, samples = views.Top(views.At(&run.Profile, g), f, o.N, o.ByTotal)
	}
	sort := "self"
	if o.ByTotal {
		sort = "total"
	}
	res := api.Top{Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Window: win, Transform: tr, Samples: samples, OffCPU: o.OffCPU, Wall: o.Wall, Runnable: o.Runnable, Time: times, Sort: sort,
		By: g.By, NoInline: g.NoInline, Short: g.Short, Rows: api.TopRows(rows)}
	if !o.OffCPU {
		topCounters(run, g, f, &res)
	}
	return res, nil
}

// granularity checks a query's granularity and fills in its default (by function).
func granularity(g agg.Granularity, process bool) (agg.Granularity, error) {
	if g.By == "" {
		g.By = agg.ByFunction
	}
	if !agg.ValidGranularity(g.By) {
		or := "function, line, address or image"
		if process {
			or = "function, line, address, image or process"
		}
		return g, fmt.Errorf("--by must be %s, not %q", or, g.By)
	}
	return g, nil
}

// FlameOptions are the flags of `stax flame`.
type FlameOptions struct {
	Depth        int
	ThresholdPct float64
	Inverted     bool            // bottom-up: leaf functions at the root
	Granularity  agg.Granularity // what a node is (see TopOptions)
	Tid          uint32
	Processes    Processes
	Window       Window
	Transform    api.Transform
	// Match, a regular expression, asks how many samples have a frame whose function it
	// matches (api.Flame.Matched).
	Match string
	// OffCPU weighs nodes by the time threads spent off CPU under them; Wall by their
	// time on CPU (their samples) and off CPU together; Runnable by their runnable time.
	OffCPU, Wall, Runnable bool
	// Under, CallersOf and CalleesOf ask for a subtree, or a sandwich's side (see
	// api.FlameRequest and views.FlameShape).
	Under                []string
	CallersOf, CalleesOf string
}

// Flame answers `stax flame`.
func Flame(run *store.Run, o FlameOptions) (api.Flame, error) {
	o.OffCPU = o.OffCPU || o.Wall || o.Runnable
	run, win, tr, cpuStacks, err := timedView(run, o.OffCPU, o.Wall, o.Runnable, o.Window, o.Transform, o.Tid)
	if err != nil {
		return api.Flame{}, err
	}
	var match *regexp.Regexp
	if o.Match != "" {
		if match, err = regexp.Compile(o.Match); err != nil {
			return api.Flame{}, fmt.Errorf("match %q is not a regular expression (%s): write one in Go's syntax, as pprof's", o.Match, reError(err))
		}
	}
	g, err := granularity(o.Granularity, false)
	if err != nil {
		return api.Flame{}, err
	}
	f := o.Processes.filter(&run.Profile, o.Tid)
	p := views.At(&run.Profile, g)
	shape, err := flameShape(p, o)
	if err != nil {
		return api.Flame{}, err
	}
	var times *api.TimeTotals
	if o.OffCPU {
		shape.Reasons = timeReasons(&run.Profile, cpuStacks)
		times = timeTotals(&run.Profile, shape.Reasons, f)
	}
	shape.NoCounters = o.OffCPU
	root, samples := views.FlameWith(p, f, shape)
	res := api.Flame{Counters: counterNames(run, root.Counters == nil), CountersMultiplexed: countersMultiplexedIf(run, root.Counters != nil), Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Window: win, Transform: tr,
		Inverted: shape.Inverted, By: g.By, NoInline: g.NoInline, Short: g.Short, OffCPU: o.OffCPU, Wall: o.Wall, Runnable: o.Runnable, Time: times, Samples: samples, Root: api.FlameRoot(root),
		Under: o.Under, CallersOf: o.CallersOf, CalleesOf: o.CalleesOf}
	if match != nil {
		// Focus keeps the samples with a matching function; a tree one level deep counts them.
		_, n := views.Flame(views.Transformed(&run.Profile, &views.Transform{Focus: match}), f, 1, 100)
		res.Matched = &n
	}
	return res, nil
}

// CallersOptions are the flags of `stax callers` and `stax callees`.
type CallersOptions struct {
	Func     string // see FunctionMatcher
	Callees  bool
	MaxFuncs int // 0: every matching function
	MaxRows  int // per function; 0: all
	// Granularity is what a row (a caller or callee) is; the matching functions stay whole.
	Granularity agg.Granularity
	Tid         uint32
	Processes   Processes
	Window      Window
	Transform   api.Transform
	// OffCPU, Wall and Runnable weigh rows by time, as TopOptions'.
	OffCPU, Wall, Runnable bool
}

// Callers answers `stax callers` and `stax callees`. No function matching is no error: the
// answer lists none.
func Callers(run *store.Run, o CallersOptions) (api.Callers, error) {
	o.OffCPU = o.OffCPU || o.Wall || o.Runnable
	run, win, tr, cpuStacks, err := timedView(run, o.OffCPU, o.Wall, o.Runnable, o.Window, o.Transform, o.Tid)
	if err != nil {
		return api.Callers{}, err
	}
	g, err := granularity(o.Granularity, false)
	if err != nil {
		return api.Callers{}, err
	}
	match := FunctionMatcher(o.Func)
	if g.Short {
		// The names asked about are those shown.
		full := match
		match = func(f agg.Frame) bool {
			return full(f) || f.Kind == agg.KindUser && full(agg.Frame{Func: views.ShortName(f.Func)})
		}
	}
	p := views.AtKeeping(&run.Profile, g, match)
	f := o.Processes.filter(&run.Profile, o.Tid)
	fs, samples := views.Callers(p, f, match, o.MaxFuncs, o.MaxRows, o.Callees)
	var times *api.TimeTotals
	if o.OffCPU {
		times = timeTotals(&run.Profile, timeReasons(&run.Profile, cpuStacks), f)
	}
	if fs == nil {
		fs = []views.CallFunction{}
	}
	dir := api.DirCallers
	if o.Callees {
		dir = api.DirCallees
	}
	return api.Callers{Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Window: win, Transform: tr,
		Samples: samples, OffCPU: o.OffCPU, Wall: o.Wall, Runnable: o.Runnable, Time: times, Direction: dir, Match: o.Func, By: g.By, NoInline: g.NoInline, Short: g.Short, Functions: api.CallFunctions(fs)}, nil
}

// Threads answers `stax threads`.
func Threads(run *store.Run, n int, w Window, t api.Transform) (api.Threads, error) {
	offCPU, meta := run.OffCPU, run.Meta
	var on *views.OnCPUTime
	if offCPU != nil && meta.OffCPU != nil {
		// The threads' time on CPU from the switch records (or the scheduler's), over the
		// whole run's samples: in a window, each of its samples weighs that share.
		on = views.NewOnCPUTime(meta.OffCPU.OnCPU, &run.Profile)
		if !w.IsAll() {
			on = on.InWindow()
		}
	}
	if offCPU != nil && !w.IsAll() {
		// Off-CPU time in a window is that of its intervals; without them (an older run),
		// it is shown for the whole run only.
		offCPU = nil
		if off, err := offCPURun(run, w); err == nil {
			offCPU = &off.Profile
		}
	}
	run, win, tr, err := view(run, w, t, 0)
	if err != nil {
		return api.Threads{}, err
	}
	var rows []views.ThreadRow
	var samples uint64
	var times *api.TimeTotals
	if offCPU != nil {
		off, _, _, err := view(&store.Run{Meta: meta, Profile: *offCPU}, Window{}, t, 0)
		if err != nil {
			return api.Threads{}, err
		}
		reasons := views.StackReasons(&off.Profile)
		rows, samples = views.Threads(&run.Profile, 0)
		rows = views.OffCPUThreads(rows, &off.Profile, reasons, run.Meta.Freq, n, on)
		times = timeTotals(&off.Profile, reasons, views.Filter{})
	} else {
		rows, samples = views.Threads(&run.Profile, n)
	}
	if rows == nil {
		rows = []views.ThreadRow{}
	}
	return api.Threads{Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Window: win, Transform: tr, Samples: samples, Rows: api.ThreadRows(rows), Time: times}, nil
}
