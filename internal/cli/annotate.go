package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/annotate"
	"github.com/stax-profiler/stax/internal/query"
)

func annotateCmd(g *globals) *cobra.Command {
	var rf runFlags
	var tid int
	var intel, noSource bool
	c := &cobra.Command{
		Use:   "annotate TARGET",
		Short: "Show per-instruction samples of a function, with source lines",
		Long: `Show a function's machine code with the samples that landed on each instruction,
and its source lines interleaved where debug info (DWARF, or jitdump debug records) exists.

TARGET is a hex address (0x7f...) or a case-insensitive substring of a function name; the
hottest match wins and the others are listed so you can refine. JIT'd code is annotated from
the bytes its JIT announced (kept in the run), so it works after the process has exited.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkTid(tid); err != nil {
				return err
			}
			r, err := rf.pick()
			if err != nil {
				return err
			}
			run, err := r.Load(context.Background())
			if err != nil {
				return err
			}
			res, err := query.Annotate(run, query.AnnotateOptions{Target: args[0], Tid: uint32(tid), Intel: intel})
			if err != nil {
				if errors.Is(err, query.ErrNoMatch) {
					return notFound(errors.New(strings.TrimSuffix(err.Error(), ": "+query.ErrNoMatch.Error())))
				}
				return err
			}
			if rf.json {
				return printJSON(g.out, res)
			}
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
	c.Flags().IntVar(&tid, "tid", 0, "only samples of thread `TID`")
	c.Flags().BoolVar(&intel, "intel", false, "Intel assembly syntax (default AT&T, as objdump)")
	c.Flags().BoolVar(&noSource, "no-source", false, "leave out source lines")
	return c
}
