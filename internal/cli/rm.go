package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/client"
	"github.com/stax-profiler/stax/internal/collectorabi"
	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/store"
)

func rmCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID...",
		Short: "Remove stored runs",
		Long: `Remove stored runs by id (stax list shows them). A live run cannot be removed: stop it
first with stax stop.`,
		Args: argsBetween(1, -1, "at least one run ID", "stax list shows the runs; stax gc --keep N removes all but the newest N"),
		RunE: func(c *cobra.Command, ids []string) error {
			live := liveIDs()
			var missing []string
			for _, id := range ids {
				if !store.ValidID(id) {
					return usageErr("%q is not a run id (stax list shows the runs)", id)
				}
				if live[id] {
					return usageErr("run %s is live: stop it first (stax stop --run %s)", id, id)
				}
			}
			for _, id := range ids {
				err := store.Remove(id)
				switch {
				case errors.Is(err, os.ErrNotExist):
					missing = append(missing, id)
				case err != nil:
					return fmt.Errorf("remove run %s: %w", id, err)
				default:
					fmt.Fprintf(g.out, "removed %s\n", esc(id))
				}
			}
			if len(missing) > 0 {
				return notFound(fmt.Errorf("no stored run %v (stax list shows the runs)", missing))
			}
			return nil
		},
	}
}

func gcCmd(g *globals) *cobra.Command {
	var keep int
	var damaged, spansFiles, symbols bool
	var dirs []string
	c := &cobra.Command{
		Use:   "gc --keep N",
		Short: "Remove all but the newest N stored runs",
		Long: `Remove stored runs, oldest first, so that the newest N remain. Live runs are never
removed and do not count. With --damaged, files that cannot be read go too.

With --spans, remove the spans files of stax's ITT collector and Go package
(itt-PID.spans, stax-PID.spans) that their process left in /tmp, in $STAX_JIT_DIR and in
each --dir: those whose pid names no process, or a process that started after the file
was last written (the pid was reused). stax removes the files it read for the commands it
launched; these are the ones of processes it did not launch, or that ran without it. Pids
are judged in stax's own pid namespace.

Every gc also trims the symbol cache to its bound (STAX_SYMBOL_CACHE_MAX, 512M unless
set; 0 or off: none), least recently used files first, and says what it evicted; with
--symbols it does that alone.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if keep < 0 {
				return usageErr("--keep must be 0 or more, not %d", keep)
			}
			if !c.Flags().Changed("keep") && !damaged && !spansFiles && !symbols {
				return usageErr("say how many runs to keep (--keep N), or --damaged, --spans or --symbols")
			}
			defer func() {
				if err := gcSymbols(g); err != nil {
					fmt.Fprintf(g.errOut, "stax: %v\n", err)
				}
			}()
			if symbols && !c.Flags().Changed("keep") && !damaged && !spansFiles {
				return nil
			}
			if len(dirs) > 0 && !spansFiles {
				return usageErr("--dir goes with --spans")
			}
			if spansFiles {
				if err := gcSpans(g, dirs); err != nil {
					return err
				}
				if !c.Flags().Changed("keep") && !damaged {
					return nil
				}
			}
			live := liveIDs()
			stored, err := client.Stored()
			if err != nil {
				return err
			}
			kept := 0
			for _, sr := range stored {
				if live[sr.ID] {
					continue
				}
				if sr.Err != nil {
					if !damaged {
						continue // only --damaged removes what cannot be read
					}
				} else if !c.Flags().Changed("keep") || kept < keep {
					kept++
					continue
				}
				if err := store.Remove(sr.ID); err != nil && !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("remove run %s: %w", sr.ID, err)
				}
				fmt.Fprintf(g.out, "removed %s\n", esc(sr.ID))
			}
			return nil
		},
	}
	c.Flags().IntVar(&keep, "keep", 0, "how many of the newest stored runs to keep")
	c.Flags().BoolVar(&damaged, "damaged", false, "also remove run files that cannot be read")
	c.Flags().BoolVar(&spansFiles, "spans", false, "remove the spans files of processes that are gone, in /tmp, $STAX_JIT_DIR and each --dir")
	c.Flags().BoolVar(&symbols, "symbols", false, "only trim the symbol cache to its bound (every gc does)")
	c.Flags().StringArrayVar(&dirs, "dir", nil, "with --spans: another `DIR` to look in (repeatable)")
	return c
}

// gcSpans removes the stale spans files in /tmp, $STAX_JIT_DIR and dirs.
func gcSpans(g *globals, dirs []string) error {
	look := []string{collectorabi.DefaultDir}
	if d := os.Getenv(collectorabi.EnvDir); filepath.IsAbs(d) {
		look = append(look, d)
	}
	look = append(look, dirs...)
	stale, findErr := jit.FindStaleSpans(look)
	var n int
	var bytes int64
	for _, f := range stale {
		if err := os.Remove(f.Path); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				findErr = errors.Join(findErr, err)
			}
			continue
		}
		n++
		bytes += f.Size
		fmt.Fprintf(g.out, "removed %s (%s): %s\n", esc(f.Path), bytesText(f.Size), f.Why)
	}
	fmt.Fprintf(g.out, "%d stale spans files removed (%s)\n", n, bytesText(bytes))
	if findErr != nil {
		return fmt.Errorf("gc --spans: %w", findErr)
	}
	return nil
}

func liveIDs() map[string]bool {
	m := map[string]bool{}
	for _, r := range client.LiveRuns() {
		m[r.ID] = true
	}
	return m
}
