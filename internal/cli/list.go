package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/client"
	"github.com/stax-profiler/stax/internal/store"
)

// States of a live run whose recorder does not answer, in stax list.
const (
	stateStopped  = "stopped"   // stopped by a signal or a debugger
	stateNoAnswer = "no-answer" // running, but it did not answer in time
)

func listCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List live and stored runs, newest first",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			out := api.List{Schema: api.Schema, Runs: []api.RunInfo{}}
			seen := map[string]bool{}
			for _, r := range client.LiveRuns() {
				var st api.Status
				info := api.RunInfo{ID: r.ID, Live: true, State: api.StateLive}
				// A stopped recorder is not asked (it cannot answer): its last checkpoint
				// describes the run.
				na, stopped := r.Stopped()
				err := error(na)
				if !stopped {
					err = r.Get(context.Background(), "/v1/status", nil, &st)
					errors.As(err, &na)
				}
				if na != nil {
					info.State, info.Reason = stateStopped, na.Error()
					if na.State == 0 {
						info.State = stateNoAnswer
					}
					var m store.Meta
					m, err = store.ReadMeta(r.StoredPath())
					st.Meta = api.RunMetaOf(m)
				}
				if err == nil {
					info.Command, info.Pid, info.Samples = st.Meta.Command, st.Meta.Pid, st.Meta.Samples
					info.Start = st.Meta.Start.Format(time.RFC3339)
				}
				out.Runs = append(out.Runs, info)
				seen[r.ID] = true
			}
			stored, err := client.Stored()
			if err != nil {
				return err
			}
			for _, sr := range stored {
				if seen[sr.ID] {
					continue
				}
				info := api.RunInfo{ID: sr.ID, State: api.StateOf(sr.Meta)}
				meta := &sr.Meta
				if sr.Err != nil {
					info.State, info.Reason = "damaged", sr.Err.Error()
					meta = nil
				} else {
					info.Command, info.Pid, info.Samples = sr.Meta.Command, sr.Meta.Pid, sr.Meta.Samples
					info.Start = sr.Meta.Start.Format(time.RFC3339)
					info.Finished = sr.Meta.Finished
				}
				if meta != nil {
					if d, err := store.SamplesDamageOf(store.Path(sr.ID), sr.Meta); err == nil && d != nil {
						info.SamplesDamage = api.SamplesDamageOf(d)
					}
				}
				if inc := api.IncompleteOf(sr.ID, meta); inc != nil {
					info.State, info.Incomplete, info.Reason = api.StateIncomplete, inc, incompleteText(inc)
				}
				out.Runs = append(out.Runs, info)
			}
			if asJSON {
				return printJSON(g.out, out)
			}
			fmt.Fprintf(g.out, "%-24s %-10s %10s  %-20s  %s\n", "RUN", "STATE", "SAMPLES", "START", "COMMAND")
			for _, r := range out.Runs {
				what := strings.Join(r.Command, " ")
				switch r.State {
				case "damaged":
					what = r.Reason
				case stateStopped, stateNoAnswer, api.StateIncomplete:
					what += " (" + r.Reason + ")"
				}
				if r.SamplesDamage != nil {
					what += " (" + r.SamplesDamage.String() + ")"
				}
				fmt.Fprintf(g.out, "%-24s %-10s %10s  %-20s  %s\n", esc(r.ID), r.State, commas(r.Samples), r.Start, esc(what))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return c
}

// incompleteText says what the store holds of an incomplete run, and why.
func incompleteText(inc *api.Incomplete) string {
	return fmt.Sprintf("kept %s of %s samples, %.1fs of %.1fs: the save failed: %s",
		commas(inc.KeptSamples), commas(inc.RecordedSamples), inc.KeptSec, inc.RecordedSec, inc.Reason)
}

func stopCmd(g *globals) *cobra.Command {
	var run string
	c := &cobra.Command{
		Use:   "stop",
		Short: "End a live run cleanly (an attached process keeps running)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			r, err := liveRun(run)
			if err != nil {
				return err
			}
			if r == nil || !r.Live {
				if run == "" {
					if newest, err := client.Pick(""); err == nil {
						if m, err := store.ReadMeta(store.Path(newest.ID)); err == nil && !m.Finished {
							return notFound(fmt.Errorf("no live run to stop: run %s crashed (its recorder ended without finishing; its last checkpoint is kept)", newest.ID))
						}
					}
				}
				return notFound(fmt.Errorf("no live run to stop (stax list shows the runs)"))
			}
			var res api.Stopped
			if err := r.Post(context.Background(), api.StopRequest{}.Path(), &res); err != nil {
				return err
			}
			if r.Why != "" {
				fmt.Fprintf(g.out, "run %s stopped (%s)\n", esc(r.ID), r.Why)
			} else {
				fmt.Fprintf(g.out, "run %s stopped\n", esc(r.ID))
			}
			return nil
		},
	}
	c.Flags().StringVar(&run, "run", "", "run `ID` to stop (default: the live run; of several, the one started from this terminal, else the newest)")
	return c
}
