package spans

import (
	"iter"
	"unsafe"
)

// A span is stored as a rec: its name an id into a name table, so that the storage holds
// no pointers (the garbage collector does not scan it). recs go in chunks of chunkLen that
// never move once allocated: keeping a span costs no copy of the earlier ones, and a List
// shares the chunks with the table it was taken from.
type rec struct {
	start, end uint64
	name       uint32
	pid, tid   uint32
	depth, src uint32
	_          uint32
}

const (
	chunkBits = 12
	chunkLen  = 1 << chunkBits // 4096 spans, 160 KiB
)

type chunk [chunkLen]rec

// table is an append-only store of spans and of their names.
type table struct {
	chunks []*chunk
	n      int
	names  []string          // by id
	ids    map[string]uint32 // id by name
	// cache remembers the ids of the last names seen by their bytes' address: a parser
	// hands the same string for every span of a name, which then costs no hashing.
	cache [64]struct {
		p  *byte
		n  int
		id uint32
	}
}

// id returns the id of name, and whether it has one yet.
func (t *table) id(name string) (uint32, bool) {
	p := unsafe.StringData(name)
	c := &t.cache[(uintptr(unsafe.Pointer(p))>>3)%uintptr(len(t.cache))]
	if c.p == p && c.n == len(name) && p != nil {
		return c.id, true
	}
	id, ok := t.ids[name]
	if ok {
		c.p, c.n, c.id = p, len(name), id
	}
	return id, ok
}

// intern gives name the next id; it must have none yet.
func (t *table) intern(name string) uint32 {
	if t.ids == nil {
		t.ids = map[string]uint32{}
	}
	id := uint32(len(t.names))
	t.names = append(t.names, name)
	t.ids[name] = id
	return id
}

func (t *table) push(r rec) {
	i := t.n & (chunkLen - 1)
	if i == 0 {
		t.chunks = append(t.chunks, new(chunk))
	}
	t.chunks[len(t.chunks)-1][i] = r
	t.n++
}

// list is what the table holds now; later pushes do not change it.
func (t *table) list() List {
	return List{chunks: t.chunks[:len(t.chunks):len(t.chunks)], names: t.names[:len(t.names):len(t.names)], n: t.n}
}

// List is a sequence of spans that does not change: a Set's spans at one moment (sharing
// its storage), or spans made into one with ListOf or a Builder. The zero List is empty.
type List struct {
	chunks []*chunk
	names  []string
	n      int
}

// Len is the number of spans.
func (l List) Len() int { return l.n }

// At returns the i-th span; i must be in [0, Len).
func (l List) At(i int) Span {
	if uint(i) >= uint(l.n) {
		panic("spans: List index out of range")
	}
	return l.span(&l.chunks[i>>chunkBits][i&(chunkLen-1)])
}

func (l List) span(r *rec) Span {
	return Span{Name: l.names[r.name], Pid: r.pid, Tid: r.tid, Start: r.start, End: r.end, Depth: r.depth, Source: r.src}
}

// All yields the spans in order.
func (l List) All() iter.Seq[Span] {
	return func(yield func(Span) bool) {
		l.each(func(_ uint32, r *rec) bool { return yield(l.span(r)) })
	}
}

// Named yields the spans in order, each with the id of its name: an index into Names.
func (l List) Named() iter.Seq2[uint32, Span] { return l.NamedFrom(0) }

// NamedFrom yields the spans from the i-th on, as Named does.
func (l List) NamedFrom(i int) iter.Seq2[uint32, Span] {
	return func(yield func(uint32, Span) bool) {
		l.eachFrom(i, func(id uint32, r *rec) bool { return yield(id, l.span(r)) })
	}
}

func (l List) each(f func(uint32, *rec) bool) { l.eachFrom(0, f) }

func (l List) eachFrom(from int, f func(uint32, *rec) bool) {
	for j := max(from, 0); j < l.n; {
		ch := l.chunks[j>>chunkBits]
		first := j & (chunkLen - 1)
		last := min(chunkLen, first+l.n-j)
		for i := first; i < last; i++ {
			if !f(ch[i].name, &ch[i]) {
				return
			}
		}
		j += last - first
	}
}

// Names are the distinct names of the spans, by id (see Named), in the order they first
// appear.
func (l List) Names() []string { return l.names }

// Slice returns the spans in a new slice.
func (l List) Slice() []Span {
	out := make([]Span, 0, l.n)
	for s := range l.All() {
		out = append(out, s)
	}
	return out
}

// ListOf makes sp into a List.
func ListOf(sp []Span) List {
	var b Builder
	for i := range sp {
		b.Add(sp[i])
	}
	return b.List()
}

// Builder makes a List, one span at a time.
type Builder struct{ t table }

// Add appends sp.
func (b *Builder) Add(sp Span) {
	id, ok := b.t.id(sp.Name)
	if !ok {
		id = b.t.intern(sp.Name)
	}
	b.t.push(rec{start: sp.Start, end: sp.End, name: id, pid: sp.Pid, tid: sp.Tid, depth: sp.Depth, src: sp.Source})
}

// List returns the spans added so far; adding more does not change it.
func (b *Builder) List() List { return b.t.list() }
