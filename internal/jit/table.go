package jit

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// SourceKind says where a function's announcement came from.
type SourceKind uint8

// Source kinds.
const (
	SourceJitdump SourceKind = iota + 1
	SourcePerfMap
	SourceITTAPI
	// SourceMarkers is a marker file (marker-PID.txt): spans, not code.
	SourceMarkers
	// SourceITTSpans is the spans file of stax's ITT collector (itt-PID.spans).
	SourceITTSpans
)

// String returns the kind's name.
func (k SourceKind) String() string {
	switch k {
	case SourceJitdump:
		return "jitdump"
	case SourcePerfMap:
		return "perfmap"
	case SourceITTAPI:
		return "ittapi"
	case SourceMarkers:
		return "markers"
	case SourceITTSpans:
		return "itt_spans"
	}
	return "unknown"
}

// Forever is the EndTime of an entry that has not ended.
const Forever = math.MaxUint64

// Table bounds.
const (
	// MaxTableFuncs bounds the entries of one table; further loads are
	// dropped and counted.
	MaxTableFuncs = 8 << 20
	// MaxInlineRecords bounds the STAX_INLINE records kept per table.
	MaxInlineRecords = 8 << 20
	// MaxInlineDepth bounds the length of an inline chain.
	MaxInlineDepth = 64
	// maxPendingDebug bounds the debug-info records waiting for their load.
	maxPendingDebug = 1 << 16
	// maxSegmentEntries bounds how many timed entries one address keeps in
	// the lookup index (the most recent loads win), once the index exceeds
	// indexBudgetPerFunc entries per function plus indexBudgetBase.
	maxSegmentEntries  = 256
	indexBudgetPerFunc = 32
	indexBudgetBase    = 1 << 20
	// quirkOffset is the offset V8 and LLVM add to debug-info addresses.
	quirkOffset = 0x40
)

// LineEntry maps the code from Addr on to a source line.
type LineEntry struct {
	Addr uint64
	File string
	Line int
}

// InlineFrame is one level of an inline chain.
type InlineFrame struct {
	MethodID uint32
	Name     string
	File     string
	Start    uint64
	Size     uint64
}

// End reasons, recorded on entries whose EndTime is set.
const (
	endNone uint8 = iota
	endOverlap
	endMove
	endUnload
)

// Func is one entry of a Table: a piece of JIT code at [Start, Start+Size)
// from LoadTime until EndTime. The Table never changes a Func's identity
// or code; EndTime and MethodID are set under the table's lock by later
// records, so concurrent readers should use Table.Span and the Table's
// methods rather than read those two fields directly.
type Func struct {
	ID       uint64 // unique within the table, stable
	Name     string
	Start    uint64
	Size     uint64
	Code     []byte      // may be nil (perf map entries have none)
	Lines    []LineEntry // sorted by Addr
	Unwind   []byte      // the .eh_frame of its CODE_UNWINDING_INFO, if any
	Source   SourceKind
	Origin   uint32 // the caller's number for the file it came from
	MethodID uint32 // 0 when unknown
	LoadTime uint64
	EndTime  uint64 // Forever while live

	endReason uint8
	removed   bool
}

// End returns Start+Size.
func (f *Func) End() uint64 { return f.Start + f.Size }

// Contains reports whether addr lies in the function's range.
func (f *Func) Contains(addr uint64) bool { return addr >= f.Start && addr-f.Start < f.Size }

// TableStats counts what a Table did with the records it was given.
type TableStats struct {
	Funcs          int    // entries held, ended ones included
	Live           int    // timed entries not yet ended, plus perf map entries
	Loads          uint64 // CODE_LOAD records applied
	Moves          uint64
	Unloads        uint64
	Overlaps       uint64 // entries ended by an overlapping load
	Orphans        uint64 // moves, unloads, method ids naming no live code
	DroppedLoads   uint64 // loads refused because the table is full
	OverBudget     uint64 // of those, refused because the tables' memory budget is spent
	Evicted        uint64 // entries dropped, oldest first, to stay within the table's share of the budget
	DroppedDebug   uint64 // debug-info records that never met their load
	QuirkDebug     uint64 // debug-info records shifted by -0x40
	DestructiveEvs int
}

type pendingState struct {
	debug  map[uint64]*DebugInfo
	unwind []byte
}

type inlineRec struct {
	InlineRecord
	origin uint32
}

// Table is the JIT code of one process, built from jitdump records and
// perf map entries. It is safe for concurrent use.
type Table struct {
	mu     sync.RWMutex
	funcs  []*Func
	nextID uint64
	timed  liveSet // live jitdump/ittapi entries; never overlapping
	perf   liveSet // perf map entries; never overlapping
	events []uint64
	pend   map[uint32]*pendingState
	stats  TableStats

	inl      []inlineRec
	children map[uint32][]int // parent method id -> indexes into inl; nil when stale

	dirty        bool
	removed      int
	bounds       []uint64 // segment boundaries
	segOff       []uint32 // len(bounds): segment i's items are segItems[segOff[i]:segOff[i+1]]
	segItems     []*Func  // per segment, timed entries by LoadTime descending
	segPerfOff   []uint32 // per segment, where its perf map entries start in segPerfItems
	segPerfItems []*Func  // perf map entries covering each segment, newest line first

	scratch []*Func

	budget *Budget // nil: unbounded
	bytes  int64   // taken from budget by the functions held

	evictAt   int               // funcs before it are all removed: where eviction looks first
	evictedBy map[uint32]uint64 // entries evicted, by the origin they came from
	always    uint64            // destructive events at every time (evictions)
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{pend: make(map[uint32]*pendingState)}
}

// NewTableWithin returns an empty table whose functions draw on budget.
func NewTableWithin(budget *Budget) *Table {
	t := NewTable()
	t.budget = budget
	return t
}

// Bytes estimates the memory the table's functions keep.
func (t *Table) Bytes() int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.bytes
}

func (t *Table) pending(origin uint32) *pendingState {
	p := t.pend[origin]
	if p == nil {
		p = &pendingState{debug: make(map[uint64]*DebugInfo)}
		t.pend[origin] = p
	}
	return p
}

// addEvent records a destructive event at ts, keeping events sorted.
func (t *Table) addEvent(ts uint64) {
	n := len(t.events)
	if n == 0 || t.events[n-1] <= ts {
		t.events = append(t.events, ts)
		return
	}
	i := sort.Search(n, func(i int) bool { return t.events[i] > ts })
	t.events = slices.Insert(t.events, i, ts)
}

// Generation returns the number of destructive events (an entry ended by
// an overlapping load, a move, an unload, a reset, a perf map entry
// replaced) at or before ts. Resolutions cached for time ts stay valid as
// long as Generation(ts) does not change. Resets and perf map
// replacements count at every time.
func (t *Table) Generation(ts uint64) uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := sort.Search(len(t.events), func(i int) bool { return t.events[i] > ts })
	return uint64(n) + t.always
}

// Apply adds decoded jitdump records from the file numbered origin.
// Records must be given in file order; a CODE_DEBUG_INFO or
// CODE_UNWINDING_INFO may be in an earlier call than its CODE_LOAD.
func (t *Table) Apply(origin uint32, kind SourceKind, recs []Record) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range recs {
		t.applyOne(origin, kind, &recs[i])
	}
}

func (t *Table) applyOne(origin uint32, kind SourceKind, r *Record) {
	switch {
	case r.Load != nil:
		t.applyLoad(origin, kind, r.Timestamp, r.Load)
	case r.Move != nil:
		t.applyMove(r.Timestamp, r.Move)
	case r.Debug != nil:
		p := t.pending(origin)
		if len(p.debug) >= maxPendingDebug {
			t.stats.DroppedDebug++
			return
		}
		if _, ok := p.debug[r.Debug.CodeAddr]; ok {
			t.stats.DroppedDebug++
		}
		p.debug[r.Debug.CodeAddr] = r.Debug
	case r.Unwind != nil:
		// The data is the .eh_frame, then the .eh_frame_hdr: keep the .eh_frame.
		eh, u := r.Unwind.Data, r.Unwind
		if u.EHFrameHdrSize <= u.UnwindingSize && u.UnwindingSize-u.EHFrameHdrSize <= uint64(len(eh)) {
			eh = eh[:u.UnwindingSize-u.EHFrameHdrSize]
		}
		t.pending(origin).unwind = eh
	case r.MethodID != nil:
		f := t.timed.get(r.MethodID.CodeAddr)
		if f == nil {
			t.stats.Orphans++
			return
		}
		f.MethodID = r.MethodID.MethodID
	case r.Inline != nil:
		if len(t.inl) >= MaxInlineRecords {
			return
		}
		t.inl = append(t.inl, inlineRec{InlineRecord: *r.Inline, origin: origin})
		t.children = nil
	case r.Unload != nil:
		t.stats.Unloads++
		end := r.Unload.CodeAddr + max(r.Unload.CodeSize, 1)
		if end < r.Unload.CodeAddr {
			end = math.MaxUint64
		}
		hit := t.timed.overlapping(r.Unload.CodeAddr, end, t.scratch[:0])
		if len(hit) == 0 {
			t.stats.Orphans++
		}
		for _, f := range hit {
			t.end(f, r.Timestamp, endUnload)
		}
		t.scratch = hit[:0]
	}
}

// end ends a live timed entry at ts.
func (t *Table) end(f *Func, ts uint64, why uint8) {
	t.timed.remove(f.Start)
	if ts < f.LoadTime {
		ts = f.LoadTime
	}
	f.EndTime = ts
	f.endReason = why
	t.addEvent(ts)
}

func (t *Table) newFunc(f *Func) bool {
	if len(t.funcs)-t.removed >= MaxTableFuncs {
		t.stats.DroppedLoads++
		return false
	}
	cost := f.cost()
	if share := t.budget.Share(); cost > share {
		t.stats.DroppedLoads++
		t.stats.OverBudget++
		return false
	} else if t.bytes+cost > share {
		t.evict(share - cost)
	}
	if !t.budget.take(cost) {
		t.stats.DroppedLoads++
		t.stats.OverBudget++
		return false
	}
	t.bytes += cost
	t.nextID++
	f.ID = t.nextID
	t.funcs = append(t.funcs, f)
	t.dirty = true
	return true
}

// insertTimed ends the live entries f overlaps and adds f.
func (t *Table) insertTimed(f *Func) {
	if f.Size > 0 {
		hit := t.timed.overlapping(f.Start, f.End(), t.scratch[:0])
		for _, g := range hit {
			t.stats.Overlaps++
			t.end(g, f.LoadTime, endOverlap)
		}
		t.scratch = hit[:0]
	}
	if !t.newFunc(f) {
		return
	}
	if f.Size > 0 {
		t.timed.insert(f)
	}
}

func (t *Table) applyLoad(origin uint32, kind SourceKind, ts uint64, l *CodeLoad) {
	t.stats.Loads++
	f := &Func{
		Name:     l.Name,
		Start:    l.CodeAddr,
		Size:     l.CodeSize,
		Code:     l.Code,
		Source:   kind,
		Origin:   origin,
		LoadTime: ts,
		EndTime:  Forever,
	}
	if p := t.pend[origin]; p != nil {
		if d := p.debug[l.CodeAddr]; d != nil {
			delete(p.debug, l.CodeAddr)
			var quirk bool
			f.Lines, quirk = linesFor(d, f.Start, f.Size, scriptOf(f.Name))
			if quirk {
				t.stats.QuirkDebug++
			}
		}
		if p.unwind != nil {
			f.Unwind = p.unwind
			p.unwind = nil
		}
	}
	t.insertTimed(f)
}

// linesFor converts debug info for the function at [start, start+size), undoing the +0x40
// offset some writers add when more entries fit the function shifted than raw. Entries that
// fit neither way are dropped; entries whose file name was unreadable get fallback.
func linesFor(d *DebugInfo, start, size uint64, fallback string) ([]LineEntry, bool) {
	fitsAt := func(e DebugEntry, off uint64) bool {
		if e.Addr < off {
			return false
		}
		a := e.Addr - off
		return a >= start && a-start < max(size, 1)
	}
	count := func(off uint64) int {
		n := 0
		for _, e := range d.Entries {
			if fitsAt(e, off) {
				n++
			}
		}
		return n
	}
	var off uint64
	shifted, raw := count(quirkOffset), count(0)
	if shifted > raw {
		off = quirkOffset
	} else if shifted == raw && shifted > 0 {
		// Both fit: writers with the quirk put their first entry at the code's first byte,
		// which then reads as exactly start+0x40.
		lowest := d.Entries[0].Addr
		for _, e := range d.Entries {
			lowest = min(lowest, e.Addr)
		}
		if lowest == start+quirkOffset {
			off = quirkOffset
		}
	}
	lines := make([]LineEntry, 0, len(d.Entries))
	for _, e := range d.Entries {
		if !fitsAt(e, off) {
			continue
		}
		file := e.File
		if file == "" {
			if fallback == "" {
				continue
			}
			file = fallback
		}
		lines = append(lines, LineEntry{Addr: e.Addr - off, File: file, Line: int(e.Line)})
	}
	slices.SortStableFunc(lines, func(a, b LineEntry) int { return cmp.Compare(a.Addr, b.Addr) })
	return lines, off != 0
}

// scriptOf returns the script path in a V8 function name ("JS:*fib /app/x.js:1:13"), or "".
func scriptOf(name string) string {
	if !strings.HasPrefix(name, "JS:") {
		return ""
	}
	_, loc, ok := strings.Cut(name, " ")
	if !ok {
		return ""
	}
	// Drop ":line:column".
	for range 2 {
		if i := strings.LastIndexByte(loc, ':'); i > 0 {
			if _, err := strconv.Atoi(loc[i+1:]); err == nil {
				loc = loc[:i]
			}
		}
	}
	return loc
}

func (t *Table) applyMove(ts uint64, m *CodeMove) {
	t.stats.Moves++
	old := t.timed.get(m.OldCodeAddr)
	if old == nil {
		t.stats.Orphans++
		return
	}
	t.end(old, ts, endMove)
	size := m.CodeSize
	if size == 0 {
		size = old.Size
	}
	nf := &Func{
		Name:     old.Name,
		Start:    m.NewCodeAddr,
		Size:     size,
		Code:     old.Code,
		Unwind:   old.Unwind,
		Source:   old.Source,
		Origin:   old.Origin,
		MethodID: old.MethodID,
		LoadTime: ts,
		EndTime:  Forever,
	}
	if nf.Start+nf.Size < nf.Start {
		nf.Size = math.MaxUint64 - nf.Start
	}
	if len(old.Lines) > 0 {
		nf.Lines = make([]LineEntry, len(old.Lines))
		for i, e := range old.Lines {
			e.Addr = e.Addr - old.Start + nf.Start
			nf.Lines[i] = e
		}
	}
	t.insertTimed(nf)
}

// AddPerfMap adds perf map entries from the file numbered origin, read at time ts (on the
// samples' clock). A perf map says nothing of time, so each line counts from when it was
// read: a later line that overlaps an earlier one ends it then (code reused at the same
// address), rather than erasing it for the samples taken before. A line identical to the
// live one at its address is another code object too: the file is read once, so a line
// read again was written again, as V8 does when it puts a new compilation of a function,
// of the same size, where the old one was freed.
func (t *Table) AddPerfMap(origin uint32, entries []PerfMapEntry, ts uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range entries {
		if e.Size == 0 || e.Start+e.Size < e.Start {
			continue
		}
		hit := t.perf.overlapping(e.Start, e.Start+e.Size, t.scratch[:0])
		for _, g := range hit {
			t.perf.remove(g.Start)
			g.EndTime = max(ts, g.LoadTime)
			g.endReason = endOverlap
			t.dirty = true
			t.addEvent(ts)
		}
		t.scratch = hit[:0]
		f := &Func{Name: e.Name, Start: e.Start, Size: e.Size, Source: SourcePerfMap, Origin: origin, LoadTime: ts, EndTime: Forever}
		if t.newFunc(f) {
			t.perf.insert(f)
		}
	}
}

// Shrink drops the table's oldest entries until it keeps at most limit bytes (its share of
// a budget that more processes now share), and returns how many it dropped.
func (t *Table) Shrink(limit int64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.evict(limit)
}

// EvictedFrom is how many entries from the file numbered origin were evicted (Shrink,
// TableStats.Evicted).
func (t *Table) EvictedFrom(origin uint32) uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.evictedBy[origin]
}

// evict drops the oldest entries until the table keeps at most limit bytes; t.mu must be
// held for writing. An entry named by samples already counted keeps its name there; later
// samples in its code are unnamed.
func (t *Table) evict(limit int64) int {
	n := 0
	for t.bytes > limit && t.evictAt < len(t.funcs) {
		f := t.funcs[t.evictAt]
		t.evictAt++
		if f.removed {
			continue
		}
		if f.Source == SourcePerfMap {
			if t.perf.get(f.Start) == f {
				t.perf.remove(f.Start)
			}
		} else if f.EndTime == Forever && t.timed.get(f.Start) == f {
			t.timed.remove(f.Start)
		}
		t.markRemoved(f)
		if t.evictedBy == nil {
			t.evictedBy = map[uint32]uint64{}
		}
		t.evictedBy[f.Origin]++
		t.stats.Evicted++
		n++
	}
	if n > 0 {
		t.always++
		// Let the evicted entries go now, not at the next lookup: a table that nobody
		// looks up in would keep them all.
		if t.removed >= 1024 && t.removed*8 >= len(t.funcs) {
			t.compact()
			clear(t.segItems)
			clear(t.segPerfItems)
		}
	}
	return n
}

// compact drops the removed entries from t.funcs; t.mu must be held for writing.
func (t *Table) compact() {
	kept := t.funcs[:0]
	for _, f := range t.funcs {
		if !f.removed {
			kept = append(kept, f)
		}
	}
	clear(t.funcs[len(kept):])
	t.funcs = kept
	t.removed = 0
	t.evictAt = 0
	t.dirty = true
}

func (t *Table) markRemoved(f *Func) {
	if !f.removed {
		f.removed = true
		cost := f.cost()
		t.budget.give(cost)
		t.bytes -= cost
		t.removed++
		t.dirty = true
	}
}

// Reset removes every entry, pending record and inline record that came
// from the file numbered origin (for example because the file was
// replaced or truncated). It counts as a destructive event at all times.
func (t *Table) Reset(origin uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range t.funcs {
		if f.Origin != origin || f.removed {
			continue
		}
		if f.Source == SourcePerfMap {
			if t.perf.get(f.Start) == f {
				t.perf.remove(f.Start)
			}
		} else if f.EndTime == Forever && t.timed.get(f.Start) == f {
			t.timed.remove(f.Start)
		}
		t.markRemoved(f)
	}
	delete(t.pend, origin)
	kept := t.inl[:0]
	for _, r := range t.inl {
		if r.origin != origin {
			kept = append(kept, r)
		}
	}
	clear(t.inl[len(kept):])
	t.inl = kept
	t.children = nil
	t.addEvent(0)
}

// Stats returns counters describing the table.
func (t *Table) Stats() TableStats {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := t.stats
	s.Funcs = len(t.funcs) - t.removed
	s.Live = t.timed.n + t.perf.n
	s.DestructiveEvs = len(t.events)
	for _, p := range t.pend {
		s.DroppedDebug += uint64(len(p.debug))
	}
	return s
}

// Span returns f's load and end times, read under the table's lock.
func (t *Table) Span(f *Func) (load, end uint64) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return f.LoadTime, f.EndTime
}

// Funcs returns the entries held, ended ones included, ordered by ID.
func (t *Table) Funcs() []*Func {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]*Func, 0, len(t.funcs)-t.removed)
	for _, f := range t.funcs {
		if !f.removed {
			out = append(out, f)
		}
	}
	return out
}

// rebuild recomputes the lookup index; t.mu must be held for writing.
func (t *Table) rebuild() {
	if t.removed > 0 {
		t.compact()
	}
	bounds := t.bounds[:0]
	for _, f := range t.funcs {
		if f.Size > 0 {
			bounds = append(bounds, f.Start, f.End())
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	nseg := max(len(bounds)-1, 0)

	timed := make([]*Func, 0, len(t.funcs)-t.perf.n)
	perfFuncs := make([]*Func, 0, t.perf.n)
	for _, f := range t.funcs {
		if f.Size == 0 {
			continue
		}
		if f.Source == SourcePerfMap {
			perfFuncs = append(perfFuncs, f)
			continue
		}
		timed = append(timed, f)
	}
	t.segPerfOff, t.segPerfItems = perfIndex(bounds, nseg, perfFuncs, t.segPerfOff, t.segPerfItems)
	slices.SortStableFunc(timed, func(a, b *Func) int {
		if c := cmp.Compare(b.LoadTime, a.LoadTime); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	// Coverage per segment by a difference array; the per-segment cap
	// applies only when the index would otherwise grow beyond its budget
	// (pathological nesting of ranges reused many times).
	cov := make([]int64, nseg+1)
	for _, f := range timed {
		lo, hi := segRange(bounds, f)
		cov[lo]++
		cov[hi]--
	}
	var run, total64 int64
	for s := range nseg {
		run += cov[s]
		cov[s] = run
		total64 += run
	}
	limit := int64(math.MaxUint32)
	if budget := int64(indexBudgetPerFunc*len(timed) + indexBudgetBase); total64 > budget {
		limit = min(max(budget/int64(max(nseg, 1)), 4), maxSegmentEntries)
	}
	count := make([]uint32, nseg+1)
	for s := range nseg {
		count[s] = uint32(min(cov[s], limit))
	}
	off := slices.Grow(t.segOff[:0], nseg+1)[:nseg+1]
	var total uint32
	for s := range nseg {
		off[s] = total
		total += count[s]
	}
	off[nseg] = total
	items := slices.Grow(t.segItems[:0], int(total))[:total]
	fill := make([]uint32, nseg)
	for _, f := range timed {
		lo, hi := segRange(bounds, f)
		for s := lo; s < hi; s++ {
			if fill[s] < count[s] {
				items[off[s]+fill[s]] = f
				fill[s]++
			}
		}
	}
	t.bounds, t.segOff, t.segItems = bounds, off, items
	t.dirty = false
}

// perfIndex lists, per segment, the perf map entries covering it, newest line first.
func perfIndex(bounds []uint64, nseg int, funcs []*Func, off []uint32, items []*Func) ([]uint32, []*Func) {
	slices.SortStableFunc(funcs, func(a, b *Func) int {
		if c := cmp.Compare(b.LoadTime, a.LoadTime); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	count := make([]uint32, nseg+1)
	for _, f := range funcs {
		lo, hi := segRange(bounds, f)
		for s := lo; s < hi; s++ {
			count[s]++
		}
	}
	off = slices.Grow(off[:0], nseg+1)[:nseg+1]
	var total uint32
	for s := 0; s < nseg; s++ {
		off[s] = total
		total += count[s]
	}
	off[nseg] = total
	items = slices.Grow(items[:0], int(total))[:total]
	fill := make([]uint32, nseg)
	for _, f := range funcs {
		lo, hi := segRange(bounds, f)
		for s := lo; s < hi; s++ {
			items[off[s]+fill[s]] = f
			fill[s]++
		}
	}
	return off, items
}

// perfAt is the perf map entry for segment s at time ts: the newest line read at or before
// ts unless a later line ended it, else (a sample taken before any line for it was read)
// the first line.
func (t *Table) perfAt(s int, ts uint64) *Func {
	if s+1 >= len(t.segPerfOff) {
		return nil
	}
	items := t.segPerfItems[t.segPerfOff[s]:t.segPerfOff[s+1]]
	if len(items) == 0 {
		return nil
	}
	j := sort.Search(len(items), func(i int) bool { return items[i].LoadTime <= ts })
	if j < len(items) {
		if items[j].EndTime > ts {
			return items[j]
		}
		return nil
	}
	return items[len(items)-1]
}

// segRange returns the segments [lo, hi) that f covers.
func segRange(bounds []uint64, f *Func) (lo, hi int) {
	lo, _ = slices.BinarySearch(bounds, f.Start)
	hi, _ = slices.BinarySearch(bounds, f.End())
	return lo, hi
}

func (t *Table) readIndex() {
	t.mu.RLock()
	if t.dirty {
		t.mu.RUnlock()
		t.mu.Lock()
		if t.dirty {
			t.rebuild()
		}
		t.mu.Unlock()
		t.mu.RLock()
	}
}

// Lookup returns the entry covering addr that was live at time ts. If none
// was, it returns a perf map entry covering addr, else the covering entry
// loaded nearest after ts (tolerating clock skew between the sample and
// the announcement), else the covering entry live nearest before ts,
// unless that entry was explicitly unloaded.
func (t *Table) Lookup(addr, ts uint64) (*Func, bool) {
	t.readIndex()
	defer t.mu.RUnlock()
	b := t.bounds
	s := sort.Search(len(b), func(i int) bool { return b[i] > addr }) - 1
	if s < 0 || s >= len(b)-1 {
		return nil, false
	}
	items := t.segItems[t.segOff[s]:t.segOff[s+1]]
	j := sort.Search(len(items), func(i int) bool { return items[i].LoadTime <= ts })
	if j < len(items) && items[j].EndTime > ts {
		return items[j], true
	}
	if p := t.perfAt(s, ts); p != nil {
		return p, true
	}
	if j > 0 {
		return items[j-1], true
	}
	if j < len(items) && items[j].endReason != endUnload {
		return items[j], true
	}
	return nil, false
}

// LineAt returns the source position of addr in f from its debug info:
// that of the last line entry whose address is <= addr.
func (t *Table) LineAt(f *Func, addr uint64) (file string, line int, ok bool) {
	if f == nil || !f.Contains(addr) {
		return "", 0, false
	}
	i := sort.Search(len(f.Lines), func(i int) bool { return f.Lines[i].Addr > addr })
	if i == 0 {
		return "", 0, false
	}
	e := f.Lines[i-1]
	return e.File, e.Line, true
}

// Inlines returns every inline range under f's method that lies in f, in
// no particular order (for listing a function's inline tree). Each
// method id is visited once, so cycles end the walk.
func (t *Table) Inlines(f *Func) []InlineFrame {
	t.buildChildren()
	t.mu.RLock()
	defer t.mu.RUnlock()
	if f == nil || f.MethodID == 0 {
		return nil
	}
	var out []InlineFrame
	seen := map[uint32]bool{f.MethodID: true}
	level := []uint32{f.MethodID}
	for depth := 0; depth < MaxInlineDepth && len(level) > 0; depth++ {
		var next []uint32
		for _, m := range level {
			for _, i := range t.children[m] {
				r := &t.inl[i]
				if r.Start < f.Start || r.Start-f.Start >= f.Size {
					continue
				}
				out = append(out, InlineFrame{MethodID: r.MethodID, Name: r.Name, File: r.SourceFile, Start: r.Start, Size: r.Size})
				if !seen[r.MethodID] {
					seen[r.MethodID] = true
					next = append(next, r.MethodID)
				}
			}
		}
		level = next
	}
	return out
}

// buildChildren indexes the inline records by parent, if not done since
// the last change.
func (t *Table) buildChildren() {
	t.mu.RLock()
	built := t.children != nil || len(t.inl) == 0
	t.mu.RUnlock()
	if built {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.children == nil {
		t.children = make(map[uint32][]int)
		for i, r := range t.inl {
			t.children[r.ParentMethodID] = append(t.children[r.ParentMethodID], i)
		}
	}
}

// InlineChain returns the inline frames at addr inside f, innermost first,
// from the STAX_INLINE records of f's method. It returns nil when f has no
// method id or addr is in no inline range.
func (t *Table) InlineChain(f *Func, addr uint64) []InlineFrame {
	t.buildChildren()
	t.mu.RLock()
	defer t.mu.RUnlock()
	if f == nil || f.MethodID == 0 || !f.Contains(addr) {
		return nil
	}
	var chain []InlineFrame
	seen := map[uint32]bool{f.MethodID: true}
	cur := f.MethodID
	for len(chain) < MaxInlineDepth {
		next := -1
		for _, i := range t.children[cur] {
			r := &t.inl[i]
			if addr >= r.Start && addr-r.Start < r.Size && !seen[r.MethodID] {
				next = i // the latest record wins among siblings
			}
		}
		if next < 0 {
			break
		}
		r := &t.inl[next]
		seen[r.MethodID] = true
		chain = append(chain, InlineFrame{MethodID: r.MethodID, Name: r.Name, File: r.SourceFile, Start: r.Start, Size: r.Size})
		cur = r.MethodID
	}
	slices.Reverse(chain)
	return chain
}
