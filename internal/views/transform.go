package views

import (
	"encoding/binary"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/stax-profiler/stax/internal/agg"
)

// Transform rewrites the stacks of a profile before a view is computed from it; every view
// (top, flame, callers, threads, timeline, annotate, export) takes the rewritten profile as
// it is. The zero Transform changes nothing.
//
// Regular expressions are Go's (as pprof's), unanchored, and matched against a frame's
// function name only (pprof also tries the source file's name). The steps run in this
// order, each on what the one before left:
//
//  1. Ignore drops every stack with a frame that matches.
//  2. Focus keeps only stacks with a frame that matches, rooted at the outermost such frame:
//     the frames above it (its callers) are dropped.
//  3. Hide removes the frames that match; their callees become their caller's. A stack whose
//     frames are all hidden keeps its samples, with no frames.
//     Python keeps only the frames of Python functions (kind python: CPython's perf
//     trampolines, py::NAME:FILE in its perf map or jitdump) and the stack's leaf (the native function below the innermost
//     Python frame, where the sample landed): py-spy's default view. A stack with no
//     Python frame keeps its leaf alone.
//  4. CollapseImages turns every run of consecutive frames in one of these images into one
//     frame: the run's entry function (its outermost frame), which takes the run's samples.
//     An image is named by its path, its base name, or its name without brackets
//     ("kernel.kallsyms" for "[kernel.kallsyms]").
//  5. FoldRecursion merges a function that appears again below itself (directly or through
//     other functions) into its first (outermost) appearance: the frames between the two
//     are dropped, and the callees of the inner appearance become the outer one's. The
//     merged frame keeps the inner appearance's location (its line and address: where it
//     calls those callees, or where the sample landed).
//
// Frames keep their ids (the rewritten profile shares the frame table), so what refers to
// frames (LeafFunc, a run's code) stays valid; entries keep their leaf address and leaf
// function, which say where the sample landed whatever its stack became. Locations keep
// their ids too; a location that loses some of its lines (a hidden function inlined into
// another, say) is replaced by a new one with the lines left.
type Transform struct {
	Focus          *regexp.Regexp
	Ignore         *regexp.Regexp
	Hide           *regexp.Regexp
	CollapseImages []string
	FoldRecursion  bool
	Python         bool
	// mergeRuns makes each run of consecutive frames of one function one frame (a view by
	// image, whose frames are images).
	mergeRuns bool
}

// IsZero says whether t changes nothing.
func (t *Transform) IsZero() bool {
	return t == nil || t.Focus == nil && t.Ignore == nil && t.Hide == nil && len(t.CollapseImages) == 0 && !t.FoldRecursion && !t.Python && !t.mergeRuns
}

// ImageMatches says whether image is named by name: its path, its base name, or its name
// without brackets.
func ImageMatches(image, name string) bool {
	if name == "" || image == "" {
		return false
	}
	if image == name || filepath.Base(image) == name {
		return true
	}
	return strings.HasPrefix(image, "[") && strings.HasSuffix(image, "]") && image[1:len(image)-1] == name
}

// Frame flags computed once per frame.
const (
	tIgnore uint8 = 1 << iota
	tFocus
	tHide
	tCollapse
	tPython
)

// stackRewriter rewrites stacks by t; scratch space is reused between stacks.
type stackRewriter struct {
	t      *Transform
	flags  []uint8
	images []string // frame id -> image, for collapsing
	pos    []int32  // fold: frame id -> index in out, -1 when absent
	out    []int32  // the positions kept, root first
}

func newStackRewriter(p *agg.Profile, t *Transform) *stackRewriter {
	w := &stackRewriter{t: t, flags: make([]uint8, len(p.Frames))}
	if len(t.CollapseImages) > 0 {
		w.images = make([]string, len(p.Frames))
	}
	for id, f := range p.Frames {
		var fl uint8
		if t.Ignore != nil && t.Ignore.MatchString(f.Func) {
			fl |= tIgnore
		}
		if t.Focus != nil && t.Focus.MatchString(f.Func) {
			fl |= tFocus
		}
		if t.Hide != nil && t.Hide.MatchString(f.Func) {
			fl |= tHide
		}
		if agg.IsPython(&f) {
			fl |= tPython
		}
		for _, img := range t.CollapseImages {
			if ImageMatches(f.Image, img) {
				fl |= tCollapse
				w.images[id] = f.Image
				break
			}
		}
		w.flags[id] = fl
	}
	if t.FoldRecursion {
		w.pos = make([]int32, len(p.Frames))
		for i := range w.pos {
			w.pos[i] = -1
		}
	}
	return w
}

// rewrite returns the positions in stack (frame ids, leaf first) of the frames the rewritten
// stack keeps, root first (valid until the next call), or false when the stack is dropped.
func (w *stackRewriter) rewrite(stack []uint32) ([]int32, bool) {
	n := len(stack)
	if w.t.Ignore != nil {
		for _, id := range stack {
			if w.flags[id]&tIgnore != 0 {
				return nil, false
			}
		}
	}
	top := n - 1 // the outermost frame kept (stacks are leaf first)
	if w.t.Focus != nil {
		for top >= 0 && w.flags[stack[top]]&tFocus == 0 {
			top--
		}
		if top < 0 {
			return nil, false
		}
	}
	out := w.out[:0]
	collapsing := false
	for j := top; j >= 0; j-- {
		id := stack[j]
		fl := w.flags[id]
		if fl&tHide != 0 || w.t.Python && j > 0 && fl&tPython == 0 {
			continue
		}
		if w.t.mergeRuns && len(out) > 0 && stack[out[len(out)-1]] == id {
			continue
		}
		if fl&tCollapse != 0 {
			// The previous kept frame opened a run in the same image: this frame joins it.
			if collapsing && w.images[stack[out[len(out)-1]]] == w.images[id] {
				continue
			}
			collapsing = true
		} else {
			collapsing = false
		}
		out = append(out, int32(j))
	}
	if w.pos != nil {
		kept := out[:0]
		for _, j := range out {
			id := stack[j]
			if k := w.pos[id]; k >= 0 {
				for _, gone := range kept[k+1:] {
					w.pos[stack[gone]] = -1
				}
				// The function stays where it first appears, at the place (location) of its
				// inner appearance: that is where it calls what now are its callees, or
				// where the sample landed.
				kept = kept[:k+1]
				kept[k] = j
				continue
			}
			w.pos[id] = int32(len(kept))
			kept = append(kept, j)
		}
		for _, j := range kept {
			w.pos[stack[j]] = -1
		}
		out = kept
	}
	w.out = out
	return out, true
}

// locator turns the frames a rewrite kept back into locations: a location whose lines are
// all kept stays itself; one that lost some becomes a new location with those left.
type locator struct {
	p       *agg.Profile
	single  bool    // every location has one line: a stack's frames are its locations'
	occ     []int32 // each frame of the stack: its location's index in the stack
	line    []int32 // each frame of the stack: its index in its location's lines
	locs    []agg.Location
	derived map[string]uint32
	key     []byte
}

// appendStack appends the locations, leaf first, of the frames of st kept (positions, root
// first) to seq.
func (l *locator) appendStack(seq []uint64, st []uint32, kept []int32) []uint64 {
	if l.single {
		for j := len(kept) - 1; j >= 0; j-- {
			seq = append(seq, uint64(st[kept[j]]))
		}
		return seq
	}
	l.occ, l.line = l.occ[:0], l.line[:0]
	for k, lid := range st {
		for m := range l.p.Locations[lid].Lines {
			l.occ = append(l.occ, int32(k))
			l.line = append(l.line, int32(m))
		}
	}
	for j := len(kept) - 1; j >= 0; {
		k := l.occ[kept[j]]
		i := j
		for i > 0 && l.occ[kept[i-1]] == k {
			i--
		}
		lid := st[k]
		loc := &l.p.Locations[lid]
		if j-i+1 != len(loc.Lines) {
			lid = l.part(lid, kept[i:j+1])
		}
		seq = append(seq, uint64(lid))
		j = i - 1
	}
	return seq
}

// part returns the location made of the lines of location lid at positions (root first).
func (l *locator) part(lid uint32, positions []int32) uint32 {
	l.key = binary.LittleEndian.AppendUint32(l.key[:0], lid)
	for j := len(positions) - 1; j >= 0; j-- {
		l.key = binary.LittleEndian.AppendUint32(l.key, uint32(l.line[positions[j]]))
	}
	if id, ok := l.derived[string(l.key)]; ok {
		return id
	}
	if l.derived == nil {
		l.derived = map[string]uint32{}
		l.locs = l.p.Locations[:len(l.p.Locations):len(l.p.Locations)]
	}
	src := &l.p.Locations[lid]
	loc := agg.Location{Addr: src.Addr, Mapping: src.Mapping, Lines: make([]agg.Line, 0, len(positions))}
	for j := len(positions) - 1; j >= 0; j-- {
		loc.Lines = append(loc.Lines, src.Lines[l.line[positions[j]]])
	}
	id := uint32(len(l.locs))
	l.locs = append(l.locs, loc)
	l.derived[string(l.key)] = id
	return id
}

// Transformed returns p with its stacks rewritten by t (see Transform): each distinct stack
// is rewritten once, entries whose stacks become the same are merged (per thread, leaf
// address and leaf function, as a run names them), and KeyEntry follows the entries, so
// the time series, windows and timelines work on the result. Frames, threads and the
// series are shared with p. A zero t returns p itself.
func Transformed(p *agg.Profile, t *Transform) *agg.Profile {
	return TransformedThread(p, t, 0)
}

// TransformedThread is Transformed of the samples of thread tid alone (0: every thread),
// for views that show one thread: the others' stacks are not rewritten.
func TransformedThread(p *agg.Profile, t *Transform, tid uint32) *agg.Profile {
	if t.IsZero() {
		return p
	}
	w := newStackRewriter(p, t)
	l := &locator{p: p, single: p.SingleLineLocations()}
	const unseen, dropped = -2, -1
	newID := make([]int32, len(p.Stacks))
	for i := range newID {
		newID[i] = unseen
	}
	frames := 0
	for _, st := range p.Stacks {
		frames += len(st)
	}
	table := agg.NewStackTableSized(len(p.Stacks), frames)
	fst := p.FuncStacks()
	fids := make([]uint32, 0, frames)
	foffs := make([]int, 1, len(p.Stacks)+1)
	var seq []uint64
	merges := false // two stacks became one: entries may merge
	for _, e := range p.Entries {
		if int(e.Stack) >= len(p.Stacks) || newID[e.Stack] != unseen || tid != 0 && e.Tid != tid {
			continue
		}
		fr := fst[e.Stack]
		kept, ok := w.rewrite(fr)
		if !ok {
			newID[e.Stack] = dropped
			continue
		}
		seq = l.appendStack(seq[:0], p.Stacks[e.Stack], kept)
		before := table.Len()
		id := table.Intern(seq)
		if int(id) < before {
			merges = true
		} else {
			for j := len(kept) - 1; j >= 0; j-- {
				fids = append(fids, fr[kept[j]])
			}
			foffs = append(foffs, len(fids))
		}
		newID[e.Stack] = int32(id)
	}

	q := &agg.Profile{Frames: p.Frames, Mappings: p.Mappings, Locations: p.Locations, Threads: p.Threads, Series: p.Series,
		Stacks: make([][]uint32, table.Len()), FrameStacks: make([][]uint32, table.Len())}
	if l.derived != nil {
		q.Locations = l.locs
	}
	ids := make([]uint32, 0, table.Values())
	for i := range q.Stacks {
		at := len(ids)
		for _, v := range table.Get(uint32(i)) {
			ids = append(ids, uint32(v))
		}
		q.Stacks[i] = ids[at:len(ids):len(ids)]
		q.FrameStacks[i] = fids[foffs[i]:foffs[i+1]:foffs[i+1]]
	}

	type mergeKey struct {
		tid, pid, stack uint32
		leaf            uint64
		leafFunc        int32
		event           uint32
	}
	var merged map[mergeKey]int32
	didMerge := false
	if merges {
		merged = make(map[mergeKey]int32, len(p.Entries))
	}
	index := make([]int32, len(p.Entries))
	q.Entries = make([]agg.Entry, 0, len(p.Entries))
	for i, e := range p.Entries {
		index[i] = -1
		if int(e.Stack) >= len(p.Stacks) || newID[e.Stack] < 0 || tid != 0 && e.Tid != tid {
			continue
		}
		e.Stack = uint32(newID[e.Stack])
		if merged != nil {
			k := mergeKey{e.Tid, e.Pid, e.Stack, e.Leaf, e.LeafFunc, e.Event}
			if j, ok := merged[k]; ok {
				m := &q.Entries[j]
				m.Counters = agg.SumCounters(slices.Clone(m.Counters), e.Counters) // m's may be p's too
				m.Count += e.Count
				m.Time = min(m.Time, e.Time)
				index[i] = j
				didMerge = true
				continue
			}
			merged[k] = int32(len(q.Entries))
		}
		index[i] = int32(len(q.Entries))
		q.Entries = append(q.Entries, e)
	}
	if p.KeyEntry != nil {
		q.KeyEntry = make([]int32, len(p.KeyEntry))
		for k, e := range p.KeyEntry {
			q.KeyEntry[k] = -1
			if e >= 0 && int(e) < len(index) {
				q.KeyEntry[k] = index[e]
			}
		}
	}
	if didMerge {
		q.SortEntries()
	}
	return q
}
