package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/views"
)

func flameCmd(g *globals) *cobra.Command {
	var rf runFlags
	var gf granularityFlags
	var depth, tid int
	var threshold float64
	var diff, callersOf, calleesOf, weight string
	var under []string
	var inverted, offCPU, wall, runnable bool
	c := &cobra.Command{
		Use:   "flame",
		Short: "Show the call tree, callers above callees (or bottom-up)",
		Long: `Show the call tree as an indented tree: each line is a function with the share of
samples spent in it and its callees, indented under its caller. Branches under
--threshold-pct are left out; --depth bounds how deep the tree goes.

With --inverted the tree is bottom-up: the functions where samples landed (leaves) at
the top level, each with its callers indented under it, their callers under them, and
so on; a line's share is that of the samples in the leaf reached through this path.

With --diff BASE (a run id or a file from stax save), each line also shows how its share
changed from the same call path in BASE, in percentage points: ▲ grew, ▼ shrank; paths
BASE had that this run lacks are listed as (gone).

--off-cpu weighs the tree by the time threads spent off CPU (blocked, or runnable and
waiting for a CPU) instead of by samples: each line shows milliseconds and its dominant
reason; --json gives nanoseconds. --wall weighs it by time on CPU (from the switch
records, shared by the samples; reason on-cpu) and off CPU together, so a thread's width is its wall clock;
--runnable by runnable time alone. See docs/off-cpu.md.

--under NAME (repeated, from the root's children down) shows only the subtree under
that path, with --threshold-pct and --depth of its samples: a deep branch of a big run,
as the web page's zoom asks for it. --callers-of REGEX shows the callers of the functions
matching, merged over every stack through them, and --callees-of REGEX their callees:
the two sides of the web page's sandwich.` + granularityHelp + transformHelp,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if depth < 0 {
				return usageErr("--depth must be 0 (all levels) or more, not %d", depth)
			}
			if threshold < 0 || threshold > 100 || math.IsNaN(threshold) {
				return usageErr("--threshold-pct must be between 0 and 100, not %g", threshold)
			}
			if err := checkTid(tid); err != nil {
				return err
			}
			if err := rf.checkProcesses(); err != nil {
				return err
			}
			gran, err := gf.get(c)
			if err != nil {
				return err
			}
			if err := timeFlags(&offCPU, wall, runnable); err != nil {
				return err
			}
			if offCPU && diff != "" {
				return usageErr("--off-cpu does not take --diff yet; leave one out")
			}
			if callersOf != "" && calleesOf != "" {
				return usageErr("--callers-of and --callees-of are the two sides of a sandwich: give one")
			}
			if diff != "" && (len(under) > 0 || callersOf != "" || calleesOf != "") {
				return usageErr("--diff compares whole trees: leave out --under, --callers-of and --callees-of")
			}
			r, err := rf.pick()
			if err != nil {
				return err
			}
			if weight != "" && diff != "" {
				return usageErr("--diff compares samples: leave out --weight")
			}
			req := api.FlameRequest{Weight: weight, Depth: depth, ThresholdPct: threshold, Inverted: inverted, Under: under, CallersOf: callersOf, CalleesOf: calleesOf,
				View: rf.view(gran, tid, offCPU, wall, runnable)}
			res, err := askFor(context.Background(), g, r, req, rf.need()|offCPUPart(offCPU)|weightPart(weight), query.AnswerFlame)
			if err != nil {
				return err
			}
			if err := rf.viewKept(tid, res.Run, res.Samples, offCPU, wall, runnable); err != nil {
				return err
			}
			if diff != "" && res.Root != nil {
				base, err := loadRun(g, diff, rf.window)
				if err != nil {
					return err
				}
				if base, _, err = query.ApplyTransform(base, rf.transform); err != nil {
					return usageErr("%v", err)
				}
				build := views.Flame
				if inverted {
					build = views.InvertedFlame
				}
				baseRoot, _ := build(views.At(&base.Profile, gran), views.Filter{Tid: uint32(tid)}, depth, 0)
				api.DiffFlame(res.Root, api.FlameRoot(baseRoot), threshold)
			}
			if rf.json {
				return printJSON(g.out, res)
			}
			extra := fmt.Sprintf(" · depth %d · threshold %.1f%%", depth, threshold)
			if res.Inverted {
				extra += " · inverted: leaves first, callers below"
			}
			switch {
			case len(res.Under) > 0:
				extra += " · under " + esc(strings.Join(res.Under, " › "))
			case res.CallersOf != "":
				extra += " · callers of " + esc(res.CallersOf)
			case res.CalleesOf != "":
				extra += " · callees of " + esc(res.CalleesOf)
			}
			if offCPU {
				fmt.Fprintf(g.out, "run %s (%s) · %s%s\n", res.Run, runState(res.State, r), timeText(res.Samples, res.Time, res.Wall, res.Runnable),
					extra+granularityText(res.By, res.NoInline, res.Short)+transformText(res.Transform)+windowText(res.Window))
			} else if res.Weight != nil {
				weightHeader(g.out, res.Run, runState(res.State, r), res.Weight, res.Event, extra+eventText(res.Event)+granularityText(res.By, res.NoInline, res.Short)+transformText(res.Transform)+windowText(res.Window))
			} else {
				header(g.out, res.Run, runState(res.State, r), res.Samples, extra+eventText(res.Event)+granularityText(res.By, res.NoInline, res.Short)+transformText(res.Transform)+windowText(res.Window))
			}
			multiplexedLine(g.out, res.CountersMultiplexed)
			if res.Root != nil {
				for _, ch := range res.Root.Children {
					printFlame(g.out, ch, 0, res.By, res.Counters...)
				}
			}
			return nil
		},
	}
	rf.add(c)
	rf.addEvent(c)
	rf.addWindow(c)
	rf.addSpan(c)
	rf.addProcesses(c)
	rf.addTransform(c)
	gf.add(c, true)
	c.Flags().BoolVar(&inverted, "inverted", false, "bottom-up: the functions where samples landed first, their callers below")
	c.Flags().IntVarP(&depth, "depth", "d", 12, "how many levels to show (0: all)")
	c.Flags().Float64Var(&threshold, "threshold-pct", 1.0, "hide branches with less than this percent of samples")
	c.Flags().IntVar(&tid, "tid", 0, "only samples of thread `TID`")
	c.Flags().BoolVar(&offCPU, "off-cpu", false, "weigh the tree by the time threads were off CPU, with each node's reason")
	c.Flags().BoolVar(&wall, "wall", false, "weigh the tree by the time threads were on and off CPU (wall clock)")
	c.Flags().BoolVar(&runnable, "runnable", false, "weigh the tree by the time threads waited for a CPU")
	c.Flags().StringVar(&diff, "diff", "", "mark what grew and shrank since run `BASE` (an id or a saved file)")
	c.Flags().StringArrayVar(&under, "under", nil, "only the subtree under this path: function `NAME`s from the root's children down, the flag repeated")
	c.Flags().StringVar(&callersOf, "callers-of", "", "the callers of the functions matching `REGEX`, merged over every stack through them")
	c.Flags().StringVar(&weight, "weight", "", "weigh the tree by the sum of a tracepoint's `FIELD` over its samples kept with their fields (see stax top --weight)")
	c.Flags().StringVar(&calleesOf, "callees-of", "", "the callees of the functions matching `REGEX`, merged over every stack through them")
	return c
}

// printFlame prints n and its children, indented from level, each named as a row of a view
// by by, with what the counters named counted under it.
func printFlame(w io.Writer, n *api.FlameNode, level int, by string, counters ...string) {
	name := esc(n.Func)
	if n.Inlined {
		name += " (inlined)"
	}
	switch {
	case n.Place != nil:
		name = rowName(by, n.Func, n.Inlined, n.File, n.Line, n.Addr)
	case by == agg.ByImage:
		name = rowName(by, n.Func, false, "", 0, 0)
	}
	self := ""
	if n.Self > 0 {
		self = fmt.Sprintf("  self %s", commas(n.Self))
	}
	total := commas(n.Total)
	if n.Reason != "" { // off CPU: nanoseconds
		total = ms(n.Total) + " ms"
		self = "  " + n.Reason
		if n.Self > 0 {
			self += fmt.Sprintf(", self %s ms", ms(n.Self))
		}
	}
	change := ""
	if n.BasePct != nil {
		switch d := n.TotalPct - *n.BasePct; {
		case n.Total == 0:
			change = fmt.Sprintf("  (gone: was %.2f%%)", *n.BasePct)
		case d >= 0.005:
			change = fmt.Sprintf("  ▲%+.2f", d)
		case d <= -0.005:
			change = fmt.Sprintf("  ▼%+.2f", d)
		}
	}
	image := "  [" + esc(trimBrackets(n.Image)) + "]"
	if by == agg.ByImage {
		image = ""
	}
	fmt.Fprintf(w, "%6.2f%% %10s  %s%s%s%s%s%s\n", n.TotalPct, total, strings.Repeat("  ", level), name, image, self, change, nodeCountersText(counters, n.Counters))
	for _, c := range n.Children {
		printFlame(w, c, level+1, by, counters...)
	}
}
