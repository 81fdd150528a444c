package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
)

func timelineCmd(g *globals) *cobra.Command {
	var rf runFlags
	var tid, threads int
	var bucket float64
	var states bool
	c := &cobra.Command{
		Use:   "timeline",
		Short: "Show activity over time, per thread, and the phases of the run",
		Long: `Show how samples spread over time: one sparkline per thread (busiest first), each
column one bucket of --bucket milliseconds, and below them the run's phases: stretches
of time in which one function is the hottest (by self samples). A bucket with few
samples, or one led by another function between two of the phase's own, does not end a
phase.

Spans the program reported (stax spans) are drawn in lanes under their thread, a span
inside another in the lane below it, each span name a letter (the legend names them);
markers are ticks (^) in the markers row, listed with their times.

Find the slow second here, then ask about it alone:
  stax timeline
  stax top --from 3.2 --to 3.9
--from and --to also take mark:NAME, the time of the first marker (or span) named NAME:
  stax top --from mark:warmup_done --to +2

--states shows instead each thread's state over time: running, runnable or blocked, by
reason (docs/off-cpu.md).` + timelineStatesHelp + transformHelp,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if bucket < 0 || math.IsNaN(bucket) || math.IsInf(bucket, 0) {
				return usageErr("--bucket must be a positive number of milliseconds, not %g", bucket)
			}
			if err := checkTid(tid); err != nil {
				return err
			}
			if err := rf.checkProcesses(); err != nil {
				return err
			}
			if err := checkCount("--threads", threads); err != nil {
				return err
			}
			r, err := rf.pick()
			if err != nil {
				return err
			}
			req := api.TimelineRequest{States: states, Tid: uint32(tid), Processes: rf.apiProcesses(), BucketMs: bucket, MaxThreads: threads,
				Window: rf.apiWindow(), Transform: rf.transform, Event: rf.event}
			if states {
				return timelineStates(g, &rf, r, req)
			}
			res, err := askFor(context.Background(), g, r, req, store.Samples, query.AnswerTimeline)
			if err != nil {
				return err
			}
			var samples uint64
			for _, n := range res.Total {
				samples += n
			}
			if err := tidHasSamples(tid, res.Run, samples); err != nil {
				return err
			}
			if err := rf.matched(tid, res.Run, samples, "samples"); err != nil {
				return err
			}
			if rf.json {
				return printJSON(g.out, res)
			}
			header(g.out, res.Run, runState(res.State, r), samples, fmt.Sprintf(" · %d buckets of %s", res.Buckets, duration(res.BucketSec))+transformText(res.Transform)+windowText(res.Window))
			printTimeline(g.out, res)
			return nil
		},
	}
	rf.add(c)
	rf.addEvent(c)
	rf.addWindow(c)
	rf.addProcesses(c)
	rf.addTransform(c)
	c.Flags().Float64Var(&bucket, "bucket", 0, "bucket width in `MS` milliseconds (default: about 60 buckets over the window)")
	c.Flags().IntVar(&tid, "tid", 0, "only samples of thread `TID`")
	c.Flags().IntVar(&threads, "threads", 10, "show the `N` busiest threads (0: all)")
	c.Flags().BoolVar(&states, "states", false, "show each thread's states over time: running, runnable, blocked by reason")
	return c
}

var sparks = []rune("▁▂▃▄▅▆▇█")

// sparkline draws counts scaled to peak: a space for no samples, then eight heights.
func sparkline(counts []uint64, peak uint64) string {
	var b strings.Builder
	for _, n := range counts {
		if n == 0 || peak == 0 {
			b.WriteByte(' ')
			continue
		}
		i := int(float64(n) / float64(peak) * float64(len(sparks)-1))
		b.WriteRune(sparks[min(i, len(sparks)-1)])
	}
	return b.String()
}

func duration(sec float64) string {
	if sec < 1 {
		return strconv.FormatFloat(sec*1000, 'f', -1, 64) + "ms"
	}
	return strconv.FormatFloat(sec, 'f', -1, 64) + "s"
}

func printTimeline(w io.Writer, res api.Timeline) {
	var peak uint64
	for _, th := range res.Threads {
		for _, n := range th.Counts {
			peak = max(peak, n)
		}
	}
	end := res.StartSec + float64(res.Buckets)*res.BucketSec
	axis := fmt.Sprintf("%.2fs", res.StartSec)
	endLabel := fmt.Sprintf("%.2fs", end)
	pad := max(res.Buckets-len(axis)-len(endLabel), 1)
	fmt.Fprintf(w, "%8s %-16s %10s  |%s%s%s|\n", "TID", "NAME", "SAMPLES", axis, strings.Repeat(" ", pad), endLabel)
	letters, order := spanLegend(res)
	for _, th := range res.Threads {
		name := th.Name
		if len(name) > 16 {
			name = name[:16]
		}
		fmt.Fprintf(w, "%8d %-16s %10s  |%s|\n", th.Tid, esc(name), commas(th.Samples), sparkline(th.Counts, peak))
		printLanes(w, res, th.Tid, letters)
	}
	printSpanThreads(w, res, letters, order)
	if len(res.Phases) == 0 {
		return
	}
	fmt.Fprintf(w, "\nPHASES (hottest function by self samples)\n")
	for _, ph := range res.Phases {
		from := res.StartSec + float64(ph.FirstBucket)*res.BucketSec
		to := res.StartSec + float64(ph.LastBucket+1)*res.BucketSec
		fmt.Fprintf(w, "  %8.2fs – %8.2fs  %6.2f%%  %s  [%s]\n", from, to, ph.Pct, esc(ph.Func), esc(trimBrackets(ph.Image)))
	}
}
