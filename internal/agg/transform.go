package agg

import (
	"path/filepath"
	"regexp"
	"strings"
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
//  4. CollapseImages turns every run of consecutive frames in one of these images into one
//     frame: the run's entry function (its outermost frame), which takes the run's samples.
//     An image is named by its path, its base name, or its name without brackets
//     ("kernel.kallsyms" for "[kernel.kallsyms]").
//  5. FoldRecursion merges a function that appears again below itself (directly or through
//     other functions) into its first (outermost) appearance: the frames between the two
//     are dropped, and the callees of the inner appearance become the outer one's.
//
// Frames keep their ids (the rewritten profile shares the frame table), so what refers to
// frames (LeafFunc, a run's code) stays valid; entries keep their leaf address and leaf
// function, which say where the sample landed whatever its stack became.
type Transform struct {
	Focus          *regexp.Regexp
	Ignore         *regexp.Regexp
	Hide           *regexp.Regexp
	CollapseImages []string
	FoldRecursion  bool
}

// IsZero says whether t changes nothing.
func (t *Transform) IsZero() bool {
	return t == nil || t.Focus == nil && t.Ignore == nil && t.Hide == nil && len(t.CollapseImages) == 0 && !t.FoldRecursion
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
)

// stackRewriter rewrites stacks by t; scratch space is reused between stacks.
type stackRewriter struct {
	t      *Transform
	flags  []uint8
	images []string // frame id -> image, for collapsing
	pos    []int32  // fold: frame id -> index in out, -1 when absent
	out    []uint32 // root first
}

func newStackRewriter(p *Profile, t *Transform) *stackRewriter {
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

// rewrite returns the rewritten stack, root first (valid until the next call), or false
// when the stack is dropped.
func (w *stackRewriter) rewrite(stack []uint32) ([]uint32, bool) {
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
		if fl&tHide != 0 {
			continue
		}
		if fl&tCollapse != 0 {
			// The previous kept frame opened a run in the same image: this frame joins it.
			if collapsing && w.images[out[len(out)-1]] == w.images[id] {
				continue
			}
			collapsing = true
		} else {
			collapsing = false
		}
		out = append(out, id)
	}
	if w.pos != nil {
		kept := out[:0]
		for _, id := range out {
			if k := w.pos[id]; k >= 0 {
				for _, gone := range kept[k+1:] {
					w.pos[gone] = -1
				}
				kept = kept[:k+1]
				continue
			}
			w.pos[id] = int32(len(kept))
			kept = append(kept, id)
		}
		for _, id := range kept {
			w.pos[id] = -1
		}
		out = kept
	}
	w.out = out
	return out, true
}

// Transform returns p with its stacks rewritten by t (see Transform): each distinct stack
// is rewritten once, entries whose stacks become the same are merged (per thread, leaf
// address and leaf function, as a run names them), and KeyEntry follows the entries, so
// the time series, windows and timelines work on the result. Frames, threads and the
// series are shared with p. A zero t returns p itself.
func (p *Profile) Transform(t *Transform) *Profile {
	if t.IsZero() {
		return p
	}
	w := newStackRewriter(p, t)
	const unseen, dropped = -2, -1
	newID := make([]int32, len(p.Stacks))
	for i := range newID {
		newID[i] = unseen
	}
	frames := 0
	for _, st := range p.Stacks {
		frames += len(st)
	}
	table := &StackTable{index: make(map[uint64]uint32, len(p.Stacks)), offs: make([]uint32, 1, len(p.Stacks)+1),
		hash: make([]uint64, 0, len(p.Stacks)), next: make([]uint32, 0, len(p.Stacks)), data: make([]uint64, 0, frames)}
	var seq []uint64
	merges := false // two stacks became one: entries may merge
	for _, e := range p.Entries {
		if int(e.Stack) >= len(p.Stacks) || newID[e.Stack] != unseen {
			continue
		}
		out, ok := w.rewrite(p.Stacks[e.Stack])
		if !ok {
			newID[e.Stack] = dropped
			continue
		}
		seq = seq[:0]
		for j := len(out) - 1; j >= 0; j-- {
			seq = append(seq, uint64(out[j]))
		}
		before := table.Len()
		id := table.Intern(seq)
		if int(id) < before {
			merges = true
		}
		newID[e.Stack] = int32(id)
	}

	q := &Profile{Frames: p.Frames, Threads: p.Threads, Series: p.Series, Stacks: make([][]uint32, table.Len())}
	ids := make([]uint32, len(table.data))
	for i := range table.data {
		ids[i] = uint32(table.data[i])
	}
	for i := range q.Stacks {
		q.Stacks[i] = ids[table.offs[i]:table.offs[i+1]:table.offs[i+1]]
	}

	type mergeKey struct {
		tid, pid, stack uint32
		leaf            uint64
		leafFunc        int32
	}
	var merged map[mergeKey]int32
	didMerge := false
	if merges {
		merged = make(map[mergeKey]int32, len(p.Entries))
	}
	index := make([]int32, len(p.Entries))
	q.Entries = make([]Entry, 0, len(p.Entries))
	for i, e := range p.Entries {
		index[i] = -1
		if int(e.Stack) >= len(p.Stacks) || newID[e.Stack] < 0 {
			continue
		}
		e.Stack = uint32(newID[e.Stack])
		if merged != nil {
			k := mergeKey{e.Tid, e.Pid, e.Stack, e.Leaf, e.LeafFunc}
			if j, ok := merged[k]; ok {
				m := &q.Entries[j]
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
		q.sortEntries()
	}
	return q
}
