package agg

import (
	"cmp"
	"slices"
	"sort"
	"strings"
)

// Frame kinds.
const (
	KindUser    = "user"
	KindKernel  = "kernel"
	KindJIT     = "jit"
	KindUnknown = "unknown"
)

// Frame is a resolved frame: one function in one image (pprof's Function). Frames are
// interned by function (name, image, kind, inlined), so samples anywhere in a function, or
// in any region of a split function, share one frame; File and Line are those first seen.
// Where each sample was in the function is its stack's locations' business.
type Frame struct {
	Func    string `json:"func"`
	Image   string `json:"image"`
	Kind    string `json:"kind"`
	Inlined bool   `json:"inlined,omitempty"`
	// File and Line locate the function where debug info exists: its file, and its first
	// line (JIT code) or 0.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Addr is set only in the rows of a view by address (see Granularity).
	Addr uint64 `json:"addr,omitempty"`
}

// Entry is a count of samples of one thread with one resolved stack.
type Entry struct {
	Tid   uint32 `json:"tid"`
	Pid   uint32 `json:"pid"`
	Stack uint32 `json:"stack"` // index into Profile.Stacks
	Count uint64 `json:"count"`
	// Leaf is the sampled address and LeafFunc the frame of the outermost (non-inline)
	// function that holds it: annotate counts per instruction from these.
	Leaf     uint64 `json:"leaf"`
	LeafFunc int32  `json:"leaf_func"` // -1 when unresolved
	// Event is the index of the samples' event in the run's events (store.Meta.Events;
	// 0: the first, or the only one).
	Event uint32 `json:"event,omitempty"`
	Time  uint64 `json:"time"` // first sample's time (CLOCK_MONOTONIC ns)
	// Counters are the sums of the counters read with its samples (stax record
	// --counters), in the order of the run's counters; nil when none were read.
	Counters []uint64 `json:"counters,omitempty"`
}

// ThreadInfo names a thread.
type ThreadInfo struct {
	Tid  uint32 `json:"tid"`
	Pid  uint32 `json:"pid"`
	Name string `json:"name"`
	// Folded: a marker (tid and pid at or above FoldBase) for the exited processes of one
	// command, folded together; how many processes.
	Folded uint64 `json:"folded,omitempty"`
}

// Profile is a resolved, aggregated run: what every view is computed from (see
// locations.go for the model).
type Profile struct {
	Frames    []Frame    `json:"frames"` // the functions
	Mappings  []Mapping  `json:"mappings,omitempty"`
	Locations []Location `json:"locations,omitempty"`
	// Stacks are location ids, leaf first. (Runs saved before locations kept frame ids
	// here: readers turn them into locations with LocateFrameStacks.)
	Stacks [][]uint32 `json:"stacks"`
	// FrameStacks are the functions (frame ids) of each of Stacks, leaf first, each inlined
	// function before the function it is inlined into: what the views by function count.
	// ExpandStacks derives them; a view of a profile without them derives them for itself.
	FrameStacks [][]uint32   `json:"-"`
	Entries     []Entry      `json:"entries"`
	Threads     []ThreadInfo `json:"threads"`
	// Series holds every sample's time, key and CPU; KeyEntry maps a key to its entry
	// (-1: not named yet). Runs saved by older versions have neither.
	Series   Series  `json:"series"`
	KeyEntry []int32 `json:"key_entry,omitempty"`
	// View is what the frames stand for: functions, or the rows of a view by source line,
	// address or image (see views.At).
	View Granularity `json:"-"`
}

// TotalSamples sums every entry.
func (p *Profile) TotalSamples() uint64 {
	var n uint64
	for _, e := range p.Entries {
		n += e.Count
	}
	return n
}

// FrameTable interns frames.
type FrameTable struct {
	ids    map[frameKey]uint32
	Frames []Frame
}

type frameKey struct {
	fn, image, kind string
	inlined         bool
}

// NewFrameTable returns an empty table.
func NewFrameTable() *FrameTable { return &FrameTable{ids: map[frameKey]uint32{}} }

// Intern returns f's id.
func (t *FrameTable) Intern(f Frame) uint32 {
	k := frameKey{f.Func, f.Image, f.Kind, f.Inlined}
	if id, ok := t.ids[k]; ok {
		if t.Frames[id].File == "" && f.File != "" {
			t.Frames[id].File, t.Frames[id].Line = f.File, f.Line
		}
		return id
	}
	id := uint32(len(t.Frames))
	t.Frames = append(t.Frames, f)
	t.ids[k] = id
	return id
}

// SortEntries orders entries by count, most first, keeping KeyEntry pointing at them: what
// a profile derived from another (a window, a transform, a merge) does once its entries
// are counted. The entries are copied first, as they may be another profile's too.
func (p *Profile) SortEntries() {
	p.Entries = slices.Clone(p.Entries) // they may be another profile's too
	sortEntriesInPlace(p.Entries, p.KeyEntry, nil)
}

// sortEntriesInPlace orders entries by count, highest first (in order among equals), and
// renumbers keyEntry to match. scratch is memory for the order, returned for reuse.
func sortEntriesInPlace(entries []Entry, keyEntry []int32, scratch []int32) []int32 {
	n := len(entries)
	scratch = resize(scratch, 2*n)
	order, moved := scratch[:n], scratch[n:]
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(i, j int32) int { return cmp.Compare(entries[j].Count, entries[i].Count) })
	for to, from := range order {
		moved[from] = int32(to)
	}
	for k, e := range keyEntry {
		if e >= 0 && int(e) < n {
			keyEntry[k] = moved[e]
		}
	}
	// Move each entry to its place along the cycles of the permutation.
	for i := range moved {
		for j := moved[i]; j != int32(i); j = moved[i] {
			entries[i], entries[j] = entries[j], entries[i]
			moved[i], moved[j] = moved[j], j
		}
	}
	return scratch
}

// HasTimes says whether the profile keeps its samples' times (runs saved by stax before
// the time series do not).
func (p *Profile) HasTimes() bool { return len(p.Series.Chunks) > 0 && len(p.KeyEntry) > 0 }

// Window returns the profile restricted to samples with from <= time < to (monotonic ns;
// to 0: no end): entry counts are recounted from the series, empty entries dropped, and
// the series keeps only the window's samples. Frames, locations, stacks and threads are
// shared with p.
func (p *Profile) Window(from, to uint64) (*Profile, error) { return p.WindowWhere(from, to, nil) }

// WindowWhere is Window keeping, of the window's samples, those keep accepts (by time and
// thread; nil: all). A sample whose entry is unknown is kept only when keep is nil.
func (p *Profile) WindowWhere(from, to uint64, keep func(time uint64, tid uint32) bool) (*Profile, error) {
	counts := make([]uint64, len(p.Entries))
	first := make([]uint64, len(p.Entries))
	nc := p.Series.Counters
	var sums []uint64 // nc per entry: what the window's samples counted
	if nc > 0 && nc <= MaxSeriesCounters {
		sums = make([]uint64, len(p.Entries)*nc)
	}
	kept := seriesWriter{s: Series{Counters: p.Series.Counters}}
	err := p.Series.Each(from, to, func(s Sample) {
		e := int32(-1)
		if int(s.Key) < len(p.KeyEntry) {
			e = p.KeyEntry[s.Key]
		}
		if keep != nil && (e < 0 || int(e) >= len(counts) || !keep(s.Time, p.Entries[e].Tid)) {
			return
		}
		kept.add(s.Time, s.Key, s.CPU, s.Counters)
		if e < 0 || int(e) >= len(counts) {
			return
		}
		if counts[e] == 0 || s.Time < first[e] {
			first[e] = s.Time
		}
		counts[e]++
		if sums != nil {
			SumCounters(sums[int(e)*nc:][:nc], s.Counters)
		}
	})
	if err != nil {
		return nil, err
	}
	out := &Profile{Frames: p.Frames, Mappings: p.Mappings, Locations: p.Locations, Stacks: p.Stacks, FrameStacks: p.FrameStacks,
		Threads: p.Threads, Series: kept.s,
		KeyEntry: make([]int32, len(p.KeyEntry))}
	index := make([]int32, len(p.Entries))
	for i, e := range p.Entries {
		index[i] = -1
		if counts[i] == 0 {
			continue
		}
		e.Count, e.Time = counts[i], first[i]
		e.Counters = nil
		if sums != nil && len(p.Entries[i].Counters) > 0 {
			e.Counters = slices.Clone(sums[i*nc:][:nc])
		}
		index[i] = int32(len(out.Entries))
		out.Entries = append(out.Entries, e)
	}
	for k, e := range p.KeyEntry {
		out.KeyEntry[k] = -1
		if e >= 0 && int(e) < len(index) {
			out.KeyEntry[k] = index[e]
		}
	}
	out.SortEntries()
	return out, nil
}

// TimeRange is the first and last sample time in the series (0, 0 when empty).
func (p *Profile) TimeRange() (first, last uint64) {
	for i := range p.Series.Chunks {
		c := &p.Series.Chunks[i]
		if c.N == 0 {
			continue
		}
		if first == 0 || c.Min < first {
			first = c.Min
		}
		last = max(last, c.Max)
	}
	return first, last
}

// AnonImage is the image of unnamed JIT frames in runs saved before those frames had the
// jit kind.
const AnonImage = "[anon]"

// Summary is what status shows of a run's samples.
type Summary struct {
	Threads        int    `json:"threads"`
	DistinctStacks int    `json:"distinct_stacks"`
	JITSamples     uint64 `json:"jit_samples"`     // samples whose leaf is JIT code
	JITUnnamed     uint64 `json:"jit_unnamed"`     // of those, no JIT source names the leaf
	UnknownSamples uint64 `json:"unknown_samples"` // samples whose leaf has no name
	// Unsymbolized counts, by image, the samples whose leaf is native code no symbol names
	// (an image+0xOFF row), most first.
	Unsymbolized []ImageSamples `json:"unsymbolized,omitempty"`
}

// ImageSamples is a count of samples in one image.
type ImageSamples struct {
	Image   string `json:"image"`
	Samples uint64 `json:"samples"`
}

// Summarize counts a profile's samples by what their leaf is.
func Summarize(p *Profile) Summary {
	s := Summary{Threads: len(p.Threads), DistinctStacks: len(p.Stacks)}
	var unsym map[string]uint64
	for _, e := range p.Entries {
		if int(e.Stack) >= len(p.Stacks) {
			continue
		}
		// Summarize runs on runs being written, which are not checked: it checks every index.
		st := p.Stacks[e.Stack]
		if len(st) == 0 || int(st[0]) >= len(p.Locations) || len(p.Locations[st[0]].Lines) == 0 {
			continue
		}
		leaf := p.Locations[st[0]].Leaf()
		if int(leaf) >= len(p.Frames) {
			continue
		}
		f := p.Frames[leaf]
		switch {
		case IsJITKind(f.Kind) && strings.HasPrefix(f.Func, "[unknown]"), f.Image == AnonImage:
			s.JITSamples += e.Count
			s.JITUnnamed += e.Count
			s.UnknownSamples += e.Count
		case IsJITKind(f.Kind):
			s.JITSamples += e.Count
		case f.Kind == KindUnknown, IsImageOffset(f): // no name, or a function range with none
			s.UnknownSamples += e.Count
		}
		if IsImageOffset(f) {
			if unsym == nil {
				unsym = map[string]uint64{}
			}
			unsym[f.Image] += e.Count
		}
	}
	for img, n := range unsym {
		s.Unsymbolized = append(s.Unsymbolized, ImageSamples{Image: img, Samples: n})
	}
	sort.Slice(s.Unsymbolized, func(i, j int) bool {
		a, b := s.Unsymbolized[i], s.Unsymbolized[j]
		return a.Samples > b.Samples || a.Samples == b.Samples && a.Image < b.Image
	})
	return s
}

// IsImageOffset says whether a frame stands for native code no symbol names: a row named
// image+0xOFF after an address, or after the start of the function range holding it.
func IsImageOffset(f Frame) bool {
	return f.Image != "" && !IsJITKind(f.Kind) && f.Image != AnonImage && strings.HasPrefix(f.Func, f.Image+"+0x")
}

// OnlyEvent is p with the entries of the run's event number event alone (Entry.Event),
// in a slice of its own; the samples of the other events' keys belong to no entry. left
// counts the samples of the entries left out.
func (p *Profile) OnlyEvent(event uint32) (q *Profile, left uint64) {
	out := *p
	index := make([]int32, len(p.Entries))
	out.Entries = make([]Entry, 0, len(p.Entries))
	for j, e := range p.Entries {
		index[j] = -1
		if e.Event != event {
			left += e.Count
			continue
		}
		index[j] = int32(len(out.Entries))
		out.Entries = append(out.Entries, e)
	}
	if p.KeyEntry != nil {
		out.KeyEntry = make([]int32, len(p.KeyEntry))
		for k, e := range p.KeyEntry {
			out.KeyEntry[k] = -1
			if e >= 0 && int(e) < len(index) {
				out.KeyEntry[k] = index[e]
			}
		}
	}
	return &out, left
}
