package agg

// StackTable interns sequences of uint64 (raw addresses or frame ids). Identical sequences
// get the same id; ids are dense from 0.
type StackTable struct {
	index map[uint64]uint32 // hash -> first id with that hash
	next  []uint32          // id -> next id with the same hash, or noNext
	hash  []uint64
	offs  []uint32 // id i spans data[offs[i]:offs[i+1]]
	data  []uint64
}

const noNext = ^uint32(0)

// NewStackTable returns an empty table.
func NewStackTable() *StackTable {
	return &StackTable{index: map[uint64]uint32{}, offs: []uint32{0}}
}

func hashSeq(s []uint64) uint64 {
	h := uint64(14695981039346656037)
	for _, v := range s {
		h ^= v
		h *= 1099511628211
		h ^= h >> 29
	}
	return h ^ uint64(len(s))
}

// NewStackTableSized returns an empty table with room for seqs sequences holding values
// values in all, for a caller that knows about how many it will intern.
func NewStackTableSized(seqs, values int) *StackTable {
	return &StackTable{index: make(map[uint64]uint32, seqs), offs: make([]uint32, 1, seqs+1),
		hash: make([]uint64, 0, seqs), next: make([]uint32, 0, seqs), data: make([]uint64, 0, values)}
}

// Find returns the id of s, if it was interned.
func (t *StackTable) Find(s []uint64) (uint32, bool) {
	if id, ok := t.index[hashSeq(s)]; ok {
		for ; id != noNext; id = t.next[id] {
			if equal(t.Get(id), s) {
				return id, true
			}
		}
	}
	return 0, false
}

// Intern returns the id of s, adding it when new. s is copied.
func (t *StackTable) Intern(s []uint64) uint32 {
	if id, ok := t.Find(s); ok {
		return id
	}
	h := hashSeq(s)
	id := uint32(len(t.hash))
	t.data = append(t.data, s...)
	t.offs = append(t.offs, uint32(len(t.data)))
	t.hash = append(t.hash, h)
	first, ok := t.index[h]
	if ok {
		t.next = append(t.next, first)
	} else {
		t.next = append(t.next, noNext)
	}
	t.index[h] = id
	return id
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Get returns the sequence with id. The slice must not be modified.
func (t *StackTable) Get(id uint32) []uint64 { return t.data[t.offs[id]:t.offs[id+1]] }

// Len is the number of distinct sequences.
func (t *StackTable) Len() int { return len(t.hash) }

// Values is the number of values in all the sequences together.
func (t *StackTable) Values() int { return len(t.data) }

// Bytes estimates the table's memory.
func (t *StackTable) Bytes() int {
	return len(t.data)*8 + len(t.offs)*4 + len(t.hash)*8 + len(t.next)*4 + len(t.index)*24
}
