package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/client"
	"github.com/stax-profiler/stax/internal/outfile"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/recorder"
	"github.com/stax-profiler/stax/internal/store"
)

func saveCmd(g *globals) *cobra.Command {
	var rf runFlags
	var force bool
	c := &cobra.Command{
		Use:   "save PATH",
		Short: "Write a run to one self-contained file",
		Long: `Write a run (the live one by default: what it has so far) to PATH as one file that
holds everything the queries need: every sample with its time, thread and CPU, the
stacks and names, thread names, counters and settings, and the machine code, line tables
and source lines of every sampled function (JIT'd code included).

Open it anywhere, even where the binaries, debug files and JIT files are gone:
  stax open PATH                 import it into this machine's runs
  stax top --run PATH            or query the file directly`,
		Args: argsBetween(1, 1, "one PATH", "the file to write the run to (e.g. app.stax)"),
		RunE: func(c *cobra.Command, args []string) error {
			path := args[0]
			if _, err := os.Stat(path); err == nil && !force {
				return usageErr("%s exists: choose another path, or --force to replace it", path)
			}
			r, err := rf.pick()
			if err != nil {
				return err
			}
			return save(context.Background(), g, r, path)
		},
	}
	c.Flags().StringVar(&rf.run, "run", "", "run `ID` to save (default: the live run, else the newest stored one with samples, from this terminal first)")
	c.Flags().BoolVarP(&force, "force", "f", false, "replace PATH if it exists")
	return c
}

func openCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "open PATH",
		Short: "Import a file written by stax save into this machine's runs",
		Long: `Check and import a file written by stax save, so stax list shows it and every query
(top, flame, threads, timeline, annotate, compare) answers from it as from the run it
was saved from. It keeps its run id unless a run here already has it. A file imported
before, or a copy of a run this machine already holds (the same run, with no more
samples), is not imported again: stax open names the run that holds it. Files written
by an older stax are read; a newer stax's format is refused with the version it needs.`,
		Args: argsBetween(1, 1, "one PATH", "a file written by stax save"),
		RunE: func(c *cobra.Command, args []string) error {
			path := args[0]
			run, err := store.Load(path)
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return notFound(err)
				}
				return err
			}
			sum, err := store.FileSum(path)
			if err != nil {
				return err
			}
			if id := importedAs(run.Meta, sum); id != "" {
				if held, err := store.Load(store.Path(id)); err == nil {
					return printOpened(g, held, asJSON, "already imported as run "+id)
				}
			}
			base := run.Meta.ID
			if !store.ValidID(base) || len(base) > 100 {
				base = recorder.NewID(run.Meta.Pid)
			}
			id, err := store.Claim(base)
			if err != nil {
				return err
			}
			run.Meta.ID, run.Meta.Imported = id, sum
			if err := store.Save(store.Path(id), run); err != nil {
				os.Remove(store.Path(id))
				return err
			}
			return printOpened(g, run, asJSON, "imported as run "+id)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the run's status as JSON")
	return c
}

// importedAs is the stored run that already holds the run of a file with meta m and
// SHA-256 sum: one imported from the same file, or the same run (id, start and process)
// with at least as many samples. It is "" when there is none.
func importedAs(m store.Meta, sum string) string {
	runs, _ := client.Stored()
	for _, r := range runs {
		if r.Err == nil && r.Meta.Imported == sum {
			return r.ID
		}
	}
	for _, r := range runs {
		h := r.Meta
		if r.Err == nil && r.ID == m.ID && h.Start.Equal(m.Start) && h.Pid == m.Pid && slices.Equal(h.Command, m.Command) && h.Samples >= m.Samples {
			return r.ID
		}
	}
	return ""
}

func printOpened(g *globals, run *store.Run, asJSON bool, what string) error {
	st := api.StatusOf(run)
	if asJSON {
		return printJSON(g.out, st)
	}
	printStatus(g, st, &client.Run{ID: run.Meta.ID})
	fmt.Fprintf(g.out, "\n%s: ask it with stax top --run %s\n", esc(what), esc(run.Meta.ID))
	return nil
}

// save writes run r to path. A live run is streamed from its recorder, as it is now;
// should the recorder be gone by then (it finished, or died), its stored copy is saved,
// and the user told which.
func save(ctx context.Context, g *globals, r *client.Run, path string) error {
	if r.Live {
		var saved client.Saved
		_, err := outfile.Write(path, 0o600, func(f *os.File) (err error) {
			saved, err = r.SaveTo(ctx, f)
			return err
		})
		if err == nil {
			printSaved(g, saved.Meta, path, saved.Size, saved.Kept, saved.Failed)
			return nil
		}
		if !errors.Is(err, client.ErrGone) {
			return err
		}
	}
	run, err := loadStored(g, r, store.All)
	if err != nil {
		return err
	}
	if r.Live {
		goneNote(g, r.ID, run.Meta, "saving", "saved")
	}
	run, kept, failed := query.ForSave(run)
	if d := run.SamplesDamage; d != nil {
		// The file says what it lacks: its samples' times are the rest.
		run.Meta.Notes = append(run.Meta.Notes, "saved without part of its samples' times: "+d.String())
	}
	size, err := outfile.Write(path, 0o600, func(f *os.File) error { return store.WriteFile(f, run) })
	if err != nil {
		return err
	}
	printSaved(g, run.Meta, path, size, kept, failed)
	return nil
}

func printSaved(g *globals, m store.Meta, path string, size int64, kept, failed int) {
	fmt.Fprintf(g.out, "saved run %s to %s: %s samples, code of %d functions kept, %s\n",
		esc(m.ID), esc(path), commas(m.Samples), kept, bytesText(size))
	if failed > 0 {
		fmt.Fprintf(g.out, "note: the code of %d functions could not be read; annotate will say why\n", failed)
	}
}

// bytesText is n in the largest unit that keeps it above 1.
func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
