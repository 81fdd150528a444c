package agg

// Counters read with each sample (stax record --counters): each key keeps the sums of
// what its samples read, and each entry the sums of its keys'. The series keeps each
// sample's (Series.Counters), so a window of the run (WindowWhere) sums those of its
// samples; a run recorded before it kept them has entries without counters in a window.

// addCounters adds one sample's counters to key i's sums. Called with r.mu held.
func (r *Run) addCounters(i uint32, counters []uint64) {
	if r.numCounters == 0 {
		r.numCounters = len(counters)
	}
	if len(counters) != r.numCounters || int(i) >= len(r.keys) {
		return
	}
	k := &r.keys[i]
	if k.counters < 0 {
		k.counters = int32(len(r.counterSums))
		r.counterSums = append(r.counterSums, make([]uint64, r.numCounters)...)
	}
	sums := r.counterSums[k.counters : int(k.counters)+r.numCounters]
	for j, v := range counters {
		sums[j] += v
	}
}

// mergeCounters adds the sums of the key whose sums start at off (-1: none) to dst.
func (r *Run) mergeCounters(dst []uint64, off int32) []uint64 {
	if off < 0 {
		return dst
	}
	return SumCounters(dst, r.counterSums[off:int(off)+r.numCounters])
}

// SumCounters adds src to dst, element by element, and returns dst (a new slice when dst
// is nil or of another length).
func SumCounters(dst, src []uint64) []uint64 {
	if len(src) == 0 {
		return dst
	}
	if len(dst) != len(src) {
		dst = append(make([]uint64, 0, len(src)), make([]uint64, len(src))...)
		if len(dst) != len(src) {
			return dst
		}
	}
	for j, v := range src {
		dst[j] += v
	}
	return dst
}
