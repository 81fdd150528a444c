package views

import (
	"sort"

	"github.com/stax-profiler/stax/internal/agg"
)

// CallRow is one caller (or callee) of a function: the samples in which it calls the
// function (or the function calls it).
type CallRow struct {
	Func    string `json:"func"`
	Image   string `json:"image"`
	Kind    string `json:"kind"`
	Inlined bool   `json:"inlined,omitempty"`
	// File and Line locate the caller's (callee's) function, as in top; in a view by line
	// (see Granularity) they are the row's line: for a caller, the line of its call.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Addr uint64 `json:"addr,omitempty"` // in a view by address: the row's instruction`
	// Total counts the samples through this edge; Self those of them whose leaf is the
	// function asked about (callers) or this callee (callees).
	Self  uint64 `json:"self"`
	Total uint64 `json:"total"`
	// Pct is Total's share of the function's total samples.
	Pct float64 `json:"pct"`
}

// CallFunction is one function matching a callers or callees query, with its rows.
type CallFunction struct {
	Func     string  `json:"func"`
	Image    string  `json:"image"`
	Kind     string  `json:"kind"`
	Inlined  bool    `json:"inlined,omitempty"`
	File     string  `json:"file,omitempty"`
	Line     int     `json:"line,omitempty"`
	Addr     uint64  `json:"addr,omitempty"`
	Self     uint64  `json:"self"`
	Total    uint64  `json:"total"`
	SelfPct  float64 `json:"self_pct"`  // of all samples
	TotalPct float64 `json:"total_pct"` // of all samples
	// Outermost counts the samples in which the function has no caller (callers only: it
	// is the stack's outermost frame). With the rows' totals and, for callees, Self, it makes
	// up Total.
	Outermost uint64    `json:"outermost,omitempty"`
	Rows      []CallRow `json:"rows"`
}

// Callers lists, for each function whose frame match accepts (the maxFuncs with the most
// total samples, hottest first; 0: all), who calls it (or, with callees, whom it calls):
// at most maxRows rows each (0: all), most samples first.
//
// Recursion is folded: in each sample a function's caller is the frame above its outermost
// appearance and its callee the frame below its innermost one, so a function is never its
// own caller or callee, and each sample counts once per function; a function's rows (with
// Outermost, and Self for callees) add up to its total.
func Callers(p *agg.Profile, f Filter, match func(agg.Frame) bool, maxFuncs, maxRows int, callees bool) ([]CallFunction, uint64) {
	perStack, samples := stackCounts(p, f)
	matched := make([]bool, len(p.Frames))
	found := false
	for id, fr := range p.Frames {
		if match(fr) {
			matched[id], found = true, true
		}
	}
	if !found {
		return nil, samples
	}

	// The matching functions' totals, each sample once per function.
	self := make([]uint64, len(p.Frames))
	total := make([]uint64, len(p.Frames))
	seen := make([]uint32, len(p.Frames))
	fst := p.FuncStacks()
	for sid, n := range perStack {
		if n == 0 {
			continue
		}
		st := fst[sid]
		mark := uint32(sid + 1)
		for _, id := range st {
			if matched[id] && seen[id] != mark {
				seen[id] = mark
				total[id] += n
			}
		}
		if len(st) > 0 && matched[st[0]] {
			self[st[0]] += n
		}
	}
	var funcs []uint32
	for id := range p.Frames {
		if total[id] > 0 {
			funcs = append(funcs, uint32(id))
		}
	}
	sort.Slice(funcs, func(i, j int) bool {
		a, b := funcs[i], funcs[j]
		if total[a] != total[b] {
			return total[a] > total[b]
		}
		if self[a] != self[b] {
			return self[a] > self[b]
		}
		return p.Frames[a].Func < p.Frames[b].Func
	})
	if maxFuncs > 0 && len(funcs) > maxFuncs {
		funcs = funcs[:maxFuncs]
	}

	// The edges of the functions kept: slot[id] is the function's place in funcs, +1.
	slot := make([]int32, len(p.Frames))
	for i, id := range funcs {
		slot[id] = int32(i + 1)
	}
	type edge struct{ self, total uint64 }
	edges := make([]map[uint32]*edge, len(funcs))
	for i := range edges {
		edges[i] = map[uint32]*edge{}
	}
	outermost := make([]uint64, len(funcs))
	outer := make([]int32, len(funcs)) // per stack: the function's outermost index, -1: absent
	inner := make([]int32, len(funcs))
	for i := range outer {
		outer[i] = -1
	}
	var touched []int32
	for sid, n := range perStack {
		if n == 0 {
			continue
		}
		st := fst[sid]
		touched = touched[:0]
		for j := len(st) - 1; j >= 0; j-- { // root first
			s := slot[st[j]] - 1
			if s < 0 {
				continue
			}
			if outer[s] < 0 {
				outer[s] = int32(j)
				touched = append(touched, s)
			}
			inner[s] = int32(j)
		}
		for _, s := range touched {
			var other int
			if callees {
				other = int(inner[s]) - 1
			} else {
				other = int(outer[s]) + 1
			}
			leaf := st[0] == funcs[s]
			outer[s] = -1
			if other < 0 || other >= len(st) {
				if !callees {
					outermost[s] += n
				}
				continue
			}
			id := st[other]
			e := edges[s][id]
			if e == nil {
				e = &edge{}
				edges[s][id] = e
			}
			e.total += n
			if callees && other == 0 || !callees && leaf {
				e.self += n
			}
		}
	}

	out := make([]CallFunction, len(funcs))
	for i, id := range funcs {
		fr := p.Frames[id]
		cf := CallFunction{Func: fr.Func, Image: fr.Image, Kind: fr.Kind, Inlined: fr.Inlined, File: fr.File, Line: fr.Line, Addr: fr.Addr,
			Self: self[id], Total: total[id], SelfPct: pct(self[id], samples), TotalPct: pct(total[id], samples),
			Outermost: outermost[i], Rows: make([]CallRow, 0, len(edges[i]))}
		for oid, e := range edges[i] {
			o := p.Frames[oid]
			cf.Rows = append(cf.Rows, CallRow{Func: o.Func, Image: o.Image, Kind: o.Kind, Inlined: o.Inlined, File: o.File, Line: o.Line, Addr: o.Addr,
				Self: e.self, Total: e.total, Pct: pct(e.total, total[id])})
		}
		sort.Slice(cf.Rows, func(a, b int) bool {
			x, y := cf.Rows[a], cf.Rows[b]
			if x.Total != y.Total {
				return x.Total > y.Total
			}
			if x.Self != y.Self {
				return x.Self > y.Self
			}
			if x.Func != y.Func {
				return x.Func < y.Func
			}
			if x.Line != y.Line {
				return x.Line < y.Line
			}
			if x.Addr != y.Addr {
				return x.Addr < y.Addr
			}
			return x.Image < y.Image
		})
		if maxRows > 0 && len(cf.Rows) > maxRows {
			cf.Rows = cf.Rows[:maxRows]
		}
		out[i] = cf
	}
	return out, samples
}
