package views

import (
	"sort"

	"github.com/stax-profiler/stax/internal/agg"
)

// TimelineThread is one thread's samples per time bucket.
type TimelineThread struct {
	Tid     uint32   `json:"tid"`
	Pid     uint32   `json:"pid"`
	Name    string   `json:"name"`
	Samples uint64   `json:"samples"`
	Counts  []uint64 `json:"counts"`
}

// Phase is a stretch of consecutive buckets with the same hottest function (by self
// samples, as stax top sorts).
type Phase struct {
	FirstBucket int     `json:"first_bucket"`
	LastBucket  int     `json:"last_bucket"` // inclusive
	Func        string  `json:"func"`
	Image       string  `json:"image"`
	Samples     uint64  `json:"samples"` // of the function in the phase
	Pct         float64 `json:"pct"`     // of the phase's samples
}

// Timeline is activity over time: samples per bucket, per thread, and the phases in which
// one function leads.
type Timeline struct {
	Buckets int              `json:"buckets"`
	Total   []uint64         `json:"total"`
	Threads []TimelineThread `json:"threads"`
	Phases  []Phase          `json:"phases"`
}

// MakeTimeline counts the samples of [from, to) in buckets of bucket ns. Threads are
// ordered by samples, busiest first; at most maxThreads are kept (0: all).
func MakeTimeline(p *agg.Profile, f Filter, from, to, bucket uint64, maxThreads int) (Timeline, error) {
	n := int((to - from + bucket - 1) / bucket)
	tl := Timeline{Buckets: n, Total: make([]uint64, n)}
	byTid := map[uint32]*TimelineThread{}
	names := map[uint32]agg.ThreadInfo{}
	for _, t := range p.Threads {
		names[t.Tid] = t
	}
	var leaves bucketLeaves
	// What each entry's samples go to, found at its first sample: its thread's row (nil:
	// not yet known) and its leaf frame's index in leaves (-1: none); an entry has many
	// samples.
	type entryTarget struct {
		th   *TimelineThread
		leaf int32
	}
	targets := make([]entryTarget, len(p.Entries))
	err := p.Series.Each(from, to, func(s agg.Sample) {
		if int(s.Key) >= len(p.KeyEntry) {
			return
		}
		ei := p.KeyEntry[s.Key]
		if ei < 0 || int(ei) >= len(p.Entries) {
			return
		}
		tg := &targets[ei]
		if tg.th == nil {
			e := &p.Entries[ei]
			if !f.keep(e) {
				return
			}
			th := byTid[e.Tid]
			if th == nil {
				th = &TimelineThread{Tid: e.Tid, Pid: e.Pid, Name: names[e.Tid].Name, Counts: make([]uint64, n)}
				byTid[e.Tid] = th
			}
			tg.th, tg.leaf = th, -1
			if leaf, ok := p.LeafFrame(e.Stack); ok {
				tg.leaf = leaves.index(leaf)
			}
		}
		b := int((s.Time - from) / bucket)
		tl.Total[b]++
		tg.th.Counts[b]++
		tg.th.Samples++
		if tg.leaf >= 0 {
			leaves.add(b, tg.leaf)
		}
	})
	if err != nil {
		return Timeline{}, err
	}
	leaves.flush()
	for _, th := range byTid {
		tl.Threads = append(tl.Threads, *th)
	}
	sort.Slice(tl.Threads, func(i, j int) bool {
		a, b := tl.Threads[i], tl.Threads[j]
		if a.Samples != b.Samples {
			return a.Samples > b.Samples
		}
		return a.Tid < b.Tid
	})
	if maxThreads > 0 && len(tl.Threads) > maxThreads {
		tl.Threads = tl.Threads[:maxThreads]
	}

	// The hottest function of each bucket, then runs of equal ones.
	best := make([]int64, n)
	bestN := make([]uint64, n)
	for i := range best {
		best[i] = -1
	}
	leaves.each(func(b int, frame uint32, c uint64) {
		if c > bestN[b] || (c == bestN[b] && int64(frame) < best[b]) {
			best[b], bestN[b] = int64(frame), c
		}
	})
	// Buckets with little activity (the program waited for a CPU, or was starting) say
	// little about which function leads: under a quarter of the mean, they join the phase
	// around them.
	var busy, sum uint64
	for _, t := range tl.Total {
		if t > 0 {
			busy++
			sum += t
		}
	}
	quiet := uint64(0)
	if busy > 0 {
		quiet = sum / busy / 4
	}
	counted := func(b int) bool { return best[b] >= 0 && tl.Total[b] >= quiet }
	var phaseFrame uint32 // the current phase's function
	for b := 0; b < n; b++ {
		if !counted(b) {
			continue
		}
		last := len(tl.Phases) - 1
		// Buckets with no samples (the program slept or waited for a CPU) do not end a phase.
		if last >= 0 && p.Frames[best[b]].Func == tl.Phases[last].Func {
			ph := &tl.Phases[last]
			ph.LastBucket = b
			ph.Samples += bestN[b]
			continue
		}
		// One bucket led by another function, between two of the current phase's, does not
		// end it: on a busy machine the kernel's scheduling (a sample taken as a program is
		// switched back in) can lead a bucket now and then.
		if last >= 0 {
			next := b + 1
			for next < n && !counted(next) {
				next++
			}
			if next < n && p.Frames[best[next]].Func == tl.Phases[last].Func {
				ph := &tl.Phases[last]
				ph.LastBucket = b
				ph.Samples += leaves.count(b, phaseFrame)
				continue
			}
		}
		phaseFrame = uint32(best[b])
		fr := p.Frames[best[b]]
		tl.Phases = append(tl.Phases, Phase{FirstBucket: b, LastBucket: b, Func: fr.Func, Image: fr.Image, Samples: bestN[b]})
	}
	for i := range tl.Phases {
		ph := &tl.Phases[i]
		var all uint64
		for b := ph.FirstBucket; b <= ph.LastBucket; b++ {
			all += tl.Total[b]
		}
		ph.Pct = pct(ph.Samples, all)
	}
	return tl, nil
}

// bucketLeaves counts the samples of each leaf frame in each bucket. The samples come in
// time order, so a bucket's counts are kept in a dense array until the next bucket starts,
// then written down as (frame, count) pairs: a map of (bucket, frame) took most of a big
// run's timeline. A sample of a bucket already written down (out of order) is counted in
// late.
type bucketLeaves struct {
	frames  []uint32         // each leaf's frame, by its index
	indexOf map[uint32]int32 // each leaf frame's index
	counts  []uint64         // the current bucket's, by index
	touched []int32          // the indexes counted in the current bucket
	cur     int              // the current bucket (-1: none yet)
	started bool
	pairs   []leafCount // the buckets written down, in order
	late    map[[2]uint32]uint64
}

type leafCount struct {
	bucket int32
	frame  uint32
	n      uint32 // a bucket's samples of one leaf
}

// index is frame's index, given at its first sight.
func (l *bucketLeaves) index(frame uint32) int32 {
	if l.indexOf == nil {
		l.indexOf = map[uint32]int32{}
	}
	i, ok := l.indexOf[frame]
	if !ok {
		i = int32(len(l.frames))
		l.indexOf[frame] = i
		l.frames = append(l.frames, frame)
		l.counts = append(l.counts, 0)
	}
	return i
}

// add counts a sample of bucket b whose leaf has index i.
func (l *bucketLeaves) add(b int, i int32) {
	switch {
	case !l.started:
		l.started, l.cur = true, b
	case b > l.cur:
		l.flush()
		l.cur = b
	case b < l.cur:
		if l.late == nil {
			l.late = map[[2]uint32]uint64{}
		}
		l.late[[2]uint32{uint32(b), l.frames[i]}]++
		return
	}
	if l.counts[i] == 0 {
		l.touched = append(l.touched, i)
	}
	l.counts[i]++
}

// flush writes the current bucket's counts down.
func (l *bucketLeaves) flush() {
	for _, i := range l.touched {
		l.pairs = append(l.pairs, leafCount{int32(l.cur), l.frames[i], uint32(min(l.counts[i], 1<<32-1))})
		l.counts[i] = 0
	}
	l.touched = l.touched[:0]
}

// each calls fn with each bucket's count of each leaf frame (once per bucket and frame).
func (l *bucketLeaves) each(fn func(b int, frame uint32, n uint64)) {
	if len(l.late) == 0 {
		for _, c := range l.pairs {
			fn(int(c.bucket), c.frame, uint64(c.n))
		}
		return
	}
	all := make(map[[2]uint32]uint64, len(l.pairs)+len(l.late))
	for _, c := range l.pairs {
		all[[2]uint32{uint32(c.bucket), c.frame}] += uint64(c.n)
	}
	for k, n := range l.late {
		all[k] += n
	}
	for k, n := range all {
		fn(int(k[0]), k[1], n)
	}
}

// count is bucket b's count of frame.
func (l *bucketLeaves) count(b int, frame uint32) uint64 {
	lo := sort.Search(len(l.pairs), func(i int) bool { return int(l.pairs[i].bucket) >= b })
	n := l.late[[2]uint32{uint32(b), frame}]
	for i := lo; i < len(l.pairs) && int(l.pairs[i].bucket) == b; i++ {
		if l.pairs[i].frame == frame {
			n += uint64(l.pairs[i].n)
		}
	}
	return n
}
