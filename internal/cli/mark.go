package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/perfevent"
)

func markCmd(g *globals) *cobra.Command {
	var run string
	var asJSON bool
	c := &cobra.Command{
		Use:   "mark LABEL",
		Short: "Drop a marker into the live run, now",
		Long: `Drop a marker named LABEL into the live run, at the time the command runs: stax spans
lists it with the program's own spans and markers.`,
		Args: argsBetween(1, -1, "a LABEL", "the marker's name (several words are joined by spaces)"),
		RunE: func(c *cobra.Command, args []string) error {
			at := perfevent.MonotonicNow()
			name := strings.Join(args, " ")
			r, err := liveRun(run)
			if err != nil {
				return err
			}
			if r == nil || !r.Live {
				return notFound(fmt.Errorf("no live run to mark: markers go into a run while it records (stax list shows the runs)"))
			}
			req := api.MarkRequest{Name: name, At: at}
			var res api.Mark
			if err := r.PostQuery(context.Background(), req.Path(), req.Encode(), &res); err != nil {
				return err
			}
			if asJSON {
				e := json.NewEncoder(g.out)
				e.SetIndent("", "  ")
				return e.Encode(res)
			}
			fmt.Fprintf(g.out, "run %s: marker %s\n", esc(res.Run), strconv.Quote(res.Name))
			return nil
		},
	}
	c.Flags().StringVar(&run, "run", "", "live run `ID` to mark (default: the live run; of several, the one started from this terminal, else the newest)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return c
}
