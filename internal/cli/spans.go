package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
)

func spansCmd(g *globals) *cobra.Command {
	var rf runFlags
	var by string
	var n int
	c := &cobra.Command{
		Use:   "spans",
		Short: "List the program's spans and markers by name: count, time, CPU samples inside",
		Long: `List the spans and markers the program reported, summed by name: how many, their total,
average and longest duration, and the CPU samples taken on a span's thread while it was
inside one (nested spans of the same name count once). Spans come from ITT tasks
(__itt_task_begin/end, through stax's collector), marker-PID.txt files (samply's format:
"START END NAME" lines, CLOCK_MONOTONIC nanoseconds) and stax mark; markers are spans
that take no time. stax top --span NAME and stax flame --span NAME show what ran inside.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if n < 0 {
				return usageErr("-n must be 0 (all) or more, not %d", n)
			}
			r, err := rf.pick()
			if err != nil {
				return err
			}
			req := api.SpansRequest{By: by, N: n}
			res, err := askFor(context.Background(), g, r, req, store.Samples, query.AnswerSpans)
			if err != nil {
				return err
			}
			if rf.json {
				return printJSON(g.out, res)
			}
			header(g.out, res.Run, runState(res.State, r), res.Samples, " · spans by "+res.Sort)
			if len(res.Rows) == 0 {
				fmt.Fprintln(g.out, "no spans or markers (ITT tasks, marker-PID.txt files, stax mark)")
			} else {
				fmt.Fprintf(g.out, "%9s %12s %12s %12s %10s  %s\n", "COUNT", "TOTAL", "AVG", "MAX", "SAMPLES", "NAME")
			}
			for _, s := range res.Rows {
				fmt.Fprintf(g.out, "%9s %12s %12s %12s %10s  %s\n", commas(s.Count), spanDuration(s.TotalNs), spanDuration(s.AvgNs), spanDuration(s.MaxNs),
					commas(s.Samples), esc(s.Name))
			}
			for _, src := range res.Sources {
				fmt.Fprintln(g.out, esc(spanSourceLine(src)))
			}
			return nil
		},
	}
	rf.add(c)
	c.Flags().StringVar(&by, "by", "time", "order by total `time`, count, avg or max")
	c.Flags().IntVarP(&n, "n", "n", 0, "how many names to show (0: all)")
	return c
}

// spanDuration writes nanoseconds for a table: ns, µs, ms or s, three or four digits.
func spanDuration(ns uint64) string {
	switch {
	case ns == 0:
		return "0"
	case ns < 1e3:
		return fmt.Sprintf("%d ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.2f µs", float64(ns)/1e3)
	case ns < 1e9:
		return fmt.Sprintf("%.2f ms", float64(ns)/1e6)
	}
	return fmt.Sprintf("%.3f s", float64(ns)/1e9)
}
