package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/export"
	"github.com/stax-profiler/stax/internal/outfile"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
)

func exportCmd(g *globals) *cobra.Command {
	var rf runFlags
	var format, output string
	var offCPU bool
	c := &cobra.Command{
		Use:   "export --format FORMAT [--run ID] [-o FILE]",
		Short: "Write a run in a format other tools read (pprof, Firefox Profiler, speedscope, ...)",
		Long: `Write a whole run (live or stored) to a file in another profiler's format:

  pprof       gzip'd profile.proto: go tool pprof -http=: RUN.pb.gz (or pprof, or any
              tool that reads pprof). Samples carry pid, tid and thread labels, and
              span (the innermost span they were taken in: pprof -tagfocus span=NAME);
              inlined functions are lines of their caller's location.
  firefox     the Firefox Profiler's processed format: load RUN.json at
              https://profiler.firefox.com (Load a profile from file). One track per
              thread, samples in time order; JIT, native and kernel frames in their own
              colours; the run's spans and markers in the Marker Chart.
  speedscope  speedscope's JSON format: drop RUN.speedscope.json on https://www.speedscope.app
              (or run speedscope on it). One profile per thread, samples in time order.
  folded      folded stacks, one "root;...;leaf count" line per stack: flamegraph.pl
              RUN.folded > out.svg, or inferno-flamegraph. JIT frames end in _[j], kernel
              frames in _[k], inlined ones in _[i].
  svg         an interactive flame graph in one self-contained SVG file: open it in a
              browser; hover for details, click to zoom, Ctrl-F to search.

The file is <run-id> plus the format's extension (.pb.gz, .json, .speedscope.json,
.folded, .svg) in the current directory unless -o names one; -o - writes to stdout.

--from/--to or --span export part of the run, and the stack transforms rewrite its stacks before
it is written (the samples they leave out are not written).

A run of several events (stax record -e A,B) exported to pprof holds them all, a value
each (go tool pprof -sample_index=B; samples labelled event); --event NAME writes one
alone, and the other formats write the first unless --event names another. Counters read
with the samples (stax record --counters) are values of their own in pprof.

Where the run recorded off-CPU time (docs/off-cpu.md), pprof adds two values to each
sample, off_cpu and wall (nanoseconds: go tool pprof -sample_index=off_cpu, or wall),
with the blocked stacks as samples of their own labelled with their reason; --off-cpu
writes the time off CPU instead of the samples in the other formats (weights in
nanoseconds), and the Firefox Profiler's gets a marker for each interval off CPU.` + transformHelp,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if format == "" {
				return usageErr("--format is required: one of %s", strings.Join(export.Names(), ", "))
			}
			f, ok := export.Lookup(format)
			if !ok {
				return usageErr("unknown format %q: use one of %s", format, strings.Join(export.Names(), ", "))
			}
			r, err := rf.pick()
			if err != nil {
				return err
			}
			run, err := readRun(context.Background(), g, r, store.All)
			if err != nil {
				return withCode(err)
			}
			if run.SpansErr != nil {
				fmt.Fprintf(g.errOut, "stax: the export holds no spans: %v\n", run.SpansErr)
			}
			// The time off CPU, inside the window and transformed as the samples are; left
			// out where it cannot be windowed (a run that kept no intervals).
			off, offErr := query.OffCPUIn(run, rf.window, rf.transform)
			if offCPU && (off == nil || offErr != nil) {
				if offErr == nil {
					offErr = fmt.Errorf("run %s has no off-CPU time (recorded with --no-off-cpu or -a, or by an older stax)", run.Meta.ID)
				} else if err := queryErr(offErr); !errors.Is(err, query.ErrNotRecorded) && !errors.Is(err, query.ErrNoTimes) {
					return err
				}
				// The run lacks what --off-cpu needs: an error, not a bad command line.
				return fmt.Errorf("export --off-cpu: %v", offErr)
			}
			if offCPU && format == "pprof" {
				return usageErr("export --off-cpu: pprof has the off-CPU time as a value of its own (off_cpu); leave --off-cpu out")
			}
			// pprof holds every event of a run of several, a value each, unless --event
			// picks one; the other formats, and pprof with --event, the event's samples alone.
			if format != "pprof" || rf.event != "" || len(run.Meta.Events) <= 1 {
				if run, _, err = query.EventView(run, rf.event); err != nil {
					return queryErr(err)
				}
				if format == "pprof" {
					i, _ := run.Meta.EventIndex(run.Meta.Event)
					run, _ = export.OnlyEvent(run, i)
				}
			}
			if run, _, err = rf.window.Apply(run); err != nil {
				return queryErr(err)
			}
			if run, _, err = query.ApplyTransform(run, rf.transform); err != nil {
				return queryErr(err)
			}
			if run == nil {
				return usageErr("no run")
			}
			if offCPU {
				err = rf.matched(0, run.Meta.ID, off.TotalSamples(), "time off CPU")
			} else {
				err = rf.matched(0, run.Meta.ID, run.Profile.TotalSamples(), "samples")
			}
			if err != nil {
				return err
			}
			r2 := *run
			r2.OffCPU = off
			if offErr != nil {
				r2.OffCPU, r2.OffCPUIntervals = nil, nil
			}
			if !rf.window.IsAll() || !rf.transform.IsZero() {
				r2.OffCPUIntervals = nil // their stacks are the whole run's, untransformed
			}
			if offCPU {
				// Weights in nanoseconds: a period of 1 ns.
				r2.Profile, r2.Meta.Freq, r2.Meta.Event = *off, 1e9, "off-cpu"
			}
			run = &r2
			if output == "-" {
				bw := bufio.NewWriterSize(g.out, 256<<10)
				if err := f.Write(bw, run); err != nil {
					return err
				}
				return bw.Flush()
			}
			path := output
			if path == "" {
				id := run.Meta.ID
				if id == "" {
					id = r.ID
				}
				path = filepath.Base(id) + f.Ext
			}
			if _, err := outfile.Write(path, 0o644, func(out *os.File) error {
				bw := bufio.NewWriterSize(out, 256<<10)
				if err := f.Write(bw, run); err != nil {
					return err
				}
				return bw.Flush()
			}); err != nil {
				return err
			}
			if offCPU {
				fmt.Fprintf(g.out, "wrote %s (%s, %s ms off CPU) to %s\n", format, esc(run.Meta.ID), ms(run.Profile.TotalSamples()), esc(path))
				return nil
			}
			fmt.Fprintf(g.out, "wrote %s (%s, %s samples) to %s\n", format, esc(run.Meta.ID), commas(run.Profile.TotalSamples()), esc(path))
			return nil
		},
	}
	c.Flags().StringVar(&rf.run, "run", "", "run `ID` to export, or a file written by stax save (default: the live run, else the newest stored one with samples, from this terminal first; see stax list)")
	rf.addWindow(c)
	rf.addSpan(c)
	rf.addTransform(c)
	rf.addEvent(c)
	c.Flags().StringVarP(&format, "format", "f", "", "output `FORMAT`: "+strings.Join(export.Names(), ", "))
	c.Flags().StringVarP(&output, "output", "o", "", "write to `FILE` (- for stdout; default <run-id>.<ext>)")
	c.Flags().BoolVar(&offCPU, "off-cpu", false, "write the time threads spent off CPU (nanoseconds) instead of the samples")
	return c
}
