package agg

import "sort"

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
func MakeTimeline(p *Profile, f Filter, from, to, bucket uint64, maxThreads int) (Timeline, error) {
	n := int((to - from + bucket - 1) / bucket)
	tl := Timeline{Buckets: n, Total: make([]uint64, n)}
	byTid := map[uint32]*TimelineThread{}
	names := map[uint32]ThreadInfo{}
	for _, t := range p.Threads {
		names[t.Tid] = t
	}
	type leafKey struct {
		bucket int
		frame  uint32
	}
	leaves := map[leafKey]uint64{}
	// What each entry's samples go to, found at its first sample: its thread's row (nil:
	// not yet known) and its leaf frame (-1: none); an entry has many samples.
	type entryTarget struct {
		th   *TimelineThread
		leaf int64
	}
	targets := make([]entryTarget, len(p.Entries))
	err := p.Series.Each(from, to, func(s Sample) {
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
				tg.leaf = int64(leaf)
			}
		}
		b := int((s.Time - from) / bucket)
		tl.Total[b]++
		tg.th.Counts[b]++
		tg.th.Samples++
		if tg.leaf >= 0 {
			leaves[leafKey{b, uint32(tg.leaf)}]++
		}
	})
	if err != nil {
		return Timeline{}, err
	}
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
	for k, c := range leaves {
		if c > bestN[k.bucket] || (c == bestN[k.bucket] && int64(k.frame) < best[k.bucket]) {
			best[k.bucket], bestN[k.bucket] = int64(k.frame), c
		}
	}
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
				ph.Samples += leaves[leafKey{b, phaseFrame}]
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
