package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
)

func threadsCmd(g *globals) *cobra.Command {
	var rf runFlags
	var n int
	c := &cobra.Command{
		Use:   "threads",
		Short: "List threads by samples, with their names",
		Long: `List threads by samples, with their names and hottest functions (by self samples).

Where the run recorded off-CPU time (the default; see docs/off-cpu.md), each thread also
shows its time on CPU (the scheduler's as root, else the switch records'; in a window, each
of its samples there weighs its share of the whole run's) and off CPU:
runnable (preempted, waiting for a CPU) and blocked (waiting for an event), with the reason
it waited most for; threads with as many samples are listed by time off CPU. The header
gives the time off CPU of all threads, of which runnable. With --from and --to, the time off
CPU is that inside the window (from the intervals the run kept; a run by an older stax kept
none, and then shows none); the stack transforms apply to it as to the samples.` + transformHelp,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := checkCount("-n", n); err != nil {
				return err
			}
			r, err := rf.pick()
			if err != nil {
				return err
			}
			req := api.ThreadsRequest{N: n, Window: rf.apiWindow(), Transform: rf.transform, Event: rf.event}
			res, err := askFor(context.Background(), g, r, req, rf.need()|store.OffCPUPart, query.AnswerThreads)
			if err != nil {
				return err
			}
			seen := res.Samples
			for _, row := range res.Rows {
				if o := row.OffCPU; o != nil && o.OffCPUMs+o.RunnableMs > 0 {
					seen++
				}
			}
			if err := rf.matched(0, res.Run, seen, "samples or time off CPU"); err != nil {
				return err
			}
			if rf.json {
				return printJSON(g.out, res)
			}
			extra := eventText(res.Event) + transformText(res.Transform) + windowText(res.Window)
			if res.Time != nil {
				extra += " · " + timeText(res.Time.OffCPUNs, res.Time, false, false)
			}
			header(g.out, res.Run, runState(res.State, r), res.Samples, extra)
			if len(res.Rows) > 0 && res.Rows[0].OffCPU != nil {
				fmt.Fprintf(g.out, "%8s %8s %10s %8s %10s %10s %10s  %-11s  %-16s  %s\n", "TID", "PID", "SAMPLES", "PCT", "ON-CPU ms", "RUNNABLE", "BLOCKED ms", "REASON", "NAME", "HOTTEST FUNCTION")
				for _, row := range res.Rows {
					o := row.OffCPU
					fmt.Fprintf(g.out, "%8d %8d %10s %7.2f%% %10.1f %10.1f %10.1f  %-11s  %-16s  %s\n", row.Tid, row.Pid, commas(row.Samples), row.Pct,
						o.OnCPUMs, o.RunnableMs, o.OffCPUMs, o.Reason, esc(row.Name), esc(row.TopFunc))
				}
				return nil
			}
			fmt.Fprintf(g.out, "%8s %8s %10s %8s  %-16s  %s\n", "TID", "PID", "SAMPLES", "PCT", "NAME", "HOTTEST FUNCTION")
			for _, row := range res.Rows {
				fmt.Fprintf(g.out, "%8d %8d %10s %7.2f%%  %-16s  %s\n", row.Tid, row.Pid, commas(row.Samples), row.Pct, esc(row.Name), esc(row.TopFunc))
			}
			return nil
		},
	}
	rf.add(c)
	rf.addEvent(c)
	rf.addWindow(c)
	rf.addTransform(c)
	c.Flags().IntVarP(&n, "n", "n", 20, "how many threads to show")
	return c
}
