package cli

import (
	"context"
	"fmt"
	"math"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/client"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

// ExitRegression: compare found a change past a --fail-* threshold.
const ExitRegression = 6

func compareCmd(g *globals) *cobra.Command {
	var n int
	var asJSON, offCPU bool
	var failTotal, failFunc float64
	var win query.Window
	var event string
	c := &cobra.Command{
		Use:   "compare BASE CAND",
		Short: "Compare two runs function by function (a CI gate with --fail-*)",
		Long: `Compare two runs (ids from stax list, or files from stax save): for every function,
its share of each run's samples, self and total, and the change in percentage points,
largest change first. Shares, not counts, so runs of different lengths compare.

As a CI gate, exit with status 6 when:
  --fail-total-pct P      CAND took more than P percent more samples (CPU time) than BASE
  --fail-function-pct P   a function's self share grew by more than P points

--off-cpu compares the time threads spent off CPU instead (see docs/off-cpu.md): each
function's share of each run's time blocked, and --fail-total-pct the growth of that time.`,
		Args: argsBetween(2, 2, "two runs, BASE and CAND", "run ids (stax list shows them) or files written by stax save"),
		RunE: func(c *cobra.Command, args []string) error {
			if n < 0 {
				return usageErr("-n must be 0 (all) or more, not %d", n)
			}
			for _, v := range []float64{failTotal, failFunc} {
				if v < 0 || math.IsNaN(v) {
					return usageErr("--fail-* thresholds must be 0 or more percent")
				}
			}
			base, err := loadRun(g, args[0], win)
			if err != nil {
				return err
			}
			cand, err := loadRun(g, args[1], win)
			if err != nil {
				return err
			}
			if base, cand, err = compareEvent(base, cand, event); err != nil {
				return err
			}
			bp, cp := &base.Profile, &cand.Profile
			if offCPU {
				if !win.IsAll() {
					return usageErr("compare --off-cpu takes no --from or --to: off-CPU time is kept without its times; leave them out")
				}
				for _, r := range []*store.Run{base, cand} {
					if r.OffCPU == nil {
						return fmt.Errorf("run %s has no off-CPU time (recorded with --no-off-cpu or -a, or by an older stax): record it again without those to compare where threads wait", r.Meta.ID)
					}
				}
				bp, cp = base.OffCPU, cand.OffCPU
			}
			rows, bs, cs := views.Compare(bp, cp)
			res := api.Compare{Schema: api.Schema, Base: api.RunRef{Run: base.Meta.ID, Samples: bs},
				Cand: api.RunRef{Run: cand.Meta.ID, Samples: cs}, OffCPU: offCPU, Rows: api.CompareRows(rows)}
			if bs > 0 {
				res.SamplesDeltaPct = (float64(cs) - float64(bs)) * 100 / float64(bs)
			}
			if c.Flags().Changed("fail-total-pct") && res.SamplesDeltaPct > failTotal {
				res.Failures = append(res.Failures, fmt.Sprintf("samples grew %.2f%%, over --fail-total-pct %g", res.SamplesDeltaPct, failTotal))
			}
			if c.Flags().Changed("fail-function-pct") {
				for _, r := range rows {
					if r.DeltaSelfPct > failFunc {
						res.Failures = append(res.Failures, fmt.Sprintf("%s: self share grew %.2f points, over --fail-function-pct %g", r.Func, r.DeltaSelfPct, failFunc))
					}
				}
			}
			if n > 0 && len(res.Rows) > n {
				res.Rows = res.Rows[:n]
			}
			if asJSON {
				if err := printJSON(g.out, res); err != nil {
					return err
				}
			} else {
				printCompare(g, res)
			}
			if len(res.Failures) > 0 {
				return &exitError{ExitRegression, fmt.Errorf("compare: %d regressions past the --fail-* thresholds", len(res.Failures))}
			}
			return nil
		},
	}
	c.Flags().IntVarP(&n, "n", "n", 20, "how many functions to show (0: all)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON (schema-versioned) for scripts")
	c.Flags().BoolVar(&offCPU, "off-cpu", false, "compare the time threads spent off CPU, function by function")
	c.Flags().Float64Var(&failTotal, "fail-total-pct", 0, "exit 6 if CAND has more than `P` percent more samples than BASE")
	c.Flags().Float64Var(&failFunc, "fail-function-pct", 0, "exit 6 if a function's self share grows more than `P` points")
	c.Flags().StringVar(&win.From, "from", "", "compare only samples from `SEC` seconds after each run's start")
	c.Flags().StringVar(&event, "event", "", "compare the samples of event `NAME` (runs recorded with stax record -e; default: each run's first)")
	c.Flags().StringVar(&win.To, "to", "", "compare only samples before `SEC` seconds after each run's start")
	return c
}

// loadRun reads a run named by id or saved file, restricted to a window.
func loadRun(g *globals, id string, win query.Window) (*store.Run, error) {
	r, err := client.Pick(id)
	if err != nil {
		return nil, withCode(err)
	}
	run, err := readRun(context.Background(), g, r, store.All)
	if err != nil {
		return nil, err
	}
	run, _, err = win.Apply(run)
	if err != nil {
		return nil, queryErr(fmt.Errorf("run %s: %w", id, err))
	}
	return run, nil
}

func printCompare(g *globals, res api.Compare) {
	if res.OffCPU {
		fmt.Fprintf(g.out, "base %s: %s ms off CPU · cand %s: %s ms off CPU (%+.2f%%)\n", esc(res.Base.Run), ms(res.Base.Samples),
			esc(res.Cand.Run), ms(res.Cand.Samples), res.SamplesDeltaPct)
	} else {
		fmt.Fprintf(g.out, "base %s: %s samples · cand %s: %s samples (%+.2f%%)\n", esc(res.Base.Run), commas(res.Base.Samples),
			esc(res.Cand.Run), commas(res.Cand.Samples), res.SamplesDeltaPct)
	}
	fmt.Fprintf(g.out, "%9s %9s  %17s  %17s  %s\n", "ΔSELF", "ΔTOTAL", "SELF base→cand", "TOTAL base→cand", "FUNCTION  [IMAGE]")
	for _, r := range res.Rows {
		fmt.Fprintf(g.out, "%+8.2f%% %+8.2f%%  %7.2f%%→%7.2f%%  %7.2f%%→%7.2f%%  %s  [%s]\n", r.DeltaSelfPct, r.DeltaTotalPct,
			r.BaseSelfPct, r.CandSelfPct, r.BaseTotalPct, r.CandTotalPct, esc(r.Func), esc(trimBrackets(r.Image)))
	}
	for _, f := range res.Failures {
		fmt.Fprintf(g.out, "FAIL: %s\n", esc(f))
	}
}
