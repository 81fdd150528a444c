package agg

import (
	"sync"
)

// Resolver turns raw callchains into frames. The recorder's symbolizer implements it.
type Resolver interface {
	// Resolve appends the sites of a raw callchain (kernel and user parts with perf's
	// context markers) of pid at time t to out, leaf first: each machine frame's functions,
	// inlined ones first, with its address, mapping and source lines (see Site). It returns
	// out with the sites appended, the index in it of the leaf's outermost function (-1 if
	// unresolved), the leaf address, and how many machine frames stayed unresolved.
	Resolve(pid uint32, t uint64, chain []uint64, out []Site) (sites []Site, leafFunc int, leaf uint64, unresolved int)
	// Version grows whenever new symbol knowledge (JIT records, perf maps) arrives, so stacks
	// with unresolved frames are tried again.
	Version() uint64
}

type rawKey struct {
	Tid, Pid uint32
	Stack    uint32
	Gen      uint32
	Event    uint32 // the samples' event (Entry.Event)
}

type keyState struct {
	rawKey
	count      uint64
	time       uint64
	counters   int32 // where its counters' sums start in Run.counterSums, -1: none
	rstack     int32 // resolved stack id, -1 until resolved
	leafFunc   int32
	leaf       uint64
	unresolved int32
	version    uint64
	alias      uint32 // folded (fold.go): its samples count under keys[alias-1]; 0: not
}

// Run aggregates the samples of one recording. AddSample is the hot path: it interns the
// raw stack and counts; names are resolved later, once per distinct (thread, stack, address
// space generation), by Resolve. Safe for concurrent use.
//
// Lock order: resolveMu, then mu. mu guards every field below it and is held only for
// bookkeeping, never while a Resolver runs, so AddSample never waits on symbol loading;
// resolveMu lets one Resolve run at a time.
type Run struct {
	resolveMu sync.Mutex
	scratch   []Site // an arena for the sites of one Resolve, kept when small; guarded by resolveMu

	mu       sync.Mutex
	raw      *StackTable
	keyIndex map[rawKey]uint32
	keys     []keyState
	pending  int // keys[pending:] were never resolved

	frames      *FrameTable
	mappings    map[Mapping]uint32 // id + 1
	mapList     []Mapping
	lastMapping uint32
	locs        *locationTable
	rstacks     *StackTable // location ids

	samples         uint64
	counterSums     []uint64 // counters.go
	numCounters     int
	lastKey         rawKey
	unresolvedFrame uint64
	ids             []uint64
	fids            []uint32 // frame id of each site being interned
	lines           []Line
	newLeaves       []LeafRef
	series          seriesWriter
	fold            foldState
	traces          []*traceRing // traces.go
}

// LeafRef is the first sample of a newly named stack: where the code at its leaf is. One
// function name can stand for many pieces of code (a JIT compiles a function again, code
// is reused at one address), so refs come per stack, not per name; the recorder keeps the
// code once per distinct piece.
type LeafRef struct {
	Frame uint32 // the leaf's outermost function, or its unnamed frame when Unresolved
	Pid   uint32
	Addr  uint64
	Time  uint64
	// Unresolved: no source named the leaf address (yet); Frame is the frame that stands
	// for it (an image+offset or [unknown] address row).
	Unresolved bool
}

// NewRun returns an empty run.
func NewRun() *Run {
	return &Run{
		raw:      NewStackTable(),
		keyIndex: map[rawKey]uint32{},
		frames:   NewFrameTable(),
		mappings: map[Mapping]uint32{},
		locs:     newLocationTable(),
		rstacks:  NewStackTable(),
	}
}

// AddSample counts one sample taken at time t on cpu. chain is copied if new.
func (r *Run) AddSample(pid, tid, cpu uint32, t uint64, gen uint32, chain []uint64) {
	r.AddEventSample(0, pid, tid, cpu, t, gen, chain)
}

// AddEventSample counts one sample of the run's event number event (Entry.Event).
func (r *Run) AddEventSample(event, pid, tid, cpu uint32, t uint64, gen uint32, chain []uint64) {
	r.AddCountedSample(event, pid, tid, cpu, t, gen, chain, nil)
}

// AddCountedSample counts one sample of event with the counters read with it (the
// events each counted since the thread's sample before; counter_sums.go).
func (r *Run) AddCountedSample(event, pid, tid, cpu uint32, t uint64, gen uint32, chain []uint64, counters []uint64) {
	r.mu.Lock()
	r.addLocked(event, pid, tid, cpu, t, gen, chain, counters)
	if len(counters) > 0 {
		r.addCounters(r.keyIndex[r.lastKey], counters)
	}
	r.mu.Unlock()
}

// CountersPerSample makes the run keep, with each sample's time, the n counters read with
// it (AddCountedSample), so that a window of the run has them (Profile.WindowWhere). It
// is called before the first sample; later, it does nothing.
func (r *Run) CountersPerSample(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.samples == 0 && n >= 0 && n <= MaxSeriesCounters {
		r.series.s.Counters = n
	}
}

func (r *Run) addLocked(event, pid, tid, cpu uint32, t uint64, gen uint32, chain []uint64, counters []uint64) {
	k := rawKey{Tid: tid, Pid: pid, Stack: r.raw.Intern(chain), Gen: gen, Event: event}
	r.lastKey = k
	r.samples++
	i, ok := r.keyIndex[k]
	if ok {
		r.keys[i].count++
	} else {
		i = uint32(len(r.keys))
		r.keyIndex[k] = i
		r.keys = append(r.keys, keyState{rawKey: k, count: 1, time: t, rstack: -1, leafFunc: -1, counters: -1})
	}
	r.series.add(t, i, cpu, counters)
}

// Samples is the number of samples counted.
func (r *Run) Samples() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.samples
}

// Stats describes the run's size.
type Stats struct {
	Samples          uint64 `json:"samples"`
	DistinctStacks   int    `json:"distinct_stacks"`
	Keys             int    `json:"keys"`              // keys held: those folded into others are not counted
	UnresolvedFrames uint64 `json:"unresolved_frames"` // frames (per distinct stack) no source could name
	SeriesBytes      int    `json:"series_bytes"`      // memory of the per-sample time series
	NamedKeys        int    `json:"named_keys"`        // keys resolved so far
}

// Stats returns counters.
func (r *Run) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	var unres uint64
	named := 0
	for i := range r.keys {
		if r.keys[i].rstack >= 0 && r.keys[i].alias == 0 {
			unres += uint64(r.keys[i].unresolved)
			named++
		}
	}
	return Stats{Samples: r.samples, DistinctStacks: r.raw.Len(), Keys: len(r.keys) - r.fold.aliases, UnresolvedFrames: unres,
		SeriesBytes: r.series.s.Bytes(), NamedKeys: named}
}

// Resolve names every stack not yet named, and tries again those with unresolved frames if
// the resolver learned something since. It returns the frames first seen in this call.
// The resolver runs without the run's lock: samples keep being added meanwhile.
func (r *Run) Resolve(res Resolver) []Frame {
	r.resolveMu.Lock()
	defer r.resolveMu.Unlock()
	version := res.Version()

	// Take the keys to name, with copies of their raw stacks.
	type job struct {
		key      int
		pid      uint32
		time     uint64
		chain    []uint64
		sites    []Site
		leafFunc int
		leaf     uint64
		unres    int
	}
	var jobs []job
	r.mu.Lock()
	for i := range r.keys {
		k := &r.keys[i]
		if k.rstack >= 0 && (k.unresolved == 0 || k.version == version) || k.alias != 0 || IsFolded(k.Pid) {
			continue // named, or folded: a folded process is not named again
		}
		jobs = append(jobs, job{key: i, pid: k.Pid, time: k.time, chain: append([]uint64(nil), r.raw.Get(k.Stack)...)})
	}
	r.mu.Unlock()
	if len(jobs) == 0 {
		return nil
	}

	// Jobs are named in batches: the resolver runs for a batch without the run's lock, its
	// sites appended to one arena (a job keeps its part, which stays valid when the arena
	// grows), then the batch is interned under the lock. The arena is reused.
	r.mu.Lock()
	before := len(r.frames.Frames)
	r.mu.Unlock()
	const batch = 256
	for lo := 0; lo < len(jobs); lo += batch {
		hi := min(lo+batch, len(jobs))
		arena := r.scratch[:0]
		for i := lo; i < hi; i++ {
			j := &jobs[i]
			at := len(arena)
			sites, leafFunc, leaf, unresolved := res.Resolve(j.pid, j.time, j.chain, arena)
			j.sites = sites[at:len(sites):len(sites)]
			arena = sites
			if leafFunc >= 0 {
				leafFunc -= at
			}
			j.leafFunc, j.leaf, j.unres = leafFunc, leaf, unresolved
		}
		r.mu.Lock()
		for i := lo; i < hi; i++ {
			r.name(jobs[i].sites, jobs[i].key, jobs[i].leafFunc, jobs[i].leaf, jobs[i].unres, version)
			jobs[i].sites, jobs[i].chain = nil, nil
		}
		r.mu.Unlock()
		if cap(arena) <= 1<<16 {
			r.scratch = arena[:0]
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Frame(nil), r.frames.Frames[before:]...)
}

// name interns the sites of key's stack and sets its resolved stack. r.mu is held.
func (r *Run) name(sites []Site, key, leafFunc int, leaf uint64, unres int, version uint64) {
	r.fids = r.fids[:0]
	for i := range sites {
		r.fids = append(r.fids, r.frames.Intern(sites[i].Frame))
	}
	r.ids = r.ids[:0]
	for lo := 0; lo < len(sites); {
		hi := machineFrame(sites, lo)
		r.lines = r.lines[:0]
		for i := lo; i < hi; i++ {
			r.lines = append(r.lines, Line{Func: r.fids[i], Line: lineOf(sites[i].Line)})
		}
		s := &sites[lo]
		r.ids = append(r.ids, uint64(r.locs.intern(s.Addr, r.mapping(&s.Mapping), r.lines)))
		lo = hi
	}
	k := &r.keys[key]
	k.rstack = int32(r.rstacks.Intern(r.ids))
	k.leafFunc = -1
	if leafFunc >= 0 && leafFunc < len(r.fids) {
		k.leafFunc = int32(r.fids[leafFunc])
	}
	k.leaf = leaf
	k.unresolved = int32(unres)
	k.version = version
	switch {
	case k.leafFunc >= 0:
		r.newLeaves = append(r.newLeaves, LeafRef{Frame: uint32(k.leafFunc), Pid: k.Pid, Addr: leaf, Time: k.time})
	case len(r.fids) > 0 && leaf != 0:
		r.newLeaves = append(r.newLeaves, LeafRef{Frame: r.fids[0], Pid: k.Pid, Addr: leaf, Time: k.time, Unresolved: true})
	}
}

// mapping returns m's id + 1, 0 for none. The last mapping asked for is remembered:
// consecutive frames are often in one image.
func (r *Run) mapping(m *Mapping) uint32 {
	if r.lastMapping != 0 && *m == r.mapList[r.lastMapping-1] {
		return r.lastMapping
	}
	if *m == (Mapping{}) {
		return 0
	}
	id, ok := r.mappings[*m]
	if !ok {
		r.mapList = append(r.mapList, *m)
		id = uint32(len(r.mapList))
		r.mappings[*m] = id
	}
	r.lastMapping = id
	return id
}

// TakeNewLeaves returns the leaves of the stacks named since the last call (a stack named
// again, when new symbols arrived, gives its leaf again).
func (r *Run) TakeNewLeaves() []LeafRef {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.newLeaves
	r.newLeaves = nil
	return out
}

// Profile returns a resolved snapshot of the run. Call Resolve first; keys not yet resolved
// are left out.
func (r *Run) Profile(threads []ThreadInfo) *Profile {
	p := r.profile(threads, &ProfileBuffers{})
	p.ExpandStacks()
	return p
}

// ProfileBuffers keeps the memory of the profiles ProfileInto builds, for the next: a
// recorder writes its run every few seconds, and each copy would otherwise be garbage in
// proportion to the distinct stacks.
type ProfileBuffers struct {
	p      Profile
	ids    []uint32
	lines  []Line
	order  []int32
	merged map[mergeKey]int32
}

type mergeKey struct {
	tid, stack uint32
	leaf       uint64
	event      uint32
}

// ProfileInto is Profile for a caller that writes the profile out and drops it: it builds
// the profile in b's memory, so it is valid until the next call with b, and leaves its
// FrameStacks underived (a view derives them when it needs them).
func (r *Run) ProfileInto(threads []ThreadInfo, b *ProfileBuffers) *Profile {
	return r.profile(threads, b)
}

func (r *Run) profile(threads []ThreadInfo, b *ProfileBuffers) *Profile {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := &b.p
	p.Frames = append(p.Frames[:0], r.frames.Frames...)
	p.Mappings = append(p.Mappings[:0], r.mapList...)
	p.Locations, b.lines = r.locs.locationsInto(p.Locations[:0], b.lines[:0])
	p.FrameStacks = nil
	p.Threads = threads
	p.Series = r.series.snapshot()
	p.View = Granularity{}
	p.KeyEntry = resize(p.KeyEntry, len(r.keys))
	b.ids = resize(b.ids, len(r.rstacks.data))
	for i, v := range r.rstacks.data {
		b.ids[i] = uint32(v)
	}
	p.Stacks = resize(p.Stacks, r.rstacks.Len())
	for i := range p.Stacks {
		lo, hi := r.rstacks.offs[i], r.rstacks.offs[i+1]
		p.Stacks[i] = b.ids[lo:hi:hi]
	}
	if b.merged == nil {
		b.merged = make(map[mergeKey]int32, len(r.keys))
	}
	clear(b.merged)
	entries := resize(p.Entries, len(r.keys))[:0] // an entry per key at most
	for i := range r.keys {
		k := &r.keys[i]
		p.KeyEntry[i] = -1
		if k.rstack < 0 || k.alias != 0 {
			continue
		}
		mk := mergeKey{k.Tid, uint32(k.rstack), k.leaf, k.Event}
		if j, ok := b.merged[mk]; ok {
			p.KeyEntry[i] = j
			entries[j].Counters = r.mergeCounters(entries[j].Counters, k.counters)
			entries[j].Count += k.count
			if k.time < entries[j].Time {
				entries[j].Time = k.time
			}
			continue
		}
		b.merged[mk] = int32(len(entries))
		p.KeyEntry[i] = int32(len(entries))
		entries = append(entries, Entry{Tid: k.Tid, Pid: k.Pid, Stack: uint32(k.rstack), Count: k.count,
			Leaf: k.leaf, LeafFunc: k.leafFunc, Time: k.time, Event: k.Event, Counters: r.mergeCounters(nil, k.counters)})
	}
	if r.fold.aliases > 0 {
		for i := range r.keys {
			if a := r.keys[i].alias; a != 0 {
				p.KeyEntry[i] = p.KeyEntry[a-1]
			}
		}
	}
	p.Entries = entries
	b.order = sortEntriesInPlace(p.Entries, p.KeyEntry, b.order)
	return p
}

// resize is s with length n, reusing its memory when it is large enough (and then leaving
// room to grow when it is not). The elements are not cleared.
func resize[T any](s []T, n int) []T {
	switch {
	case cap(s) >= n:
		return s[:n]
	case cap(s) == 0:
		return make([]T, n)
	}
	return make([]T, n, n+n/8)
}
