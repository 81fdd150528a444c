package jit

import "sync/atomic"

// Budget bounds the memory that JIT tables keep (names, code, line tables, unwinding data):
// every Table sharing a Budget draws on it as it takes a function, and a function that does
// not fit is dropped and counted. A JIT file is written by the profiled program, which may
// be hostile or simply enormous (a perf map of millions of lines): the budget keeps the
// recorder's memory bounded whatever it holds.
//
// The tables of a system-wide run belong to processes of different users: one process must
// not take what another needs. So each table may hold at most its share of the budget, the
// limit divided by the number of processes that share it (SetShares, told by the caller as
// it finds processes with JIT files): a table at its share drops its own oldest functions
// to take a new one (counted, in TableStats.Evicted), and a table over a share that shrank
// as processes joined gives back its oldest ones (Table.Shrink). The total stays bounded by
// the limit whatever the shares.
type Budget struct {
	limit  int64
	used   atomic.Int64
	shares atomic.Int64
}

// NewBudget returns a budget of limit bytes, shared by one process until SetShares says
// otherwise.
func NewBudget(limit int64) *Budget {
	b := &Budget{limit: limit}
	b.shares.Store(1)
	return b
}

// SetShares says how many processes share the budget: each table may hold Share bytes.
func (b *Budget) SetShares(n int) {
	if b != nil {
		b.shares.Store(int64(max(n, 1)))
	}
}

// Shares is the number of processes sharing the budget.
func (b *Budget) Shares() int {
	if b == nil {
		return 1
	}
	return int(b.shares.Load())
}

// Share is the most one table may hold: the limit divided by the processes sharing it.
func (b *Budget) Share() int64 {
	if b == nil {
		return 1<<63 - 1
	}
	return b.limit / max(b.shares.Load(), 1)
}

// take reserves n bytes; false (and nothing reserved) when they do not fit.
func (b *Budget) take(n int64) bool {
	if b == nil {
		return true
	}
	for {
		used := b.used.Load()
		if used+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// give returns n bytes taken earlier.
func (b *Budget) give(n int64) {
	if b != nil {
		b.used.Add(-n)
	}
}

// Used is the bytes taken.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Limit is the budget's size.
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

// Full says whether the budget has less than a typical function's cost left.
func (b *Budget) Full() bool {
	return b != nil && b.used.Load()+funcOverhead+64 > b.limit
}

// funcOverhead estimates what a Func costs beyond its variable parts: the struct (some
// 160 bytes), its pointer in the table, its node in a live set and its share of the lookup
// index and of the garbage that rebuilding the index leaves.
const funcOverhead = 256

// cost estimates the resident memory f costs: what it keeps, times heapFactor.
func (f *Func) cost() int64 {
	return heapFactor * (funcOverhead + int64(len(f.Name)) + int64(cap(f.Code)) + int64(len(f.Unwind)) +
		int64(len(f.Lines))*lineEntryCost)
}

// heapFactor is what memory kept on the Go heap costs in resident memory: the heap grows
// to about twice what is live between two collections (GOGC=100), so a budget of resident
// memory keeps functions of half its size.
const heapFactor = 2

const lineEntryCost = 48
