package export

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

// WritePprof writes the run as a gzip'd pprof profile (profile.proto), for go tool pprof.
//
// Each entry becomes a sample with two values, samples/count and cpu/nanoseconds (count
// times the sampling period), labelled pid, tid (numeric), thread (the thread's name) and,
// for samples taken inside spans, span (the innermost span's name).
// Each location of the run is a location: its address (the sampled instruction for a leaf,
// the call instruction for a caller: the return address minus one), its mapping, and its
// lines, innermost inlined function first, each with its source line. Mappings are the
// image segments the run's code lay in, with their address ranges, file offsets, paths and
// build-ids, so pprof finds the binaries (-disasm) and the sources (-list); the recorded
// program's own image comes first (pprof names the profile after it). JIT'd code is in
// mappings named [jit], the kernel in one named [kernel.kallsyms]; both are ranged over the
// addresses sampled in them, split where a range would overlap another mapping, so no two
// mappings overlap (but those of different processes of a system-wide run may). The
// frames off-CPU stacks begin with (runnable, the thread woken, no stack: image [sched])
// are code of no image: their locations have no mapping and address 0. Runs saved before
// stax kept locations have address 0 everywhere but at the leaves (an entry's leaf
// address), and one mapping per image, without ranges.
//
// A run of several events (stax record -e A,B) has a value per event after those of its
// first (the period and the default sample type stay the first's): cpu/nanoseconds for
// cpu-clock, task-clock/nanoseconds for task-clock, EVENT/count for the others, each
// sample worth its count times the event's weight in its own event's value and 0 in the
// others; each sample is labelled event, and samples/count counts every event's samples.
// A run with counters read with its samples (stax record --counters) has a value per
// counter after those, what the counters counted with the sample's samples (0 for the
// other events' and the off-CPU samples): NAME/count, or NAME/nanoseconds for task-clock
// and cpu-clock; a counter named as one of the values before it is NAME-counter. A window
// of a run whose series keeps no counters (recorded before it did) has no counter values.
func WritePprof(w io.Writer, run *store.Run) error {
	p, err := Pprof(run)
	if err != nil {
		return err
	}
	return p.Write(w)
}

// PprofValues says which of a pprof profile's sample values are whose.
type PprofValues struct {
	// Events are the index in Sample.Value of each event's value, in the order of the
	// run's events (Meta.Events), EventNames their names (as the samples' event labels
	// have them) and Periods what a sample of each stands for in its value's unit; one for
	// a run of one event (whose samples are all its). In a run of several, each sample is
	// labelled event.
	Events     []int
	EventNames []string
	Periods    []int64
	// Counters are the index of each counter's value (Meta.Counters); none when the
	// samples have no counters.
	Counters []int
}

// Pprof builds the pprof profile of the run (see WritePprof).
func Pprof(run *store.Run) (*profile.Profile, error) {
	p, _, err := PprofWithValues(run)
	return p, err
}

// PprofWithValues builds the pprof profile of the run (see WritePprof), and says which of
// its values are whose.
func PprofWithValues(run *store.Run) (*profile.Profile, PprofValues, error) {
	var vals PprofValues
	if err := check(run); err != nil {
		return nil, vals, err
	}
	events := run.Meta.Events
	multi := len(events) > 1
	period := int64(periodNs(&run.Meta))
	cpuType := &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
	evType, evPer, counted := eventValue(&run.Meta) // an event that counts no time: no off-CPU time beside it
	if counted {
		cpuType, period = evType, evPer
	}
	// With off-CPU time, the blocked stacks are samples too, after the CPU ones (the first
	// cpuStacks stacks), with values off_cpu and wall.
	cpuStacks := -1
	var reasons []uint8
	var on *views.OnCPUTime // the threads' time on CPU from the switch records
	inSpans := spanCounts(run)
	if run.OffCPU != nil && !counted {
		if err := run.OffCPU.CheckIndexes(); err != nil {
			return nil, vals, fmt.Errorf("export: off-CPU: %w", err)
		}
		if run.Meta.OffCPU != nil {
			on = views.NewOnCPUTime(run.Meta.OffCPU.OnCPU, firstEvent(&run.Profile, multi))
		}
		merged, n := views.WallProfile(&run.Profile, run.OffCPU, 1, nil)
		r := *run
		r.Profile = *merged
		run, cpuStacks, reasons = &r, n, views.WallReasons(merged, n)
	}
	prof := &run.Profile
	out := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "samples", Unit: "count"},
			cpuType,
		},
		DefaultSampleType: cpuType.Type,
		PeriodType:        &profile.ValueType{Type: cpuType.Type, Unit: cpuType.Unit},
		Period:            period,
	}
	if !run.Meta.Start.IsZero() {
		out.TimeNanos = run.Meta.Start.UnixNano()
		if !run.Meta.End.IsZero() && run.Meta.End.After(run.Meta.Start) {
			out.DurationNanos = run.Meta.End.Sub(run.Meta.Start).Nanoseconds()
		}
	}
	if cpuStacks >= 0 {
		out.SampleType = append(out.SampleType, &profile.ValueType{Type: "off_cpu", Unit: "nanoseconds"}, &profile.ValueType{Type: "wall", Unit: "nanoseconds"})
	}
	vals.Events, vals.Periods = []int{1}, []int64{period}
	if len(events) > 0 {
		vals.EventNames = []string{cleanText(events[0].Name)}
	} else if run.Meta.Event != "" {
		vals.EventNames = []string{cleanText(run.Meta.Event)}
	}
	// The other events' values, each worth its weight a sample.
	var weights []int64
	if multi {
		weights = make([]int64, len(events))
		for i, e := range events[1:] {
			vals.Events = append(vals.Events, len(out.SampleType))
			vals.EventNames = append(vals.EventNames, cleanText(e.Name))
			out.SampleType = append(out.SampleType, uniqueType(out.SampleType, otherEventType(cleanText(e.Name)), cleanText(e.Name)))
			weights[i+1] = eventWeight(e)
			vals.Periods = append(vals.Periods, weights[i+1])
		}
	}
	if n := len(run.Meta.Counters); n > 0 && slices.ContainsFunc(prof.Entries, func(e agg.Entry) bool { return len(e.Counters) == n }) {
		for _, c := range run.Meta.Counters {
			vals.Counters = append(vals.Counters, len(out.SampleType))
			out.SampleType = append(out.SampleType, uniqueType(out.SampleType, counterType(cleanText(c.Name)), cleanText(c.Name)+"-counter"))
		}
	}
	// Values from exact on are split among spans in proportion, to the unit.
	exact := len(out.SampleType)
	if len(vals.Counters) > 0 {
		exact = vals.Counters[0]
	}
	switch {
	case multi:
		names := make([]string, len(events))
		for i, e := range events {
			names[i] = cleanText(e.Name)
		}
		out.Comments = append(out.Comments, "events: "+strings.Join(names, ", "))
	case run.Meta.Event != "":
		out.Comments = append(out.Comments, "event: "+cleanText(run.Meta.Event))
	}
	if len(run.Meta.Command) > 0 {
		out.Comments = append(out.Comments, "command: "+cleanText(strings.Join(run.Meta.Command, " ")))
	}

	x := &pprofBuilder{run: run, out: out, byKey: map[mappingKey]*profile.Mapping{}, funcs: map[funcKey]*profile.Function{},
		frameFuncs: make([]*profile.Function, len(prof.Frames)), locs: make([]*profile.Location, len(prof.Locations)),
		leafLocs: map[leafKey]*profile.Location{}, runMappings: make([]*profile.Mapping, len(prof.Mappings)),
		byContent: map[string]*profile.Location{}}
	for _, c := range run.Code {
		if c.Path != "" && c.BuildID != "" {
			if x.buildIDs == nil {
				x.buildIDs = map[string]string{}
			}
			x.buildIDs[c.Path] = c.BuildID
			x.buildIDs[filepath.Base(c.Path)] = c.BuildID
		}
	}
	names := threadNames(prof)
	for _, e := range prof.Entries {
		if e.Count == 0 {
			continue
		}
		stack := prof.Stacks[e.Stack]
		offStack := cpuStacks >= 0 && int(e.Stack) >= cpuStacks
		s := &profile.Sample{
			Value:    make([]int64, 2, len(out.SampleType)),
			NumLabel: map[string][]int64{"pid": {int64(e.Pid)}, "tid": {int64(e.Tid)}},
		}
		s.Value[0] = int64(e.Count)
		if e.Event == 0 {
			s.Value[1] = int64(e.Count) * period
		}
		if cpuStacks >= 0 {
			switch {
			case offStack:
				s.Value = append(s.Value[:0], 0, 0, int64(e.Count), int64(e.Count))
			case e.Event == 0:
				if ps, ok := on.PerSample(e.Tid); ok {
					// The thread's time on CPU from the switch records, shared by its samples.
					s.Value[1] = int64(float64(e.Count)*ps + 0.5)
				}
				s.Value = append(s.Value, 0, s.Value[1])
			default:
				s.Value = append(s.Value, 0, 0)
			}
		}
		for i := 1; i < len(weights); i++ {
			var v int64
			if !offStack && e.Event == uint32(i) {
				v = int64(e.Count) * weights[i]
			}
			s.Value = append(s.Value, v)
		}
		for j := range vals.Counters {
			var v int64
			if !offStack && j < len(e.Counters) {
				v = int64(min(e.Counters[j], math.MaxInt64))
			}
			s.Value = append(s.Value, v)
		}
		if len(stack) > 0 {
			s.Location = make([]*profile.Location, len(stack))
			for i, lid := range stack {
				if i == 0 && prof.Locations[lid].Addr == 0 && e.Leaf != 0 && !x.marker(lid) {
					s.Location[i] = x.leafLocation(lid, e.Leaf)
				} else {
					s.Location[i] = x.location(lid)
				}
			}
		}
		if name := names[threadKey{e.Pid, e.Tid}]; name != "" {
			s.Label = map[string][]string{"thread": {cleanText(name)}}
		}
		if multi && !offStack && int(e.Event) < len(events) {
			if s.Label == nil {
				s.Label = map[string][]string{}
			}
			s.Label["event"] = []string{cleanText(events[e.Event].Name)}
		}
		if cpuStacks >= 0 && int(e.Stack) >= cpuStacks && int(e.Stack) < len(reasons) {
			if s.Label == nil {
				s.Label = map[string][]string{}
			}
			s.Label["reason"] = []string{views.Reasons[reasons[e.Stack]]}
		}
		out.Sample = append(out.Sample, splitBySpan(s, inSpans.of(e), e.Count, exact)...)
	}
	x.rangeMappings()
	x.splitOverlaps()
	mainFirst(out, run)
	if err := out.CheckValid(); err != nil {
		return nil, vals, err
	}
	return out, vals, nil
}

// firstEvent is p with the samples of the run's first event alone when multi (a run of
// several events), p itself otherwise: the first event's samples are those the threads'
// time on CPU is shared among.
func firstEvent(p *agg.Profile, multi bool) *agg.Profile {
	if !multi {
		return p
	}
	q := &agg.Profile{}
	for _, e := range p.Entries {
		if e.Event == 0 {
			q.Entries = append(q.Entries, e)
		}
	}
	return q
}

// uniqueType is vt, or where a type before it has its name, vt named alt (then alt with
// a number): pprof picks values by their type's name (-sample_index).
func uniqueType(types []*profile.ValueType, vt *profile.ValueType, alt string) *profile.ValueType {
	taken := func(name string) bool {
		return slices.ContainsFunc(types, func(t *profile.ValueType) bool { return t.Type == name })
	}
	if !taken(vt.Type) {
		return vt
	}
	name := alt
	for n := 2; taken(name); n++ {
		name = alt + "-" + strconv.Itoa(n)
	}
	return &profile.ValueType{Type: name, Unit: vt.Unit}
}

// mappingKey identifies a pprof mapping: a range of an image (the same in every process
// that maps it there), or code ranged only by what was sampled: a process's JIT code, the
// kernel, an image of a run saved without mappings.
type mappingKey struct {
	start, limit, offset uint64
	file, buildID        string
	pid                  uint32 // JIT code only
}

type funcKey struct{ name, file, image string }

type leafKey struct {
	loc  uint32
	addr uint64
}

// pprofBuilder makes the pprof tables of a run once each.
type pprofBuilder struct {
	run         *store.Run
	out         *profile.Profile
	byKey       map[mappingKey]*profile.Mapping
	runMappings []*profile.Mapping // by the run's mapping id - 1
	unranged    []*profile.Mapping // mappings to range over their locations
	buildIDs    map[string]string  // image path or name -> build-id, from the run's code
	funcs       map[funcKey]*profile.Function
	frameFuncs  []*profile.Function
	locs        []*profile.Location
	leafLocs    map[leafKey]*profile.Location
	byContent   map[string]*profile.Location // by mapping, address and lines: one per process may be the same
	key         []byte
}

func (x *pprofBuilder) mapping(k mappingKey) *profile.Mapping {
	if m, ok := x.byKey[k]; ok {
		return m
	}
	m := &profile.Mapping{ID: uint64(len(x.out.Mapping) + 1), Start: k.start, Limit: k.limit, Offset: k.offset,
		File: cleanText(k.file), BuildID: k.buildID, HasFunctions: true, HasFilenames: true, HasLineNumbers: true, HasInlineFrames: true}
	if m.BuildID == "" {
		m.BuildID = x.buildIDs[k.file]
	}
	x.byKey[k] = m
	x.out.Mapping = append(x.out.Mapping, m)
	if k.limit == 0 {
		x.unranged = append(x.unranged, m)
	}
	return m
}

// locMapping is the mapping of location lid: the run's own, or, for a run saved without
// mappings, one per image named after its outermost function's.
func (x *pprofBuilder) locMapping(lid uint32) *profile.Mapping {
	p := &x.run.Profile
	loc := &p.Locations[lid]
	if loc.Mapping == 0 {
		return x.mapping(mappingKey{file: imageName(&p.Frames[loc.Outer()])})
	}
	if m := x.runMappings[loc.Mapping-1]; m != nil {
		return m
	}
	rm := &p.Mappings[loc.Mapping-1]
	k := mappingKey{start: rm.Start, limit: rm.Limit, offset: rm.Offset, file: rm.File, buildID: rm.BuildID}
	switch {
	case rm.File == "[jit]":
		k = mappingKey{file: rm.File, pid: rm.Pid}
	case rm.Limit <= rm.Start:
		k = mappingKey{file: rm.File, buildID: rm.BuildID}
	}
	m := x.mapping(k)
	x.runMappings[loc.Mapping-1] = m
	return m
}

func (x *pprofBuilder) function(id uint32) *profile.Function {
	if fn := x.frameFuncs[id]; fn != nil {
		return fn
	}
	f := &x.run.Profile.Frames[id]
	k := funcKey{funcName(f), f.File, imageName(f)}
	fn := x.funcs[k]
	if fn == nil {
		fn = &profile.Function{ID: uint64(len(x.out.Function) + 1), Name: cleanText(k.name), SystemName: cleanText(k.name),
			Filename: cleanText(f.File), StartLine: int64(f.Line)}
		x.funcs[k] = fn
		x.out.Function = append(x.out.Function, fn)
	}
	x.frameFuncs[id] = fn
	return fn
}

// marker says whether location lid is one of the frames an off-CPU stack begins with
// (agg.ImageSched): no code, so no mapping and no address.
func (x *pprofBuilder) marker(lid uint32) bool {
	p := &x.run.Profile
	loc := &p.Locations[lid]
	return loc.Mapping == 0 && len(loc.Lines) > 0 && p.Frames[loc.Outer()].Image == agg.ImageSched
}

func (x *pprofBuilder) newLocation(lid uint32, addr uint64) *profile.Location {
	loc := &x.run.Profile.Locations[lid]
	var m *profile.Mapping
	var mid uint64
	if x.marker(lid) {
		addr = 0
	} else {
		m = x.locMapping(lid)
		mid = m.ID
	}
	x.key = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(x.key[:0], mid), addr)
	for _, ln := range loc.Lines {
		x.key = binary.LittleEndian.AppendUint64(x.key, x.function(ln.Func).ID)
		x.key = binary.LittleEndian.AppendUint32(x.key, uint32(ln.Line))
	}
	if l, ok := x.byContent[string(x.key)]; ok {
		return l
	}
	l := &profile.Location{ID: uint64(len(x.out.Location) + 1), Mapping: m, Address: addr}
	for _, ln := range loc.Lines {
		l.Line = append(l.Line, profile.Line{Function: x.function(ln.Func), Line: int64(ln.Line)})
	}
	x.out.Location = append(x.out.Location, l)
	x.byContent[string(x.key)] = l
	return l
}

func (x *pprofBuilder) location(lid uint32) *profile.Location {
	if l := x.locs[lid]; l != nil {
		return l
	}
	l := x.newLocation(lid, x.run.Profile.Locations[lid].Addr)
	x.locs[lid] = l
	return l
}

// leafLocation is location lid at the leaf address of an entry, for runs saved before
// locations had addresses.
func (x *pprofBuilder) leafLocation(lid uint32, addr uint64) *profile.Location {
	k := leafKey{lid, addr}
	if l, ok := x.leafLocs[k]; ok {
		return l
	}
	l := x.newLocation(lid, addr)
	x.leafLocs[k] = l
	return l
}

// rangeMappings gives the mappings no range was known for (JIT code, the kernel) the range
// of the addresses sampled in them.
func (x *pprofBuilder) rangeMappings() {
	if len(x.unranged) == 0 {
		return
	}
	lo := map[*profile.Mapping]uint64{}
	hi := map[*profile.Mapping]uint64{}
	for _, l := range x.out.Location {
		if l.Address == 0 || l.Mapping == nil || l.Mapping.Limit != 0 {
			continue
		}
		if v, ok := lo[l.Mapping]; !ok || l.Address < v {
			lo[l.Mapping] = l.Address
		}
		hi[l.Mapping] = max(hi[l.Mapping], l.Address+1)
	}
	for _, m := range x.unranged {
		if h, ok := hi[m]; ok {
			m.Start, m.Limit = lo[m], h
		}
	}
}

// splitOverlaps splits each mapping ranged over the addresses sampled in it (JIT code, the
// kernel) where its range would hold another mapping's start: one mapping per run of its
// addresses between other mappings, so that no mapping overlaps another. pprof finds a
// location's mapping by address, and titles the profile after the first.
func (x *pprofBuilder) splitOverlaps() {
	if len(x.unranged) == 0 {
		return
	}
	sampled := map[*profile.Mapping]bool{}
	for _, m := range x.unranged {
		sampled[m] = true
	}
	var starts []uint64 // of the mappings with ranges of their own
	for _, m := range x.out.Mapping {
		if !sampled[m] && m.Limit > m.Start {
			starts = append(starts, m.Start)
		}
	}
	if len(starts) == 0 {
		return
	}
	slices.Sort(starts)
	locs := map[*profile.Mapping][]*profile.Location{}
	for _, l := range x.out.Location {
		if l.Mapping != nil && sampled[l.Mapping] && l.Address != 0 {
			locs[l.Mapping] = append(locs[l.Mapping], l)
		}
	}
	for _, m := range x.unranged {
		ls := locs[m]
		if len(ls) == 0 {
			continue
		}
		slices.SortFunc(ls, func(a, b *profile.Location) int { return cmpUint(a.Address, b.Address) })
		// piece is the mapping of the addresses from ls[first] to ls[i-1].
		piece, first := m, 0
		cut := func(i int) {
			piece.Start, piece.Limit = ls[first].Address, ls[i-1].Address+1
			for _, l := range ls[first:i] {
				l.Mapping = piece
			}
		}
		for i := 1; i < len(ls); i++ {
			// Another mapping starts between the two addresses: a new piece.
			j, _ := slices.BinarySearch(starts, ls[i-1].Address+1)
			if j < len(starts) && starts[j] <= ls[i].Address {
				cut(i)
				c := *m
				c.ID = uint64(len(x.out.Mapping) + 1)
				piece, first = &c, i
				x.out.Mapping = append(x.out.Mapping, piece)
			}
		}
		cut(len(ls))
	}
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// mainFirst puts the recorded program's own image first among the mappings: pprof names
// the profile after its first mapping (see mainImage).
func mainFirst(out *profile.Profile, run *store.Run) {
	if m := mainImage(out, run); m != nil {
		i := slices.Index(out.Mapping, m)
		copy(out.Mapping[1:i+1], out.Mapping[:i])
		out.Mapping[0] = m
	}
	for i, m := range out.Mapping {
		m.ID = uint64(i + 1)
	}
}

// mainImage is the mapping of the recorded program's executable: the image named as the
// command's first word is (python3: /usr/bin/python3, whose link leads to python3.11),
// else the image where most of the main thread's stacks start (its _start), unless that is
// a shared library.
func mainImage(out *profile.Profile, run *store.Run) *profile.Mapping {
	if len(run.Meta.Command) > 0 {
		names := []string{filepath.Base(run.Meta.Command[0])}
		if path, err := exec.LookPath(run.Meta.Command[0]); err == nil {
			if real, err := filepath.EvalSymlinks(path); err == nil {
				names = append(names, filepath.Base(real))
			}
		}
		for _, name := range names {
			for _, m := range out.Mapping {
				if filepath.Base(m.File) == name {
					return m
				}
			}
		}
	}
	pid := int64(run.Meta.Pid)
	if pid == 0 {
		return nil
	}
	roots := map[*profile.Mapping]int64{}
	for _, s := range out.Sample {
		if len(s.Location) == 0 || len(s.NumLabel["tid"]) != 1 || s.NumLabel["tid"][0] != pid {
			continue
		}
		for i := len(s.Location) - 1; i >= 0; i-- {
			if m := s.Location[i].Mapping; m != nil && m.Limit > m.Start && !strings.HasPrefix(m.File, "[") {
				roots[m] += max(s.Value[0], 1)
				break
			}
		}
	}
	var best *profile.Mapping
	for m, n := range roots {
		if best == nil || n > roots[best] || n == roots[best] && m.ID < best.ID {
			best = m
		}
	}
	if best != nil && strings.Contains(filepath.Base(best.File), ".so") {
		return nil
	}
	return best
}

// splitBySpan labels s's samples taken inside spans with the innermost span's name
// ("span"): one sample per span name, and s itself for the rest. The values before exact
// are the count times a constant (a period, 0, ...); those from exact on (counters) are
// shared in proportion to the samples, the rounding left to the last.
func splitBySpan(s *profile.Sample, in map[string]uint64, count uint64, exact int) []*profile.Sample {
	if len(in) == 0 || count == 0 {
		return []*profile.Sample{s}
	}
	given := make([]int64, len(s.Value)) // of the values from exact on
	scaled := func(n uint64, last bool) []int64 {
		v := make([]int64, len(s.Value))
		for i, x := range s.Value {
			switch {
			case i < exact:
				v[i] = x / int64(count) * int64(n)
			case last:
				v[i] = x - given[i]
			default:
				hi, lo := bits.Mul64(uint64(x), n)
				q, _ := bits.Div64(hi, lo, count) // n <= count: no overflow
				v[i] = int64(q)
				given[i] += v[i]
			}
		}
		return v
	}
	names := make([]string, 0, len(in))
	for name := range in {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]*profile.Sample, 0, len(in)+1)
	left := count
	for _, name := range names {
		n := min(in[name], left)
		if n == 0 {
			continue
		}
		left -= n
		c := *s
		c.Value = scaled(n, left == 0)
		c.Label = map[string][]string{"span": {cleanText(name)}}
		for k, v := range s.Label {
			c.Label[k] = v
		}
		out = append(out, &c)
	}
	if left > 0 {
		s.Value = scaled(left, true)
		out = append(out, s)
	}
	return out
}
