package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
)

func wakersCmd(g *globals) *cobra.Command {
	var rf runFlags
	var tid, stacks int
	c := &cobra.Command{
		Use:   "wakers",
		Short: "Show which threads woke which, and from where",
		Long: `Show which threads ended other threads' waits: for each thread woken and thread
that woke it, how many wakeups, the time off CPU they ended, and the stacks the wakeups
were made from (most time first).

Wakers are recorded with off-CPU time (see docs/off-cpu.md) as root or with CAP_PERFMON,
from the kernel's sched:sched_waking tracepoint: a wait is matched to the target's latest
wakeup of that thread before it ran again. Waits ended by other processes, interrupts or
timers have no waker here.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := checkTid(tid); err != nil {
				return err
			}
			if err := checkCount("--stacks", stacks); err != nil {
				return err
			}
			r, err := rf.pick()
			if err != nil {
				return err
			}
			req := api.WakersRequest{Tid: uint32(tid), Stacks: stacks}
			res, err := askFor(context.Background(), g, r, req, store.OffCPUPart, query.AnswerWakers)
			if err != nil {
				return err
			}
			if err := rf.matched(tid, res.Run, uint64(len(res.Rows)), "waits"); err != nil {
				return err
			}
			if rf.json {
				return printJSON(g.out, res)
			}
			extra := ""
			if tid != 0 {
				extra = fmt.Sprintf(" · tid %d", tid)
			}
			fmt.Fprintf(g.out, "run %s (%s) · %s waits with their waker%s\n", res.Run, runState(res.State, r), commas(res.Woken), extra)
			if res.WakeupsAll > res.Wakeups {
				fmt.Fprintf(g.out, "sampled: %s wakeups seen of %s made (the target switched too often for a stack at each; --off-cpu-rate all takes every one): the counts and times below are of those seen\n",
					commas(res.Wakeups), commas(res.WakeupsAll))
			}
			if len(res.Rows) == 0 {
				fmt.Fprintln(g.out, "no wakeups matched")
				return nil
			}
			fmt.Fprintf(g.out, "%8s  %-16s  %8s  %-16s  %8s  %10s\n", "WOKEN", "NAME", "WAKER", "NAME", "WAKEUPS", "ENDED ms")
			for _, row := range res.Rows {
				fmt.Fprintf(g.out, "%8d  %-16s  %8d  %-16s  %8s  %10.1f\n", row.Wakee, esc(row.WakeeName), row.Waker, esc(row.WakerName), commas(row.Count), float64(row.Ns)/1e6)
				for _, s := range row.Stacks {
					fmt.Fprintf(g.out, "%50s  %8s  %10.1f  %s\n", "", commas(s.Count), float64(s.Ns)/1e6, esc(stackLine(s, 8)))
				}
			}
			return nil
		},
	}
	rf.add(c)
	c.Flags().IntVar(&tid, "tid", 0, "only the wakers of thread `TID`")
	c.Flags().IntVar(&stacks, "stacks", 3, "how many stacks to show per waker")
	return c
}

// stackLine is a waker's stack's first n functions, leaf first, from the first that is
// not the kernel's when there is one.
func stackLine(s api.WakerStack, n int) string {
	frames := s.Frames
	if s.Kernel < len(frames) {
		frames = frames[s.Kernel:]
	}
	if len(frames) > n {
		frames = append(frames[:n:n], "…")
	}
	return strings.Join(frames, " ← ")
}
