package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
)

func topCmd(g *globals) *cobra.Command {
	var rf runFlags
	var gf granularityFlags
	var n, tid int
	var sort string
	var offCPU, wall, runnable bool
	var weight string
	c := &cobra.Command{
		Use:   "top",
		Short: "List the functions with the most samples",
		Long: `List the functions with the most samples. SELF counts samples in the function itself;
TOTAL counts samples with the function anywhere on the stack (its callees included).
JIT'd functions show [jit] as their image; frames nothing could name show as
image+0xOFFSET or [unknown] 0xADDRESS.

--by process lists processes instead (what a system-wide run, stax record -a, spent
its time on), each with its share and hottest function; --pid and --comm keep some.

--off-cpu weighs functions by the time threads spent off CPU under them (blocked, or
runnable and waiting for a CPU) instead of by samples, each row with its dominant reason
(lock, cond, sem, sleep, io-read, io-write, poll, net-connect, net-accept, child, runnable,
other); --json gives nanoseconds. --wall weighs them by time on CPU (from the switch
records, shared by the samples; reason on-cpu) and off CPU together, so a thread's total is its wall clock;
--runnable by runnable time alone (threads waiting for a CPU). See docs/off-cpu.md.` + granularityHelp + transformHelp,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := timeFlags(&offCPU, wall, runnable); err != nil {
				return err
			}
			if sort != "self" && sort != "total" {
				return usageErr("--sort must be self or total, not %q", sort)
			}
			if offCPU && !c.Flags().Changed("sort") {
				// By self, the time off CPU is the kernel's __schedule, the leaf of every
				// blocked stack: by total, the code that waited.
				sort = "total"
			}
			gran, err := gf.get(c, "process")
			if err != nil {
				return err
			}
			by := gran.By
			if err := checkCount("-n", n); err != nil {
				return err
			}
			if err := checkTid(tid); err != nil {
				return err
			}
			if err := rf.checkProcesses(); err != nil {
				return err
			}
			r, err := rf.pick()
			if err != nil {
				return err
			}
			req := api.TopRequest{N: n, Sort: sort, Weight: weight, View: rf.view(gran, tid, offCPU, wall, runnable)}
			res, err := askFor(context.Background(), g, r, req, rf.need()|offCPUPart(offCPU)|weightPart(weight), query.AnswerTop)
			if err != nil {
				return err
			}
			if err := rf.viewKept(tid, res.Run, res.Samples, offCPU, wall, runnable); err != nil {
				return err
			}
			if rf.json {
				return printJSON(g.out, res)
			}
			if offCPU && by != "process" {
				printOffCPUTop(g.out, res, runState(res.State, r))
				return nil
			}
			extra := " · sort: " + res.Sort
			if tid != 0 {
				extra += fmt.Sprintf(" · tid %d", tid)
			}
			if rf.processes.Pid != 0 {
				extra += fmt.Sprintf(" · pid %d", rf.processes.Pid)
			}
			if rf.processes.Comm != "" {
				extra += " · comm " + esc(rf.processes.Comm)
			}
			extra += eventText(res.Event) + transformText(res.Transform)
			if by == "process" {
				count, what := commas, "SAMPLES"
				if offCPU {
					count, what = ms, map[bool]string{true: "WALL ms", false: "OFF-CPU ms"}[res.Wall]
					if res.Runnable {
						what = "RUNNABLE ms"
					}
					fmt.Fprintf(g.out, "run %s (%s) · %s · by process%s\n", res.Run, runState(res.State, r), timeText(res.Samples, res.Time, res.Wall, res.Runnable), extra[len(" · sort: "+res.Sort):])
				} else {
					header(g.out, res.Run, runState(res.State, r), res.Samples, " · by process"+extra[len(" · sort: "+res.Sort):]+windowText(res.Window))
				}
				fmt.Fprintf(g.out, "%8s %10s %8s %8s  %-16s  %s\n", "PID", what, "PCT", "THREADS", "COMMAND", "HOTTEST FUNCTION")
				for _, p := range res.Processes {
					fmt.Fprintf(g.out, "%8d %10s %7.2f%% %8d  %-16s  %s\n", p.Pid, count(p.Samples), p.Pct, p.Threads, esc(p.Comm), esc(p.TopFunc))
				}
				return nil
			}
			if res.Weight != nil {
				weightHeader(g.out, res.Run, runState(res.State, r), res.Weight, res.Event, extra+granularityText(res.By, res.NoInline, res.Short)+windowText(res.Window))
			} else {
				header(g.out, res.Run, runState(res.State, r), res.Samples, extra+granularityText(res.By, res.NoInline, res.Short)+windowText(res.Window))
			}
			if len(res.Counters) > 0 {
				printTopCounters(g.out, res)
				return nil
			}
			col := map[string]string{agg.ByLine: "LINE  FUNCTION  [IMAGE]", agg.ByAddress: "ADDRESS  FUNCTION  [IMAGE]", agg.ByImage: "IMAGE"}[res.By]
			if col == "" {
				col = "FUNCTION  [IMAGE]"
			}
			fmt.Fprintf(g.out, "%8s %10s %8s %10s  %s\n", "SELF%", "SELF", "TOTAL%", "TOTAL", col)
			for _, row := range res.Rows {
				name := rowName(res.By, row.Func, row.Inlined, row.File, row.Line, row.Addr)
				if res.By == agg.ByImage {
					fmt.Fprintf(g.out, "%7.2f%% %10s %7.2f%% %10s  %s\n", row.SelfPct, commas(row.Self), row.TotalPct, commas(row.Total), name)
					continue
				}
				fmt.Fprintf(g.out, "%7.2f%% %10s %7.2f%% %10s  %s  [%s]\n", row.SelfPct, commas(row.Self), row.TotalPct, commas(row.Total), name, esc(trimBrackets(row.Image)))
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
	c.Flags().StringVar(&gf.by, "by", agg.ByFunction, "a row per `function`, line (file:line), address, image, or process")
	gf.add(c, false)
	c.Flags().IntVarP(&n, "n", "n", 20, "how many functions to show")
	c.Flags().StringVar(&sort, "sort", "self", "order by `self` or total samples (time); --off-cpu, --wall and --runnable order by total unless told")
	c.Flags().IntVar(&tid, "tid", 0, "only samples of thread `TID`")
	c.Flags().BoolVar(&offCPU, "off-cpu", false, "weigh functions by the time threads were off CPU under them, with the reason")
	c.Flags().BoolVar(&wall, "wall", false, "weigh functions by the time threads were on and off CPU under them (wall clock)")
	c.Flags().BoolVar(&runnable, "runnable", false, "weigh functions by the time threads waited for a CPU under them")
	c.Flags().StringVar(&weight, "weight", "", "weigh functions by the sum of a tracepoint's `FIELD` over its samples kept with their fields (--event SYS:NAME of a run recorded with -e SYS:NAME; stax samples shows the fields), e.g. the bytes writes asked for: --event syscalls:sys_enter_write --weight count")
	return c
}

// printOffCPUTop writes top --off-cpu as text: times in milliseconds.
func printOffCPUTop(w io.Writer, res api.Top, state string) {
	fmt.Fprintf(w, "run %s (%s) · %s · sort: %s%s%s\n", res.Run, state, timeText(res.Samples, res.Time, res.Wall, res.Runnable), res.Sort,
		transformText(res.Transform)+windowText(res.Window), granularityText(res.By, res.NoInline, res.Short))
	fmt.Fprintf(w, "%8s %12s %8s %12s  %-11s  %s\n", "SELF%", "SELF ms", "TOTAL%", "TOTAL ms", "REASON", "FUNCTION  [IMAGE]")
	for _, row := range res.Rows {
		name := rowName(res.By, row.Func, row.Inlined, row.File, row.Line, row.Addr)
		fmt.Fprintf(w, "%7.2f%% %12s %7.2f%% %12s  %-11s  %s  [%s]\n", row.SelfPct, ms(row.Self), row.TotalPct, ms(row.Total),
			row.Reason, name, esc(trimBrackets(row.Image)))
	}
}

// ms writes nanoseconds as milliseconds with one decimal.
func ms(ns uint64) string {
	whole := ns / 1e6
	return fmt.Sprintf("%s.%d", commas(whole), ns/1e5%10)
}
