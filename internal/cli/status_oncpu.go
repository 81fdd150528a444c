package cli

import (
	"fmt"
	"io"

	"github.com/stax-profiler/stax/internal/store"
)

// onCPUStatus writes whose clock the threads' time on CPU is, and how much of it was in
// records lost (the kernel's count of the run time past the run times read).
func onCPUStatus(w io.Writer, o *store.OffCPUMeta) {
	var read uint64
	for _, t := range o.OnCPU {
		read += t.Ns
	}
	switch {
	case o.OnCPUClock == store.OnCPUScheduler:
		fmt.Fprintf(w, "on-cpu:    %.1f ms, the scheduler's run time (sched_stat_runtime)", float64(read)/1e6)
		// A run time passed to two threads' events is counted twice: past 1%, records
		// were lost.
		if o.OnCPUCounted > read+read/100 {
			fmt.Fprintf(w, "; the kernel counted %.1f ms: up to %.1f ms were in records lost", float64(o.OnCPUCounted)/1e6, float64(o.OnCPUCounted-read)/1e6)
		}
		fmt.Fprintln(w)
	case len(o.OnCPU) > 0:
		fmt.Fprintf(w, "on-cpu:    %.1f ms, from the switch records (root or CAP_PERFMON takes the scheduler's run time)\n", float64(read)/1e6)
	}
}
