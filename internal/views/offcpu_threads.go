package views

import (
	"cmp"
	"slices"

	"github.com/stax-profiler/stax/internal/agg"
)

// ThreadOffCPU is a thread's time on and off CPU.
type ThreadOffCPU struct {
	OnCPUMs    float64 `json:"on_cpu_ms"`        // from the switch records, else its samples over the sampling frequency
	RunnableMs float64 `json:"runnable_ms"`      // preempted, waiting for a CPU
	OffCPUMs   float64 `json:"off_cpu_ms"`       // waiting for an event (runnable time aside)
	Reason     string  `json:"reason,omitempty"` // the reason with the most of its waiting time
}

// OffCPUThreads adds to rows (Threads of the CPU profile, all of them) each thread's time
// on CPU and off CPU, from off (an off-CPU profile) and reasons (its StackReasons);
// threads seen only off CPU are added. The time on CPU is the thread's share of on (from
// the switch records) for its samples, where on has it, else its samples at freq Hz. Rows
// stay sorted by samples, then by time off CPU, most first, and are cut to n (0: all).
func OffCPUThreads(rows []ThreadRow, off *agg.Profile, reasons []uint8, freq, n int, on *OnCPUTime) []ThreadRow {
	byTid := map[uint32]int{}
	for i := range rows {
		byTid[rows[i].Tid] = i
	}
	names := map[uint32]agg.ThreadInfo{}
	for _, t := range off.Threads {
		names[t.Tid] = t
	}
	sums := map[uint32]*reasonSums{}
	for i := range off.Entries {
		e := &off.Entries[i]
		if _, ok := byTid[e.Tid]; !ok {
			t := names[e.Tid]
			rows = append(rows, ThreadRow{Tid: e.Tid, Pid: e.Pid, Name: t.Name})
			byTid[e.Tid] = len(rows) - 1
		}
		s := sums[e.Tid]
		if s == nil {
			s = &reasonSums{}
			sums[e.Tid] = s
		}
		r := uint8(reasonIndex(ReasonOther))
		if int(e.Stack) < len(reasons) {
			r = reasons[e.Stack]
		}
		s[r] += e.Count
	}
	runnable := reasonIndex(ReasonRunnable)
	for i := range rows {
		r := &rows[i]
		o := &ThreadOffCPU{}
		if ps, ok := on.PerSample(r.Tid); ok {
			o.OnCPUMs = float64(r.Samples) * ps / 1e6
		} else if ns, ok := on.Unsampled(r.Tid); ok {
			o.OnCPUMs = float64(ns) / 1e6
		} else if freq > 0 {
			o.OnCPUMs = float64(r.Samples) * 1000 / float64(freq)
		}
		if s := sums[r.Tid]; s != nil {
			o.RunnableMs = float64(s[runnable]) / 1e6
			var off uint64
			for j := range Reasons {
				if j != runnable {
					off += s[j]
				}
			}
			o.OffCPUMs = float64(off) / 1e6
			waiting := *s
			waiting[runnable] = 0
			o.Reason = waiting.dominant()
		}
		r.OffCPU = o
	}
	slices.SortStableFunc(rows, func(a, b ThreadRow) int {
		if c := cmp.Compare(b.Samples, a.Samples); c != 0 {
			return c
		}
		if c := cmp.Compare(b.OffCPU.OffCPUMs+b.OffCPU.RunnableMs, a.OffCPU.OffCPUMs+a.OffCPU.RunnableMs); c != 0 {
			return c
		}
		return cmp.Compare(a.Tid, b.Tid)
	})
	if n > 0 && len(rows) > n {
		rows = rows[:n]
	}
	return rows
}
