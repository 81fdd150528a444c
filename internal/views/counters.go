package views

import "github.com/stax-profiler/stax/internal/agg"

// SelfCounters sums, per row of p (a frame of its view: function, line, address or
// image), the counters of the samples whose leaf it is, over the entries f keeps; nil
// when no entry has counters.
func SelfCounters(p *agg.Profile, f Filter) map[agg.Frame][]uint64 {
	fst := p.FuncStacks()
	var out map[agg.Frame][]uint64
	for i := range p.Entries {
		e := &p.Entries[i]
		if len(e.Counters) == 0 || !f.keep(e) || int(e.Stack) >= len(fst) || len(fst[e.Stack]) == 0 {
			continue
		}
		id := fst[e.Stack][0]
		if int(id) >= len(p.Frames) {
			continue
		}
		if out == nil {
			out = map[agg.Frame][]uint64{}
		}
		k := p.Frames[id]
		out[k] = agg.SumCounters(out[k], e.Counters)
	}
	return out
}

// nodeCounters sums the counters of a call tree's nodes (Flame): n values per node, in
// the order of the run's counters, from each stack's sums.
type nodeCounters struct {
	n           int
	perStack    []uint64 // n per stack
	pathStack   []uint32 // each path's stack (flamePaths)
	total, self []uint64 // n per node
}

// newNodeCounters sums the counters of the entries f keeps per stack; the root gets those
// of the stacks counted (their count not zero). nil when no entry has counters.
func newNodeCounters(p *agg.Profile, f Filter, counted []uint64) *nodeCounters {
	n := 0
	for i := range p.Entries {
		if c := len(p.Entries[i].Counters); c > 0 {
			n = c
			break
		}
	}
	if n == 0 {
		return nil
	}
	nc := &nodeCounters{n: n, perStack: make([]uint64, len(p.Stacks)*n), total: make([]uint64, n), self: make([]uint64, n)}
	for i := range p.Entries {
		e := &p.Entries[i]
		if len(e.Counters) != n || !f.keep(e) || int(e.Stack) >= len(p.Stacks) {
			continue
		}
		s := nc.perStack[int(e.Stack)*n:][:n]
		for j, v := range e.Counters {
			s[j] += v
		}
	}
	for sid, c := range counted {
		if c > 0 && sid < len(p.Stacks) {
			nc.add(nc.total, 0, uint32(sid))
		}
	}
	return nc
}

// grow makes room for one more node.
func (nc *nodeCounters) grow() {
	nc.total = append(nc.total, make([]uint64, nc.n)...)
	nc.self = append(nc.self, make([]uint64, nc.n)...)
}

// addTotal and addSelf add path's counters to node's.
func (nc *nodeCounters) addTotal(node int, path int32) { nc.add(nc.total, node, nc.pathStack[path]) }

func (nc *nodeCounters) addSelf(node int, path int32) {
	if nc != nil {
		nc.add(nc.self, node, nc.pathStack[path])
	}
}

func (nc *nodeCounters) add(to []uint64, node int, stack uint32) {
	src := nc.perStack[int(stack)*nc.n:][:nc.n]
	dst := to[node*nc.n:][:nc.n]
	for j, v := range src {
		dst[j] += v
	}
}

// of returns node's sums, total and self (self nil when zero); nil, nil without counters.
func (nc *nodeCounters) of(node int) (total, self []uint64) {
	if nc == nil {
		return nil, nil
	}
	total = nc.total[node*nc.n : (node+1)*nc.n : (node+1)*nc.n]
	self = nc.self[node*nc.n : (node+1)*nc.n : (node+1)*nc.n]
	for _, v := range self {
		if v != 0 {
			return total, self
		}
	}
	return total, nil
}
