package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
)

// callersCmd is stax callers, or stax callees.
func callersCmd(g *globals, callees bool) *cobra.Command {
	var rf runFlags
	var gf granularityFlags
	var n, funcs, tid int
	var offCPU, wall, runnable bool
	name, short := "callers", "Show who calls a function, with each caller's share"
	if callees {
		name, short = "callees", "Show whom a function calls, with each callee's share"
	}
	long := callersHelp
	if callees {
		long = calleesHelp
	}
	c := &cobra.Command{
		Use:   name + " FN",
		Short: short,
		Long:  long + matchHelp + granularityHelp + callersByHelp + transformHelp,
		Args:  argsBetween(1, 1, "one FN", "a function name (a substring, any case) or a regular expression; stax top lists the names"),
		RunE: func(c *cobra.Command, args []string) error {
			fn := args[0]
			if fn == "" {
				return usageErr("%s needs a function name (a substring, any case) or a regular expression, not an empty one", name)
			}
			if err := checkCount("-n", n); err != nil {
				return err
			}
			if err := checkCount("--functions", funcs); err != nil {
				return err
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
			r, err := rf.pick()
			if err != nil {
				return err
			}
			req := api.CallersRequest{Callees: callees, Func: fn, N: n, Functions: funcs, View: rf.view(gran, tid, offCPU, wall, runnable)}
			res, err := askFor(context.Background(), g, r, req, rf.need()|offCPUPart(offCPU), query.AnswerCallers)
			if err != nil {
				return err
			}
			if err := rf.viewKept(tid, res.Run, res.Samples, offCPU, wall, runnable); err != nil {
				return err
			}
			if len(res.Functions) == 0 {
				return notFound(fmt.Errorf("no sampled function matches %q in run %s (stax top --run %s lists them)", fn, res.Run, res.Run))
			}
			if rf.json {
				return printJSON(g.out, res)
			}
			extra := fmt.Sprintf(" · %s of %q", name, fn)
			if tid != 0 {
				extra += fmt.Sprintf(" · tid %d", tid)
			}
			if rf.processes.Pid != 0 {
				extra += fmt.Sprintf(" · pid %d", rf.processes.Pid)
			}
			if rf.processes.Comm != "" {
				extra += " · comm " + esc(rf.processes.Comm)
			}
			extra = esc(extra) + granularityText(res.By, res.NoInline, res.Short) + transformText(res.Transform) + eventText(res.Event) + windowText(res.Window)
			if offCPU {
				fmt.Fprintf(g.out, "run %s (%s) · %s%s\n", res.Run, runState(res.State, r), timeText(res.Samples, res.Time, res.Wall, res.Runnable), extra)
			} else {
				header(g.out, res.Run, runState(res.State, r), res.Samples, extra)
			}
			for _, f := range res.Functions {
				printCallFunction(g, f, callees, res.By, offCPU)
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
	c.Flags().IntVarP(&n, "n", "n", 20, "show `N` "+name+" of each function")
	c.Flags().IntVar(&funcs, "functions", 10, "show the `N` hottest functions matching FN")
	c.Flags().IntVar(&tid, "tid", 0, "only samples of thread `TID`")
	c.Flags().BoolVar(&offCPU, "off-cpu", false, "weigh "+name+" by the time threads were off CPU under them")
	c.Flags().BoolVar(&wall, "wall", false, "weigh "+name+" by the time threads were on and off CPU under them (wall clock)")
	c.Flags().BoolVar(&runnable, "runnable", false, "weigh "+name+" by the time threads waited for a CPU under them")
	return c
}

const callersHelp = `For each function matching FN, the functions that call it, most samples first: TOTAL
counts the samples in which the caller calls the function, SHARE is their part of the
function's total samples, and SELF counts those of them in which the function itself was
running. A caller's file:line is where that function is (as in stax top); with --by line
each row is the line that calls the function.

Recursion is folded: in each sample a function's caller is the one above its outermost
call, so a function is never its own caller and each sample counts once per function.
The rows add up to the function's total, with (outermost) for the samples in which
nothing called it (a thread's first function).` + callersTimeHelp

const calleesHelp = `For each function matching FN, the functions it calls, most samples first: TOTAL counts
the samples in which the function calls the callee, SHARE is their part of the
function's total samples, and SELF counts those of them in which the callee itself was
running. A callee's file:line is where that function is (as in stax top).

Recursion is folded: in each sample a function's callee is the one below its innermost
call, so a function is never its own callee and each sample counts once per function.
The rows add up to the function's total, with (self) for the samples in which the
function itself was running.` + callersTimeHelp

const callersTimeHelp = `

--off-cpu weighs them by the time threads spent off CPU (blocked, or runnable) instead of
by samples, --wall by time on and off CPU together, --runnable by runnable time alone, as
stax top's do: the counts are milliseconds (--json: nanoseconds). See docs/off-cpu.md.`

const callersByHelp = `
With --by the rows (callers, callees) are lines, addresses or images; the functions
matching FN stay whole functions.`

const matchHelp = `

FN matches the functions whose name contains it, in any case, and those it matches as a
regular expression (Go's syntax, as pprof's): hot_leaf, '^main$', 'Parse|Lex'. The
hottest matching functions (by total samples) are shown, --functions of them.`

// funcName is a function's name for text, with its inlined mark and location.
func funcName(fn string, inlined bool, file string, line int) string {
	name := esc(fn)
	if inlined {
		name += " (inlined)"
	}
	if file != "" && line > 0 {
		name += fmt.Sprintf(" (%s:%d)", esc(file), line)
	}
	return name
}

// printCallFunction writes one function's callers or callees, their counts samples, or
// (timed) nanoseconds written as milliseconds.
func printCallFunction(g *globals, f api.CallFunction, callees bool, by string, timed bool) {
	w := g.out
	count, unit := commas, ""
	if timed {
		count, unit = ms, " ms"
	}
	fmt.Fprintf(w, "\n%s  [%s]  total %s%s (%.2f%%) · self %s%s (%.2f%%)\n", funcName(f.Func, f.Inlined, f.File, f.Line), esc(trimBrackets(f.Image)),
		count(f.Total), unit, f.TotalPct, count(f.Self), unit, f.SelfPct)
	col := "CALLER"
	if callees {
		col = "CALLEE"
	}
	fmt.Fprintf(w, "%8s %10s %10s  %s\n", "SHARE", "TOTAL"+unit, "SELF"+unit, col+"  [IMAGE]")
	// The samples no row holds, (outermost) or (self), are a row of their own, in its place.
	var rest uint64
	restText := ""
	if callees {
		rest, restText = f.Self, fmt.Sprintf("%10s  (self)", count(f.Self))
	} else {
		rest, restText = f.Outermost, fmt.Sprintf("%10s  (outermost)", "")
	}
	printRest := func() {
		if rest > 0 {
			fmt.Fprintf(w, "%7.2f%% %10s %s\n", float64(rest)*100/float64(max(f.Total, 1)), count(rest), restText)
			rest = 0
		}
	}
	for _, row := range f.Rows {
		if rest > row.Total {
			printRest()
		}
		fmt.Fprintf(w, "%7.2f%% %10s %10s  %s  [%s]\n", row.Pct, count(row.Total), count(row.Self),
			rowName(by, row.Func, row.Inlined, row.File, row.Line, row.Addr), esc(trimBrackets(row.Image)))
	}
	printRest()
}
