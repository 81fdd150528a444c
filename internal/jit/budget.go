package jit

import "sync/atomic"

// Budget bounds the memory that JIT tables keep (names, code, line tables, unwinding data):
// every Table sharing a Budget draws on it as it takes a function, and a function that does
// not fit is dropped and counted. A JIT file is written by the profiled program, which may
// be hostile or simply enormous (a perf map of millions of lines): the budget keeps the
// recorder's memory bounded whatever it holds.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// NewBudget returns a budget of limit bytes.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

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

// Full says whether the budget has less than a typical function's cost left: readers of
// JIT files stop reading then, since what they would read could not be kept.
func (b *Budget) Full() bool {
	return b != nil && b.used.Load()+funcOverhead+64 > b.limit
}

// funcOverhead estimates what a Func costs beyond its variable parts: the struct, its
// pointer in the table, its node in a live set and its share of the lookup index.
const funcOverhead = 256

// cost estimates the memory f keeps.
func (f *Func) cost() int64 {
	return funcOverhead + int64(len(f.Name)) + int64(cap(f.Code)) + int64(len(f.Unwind)) +
		int64(len(f.Lines))*lineEntryCost
}

const lineEntryCost = 48
