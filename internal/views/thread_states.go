package views

import (
	"cmp"
	"slices"

	"github.com/stax-profiler/stax/internal/agg"
)

// StateRunning is the state of a thread on CPU in ThreadStates (its samples, each its
// share of a second at the sampling frequency).
const StateRunning = "running"

// ThreadStates is a thread's time per state in each bucket of a timeline: running, and
// off CPU by reason (runnable among them), in nanoseconds.
type ThreadStates struct {
	Tid  uint32 `json:"tid"`
	Pid  uint32 `json:"pid"`
	Name string `json:"name"`
	// Buckets[i] maps a state (StateRunning or a reason) to its nanoseconds in bucket i.
	Buckets []map[string]uint64 `json:"buckets"`
	// Total is the thread's time per state over the buckets.
	Total map[string]uint64 `json:"total"`
}

// MakeThreadStates spreads over buckets of bucket ns from from to to each thread's running
// time (cpu's samples of nsPerSample each, kept by f) and time off CPU (ivs under off's
// stacks, whose reasons are reasons, of the threads f keeps), busiest threads by time off
// CPU first, at most maxThreads (0: all).
func MakeThreadStates(cpu *agg.Profile, f Filter, off *agg.Profile, reasons []uint8, ivs []agg.Interval, from, to, bucket, nsPerSample uint64, maxThreads int) ([]ThreadStates, error) {
	n := int((to - from + bucket - 1) / bucket)
	byTid := map[uint32]*ThreadStates{}
	names := map[uint32]agg.ThreadInfo{}
	for _, t := range cpu.Threads {
		names[t.Tid] = t
	}
	for _, t := range off.Threads {
		if _, ok := names[t.Tid]; !ok {
			names[t.Tid] = t
		}
	}
	thread := func(tid, pid uint32) *ThreadStates {
		th := byTid[tid]
		if th == nil {
			if pid == 0 {
				pid = names[tid].Pid
			}
			th = &ThreadStates{Tid: tid, Pid: pid, Name: names[tid].Name, Buckets: make([]map[string]uint64, n), Total: map[string]uint64{}}
			byTid[tid] = th
		}
		return th
	}
	add := func(th *ThreadStates, state string, a, b uint64) {
		for a < b {
			i := int((a - from) / bucket)
			end := min(b, from+uint64(i+1)*bucket)
			if i >= 0 && i < n {
				if th.Buckets[i] == nil {
					th.Buckets[i] = map[string]uint64{}
				}
				th.Buckets[i][state] += end - a
				th.Total[state] += end - a
			}
			a = end
		}
	}
	keep := func(tid, pid uint32) bool {
		return f.keep(&agg.Entry{Tid: tid, Pid: pid})
	}
	err := cpu.Series.Each(from, to, func(s agg.Sample) {
		if int(s.Key) >= len(cpu.KeyEntry) {
			return
		}
		ei := cpu.KeyEntry[s.Key]
		if ei < 0 || int(ei) >= len(cpu.Entries) {
			return
		}
		e := &cpu.Entries[ei]
		if !keep(e.Tid, e.Pid) {
			return
		}
		i := int((s.Time - from) / bucket)
		if i < 0 || i >= n {
			return
		}
		th := thread(e.Tid, e.Pid)
		if th.Buckets[i] == nil {
			th.Buckets[i] = map[string]uint64{}
		}
		th.Buckets[i][StateRunning] += nsPerSample
		th.Total[StateRunning] += nsPerSample
	})
	if err != nil {
		return nil, err
	}
	for _, iv := range ivs {
		a, b := max(iv.Start, from), min(iv.End, to)
		if b <= a || !keep(iv.Tid, names[iv.Tid].Pid) {
			continue
		}
		reason := ReasonOther
		if iv.Stack != agg.NoStack && int(iv.Stack) < len(reasons) {
			reason = Reasons[reasons[iv.Stack]]
		}
		add(thread(iv.Tid, 0), reason, a, b)
	}
	out := make([]ThreadStates, 0, len(byTid))
	for _, th := range byTid {
		out = append(out, *th)
	}
	offOf := func(t *ThreadStates) uint64 {
		var s uint64
		for k, v := range t.Total {
			if k != StateRunning {
				s += v
			}
		}
		return s
	}
	slices.SortFunc(out, func(a, b ThreadStates) int {
		if c := cmp.Compare(offOf(&b)+b.Total[StateRunning], offOf(&a)+a.Total[StateRunning]); c != 0 {
			return c
		}
		return cmp.Compare(a.Tid, b.Tid)
	})
	if maxThreads > 0 && len(out) > maxThreads {
		out = out[:maxThreads]
	}
	return out, nil
}

// AllThreadStates sums ths bucket by bucket (n buckets): every thread's time per state,
// for the row of all threads above the busiest ones.
func AllThreadStates(ths []ThreadStates, n int) []map[string]uint64 {
	all := make([]map[string]uint64, n)
	for i := range all {
		all[i] = map[string]uint64{}
	}
	for _, th := range ths {
		for i, b := range th.Buckets {
			if i >= n {
				break
			}
			for k, v := range b {
				all[i][k] += v
			}
		}
	}
	return all
}
