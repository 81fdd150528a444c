package views

import (
	"cmp"
	"slices"
	"sort"
	"strings"

	"github.com/stax-profiler/stax/internal/agg"
)

// Filter restricts a view to some samples.
type Filter struct {
	Tid  uint32          // 0: every thread
	Pids map[uint32]bool // nil: every process
}

func (f Filter) keep(e *agg.Entry) bool {
	return (f.Tid == 0 || e.Tid == f.Tid) && (f.Pids == nil || f.Pids[e.Pid])
}

// ProcessRow is one process in top --by process.
type ProcessRow struct {
	Pid     uint32  `json:"pid"`
	Comm    string  `json:"comm"`
	Threads int     `json:"threads"`
	Samples uint64  `json:"samples"`
	Pct     float64 `json:"pct"`
	TopFunc string  `json:"top_func,omitempty"` // its hottest function (self)
}

// Processes lists processes by samples: what a system-wide run spent its time on.
func Processes(p *agg.Profile, f Filter, n int) ([]ProcessRow, uint64) {
	rows := map[uint32]*ProcessRow{}
	threads := map[uint32]map[uint32]bool{}
	self := map[uint32]map[uint32]uint64{}
	var total uint64
	for i := range p.Entries {
		e := &p.Entries[i]
		if !f.keep(e) {
			continue
		}
		total += e.Count
		r := rows[e.Pid]
		if r == nil {
			r = &ProcessRow{Pid: e.Pid}
			rows[e.Pid] = r
			threads[e.Pid] = map[uint32]bool{}
			self[e.Pid] = map[uint32]uint64{}
		}
		r.Samples += e.Count
		threads[e.Pid][e.Tid] = true
		if leaf, ok := p.LeafFrame(e.Stack); ok {
			self[e.Pid][leaf] += e.Count
		}
	}
	names := ProcessNames(p)
	out := make([]ProcessRow, 0, len(rows))
	for pid, r := range rows {
		r.Comm, r.Threads, r.Pct = names[pid], len(threads[pid]), pct(r.Samples, total)
		var best uint32
		var bestN uint64
		for id, c := range self[pid] {
			if c > bestN || (c == bestN && id < best) {
				best, bestN = id, c
			}
		}
		if bestN > 0 {
			r.TopFunc = p.Frames[best].Func
		}
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Samples != out[j].Samples {
			return out[i].Samples > out[j].Samples
		}
		return out[i].Pid < out[j].Pid
	})
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out, total
}

// ProcessNames names each process after its main thread (the thread whose id is the pid).
func ProcessNames(p *agg.Profile) map[uint32]string {
	names := map[uint32]string{}
	for _, t := range p.Threads {
		if t.Tid == t.Pid || names[t.Pid] == "" {
			names[t.Pid] = t.Name
		}
	}
	return names
}

// TopRow is one function in the top view (or one source line, address or image: see
// Granularity).
type TopRow struct {
	Func    string `json:"func"`
	Image   string `json:"image"`
	Kind    string `json:"kind"`
	Inlined bool   `json:"inlined,omitempty"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	// Addr is the row's instruction address in a view by address.
	Addr     uint64  `json:"addr,omitempty"`
	Self     uint64  `json:"self"`
	Total    uint64  `json:"total"`
	SelfPct  float64 `json:"self_pct"`
	TotalPct float64 `json:"total_pct"`
	// Reason is, in an off-CPU view, the reason with the most of the row's total time.
	Reason string `json:"reason,omitempty"`
}

// stackCounts sums the samples f keeps per stack.
func stackCounts(p *agg.Profile, f Filter) (perStack []uint64, samples uint64) {
	perStack = make([]uint64, len(p.Stacks))
	for i := range p.Entries {
		e := &p.Entries[i]
		if f.keep(e) && int(e.Stack) < len(perStack) {
			perStack[e.Stack] += e.Count
			samples += e.Count
		}
	}
	return perStack, samples
}

// Top returns the functions with the most samples, sorted by self or total samples.
func Top(p *agg.Profile, f Filter, n int, byTotal bool) (rows []TopRow, samples uint64) {
	return top(p, f, n, byTotal, nil)
}

// OffCPUTop is Top over an off-CPU profile (counts are nanoseconds): each row also gets its
// dominant reason, from reasons (StackReasons of the profile by function).
func OffCPUTop(p *agg.Profile, reasons []uint8, f Filter, n int, byTotal bool) (rows []TopRow, ns uint64) {
	return top(p, f, n, byTotal, reasons)
}

// reasonSums sums time per reason (indexes of Reasons).
type reasonSums [16]uint64

func (r *reasonSums) dominant() string {
	best := -1
	for i := range Reasons {
		if r[i] > 0 && (best < 0 || r[i] > r[best]) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return Reasons[best]
}

func top(p *agg.Profile, f Filter, n int, byTotal bool, reasons []uint8) (rows []TopRow, samples uint64) {
	perStack, samples := stackCounts(p, f)
	var byReason []reasonSums
	if reasons != nil {
		byReason = make([]reasonSums, len(p.Frames))
	}
	self := make([]uint64, len(p.Frames))
	total := make([]uint64, len(p.Frames))
	seen := make([]uint32, len(p.Frames)) // stack id+1 that last counted the frame
	fst := p.FuncStacks()
	for sid, c := range perStack {
		if c == 0 {
			continue
		}
		stack := fst[sid]
		if len(stack) == 0 {
			continue
		}
		self[stack[0]] += c
		mark := uint32(sid + 1)
		for _, id := range stack {
			if seen[id] != mark { // recursion counts once
				seen[id] = mark
				total[id] += c
				if byReason != nil && sid < len(reasons) {
					byReason[id][reasons[sid]] += c
				}
			}
		}
	}
	for id, fr := range p.Frames {
		if total[id] == 0 {
			continue
		}
		rows = append(rows, TopRow{Func: fr.Func, Image: fr.Image, Kind: fr.Kind, Inlined: fr.Inlined,
			File: fr.File, Line: fr.Line, Addr: fr.Addr, Self: self[id], Total: total[id],
			SelfPct: pct(self[id], samples), TotalPct: pct(total[id], samples)})
		if byReason != nil {
			rows[len(rows)-1].Reason = byReason[id].dominant()
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		ka, kb := a.Self, b.Self
		if byTotal {
			ka, kb = a.Total, b.Total
		}
		if ka != kb {
			return ka > kb
		}
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		if a.Func != b.Func {
			return a.Func < b.Func
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Addr < b.Addr
	})
	if n > 0 && len(rows) > n {
		rows = rows[:n]
	}
	return rows, samples
}

func pct(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) * 100 / float64(b)
}

// Place is where a row of a view by source line or by address is.
type Place struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Addr uint64 `json:"addr,omitempty"`
}

// FlameNode is one node of the call tree, root first.
type FlameNode struct {
	Func    string `json:"func"`
	Image   string `json:"image"`
	Kind    string `json:"kind"`
	Inlined bool   `json:"inlined,omitempty"`
	// Place is set in views by source line or address (see Granularity); its keys are
	// the node's own in JSON.
	*Place
	Self     uint64   `json:"self"`
	Total    uint64   `json:"total"`
	TotalPct float64  `json:"total_pct"`
	BasePct  *float64 `json:"base_pct,omitempty"` // flame --diff: the same path's share in the base run
	Reason   string   `json:"reason,omitempty"`   // off-CPU: the reason with the most of the node's time
	// Counters are what the counters read with the samples (stax record --counters)
	// counted in the node's samples, its callees' included; SelfCounters in those whose
	// stack ends at the node. nil: no counters.
	Counters     []uint64     `json:"counters,omitempty"`
	SelfCounters []uint64     `json:"self_counters,omitempty"`
	Children     []*FlameNode `json:"children,omitempty"`
}

type flatNode struct {
	frame       uint32
	parent      int32
	self, total uint64
}

// Flame builds the call tree (callers above callees), pruned to depth levels below the root
// (0: all) and to nodes with at least thresholdPct of the samples. It works on a flat node
// table with one index, and makes output nodes only for what survives the pruning.
func Flame(p *agg.Profile, f Filter, depth int, thresholdPct float64) (*FlameNode, uint64) {
	return flame(p, f, FlameShape{Depth: depth, ThresholdPct: thresholdPct})
}

// OffCPUFlame is Flame (or InvertedFlame) over an off-CPU profile: each node also gets its
// dominant reason, from reasons (StackReasons of the profile by function).
func OffCPUFlame(p *agg.Profile, reasons []uint8, f Filter, depth int, thresholdPct float64, inverted bool) (*FlameNode, uint64) {
	return flame(p, f, FlameShape{Depth: depth, ThresholdPct: thresholdPct, Inverted: inverted, Reasons: reasons})
}

// InvertedFlame builds the tree bottom-up: the leaf functions (where samples landed) under
// the root, each with its callers below it, pruned as Flame. A node's Self counts the
// samples whose stack ends there (the function is their outermost frame).
func InvertedFlame(p *agg.Profile, f Filter, depth int, thresholdPct float64) (*FlameNode, uint64) {
	return flame(p, f, FlameShape{Depth: depth, ThresholdPct: thresholdPct, Inverted: true})
}

// flame builds the tree of the samples of p that f keeps, shaped by o, in steps: their
// stacks as paths from the root (cut to a sandwich's side or a subtree when o asks), the
// paths split into nodes, the nodes made into the tree.
func flame(p *agg.Profile, f Filter, o FlameShape) (*FlameNode, uint64) {
	perStack, total := stackCounts(p, f)
	fst := p.FuncStacks()
	counted := perStack // the stacks the root counts
	if o.reshapes() {
		// Each stack cut to the sandwich's side and the subtree asked for (subtree.go).
		fst, perStack, counted, total = o.reshape(p, fst, perStack)
	}
	base := total // what the threshold is a share of: the subtree's samples
	if len(o.Under) > 0 {
		base = 0
		for sid, n := range perStack {
			if n > 0 && len(fst[sid]) >= len(o.Under) {
				base += n
			}
		}
	}
	var counters *nodeCounters
	var stacks *[]uint32
	if !o.NoCounters {
		if counters = newNodeCounters(p, f, counted); counters != nil {
			stacks = &counters.pathStack
		}
	}
	paths := flamePaths(fst, perStack, o.Depth, len(o.Under), o.Inverted, o.Reasons, stacks)
	nodes, byReason, nc := splitPaths(paths, total, base, o.ThresholdPct, o.Reasons != nil, counters)
	return flameTree(p, nodes, byReason, nc, total), total
}

// flamePath is a sampled stack as a path from the tree's root, cut to a depth.
type flamePath struct {
	frames []uint32
	count  uint64
	whole  bool // not cut: its last frame gets the samples as self
	reason uint8
}

// flamePaths is each sampled stack (fst holds them, perStack counts them) as a path from
// the tree's root, cut to depth frames below the first under (a subtree's root); stacks
// that end above it are left out. With stacks, it also gives each path's stack id.
func flamePaths(fst [][]uint32, perStack []uint64, depth, under int, inverted bool, reasons []uint8, stacks *[]uint32) []flamePath {
	frames := 0
	for sid, n := range perStack {
		if n > 0 {
			frames += len(fst[sid])
		}
	}
	paths := make([]flamePath, 0, len(perStack))
	var slab []uint32
	if !inverted {
		slab = make([]uint32, 0, frames)
	}
	for sid, n := range perStack {
		if n == 0 {
			continue
		}
		st := fst[sid]
		keep := len(st)
		if keep < under {
			continue // ends above the subtree's root (reshape kept only its path)
		}
		if depth > 0 && keep > depth+under {
			keep = depth + under
		}
		pa := flamePath{count: n, whole: keep == len(st)}
		if sid < len(reasons) {
			pa.reason = reasons[sid]
		}
		if inverted {
			pa.frames = st[:keep:keep]
		} else {
			at := len(slab)
			for j := len(st) - 1; j >= len(st)-keep; j-- {
				slab = append(slab, st[j])
			}
			pa.frames = slab[at:len(slab):len(slab)]
		}
		paths = append(paths, pa)
		if stacks != nil {
			*stacks = append(*stacks, uint32(sid))
		}
	}
	return paths
}

// splitPaths builds the tree's nodes, parents before their children, from the paths: the
// paths below a node are one range, sorted by their next frame (those that end at the node
// first) and split by it into its children's ranges. Only the children of thresholdPct of
// base or more are sorted and visited further, so a pruned tree costs what it keeps, not
// the whole tree (sorting whole paths first cost a big run most of its time). With
// reasons, byReason sums each node's samples by reason; with counters (nc not nil), nc
// sums each node's counters.
func splitPaths(paths []flamePath, total, base uint64, thresholdPct float64, reasons bool, nc *nodeCounters) (nodes []flatNode, byReason []reasonSums, _ *nodeCounters) {
	order := make([]int32, len(paths))
	for i := range order {
		order[i] = int32(i)
	}
	nodes = []flatNode{{parent: -1, total: total}}
	if reasons {
		byReason = make([]reasonSums, 1)
		for i := range paths {
			byReason[0][paths[i].reason] += paths[i].count
		}
	}
	var split func(lo, hi, lvl int, parent int32)
	split = func(lo, hi, lvl int, parent int32) {
		slices.SortFunc(order[lo:hi], func(a, b int32) int {
			fa, fb := paths[a].frames, paths[b].frames
			if len(fa) == lvl || len(fb) == lvl {
				return cmp.Compare(len(fa), len(fb)) // the shorter ends here: first
			}
			return cmp.Compare(fa[lvl], fb[lvl])
		})
		for lo < hi && len(paths[order[lo]].frames) == lvl { // sorted first: they end at parent
			if pa := &paths[order[lo]]; pa.whole {
				nodes[parent].self += pa.count
				nc.addSelf(int(parent), order[lo])
			}
			lo++
		}
		for lo < hi {
			frame := paths[order[lo]].frames[lvl]
			end, sum := lo, uint64(0)
			for end < hi && paths[order[end]].frames[lvl] == frame {
				sum += paths[order[end]].count
				end++
			}
			if pct(sum, base) >= thresholdPct {
				id := int32(len(nodes))
				nodes = append(nodes, flatNode{frame: frame, parent: parent, total: sum})
				if byReason != nil {
					var rs reasonSums
					for i := lo; i < end; i++ {
						rs[paths[order[i]].reason] += paths[order[i]].count
					}
					byReason = append(byReason, rs)
				}
				if nc != nil {
					nc.grow()
					for i := lo; i < end; i++ {
						nc.addTotal(int(id), order[i])
					}
				}
				split(lo, end, lvl+1, id)
			}
			lo = end
		}
	}
	split(0, len(order), 0, 0)
	return nodes, byReason, nc
}

// flameTree makes the output nodes of nodes (parents before their children) in one
// block, children sorted: one pass counts the children, a second makes the nodes.
func flameTree(p *agg.Profile, nodes []flatNode, byReason []reasonSums, nc *nodeCounters, total uint64) *FlameNode {
	survivors := len(nodes)
	out := make([]int32, len(nodes))
	kids := make([]int32, len(nodes))
	for i := 1; i < len(nodes); i++ {
		out[i] = int32(i)
		kids[nodes[i].parent]++
	}
	block := make([]FlameNode, survivors)
	children := make([]*FlameNode, survivors-1)
	block[0] = FlameNode{Func: "all", Kind: "root", Self: nodes[0].self, Total: total, TotalPct: pct(total, total)}
	if byReason != nil {
		block[0].Reason = byReason[0].dominant()
	}
	block[0].Counters, block[0].SelfCounters = nc.of(0)
	used := 0
	give := func(fn *FlameNode, n int32) {
		if n > 0 {
			fn.Children = children[used : used : used+int(n)]
			used += int(n)
		}
	}
	give(&block[0], kids[0])
	sites := p.View.By == agg.ByLine || p.View.By == agg.ByAddress
	for i := 1; i < len(nodes); i++ {
		if out[i] < 0 {
			continue
		}
		nd := &nodes[i]
		fr := p.Frames[nd.frame]
		fn := &block[out[i]]
		*fn = FlameNode{Func: fr.Func, Image: fr.Image, Kind: fr.Kind, Inlined: fr.Inlined,
			Self: nd.self, Total: nd.total, TotalPct: pct(nd.total, total)}
		if sites {
			fn.Place = &Place{File: fr.File, Line: fr.Line, Addr: fr.Addr}
		}
		if byReason != nil {
			fn.Reason = byReason[i].dominant()
		}
		fn.Counters, fn.SelfCounters = nc.of(i)
		give(fn, kids[i])
		parent := &block[out[nd.parent]]
		parent.Children = append(parent.Children, fn)
	}
	for i := range block {
		slices.SortFunc(block[i].Children, compareFlameNodes)
	}
	return &block[0]
}

// compareFlameNodes orders a node's children: most total first, then by name, line and
// address.
func compareFlameNodes(a, b *FlameNode) int {
	if a.Total != b.Total {
		return cmp.Compare(b.Total, a.Total)
	}
	if c := strings.Compare(a.Func, b.Func); c != 0 || a.Place == nil || b.Place == nil {
		return c
	}
	if a.Line != b.Line {
		return cmp.Compare(a.Line, b.Line)
	}
	return cmp.Compare(a.Addr, b.Addr)
}

// ThreadRow is one thread in the threads view.
type ThreadRow struct {
	Tid     uint32  `json:"tid"`
	Pid     uint32  `json:"pid"`
	Name    string  `json:"name"`
	Samples uint64  `json:"samples"`
	Pct     float64 `json:"pct"`
	TopFunc string  `json:"top_func,omitempty"` // the thread's hottest function (self)
	// OffCPU is the thread's time on and off CPU, where the run recorded it.
	OffCPU *ThreadOffCPU `json:"off_cpu,omitempty"`
}

// Threads lists threads by samples; threads known but never sampled come last with zero.
func Threads(p *agg.Profile, n int) ([]ThreadRow, uint64) {
	byTid := map[uint32]*ThreadRow{}
	selfBy := map[uint32]map[uint32]uint64{}
	var total uint64
	for _, t := range p.Threads {
		byTid[t.Tid] = &ThreadRow{Tid: t.Tid, Pid: t.Pid, Name: t.Name}
	}
	for i := range p.Entries {
		e := &p.Entries[i]
		total += e.Count
		r := byTid[e.Tid]
		if r == nil {
			r = &ThreadRow{Tid: e.Tid, Pid: e.Pid}
			byTid[e.Tid] = r
		}
		r.Samples += e.Count
		if leaf, ok := p.LeafFrame(e.Stack); ok {
			m := selfBy[e.Tid]
			if m == nil {
				m = map[uint32]uint64{}
				selfBy[e.Tid] = m
			}
			m[leaf] += e.Count
		}
	}
	rows := make([]ThreadRow, 0, len(byTid))
	for tid, r := range byTid {
		r.Pct = pct(r.Samples, total)
		var best uint32
		var bestN uint64
		for id, c := range selfBy[tid] {
			if c > bestN || (c == bestN && id < best) {
				best, bestN = id, c
			}
		}
		if bestN > 0 {
			r.TopFunc = p.Frames[best].Func
		}
		rows = append(rows, *r)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Samples != rows[j].Samples {
			return rows[i].Samples > rows[j].Samples
		}
		return rows[i].Tid < rows[j].Tid
	})
	if n > 0 && len(rows) > n {
		rows = rows[:n]
	}
	return rows, total
}

// HasSymbol reports whether any frame's name contains s (case-insensitive).
func HasSymbol(frames []agg.Frame, s string) bool {
	s = strings.ToLower(s)
	for _, f := range frames {
		if strings.Contains(strings.ToLower(f.Func), s) {
			return true
		}
	}
	return false
}
