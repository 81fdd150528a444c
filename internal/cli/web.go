package cli

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/server"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/web"
)

func webCmd(g *globals) *cobra.Command {
	var runID, addr string
	var open bool
	c := &cobra.Command{
		Use:   "web [--run ID] [--addr HOST:PORT] [--open]",
		Short: "Show a run in the browser: timeline, flame graph, top, annotated code; live while it records",
		Long: `Serve one run to a web browser and print its URL. The page shows a timeline of
samples per thread (drag to select a window: every other panel then shows only that
window), a flame graph (click a frame to zoom, search to highlight), the top functions
(sortable by self and total) and the annotated machine code of a function, with the
status of the run above. While the run records, the page updates every second without
losing its zoom or selection.

The run is the live one by default, else the newest stored one with samples (from this
terminal first); --run picks a run id or a file from stax save. stax record --web serves the recording itself.

The server listens on 127.0.0.1 (a free port unless --addr says otherwise) and answers
only requests that carry the random token in the printed URL: other users of this
machine can reach a loopback port, but not the run. It only reads the run; nothing is
written. Stop it with Ctrl-C.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			r, err := (&runFlags{run: runID}).pick()
			if err != nil {
				return err
			}
			var src web.Source
			if r.Live {
				src = web.NewLiveSource(r)
			} else {
				run, err := store.Load(r.StoredPath())
				if err != nil {
					return err
				}
				src = web.HandlerSource{Handler: server.Handler(server.Stored(run), false)}
			}
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
			defer signal.Stop(sigs)
			srv, err := startWeb(g, g.out, src, addr, open, r.ID)
			if err != nil {
				return err
			}
			go func() {
				<-sigs
				srv.Close()
			}()
			return srv.Serve()
		},
	}
	c.Flags().StringVar(&runID, "run", "", "run `ID` to show, or a file written by stax save (default: the live run, else the newest stored one with samples, from this terminal first)")
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "`HOST:PORT` to listen on (anything but loopback lets other machines reach the page, token still required)")
	c.Flags().BoolVar(&open, "open", false, "open the page in the desktop's browser (xdg-open)")
	return c
}

// startWeb listens for the page of run id and prints its URL on urlOut, alone on its line
// for scripts.
func startWeb(g *globals, urlOut io.Writer, src web.Source, addr string, open bool, id string) (*web.Server, error) {
	srv, err := web.Listen(src, web.Options{Addr: addr})
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if !srv.Loopback() {
		fmt.Fprintf(g.errOut, "stax: warning: %s is not a loopback address: other machines can reach this port (the token in the URL still guards the run)\n", addr)
	}
	fmt.Fprintln(urlOut, srv.URL())
	if urlOut == g.out {
		fmt.Fprintf(g.errOut, "stax: serving run %s at the URL above; Ctrl-C stops\n", id)
	}
	if open {
		opener := ""
		for _, name := range []string{"xdg-open", "sensible-browser"} {
			if p, err := exec.LookPath(name); err == nil {
				opener = p
				break
			}
		}
		if opener == "" {
			fmt.Fprintln(g.errOut, "stax: --open: no xdg-open or sensible-browser here; open the URL yourself")
		} else if cmd := exec.Command(opener, srv.URL()); cmd.Start() != nil {
			fmt.Fprintf(g.errOut, "stax: --open: %s failed; open the URL yourself\n", opener)
		} else {
			go cmd.Wait()
		}
	}
	return srv, nil
}
