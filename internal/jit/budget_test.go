package jit

import (
	"encoding/binary"
	"fmt"
	"testing"
)

func mapLines(from, n int) []PerfMapEntry {
	es := make([]PerfMapEntry, n)
	for i := range es {
		es[i] = PerfMapEntry{Start: 0x100000000 + uint64(from+i)*16, Size: 16, Name: fmt.Sprint("f", from+i)}
	}
	return es
}

// A table at its share drops its own oldest functions for new ones, and counts them; the
// other table's share stays whole for it.
func TestTableKeepsToItsShare(t *testing.T) {
	const limit = 1 << 20
	b := NewBudget(limit)
	b.SetShares(2)
	flood, other := NewTableWithin(b), NewTableWithin(b)
	const n = 20000 // some 5 MiB of functions: ten times the flood's share
	flood.AddPerfMap(1, mapLines(0, n), 10)
	if got := flood.Bytes(); got > b.Share() || got < b.Share()*9/10 {
		t.Errorf("the flooding table keeps %d bytes, want near its share %d", got, b.Share())
	}
	st := flood.Stats()
	if st.Evicted == 0 || st.OverBudget != 0 || uint64(st.Funcs)+st.Evicted != n || flood.EvictedFrom(1) != st.Evicted {
		t.Errorf("stats %+v, evicted from origin 1: %d", st, flood.EvictedFrom(1))
	}
	if _, ok := flood.Lookup(0x100000000, 11); ok {
		t.Errorf("the oldest function is still named")
	}
	if f, ok := flood.Lookup(0x100000000+16*(n-1), 11); !ok || f.Name != fmt.Sprint("f", n-1) {
		t.Errorf("the newest function is not named: %v %v", f, ok)
	}
	// The other table takes its whole share without a drop.
	other.AddPerfMap(1, mapLines(0, 500), 10)
	if st := other.Stats(); st.Funcs != 500 || st.Evicted != 0 || st.OverBudget != 0 {
		t.Errorf("the other table: %+v", st)
	}
	if b.Used() != flood.Bytes()+other.Bytes() || b.Used() > limit {
		t.Errorf("budget used %d, tables %d + %d, limit %d", b.Used(), flood.Bytes(), other.Bytes(), limit)
	}
}

// A table that took the whole budget alone gives back its oldest functions when a second
// process comes to share it (Shrink): the newcomer's functions all fit.
func TestTableShrinksWhenTheShareShrinks(t *testing.T) {
	const limit = 1 << 20
	b := NewBudget(limit)
	flood := NewTableWithin(b)
	flood.AddPerfMap(1, mapLines(0, 20000), 10)
	if b.Full() == false || flood.Bytes() < limit*9/10 {
		t.Fatalf("the flood keeps %d of %d", flood.Bytes(), limit)
	}
	gen := flood.Generation(5)
	b.SetShares(2)
	if n := flood.Shrink(b.Share()); n == 0 || flood.Bytes() > b.Share() {
		t.Errorf("shrink dropped %d, keeps %d, share %d", n, flood.Bytes(), b.Share())
	}
	if flood.Generation(5) == gen {
		t.Errorf("dropping functions did not change the generation of earlier times")
	}
	jit := NewTableWithin(b)
	d := newDump(binary.LittleEndian, 1, 0)
	for i := range 100 {
		d.load(uint64(i), 0x7f0000000000+uint64(i)*4096, fmt.Sprint("jitted_", i), make([]byte, 2048))
	}
	_, recs := mustRecords(t, d.bytes())
	jit.Apply(1, SourceJitdump, recs)
	if st := jit.Stats(); st.Funcs != 100 || st.Evicted != 0 || st.OverBudget != 0 {
		t.Errorf("the newcomer's table: %+v", st)
	}
	if f, ok := jit.Lookup(0x7f0000000000+99*4096+10, 1<<40); !ok || f.Name != "jitted_99" {
		t.Errorf("lookup: %v %v", f, ok)
	}
	if b.Used() > limit {
		t.Errorf("budget used %d of %d", b.Used(), limit)
	}
}

// A function larger than the table's whole share is refused, not paid for with every other
// one.
func TestTableRefusesAFunctionOverItsShare(t *testing.T) {
	b := NewBudget(64 << 10)
	b.SetShares(4)
	tab := NewTableWithin(b)
	tab.AddPerfMap(1, mapLines(0, 10), 10)
	d := newDump(binary.LittleEndian, 1, 0)
	d.load(1, 0x7f0000000000, "huge", make([]byte, 32<<10))
	_, recs := mustRecords(t, d.bytes())
	tab.Apply(2, SourceJitdump, recs)
	if st := tab.Stats(); st.OverBudget != 1 || st.Evicted != 0 || st.Funcs != 10 {
		t.Errorf("stats %+v", st)
	}
}

// Evicted functions leave the table's memory at once, not at its next lookup.
func TestEvictionCompacts(t *testing.T) {
	b := NewBudget(256 << 10)
	tab := NewTableWithin(b)
	for i := range 50 {
		tab.AddPerfMap(1, mapLines(i*1000, 1000), uint64(10+i))
	}
	tab.mu.RLock()
	held, removed := len(tab.funcs), tab.removed
	tab.mu.RUnlock()
	if live := tab.Stats().Funcs; held > 2*live+1024 || removed > held {
		t.Errorf("the table holds %d entries (%d removed) for %d live", held, removed, live)
	}
}
