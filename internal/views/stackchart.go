package views

import (
	"cmp"
	"slices"

	"github.com/stax-profiler/stax/internal/agg"
)

// A stack chart is one thread's stacks over time (the Firefox Profiler's stack chart,
// speedscope's "time order"): time across, depth down, one box for each stretch of time
// a frame stayed on the thread's stack. Stacks come from the thread's samples (each
// stands for a sampling period) and, where asked, its intervals off CPU.

// StackChartOptions say which thread, what part of the run and how fine.
type StackChartOptions struct {
	Tid      uint32
	From, To uint64 // CLOCK_MONOTONIC ns
	PeriodNs uint64 // the time a sample stands for
	// MinNs: boxes shorter than this (a pixel's time) are left out, and with them
	// everything under them.
	MinNs uint64
	CPU   bool // the thread's samples
	// Off, with its Intervals and their Reasons (StackReasons of Off): the thread's time
	// off CPU, each interval a stretch of its stack.
	Off       *agg.Profile
	Intervals []agg.Interval
	Reasons   []uint8
	Transform *Transform // rewrites both kinds of stacks first, as every view's
	MaxBoxes  int        // 0: no bound
}

// StackChartFrame is a function a box stands for.
type StackChartFrame struct {
	Func    string `json:"func"`
	Image   string `json:"image"`
	Kind    string `json:"kind"`
	Inlined bool   `json:"inlined,omitempty"`
}

// StackBox is one frame over a stretch of time: at depth Depth (0: the stack's root), from
// Start to End (ns from the chart's From). Samples counts the samples in it; Off its time
// off CPU, and Reason the reason of that time when all of it had one (a box of waiting
// alone, Samples 0, is coloured by it).
type StackBox struct {
	Depth   int    `json:"d"`
	Frame   uint32 `json:"f"`
	Start   uint64 `json:"s"`
	End     uint64 `json:"e"`
	Samples uint32 `json:"n,omitempty"`
	Off     uint64 `json:"off,omitempty"`
	Reason  string `json:"r,omitempty"`
}

// StackChart is the chart's boxes, deepest last among those that start together.
type StackChart struct {
	Frames []StackChartFrame `json:"frames"`
	Boxes  []StackBox        `json:"boxes"`
	// Samples and OffNs are the thread's samples and time off CPU in the chart; Hidden
	// counts the boxes left out as shorter than MinNs, Truncated says MaxBoxes was reached
	// (the boxes stop there).
	Samples   uint64 `json:"samples"`
	OffNs     uint64 `json:"off_ns"`
	Hidden    int    `json:"hidden"`
	Truncated bool   `json:"truncated,omitempty"`
}

// segment is a stretch of one stack: frames root first, ids in the chart's table.
type segment struct {
	start, end uint64
	frames     []uint32
	off        bool
	reason     string
}

// stackMapper turns a profile's stacks (by id) into the chart's frames, root first,
// rewritten by the transform; each stack once.
type stackMapper struct {
	p     *agg.Profile
	fst   [][]uint32
	rw    *stackRewriter
	ids   []int32    // the profile's frame id -> the chart's, -1: not yet
	memo  [][]uint32 // by stack id: its frames; nil: not yet
	gone  []bool     // by stack id: the transform drops it
	chart *StackChart
	index map[StackChartFrame]uint32
}

func newStackMapper(p *agg.Profile, t *Transform, c *StackChart, index map[StackChartFrame]uint32) *stackMapper {
	fst := p.FuncStacks()
	m := &stackMapper{p: p, fst: fst, ids: make([]int32, len(p.Frames)), memo: make([][]uint32, len(fst)), gone: make([]bool, len(fst)), chart: c, index: index}
	for i := range m.ids {
		m.ids[i] = -1
	}
	if !t.IsZero() {
		m.rw = newStackRewriter(p, t)
	}
	return m
}

// frames is stack sid's frames, root first; false: the transform drops it.
func (m *stackMapper) frames(sid uint32) ([]uint32, bool) {
	if int(sid) >= len(m.fst) {
		return nil, false
	}
	if m.gone[sid] {
		return nil, false
	}
	if out := m.memo[sid]; out != nil {
		return out, true
	}
	st := m.fst[sid]
	var out []uint32
	if m.rw != nil {
		kept, ok := m.rw.rewrite(st)
		if !ok {
			m.gone[sid] = true
			return nil, false
		}
		out = make([]uint32, 0, len(kept))
		for _, j := range kept {
			out = append(out, m.id(st[j]))
		}
	} else {
		out = make([]uint32, 0, len(st))
		for j := len(st) - 1; j >= 0; j-- {
			out = append(out, m.id(st[j]))
		}
	}
	m.memo[sid] = out
	return out, true
}

func (m *stackMapper) id(f uint32) uint32 {
	if int(f) >= len(m.ids) {
		return m.intern(StackChartFrame{Func: "?", Kind: agg.KindUnknown})
	}
	if m.ids[f] < 0 {
		fr := &m.p.Frames[f]
		m.ids[f] = int32(m.intern(StackChartFrame{Func: fr.Func, Image: fr.Image, Kind: fr.Kind, Inlined: fr.Inlined}))
	}
	return uint32(m.ids[f])
}

func (m *stackMapper) intern(f StackChartFrame) uint32 {
	if id, ok := m.index[f]; ok {
		return id
	}
	id := uint32(len(m.chart.Frames))
	m.chart.Frames = append(m.chart.Frames, f)
	m.index[f] = id
	return id
}

// MakeStackChart builds thread o.Tid's stack chart from cpu's samples and o's intervals.
func MakeStackChart(cpu *agg.Profile, o StackChartOptions) (StackChart, error) {
	c := StackChart{Frames: []StackChartFrame{}, Boxes: []StackBox{}}
	if o.To <= o.From {
		return c, nil
	}
	index := map[StackChartFrame]uint32{}
	var segs []segment
	if o.CPU {
		m := newStackMapper(cpu, o.Transform, &c, index)
		err := cpu.Series.Each(o.From, o.To, func(s agg.Sample) {
			if int(s.Key) >= len(cpu.KeyEntry) {
				return
			}
			ei := cpu.KeyEntry[s.Key]
			if ei < 0 || int(ei) >= len(cpu.Entries) {
				return
			}
			e := &cpu.Entries[ei]
			if e.Tid != o.Tid || s.Time < o.From || s.Time >= o.To {
				return
			}
			fr, ok := m.frames(e.Stack)
			if !ok {
				return
			}
			c.Samples++
			segs = append(segs, segment{start: s.Time, end: min(s.Time+o.PeriodNs, o.To), frames: fr})
		})
		if err != nil {
			return StackChart{}, err
		}
	}
	if o.Off != nil {
		m := newStackMapper(o.Off, o.Transform, &c, index)
		for _, iv := range o.Intervals {
			a, b := max(iv.Start, o.From), min(iv.End, o.To)
			if iv.Tid != o.Tid || b <= a {
				continue
			}
			reason := ReasonOther
			var fr []uint32
			if iv.Stack != agg.NoStack {
				var ok bool
				if fr, ok = m.frames(iv.Stack); !ok {
					continue
				}
				if int(iv.Stack) < len(o.Reasons) {
					reason = Reasons[o.Reasons[iv.Stack]]
				}
			}
			c.OffNs += b - a
			segs = append(segs, segment{start: a, end: b, frames: fr, off: true, reason: reason})
		}
	}
	slices.SortStableFunc(segs, func(a, b segment) int { return cmp.Compare(a.start, b.start) })

	// Consecutive stretches that share a frame at a depth, and every frame above it, are
	// one box there. A gap of half a period or less (a sample's jitter) joins them.
	gap := o.PeriodNs / 2
	var open []int // per depth, the index in c.Boxes of the box still growing
	closeFrom := func(d int) {
		for k := len(open) - 1; k >= d; k-- {
			b := &c.Boxes[open[k]]
			if b.End-b.Start < o.MinNs && open[k] == len(c.Boxes)-1 {
				// Too short to see; what is under it is shorter still, and closed already.
				c.Boxes = c.Boxes[:len(c.Boxes)-1]
				c.Hidden++
			}
		}
		open = open[:d]
	}
	for i := range segs {
		s := &segs[i]
		d := 0
		for d < len(open) && d < len(s.frames) {
			b := &c.Boxes[open[d]]
			if b.Frame != s.frames[d] || s.start-o.From > b.End+gap {
				break
			}
			d++
		}
		closeFrom(d)
		for k := 0; k < d; k++ {
			grow(&c.Boxes[open[k]], s, o.From)
		}
		for ; d < len(s.frames); d++ {
			if o.MaxBoxes > 0 && len(c.Boxes) >= o.MaxBoxes {
				c.Truncated = true
				break
			}
			c.Boxes = append(c.Boxes, StackBox{Depth: d, Frame: s.frames[d], Start: s.start - o.From, End: s.start - o.From, Reason: s.reason})
			open = append(open, len(c.Boxes)-1)
			grow(&c.Boxes[len(c.Boxes)-1], s, o.From)
		}
		if c.Truncated {
			break
		}
	}
	closeFrom(0)
	return c, nil
}

// grow makes box b take in segment s.
func grow(b *StackBox, s *segment, from uint64) {
	b.End = max(b.End, s.end-from)
	if !s.off {
		b.Samples++
		b.Reason = ""
		return
	}
	if b.Samples > 0 || b.Off > 0 && b.Reason != s.reason {
		b.Reason = "" // mixed
	} else {
		b.Reason = s.reason
	}
	b.Off += s.end - s.start
}
