package agg

import (
	"math/rand/v2"
	"testing"
)

// hashStep is one round of hashSeq, so tests can build sequences that collide on purpose.
func hashStep(h, v uint64) uint64 {
	h ^= v
	h *= 1099511628211
	h ^= h >> 29
	return h
}

const hashBasis = uint64(14695981039346656037)

// collidingPairs returns n distinct two-element sequences that all have the same hash: for
// (a, b) and (a', b'), the state after the second element is equal when
// b' = step(basis, a) ^ b ^ step(basis, a').
func collidingPairs(n int) [][]uint64 {
	a0, b0 := uint64(0x401000), uint64(0x402000)
	h1 := hashStep(hashBasis, a0)
	out := [][]uint64{{a0, b0}}
	for i := 1; i < n; i++ {
		a := a0 + uint64(i)*8
		out = append(out, []uint64{a, h1 ^ b0 ^ hashStep(hashBasis, a)})
	}
	return out
}

func TestStackTableCollisions(t *testing.T) {
	seqs := collidingPairs(64)
	h := hashSeq(seqs[0])
	for _, s := range seqs {
		if hashSeq(s) != h {
			t.Fatalf("the sequences were built to collide but %x hashes to %x, not %x (hashSeq changed?)", s, hashSeq(s), h)
		}
	}
	tab := NewStackTable()
	ids := make([]uint32, len(seqs))
	for i, s := range seqs {
		ids[i] = tab.Intern(s)
		if int(ids[i]) != i {
			t.Fatalf("id %d for sequence %d, want dense ids", ids[i], i)
		}
	}
	for pass := 0; pass < 2; pass++ {
		for i, s := range seqs {
			if id := tab.Intern(s); id != ids[i] {
				t.Errorf("pass %d: sequence %d interned again as %d, want %d", pass, i, id, ids[i])
			}
			if got := tab.Get(ids[i]); !equal(got, s) {
				t.Errorf("Get(%d) = %x, want %x", ids[i], got, s)
			}
		}
	}
	if tab.Len() != len(seqs) {
		t.Errorf("Len = %d, want %d", tab.Len(), len(seqs))
	}
	if len(tab.index) != 1 {
		t.Errorf("%d hash buckets, want 1 (all collide)", len(tab.index))
	}
}

func TestStackTableMany(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tab := NewStackTable()
	var seqs [][]uint64
	seen := map[string]uint32{}
	key := func(s []uint64) string {
		b := make([]byte, 0, len(s)*8)
		for _, v := range s {
			for i := 0; i < 8; i++ {
				b = append(b, byte(v>>(8*i)))
			}
		}
		return string(b)
	}
	for i := 0; i < 50000; i++ {
		n := rng.IntN(8)
		s := make([]uint64, n)
		for j := range s {
			s[j] = uint64(rng.IntN(16)) // small alphabet: many repeats and shared prefixes
		}
		id := tab.Intern(s)
		if want, ok := seen[key(s)]; ok {
			if id != want {
				t.Fatalf("sequence %x: id %d, earlier %d", s, id, want)
			}
			continue
		}
		if int(id) != len(seqs) {
			t.Fatalf("new sequence %x got id %d, want %d", s, id, len(seqs))
		}
		seen[key(s)] = id
		seqs = append(seqs, s)
	}
	for id, s := range seqs {
		if got := tab.Get(uint32(id)); !equal(got, s) {
			t.Fatalf("Get(%d) = %x, want %x", id, got, s)
		}
	}
	if tab.Len() != len(seqs) || tab.Bytes() <= 0 {
		t.Errorf("Len = %d (want %d), Bytes = %d", tab.Len(), len(seqs), tab.Bytes())
	}
}

func TestStackTableCopiesInput(t *testing.T) {
	tab := NewStackTable()
	s := []uint64{1, 2, 3}
	id := tab.Intern(s)
	s[0] = 99
	if got := tab.Get(id); !equal(got, []uint64{1, 2, 3}) {
		t.Errorf("stored sequence changed with the caller's slice: %v", got)
	}
	if e := tab.Intern(nil); tab.Intern([]uint64{}) != e || len(tab.Get(e)) != 0 {
		t.Errorf("empty sequence not interned once")
	}
}

func TestStackTableDistinguishesLengthAndOrder(t *testing.T) {
	tests := [][]uint64{{}, {0}, {0, 0}, {1, 2}, {2, 1}, {1, 2, 0}, {0, 1, 2}}
	tab := NewStackTable()
	for i, s := range tests {
		if id := tab.Intern(s); int(id) != i {
			t.Errorf("%v got id %d, want %d", s, id, i)
		}
	}
}
