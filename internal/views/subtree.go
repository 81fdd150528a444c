package views

import "github.com/stax-profiler/stax/internal/agg"

// FlameShape says which call tree FlameWith builds and how it is pruned.
type FlameShape struct {
	Depth        int     // levels below the root (below Under's node, with Under); 0: all
	ThresholdPct float64 // nodes with less than this share of the tree's samples are left out
	Inverted     bool    // bottom-up: the leaf functions under the root
	// Reasons, for an off-CPU profile, are its stacks' reasons (StackReasons): each node
	// gets its dominant one.
	Reasons []uint8
	// CallersOf and CalleesOf, when set, say which frames (by id) are the function of a
	// sandwich: the tree is that of its callers (the function at the top, its callers
	// below it, up to the stacks' roots) or of its callees (the function at the top, what
	// it calls below), merged over every stack through it. A stack is cut at its
	// outermost frame of the function (as Transform's Focus cuts it); stacks without one
	// are left out, and the root counts the stacks kept. At most one of the two; Inverted
	// is then ignored.
	CallersOf, CalleesOf []bool
	// Under is the path of the subtree asked for: function names from the root's children
	// down. Only the stacks along it are kept: the tree holds the path and the subtree
	// under its last node, pruned at ThresholdPct of that node's samples and cut Depth
	// levels below it. The root still counts every sample of the view (TotalPct stays a
	// share of them), the nodes on the path only those under the subtree. A name may
	// name several functions (in different images): each is kept.
	Under []string
	// NoCounters leaves out the counters read with the samples (FlameNode.Counters).
	NoCounters bool
}

// FlameWith builds the call tree that o describes: Flame, InvertedFlame and OffCPUFlame are
// its usual shapes.
func FlameWith(p *agg.Profile, f Filter, o FlameShape) (*FlameNode, uint64) { return flame(p, f, o) }

func (o *FlameShape) reshapes() bool {
	return o.CallersOf != nil || o.CalleesOf != nil || len(o.Under) > 0
}

// reshape cuts the stacks (frame ids, leaf first, as fst holds them) to the sandwich's side,
// then keeps only those along Under: the counts of the others become zero. The stacks
// returned are in the order the tree is built from (leaf first, as fst's, unless inverted).
// counted is what the root counts: the stacks' counts before they were kept along Under.
func (o *FlameShape) reshape(p *agg.Profile, fst [][]uint32, perStack []uint64) (_ [][]uint32, _, counted []uint64, _ uint64) {
	var total uint64
	for _, n := range perStack {
		total += n
	}
	if o.CallersOf != nil || o.CalleesOf != nil {
		cut := make([][]uint32, len(fst))
		counts := make([]uint64, len(perStack))
		total = 0
		var slab []uint32
		for sid, n := range perStack {
			if n == 0 {
				continue
			}
			st := fst[sid]
			j := len(st) - 1 // the outermost frame of the function
			for j >= 0 && !o.isFunc(st[j]) {
				j--
			}
			if j < 0 {
				continue
			}
			if o.CalleesOf != nil {
				cut[sid] = st[: j+1 : j+1]
			} else {
				// Built as a stack whose root is the function: its callers, leaf first.
				at := len(slab)
				for k := len(st) - 1; k >= j; k-- {
					slab = append(slab, st[k])
				}
				cut[sid] = slab[at:len(slab):len(slab)]
			}
			counts[sid] = n
			total += n
		}
		fst, perStack = cut, counts
		o.Inverted = false
	}
	counted = perStack
	if len(o.Under) > 0 {
		along := make([]uint64, len(perStack))
		for sid, n := range perStack {
			if n > 0 && o.along(p, fst[sid]) {
				along[sid] = n
			}
		}
		perStack = along
	}
	return fst, perStack, counted, total
}

func (o *FlameShape) isFunc(id uint32) bool {
	m := o.CallersOf
	if m == nil {
		m = o.CalleesOf
	}
	return int(id) < len(m) && m[id]
}

// along says whether the stack st (leaf first) starts, from the tree's root, with Under.
func (o *FlameShape) along(p *agg.Profile, st []uint32) bool {
	if len(st) < len(o.Under) {
		return false
	}
	for i, name := range o.Under {
		j := len(st) - 1 - i // from the root
		if o.Inverted {
			j = i // from the leaf
		}
		if p.Frames[st[j]].Func != name {
			return false
		}
	}
	return true
}
