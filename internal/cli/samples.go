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

func samplesCmd(g *globals) *cobra.Command {
	var rf runFlags
	var n int
	var pid, tid uint32
	c := &cobra.Command{
		Use:   "samples",
		Short: "List a tracepoint's samples with their fields, as perf script does",
		Long: `List the samples of a tracepoint event (stax record -e SYS:NAME) with their fields:
each sample's time (seconds since the run's start), thread, the function it was taken in
(the leaf of its stack) and the tracepoint's fields as name=value, oldest first. A run
keeps the fields of each tracepoint's most recent 100,000 samples; the header says how
many it let go. -n gives the last N of those selected (0: all); --from and --to select
by time, --pid by process, --tid by thread. --json gives each sample's time_ns (CLOCK_MONOTONIC), pid,
tid, func, stack (functions, leaf first) and fields (an object).`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if n < 0 {
				return usageErr("-n must be 0 (all) or more, not %d", n)
			}
			if rf.event == "" {
				return usageErr("give the tracepoint: --event SYS:NAME (stax status lists the run's events)")
			}
			r, err := rf.pick()
			if err != nil {
				return err
			}
			req := api.SamplesRequest{Event: rf.event, N: n, Pid: pid, Tid: tid, Window: rf.apiWindow()}
			res, err := askFor(context.Background(), g, r, req, store.Samples|store.TracesPart, query.AnswerSamples)
			if err != nil {
				return err
			}
			if rf.json {
				return printJSON(g.out, res)
			}
			extra := fmt.Sprintf(" · event %s · %s kept", esc(res.Event), commas(uint64(res.Kept)))
			if res.Dropped > 0 {
				extra += fmt.Sprintf(" (the last %s; %s older let go)", commas(uint64(res.Cap)), commas(res.Dropped))
			}
			if res.Matched != res.Kept {
				extra += fmt.Sprintf(" · %s selected", commas(uint64(res.Matched)))
			}
			header(g.out, res.Run, runState(res.State, r), uint64(res.Kept), extra)
			var line strings.Builder
			for _, s := range res.Samples {
				line.Reset()
				comm := s.Comm
				if comm == "" {
					comm = "?"
				}
				var t float64
				if s.TimeNs >= res.StartNs {
					t = float64(s.TimeNs-res.StartNs) / 1e9
				}
				fn := s.Func
				if fn == "" {
					fn = "[unknown]"
				}
				fmt.Fprintf(&line, "%16s %7d/%-7d %12.6f: %s:", esc(comm), s.Pid, s.Tid, t, esc(fn))
				for _, f := range s.Fields {
					line.WriteString(" " + esc(f.Name) + "=" + esc(f.Text()))
				}
				fmt.Fprintln(g.out, line.String())
			}
			return nil
		},
	}
	rf.add(c)
	rf.addWindow(c)
	c.Flags().StringVar(&rf.event, "event", "", "the tracepoint event, `SYS:NAME` as recorded with -e")
	c.Flags().IntVarP(&n, "n", "n", 100, "how many samples to show, the last of those selected (0: all)")
	c.Flags().Uint32Var(&pid, "pid", 0, "only the samples of process `PID`")
	c.Flags().Uint32Var(&tid, "tid", 0, "only the samples of thread `TID`")
	return c
}
