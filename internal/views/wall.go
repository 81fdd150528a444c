package views

import "github.com/stax-profiler/stax/internal/agg"

// ReasonOnCPU is the reason of on-CPU time in a wall-clock profile (WallProfile).
const ReasonOnCPU = "on-cpu"

// OnCPUTime is the threads' time on CPU from the switch records (the recorder's
// store.OffCPUMeta.OnCPU), shared among each thread's samples: samples give the stacks,
// the switch records the time. A thread that runs in bursts shorter than the sampling
// period is sampled far from its share of the CPU (0.2 to 1.1 times it), while its time
// off CPU is exact.
type OnCPUTime struct {
	ns      map[uint32]uint64
	samples map[uint32]uint64
	window  bool // the samples weighed are a window's (InWindow)
}

// InWindow is o for the samples of a window of the run: each still weighs its thread's
// time on CPU over the run's samples of it, and a thread without samples in the window
// has no time on CPU there (not its whole run's).
func (o *OnCPUTime) InWindow() *OnCPUTime {
	if o == nil {
		return nil
	}
	w := *o
	w.window = true
	return &w
}

// NewOnCPUTime shares on among the samples of whole, the run's profile before any
// transform or window; nil when on is empty (a run recorded without the switch records,
// or by an older stax).
func NewOnCPUTime(on []agg.ThreadNs, whole *agg.Profile) *OnCPUTime {
	if len(on) == 0 {
		return nil
	}
	o := &OnCPUTime{ns: make(map[uint32]uint64, len(on)), samples: map[uint32]uint64{}}
	for _, t := range on {
		o.ns[t.Tid] += t.Ns
	}
	for _, e := range whole.Entries {
		o.samples[e.Tid] += e.Count
	}
	return o
}

// PerSample is what a sample of thread tid weighs, in nanoseconds: false when the thread
// has no time from the switch records, or no samples to share it.
func (o *OnCPUTime) PerSample(tid uint32) (float64, bool) {
	if o == nil {
		return 0, false
	}
	ns, ok := o.ns[tid]
	n := o.samples[tid]
	if !ok || n == 0 {
		return 0, false
	}
	return float64(ns) / float64(n), true
}

// Unsampled is the time on CPU of thread tid when it has no samples (false otherwise, or
// when it has no time from the switch records).
func (o *OnCPUTime) Unsampled(tid uint32) (uint64, bool) {
	if o == nil || o.window || o.samples[tid] != 0 {
		return 0, false
	}
	ns, ok := o.ns[tid]
	return ns, ok
}

// WallProfile is cpu's samples, each weighing nsPerSample nanoseconds, and off's time off
// CPU, in one profile whose counts are nanoseconds: a thread's time on and off CPU
// together, its wall clock while it was followed. Its first cpuStacks stacks are cpu's.
// It has no time series. With on, the samples of a thread that has time from the switch
// records weigh their share of it instead (OnCPUTime.PerSample).
func WallProfile(cpu, off *agg.Profile, nsPerSample uint64, on *OnCPUTime) (p *agg.Profile, cpuStacks int) {
	p = &agg.Profile{}
	frameIDs := map[agg.Frame]uint32{}
	frameMap := func(src *agg.Profile) []uint32 {
		m := make([]uint32, len(src.Frames))
		for i, f := range src.Frames {
			id, ok := frameIDs[f]
			if !ok {
				id = uint32(len(p.Frames))
				frameIDs[f] = id
				p.Frames = append(p.Frames, f)
			}
			m[i] = id
		}
		return m
	}
	threads := map[uint32]bool{}
	add := func(src *agg.Profile, weight uint64, on *OnCPUTime) {
		fm := frameMap(src)
		mapBase := uint32(len(p.Mappings))
		p.Mappings = append(p.Mappings, src.Mappings...)
		locBase := uint32(len(p.Locations))
		for _, l := range src.Locations {
			nl := agg.Location{Addr: l.Addr, Lines: make([]agg.Line, len(l.Lines))}
			if l.Mapping != 0 {
				nl.Mapping = l.Mapping + mapBase
			}
			for i, ln := range l.Lines {
				nl.Lines[i] = agg.Line{Func: remap(fm, ln.Func), Line: ln.Line}
			}
			p.Locations = append(p.Locations, nl)
		}
		stackBase := uint32(len(p.Stacks))
		for _, st := range src.Stacks {
			ns := make([]uint32, len(st))
			for i, l := range st {
				ns[i] = l + locBase
			}
			p.Stacks = append(p.Stacks, ns)
		}
		for _, e := range src.Entries {
			e.Stack += stackBase
			if ps, ok := on.PerSample(e.Tid); ok {
				e.Count = uint64(float64(e.Count)*ps + 0.5)
			} else {
				e.Count *= weight
			}
			if e.LeafFunc >= 0 && int(e.LeafFunc) < len(fm) {
				e.LeafFunc = int32(fm[e.LeafFunc])
			} else {
				e.LeafFunc = -1
			}
			p.Entries = append(p.Entries, e)
		}
		for _, t := range src.Threads {
			if !threads[t.Tid] {
				threads[t.Tid] = true
				p.Threads = append(p.Threads, t)
			}
		}
	}
	add(cpu, nsPerSample, on)
	cpuStacks = len(p.Stacks)
	add(off, 1, nil)
	p.SortEntries()
	p.ExpandStacks()
	return p, cpuStacks
}

func remap(m []uint32, id uint32) uint32 {
	if int(id) < len(m) {
		return m[id]
	}
	return 0
}

// WallReasons is StackReasons of a WallProfile whose first cpuStacks stacks are on CPU.
func WallReasons(p *agg.Profile, cpuStacks int) []uint8 {
	r := StackReasons(p)
	on := uint8(reasonIndex(ReasonOnCPU))
	for i := 0; i < cpuStacks && i < len(r); i++ {
		r[i] = on
	}
	return r
}

// OnlyReason is p with only the entries whose stack's reason (of reasons, StackReasons of
// p) is reason.
func OnlyReason(p *agg.Profile, reasons []uint8, reason string) *agg.Profile {
	want := uint8(reasonIndex(reason))
	q := *p
	q.Entries = make([]agg.Entry, 0, len(p.Entries))
	for _, e := range p.Entries {
		if int(e.Stack) < len(reasons) && reasons[e.Stack] == want {
			q.Entries = append(q.Entries, e)
		}
	}
	q.Series, q.KeyEntry = agg.Series{}, nil
	return &q
}

// IntervalsIn is off (an off-CPU profile) with its entries recounted from ivs (its
// intervals) clipped to [from, to): the time off CPU inside that window. Intervals of no
// stack of off are left out.
func IntervalsIn(off *agg.Profile, ivs []agg.Interval, from, to uint64) *agg.Profile {
	pids := map[uint32]uint32{}
	for _, t := range off.Threads {
		pids[t.Tid] = t.Pid
	}
	for _, e := range off.Entries {
		pids[e.Tid] = e.Pid
	}
	q := *off
	q.Series, q.KeyEntry = agg.Series{}, nil
	q.Entries = make([]agg.Entry, 0, len(off.Entries))
	index := make(map[uint64]int32, len(off.Entries))
	for _, iv := range ivs {
		if iv.Stack == agg.NoStack || int(iv.Stack) >= len(off.Stacks) {
			continue
		}
		a, b := max(iv.Start, from), min(iv.End, to)
		if b <= a {
			continue
		}
		k := uint64(iv.Tid)<<32 | uint64(iv.Stack)
		i, ok := index[k]
		if !ok {
			i = int32(len(q.Entries))
			index[k] = i
			q.Entries = append(q.Entries, agg.Entry{Tid: iv.Tid, Pid: pids[iv.Tid], Stack: iv.Stack, LeafFunc: -1})
		}
		q.Entries[i].Count += b - a
	}
	// The entries are in the order their first intervals came: the views do not need them
	// sorted by count.
	return &q
}
