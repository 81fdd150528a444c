package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/client"
	"github.com/stax-profiler/stax/internal/store"
)

func listCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List live and stored runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			out := api.List{Schema: api.Schema, Runs: []api.RunInfo{}}
			seen := map[string]bool{}
			for _, r := range client.LiveRuns() {
				var st api.Status
				info := api.RunInfo{ID: r.ID, Live: true}
				if err := r.Get(context.Background(), "/v1/status", nil, &st); err == nil {
					info.Command, info.Pid, info.Samples = st.Meta.Command, st.Meta.Pid, st.Meta.Samples
					info.Start = st.Meta.Start.Format(time.RFC3339)
				}
				out.Runs = append(out.Runs, info)
				seen[r.ID] = true
			}
			ids, err := store.List()
			if err != nil {
				return err
			}
			for _, id := range ids {
				if seen[id] {
					continue
				}
				info := api.RunInfo{ID: id}
				if run, err := store.Load(store.Path(id)); err == nil {
					info.Command, info.Pid, info.Samples = run.Meta.Command, run.Meta.Pid, run.Meta.Samples
					info.Start = run.Meta.Start.Format(time.RFC3339)
					info.Finished = run.Meta.Finished
				}
				out.Runs = append(out.Runs, info)
			}
			if asJSON {
				return printJSON(g.out, out)
			}
			fmt.Fprintf(g.out, "%-24s %-10s %10s  %-20s  %s\n", "RUN", "STATE", "SAMPLES", "START", "COMMAND")
			for _, r := range out.Runs {
				state := "stored"
				if r.Live {
					state = "live"
				} else if !r.Finished {
					state = "partial"
				}
				fmt.Fprintf(g.out, "%-24s %-10s %10s  %-20s  %s\n", r.ID, state, commas(r.Samples), r.Start, strings.Join(r.Command, " "))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return c
}

func stopCmd(g *globals) *cobra.Command {
	var run string
	c := &cobra.Command{
		Use:   "stop",
		Short: "End a live run cleanly (an attached process keeps running)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var r *client.Run
			if run != "" {
				var err error
				if r, err = client.Pick(run); err != nil {
					return withCode(err)
				}
			} else if live := client.LiveRuns(); len(live) > 0 {
				r = live[0]
			}
			if r == nil || !r.Live {
				return notFound(fmt.Errorf("no live run to stop (stax list shows the runs)"))
			}
			var res map[string]any
			if err := r.Post(context.Background(), "/v1/stop", &res); err != nil {
				return err
			}
			fmt.Fprintf(g.out, "run %s stopped\n", r.ID)
			return nil
		},
	}
	c.Flags().StringVar(&run, "run", "", "run `ID` to stop (default: the newest live run)")
	return c
}
