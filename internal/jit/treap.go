package jit

// liveSet is an ordered set of non-overlapping functions keyed by start
// address (a treap), used to find the live entries a new load overlaps.
type liveSet struct {
	root *tnode
	seed uint64
	n    int
}

type tnode struct {
	f           *Func
	prio        uint64
	left, right *tnode
}

func (s *liveSet) rand() uint64 {
	// xorshift64*
	if s.seed == 0 {
		s.seed = 0x9E3779B97F4A7C15
	}
	s.seed ^= s.seed >> 12
	s.seed ^= s.seed << 25
	s.seed ^= s.seed >> 27
	return s.seed * 2685821657736338717
}

func rotRight(n *tnode) *tnode {
	l := n.left
	n.left, l.right = l.right, n
	return l
}

func rotLeft(n *tnode) *tnode {
	r := n.right
	n.right, r.left = r.left, n
	return r
}

// insert adds f, replacing any entry with the same start.
func (s *liveSet) insert(f *Func) {
	var ins func(n *tnode) *tnode
	ins = func(n *tnode) *tnode {
		if n == nil {
			s.n++
			return &tnode{f: f, prio: s.rand()}
		}
		switch {
		case f.Start < n.f.Start:
			n.left = ins(n.left)
			if n.left.prio > n.prio {
				n = rotRight(n)
			}
		case f.Start > n.f.Start:
			n.right = ins(n.right)
			if n.right.prio > n.prio {
				n = rotLeft(n)
			}
		default:
			n.f = f
		}
		return n
	}
	s.root = ins(s.root)
}

// remove deletes the entry starting at start, if any.
func (s *liveSet) remove(start uint64) {
	var del func(n *tnode) *tnode
	del = func(n *tnode) *tnode {
		if n == nil {
			return nil
		}
		switch {
		case start < n.f.Start:
			n.left = del(n.left)
		case start > n.f.Start:
			n.right = del(n.right)
		default:
			s.n--
			return merge(n.left, n.right)
		}
		return n
	}
	s.root = del(s.root)
}

func merge(a, b *tnode) *tnode {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.right = merge(a.right, b)
		return a
	default:
		b.left = merge(a, b.left)
		return b
	}
}

// get returns the entry starting exactly at start.
func (s *liveSet) get(start uint64) *Func {
	n := s.root
	for n != nil {
		switch {
		case start < n.f.Start:
			n = n.left
		case start > n.f.Start:
			n = n.right
		default:
			return n.f
		}
	}
	return nil
}

// floor returns the entry with the greatest start <= key.
func (s *liveSet) floor(key uint64) *Func {
	var best *Func
	n := s.root
	for n != nil {
		if n.f.Start <= key {
			best = n.f
			n = n.right
		} else {
			n = n.left
		}
	}
	return best
}

// overlapping appends to out the entries overlapping [start, end), with
// end > start. Entries do not overlap one another, so these are the
// entries starting in [start, end) plus at most one starting before start
// and reaching past it.
func (s *liveSet) overlapping(start, end uint64, out []*Func) []*Func {
	key := end - 1
	for {
		f := s.floor(key)
		if f == nil {
			return out
		}
		if f.Start < start {
			if f.Start+f.Size > start {
				out = append(out, f)
			}
			return out
		}
		out = append(out, f)
		if f.Start == 0 {
			return out
		}
		key = f.Start - 1
	}
}
