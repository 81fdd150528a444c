package views

import "github.com/stax-profiler/stax/internal/agg"

// TimeTotals splits the time of a view weighed by time (its entries' counts, nanoseconds)
// that f keeps by what the threads were doing, from the reasons of its stacks (StackReasons
// or WallReasons): on CPU (reason on-cpu, --wall views only), runnable (preempted, waiting
// for a CPU) and blocked (waiting for an event: every other reason). Time off CPU is
// runnable + blocked.
func TimeTotals(p *agg.Profile, reasons []uint8, f Filter) (onCPU, runnable, blocked uint64) {
	for i := range p.Entries {
		e := &p.Entries[i]
		if !f.keep(e) {
			continue
		}
		r := ""
		if int(e.Stack) < len(reasons) && int(reasons[e.Stack]) < len(Reasons) {
			r = Reasons[reasons[e.Stack]]
		}
		switch r {
		case ReasonOnCPU:
			onCPU += e.Count
		case ReasonRunnable:
			runnable += e.Count
		default:
			blocked += e.Count
		}
	}
	return onCPU, runnable, blocked
}
