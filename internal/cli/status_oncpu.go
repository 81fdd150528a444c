package cli

import (
	"fmt"
	"io"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
)

// onCPUStatus writes whose clock the threads' time on CPU is, and how much of it may have
// been in records lost (the kernel's count of the run time past the run times read) where
// the kernel dropped lost records.
func onCPUStatus(w io.Writer, o *api.OffCPUMeta, lost uint64) {
	var read uint64
	for _, t := range o.OnCPU {
		read += t.Ns
	}
	switch {
	case o.OnCPUClock == store.OnCPUScheduler:
		fmt.Fprintf(w, "on-cpu:    %.1f ms, the scheduler's run time (sched_stat_runtime)", float64(read)/1e6)
		// A run time passed to two threads' events (a wakeup from another CPU) is counted
		// twice and read once: without a record lost, the difference is that.
		if lost > 0 && o.OnCPUCounted > read+read/100 {
			fmt.Fprintf(w, "; the kernel counted %.1f ms: up to %.1f ms were in records lost", float64(o.OnCPUCounted)/1e6, float64(o.OnCPUCounted-read)/1e6)
		}
		fmt.Fprintln(w)
	case len(o.OnCPU) > 0:
		fmt.Fprintf(w, "on-cpu:    %.1f ms, from the switch records (root or CAP_PERFMON takes the scheduler's run time)\n", float64(read)/1e6)
	}
}

// exitingStatus writes the time tasks spent from their exit record to their end, or, where
// it was not recorded, how many tasks lost it.
func exitingStatus(w io.Writer, o *api.OffCPUMeta) {
	switch {
	case o.Deaths && o.ExitingTasks > 0:
		fmt.Fprintf(w, "exiting:   %.1f ms runnable or in the kernel's exit code, of %s tasks from their exit record to their end ([exiting])\n",
			float64(o.ExitingNs)/1e6, commas(o.ExitingTasks))
	case !o.Deaths && o.ExitedTasks > 0:
		fmt.Fprintf(w, "note:      %s tasks exited: their time from their exit record to their end (a wait for a CPU then) is not recorded (root or CAP_PERFMON records it)\n",
			commas(o.ExitedTasks))
	}
}
