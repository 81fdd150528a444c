package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/annotate"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
)

func annotateCmd(g *globals) *cobra.Command {
	var rf runFlags
	var tid, version int
	var intel, noSource bool
	c := &cobra.Command{
		Use:   "annotate TARGET",
		Short: "Show per-instruction samples of a function, with source lines",
		Long: `Show a function's machine code with the samples that landed on each instruction,
and its source lines interleaved where debug info (DWARF, or jitdump debug records) exists.

TARGET is a hex address (0x7f...) or a case-insensitive substring of a function name; the
hottest match wins and the others are listed so you can refine. JIT'd code is annotated from
the bytes its JIT announced (kept in the run), so it works after the process has exited.

Any row of stax top is a target: a function inlined into another ("step (inlined)") is
shown in the code it was inlined into, its instructions marked ▶; an image+0xOFF or
[unknown] 0xADDR row shows the bytes around that address (the enclosing symbol if any).

A function the JIT compiled several times (or other code reusing its address) has one
version per piece of code: the hottest is annotated, a header lists them all with their
samples, and --version N picks another; an address picks the version holding it.

The stack transforms choose which samples count: --focus main_loop annotates only the
samples taken under main_loop.` + transformHelp,
		Args: argsBetween(1, 1, "one TARGET", "a function name (a substring; quote it if it has spaces) or 0xADDRESS; stax top lists the names"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkTid(tid); err != nil {
				return err
			}
			r, err := rf.pick()
			if err != nil {
				return err
			}
			run, err := readRun(context.Background(), g, r, store.CodeParts|rf.need())
			if err != nil {
				return err
			}
			req := api.AnnotateRequest{Target: args[0], Tid: uint32(tid), Version: version, Window: rf.apiWindow(), Transform: rf.transform, Event: rf.event}
			if intel {
				req.Syntax = "intel"
			}
			run, win, err := query.AnnotateView(run, req)
			if err != nil {
				return queryErr(err)
			}
			if err := rf.matched(0, run.Meta.ID, run.Profile.TotalSamples(), "samples"); err != nil {
				return err
			}
			res, err := query.Annotate(run, query.AnnotateOf(req))
			if err == nil {
				res.Window = win
			}
			if err != nil {
				if errors.Is(err, query.ErrNoMatch) {
					return notFound(errors.New(strings.TrimSuffix(err.Error(), ": "+query.ErrNoMatch.Error())))
				}
				return err
			}
			if rf.json {
				return printJSON(g.out, query.AnnotateDoc(res))
			}
			writeAnnotateHeader(g.out, res)
			if err := res.Annotation.WriteText(g.out, annotate.TextOptions{NoSource: noSource}); err != nil {
				return err
			}
			for _, n := range res.Notes {
				fmt.Fprintf(g.out, "note: %s\n", esc(n))
			}
			if len(res.Others) > 0 {
				var parts []string
				for i, m := range res.Others {
					if i == 8 {
						parts = append(parts, fmt.Sprintf("and %d more", len(res.Others)-i))
						break
					}
					parts = append(parts, fmt.Sprintf("%s (%s)", esc(m.Func), commas(m.Samples)))
				}
				fmt.Fprintf(g.out, "also matching: %s\n", strings.Join(parts, ", "))
			}
			return nil
		},
	}
	rf.add(c)
	rf.addEvent(c)
	rf.addWindow(c)
	rf.addSpan(c)
	rf.addTransform(c)
	c.Flags().IntVar(&tid, "tid", 0, "only samples of thread `TID`")
	c.Flags().IntVar(&version, "version", 0, "annotate code version `N` of the function (as the header lists them; default the hottest)")
	c.Flags().BoolVar(&intel, "intel", false, "Intel assembly syntax (default AT&T, as objdump)")
	c.Flags().BoolVar(&noSource, "no-source", false, "leave out source lines")
	return c
}

// writeAnnotateHeader says, above the annotation, which version of the function's code it
// is and how the samples split among all of them, and what an inlined target is marked.
func writeAnnotateHeader(w io.Writer, res *query.AnnotateResult) {
	a := res.Annotation
	if res.Window != nil {
		fmt.Fprintf(w, " only the samples%s\n", esc(windowText(res.Window)))
	}
	if in := res.Inlined; in != nil {
		fmt.Fprintf(w, " %s is inlined into %s: its %s samples here are marked ▶\n", esc(in.Func), esc(in.Into), commas(in.Samples))
	}
	if res.Warning != "" {
		fmt.Fprintf(w, " warning: %s\n", esc(res.Warning))
	}
	if len(res.Versions) < 2 {
		return
	}
	fmt.Fprintf(w, " %s has %d code versions; annotating #%d (--version N picks another):\n", esc(a.Func), len(res.Versions), res.Version)
	fmt.Fprintf(w, "  %5s  %-18s %8s %10s %9s %7s\n", "#", "start", "size", "loaded", "samples", "share")
	for _, v := range res.Versions {
		mark := " "
		if v.Index == res.Version {
			mark = "*"
		}
		loaded := "-"
		if v.LoadSec != nil {
			loaded = fmt.Sprintf("%+.3fs", *v.LoadSec)
		}
		fmt.Fprintf(w, "  %s%4d  %-18s %8d %10s %9s %6.1f%%", mark, v.Index, fmt.Sprintf("%#x", v.Start), v.Size, loaded, commas(v.Samples), v.Percent)
		if v.Error != "" {
			fmt.Fprintf(w, "  (%s)", esc(v.Error))
		}
		fmt.Fprintln(w)
	}
}
