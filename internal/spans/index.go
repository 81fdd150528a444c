package spans

import (
	"slices"
	"sort"
)

// Index is the time each thread spent inside spans of one name: per thread, the spans'
// intervals [start, end) merged and sorted (a span nested in another of its name counts
// once).
type Index map[uint32][][2]uint64

// IndexOf indexes the spans named name that last (markers hold no time).
func IndexOf(sp List, name string) Index {
	ix := Index{}
	id := slices.Index(sp.Names(), name)
	if id < 0 {
		return ix
	}
	sp.each(func(n uint32, s *rec) bool {
		if n == uint32(id) && s.end > s.start {
			ix[s.tid] = append(ix[s.tid], [2]uint64{s.start, s.end})
		}
		return true
	})
	for tid, iv := range ix {
		ix[tid] = merge(iv)
	}
	return ix
}

func merge(iv [][2]uint64) [][2]uint64 {
	slices.SortFunc(iv, func(a, b [2]uint64) int {
		switch {
		case a[0] < b[0]:
			return -1
		case a[0] > b[0]:
			return 1
		}
		return 0
	})
	out := iv[:0]
	for _, v := range iv {
		if n := len(out); n > 0 && v[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], v[1])
			continue
		}
		out = append(out, v)
	}
	return out
}

// Contains says whether thread tid was inside one of the spans at time t.
func (ix Index) Contains(t uint64, tid uint32) bool {
	iv := ix[tid]
	i := sort.Search(len(iv), func(i int) bool { return iv[i][1] > t })
	return i < len(iv) && iv[i][0] <= t
}

// Stat sums the spans of one name.
type Stat struct {
	Name    string `json:"name"`
	Count   uint64 `json:"count"`    // spans and markers
	TotalNs uint64 `json:"total_ns"` // their durations, summed (nested spans of one name each count)
	AvgNs   uint64 `json:"avg_ns"`
	MaxNs   uint64 `json:"max_ns"`
	// Samples are the CPU samples taken on a span's thread while it was inside one (once
	// each, however deeply spans of this name nest).
	Samples uint64 `json:"samples"`
	Threads int    `json:"threads"` // threads it ran on
}

// Stats sums sp by name. times are the sample times of each thread, sorted.
func Stats(sp List, times map[uint32][]uint64) []Stat {
	type acc struct {
		st  Stat
		ivs map[uint32][][2]uint64
	}
	by := make([]*acc, len(sp.Names()))
	var order []uint32
	sp.each(func(id uint32, s *rec) bool {
		a := by[id]
		if a == nil {
			a = &acc{st: Stat{Name: sp.names[id]}, ivs: map[uint32][][2]uint64{}}
			by[id] = a
			order = append(order, id)
		}
		d := s.end - s.start
		a.st.Count++
		a.st.TotalNs += d
		a.st.MaxNs = max(a.st.MaxNs, d)
		if _, ok := a.ivs[s.tid]; !ok {
			a.st.Threads++
		}
		if d > 0 {
			a.ivs[s.tid] = append(a.ivs[s.tid], [2]uint64{s.start, s.end})
		} else if _, ok := a.ivs[s.tid]; !ok {
			a.ivs[s.tid] = nil
		}
		return true
	})
	out := make([]Stat, 0, len(order))
	for _, id := range order {
		a := by[id]
		a.st.AvgNs = a.st.TotalNs / a.st.Count
		for tid, iv := range a.ivs {
			ts := times[tid]
			for _, v := range merge(iv) {
				lo := sort.Search(len(ts), func(i int) bool { return ts[i] >= v[0] })
				hi := sort.Search(len(ts), func(i int) bool { return ts[i] >= v[1] })
				a.st.Samples += uint64(hi - lo)
			}
		}
		out = append(out, a.st)
	}
	return out
}
