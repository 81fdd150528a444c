package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/server"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/web"
)

func webCmd(g *globals) *cobra.Command {
	var rf runFlags
	var addr, diff string
	var baseWin query.Window
	var open, inverted bool
	var tid int
	c := &cobra.Command{
		Use:   "web [--run ID] [--addr HOST:PORT] [--open] [--diff BASE]",
		Short: "Show a run in the browser: timeline, flame graph, top, annotated code; live while it records",
		Long: `Serve one run to a web browser and print its URL. The page shows a timeline of
samples per thread (drag to select a window: every other panel then shows only that
window), a flame graph (click a frame to zoom, search to highlight, arrow keys to move,
right-click for a frame's transforms), the callers and callees of the selected function,
the top functions (sortable by self and total) and the annotated machine code of a
function, with the status of the run above. While the run records, the page updates
every second without losing its zoom or selection. The page's URL keeps what it shows
(window, thread, transforms, inverted, zoom, selection, search): a link opens the same
view.

The run is the live one by default, else the newest stored one with samples (from this
terminal first); --run picks a run id or a file from stax save. stax record --web serves
the recording itself, and once it is saved the stored run, until Ctrl-C. --from/--to, --tid, --inverted and the stack transforms pick the
view the page opens on.

With --diff BASE (a run id or a file from stax save) the flame graph is coloured by how
each call path's share of samples changed from BASE (red grew, blue shrank), and a table
lists the functions whose share changed most; BASE is compared in the same window as
the run unless --base-from/--base-to say otherwise. --base-from/--base-to without
--diff compare two windows of the one run: --from/--to against --base-from/--base-to.

The server listens on 127.0.0.1 (a free port unless --addr says otherwise) and answers
only requests that carry the random token in the printed URL: other users of this
machine can reach a loopback port, but not the run. It only reads the run; nothing is
written. Stop it with Ctrl-C.` + transformHelp,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := checkTid(tid); err != nil {
				return err
			}
			if _, err := query.CompileTransform(rf.transform); err != nil {
				return usageErr("%v", err)
			}
			r, err := rf.pick()
			if err != nil {
				return err
			}
			var src web.Source
			var run *store.Run // the stored run served, or a snapshot of the live one for a diff of windows
			if r.Live {
				src = web.NewLiveSource(r)
			} else {
				if run, err = store.Load(r.StoredPath()); err != nil {
					return err
				}
				src = web.HandlerSource{Handler: server.Handler(server.Stored(run), false), Stored: true}
			}
			o := web.Options{Addr: addr, View: url.Values{}}
			rf.query(o.View)
			rf.transform.AddParams(o.View)
			if tid != 0 {
				o.View.Set("tid", itoa(tid))
			}
			if inverted {
				o.View.Set("inverted", "1")
			}
			switch {
			case diff != "":
				b, err := loadRun(g, diff, query.Window{})
				if err != nil {
					return err
				}
				if baseWin.IsAll() {
					baseWin = rf.window // as stax flame --diff: the same window of both
				}
				o.Base = &web.Base{Run: b, Window: baseWin, Same: b.Meta.ID == r.ID}
			case !baseWin.IsAll():
				if run == nil {
					if run, err = readRun(context.Background(), g, r, store.All); err != nil {
						return withCode(err)
					}
				}
				o.Base = &web.Base{Run: run, Window: baseWin, Same: true}
			}
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
			defer signal.Stop(sigs)
			srv, err := startWeb(g, g.out, src, o, open, r.ID)
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
	c.Flags().StringVar(&rf.run, "run", "", "run `ID` to show, or a file written by stax save (default: the live run, else the newest stored one with samples, from this terminal first)")
	rf.addWindow(c)
	rf.addTransform(c)
	c.Flags().IntVar(&tid, "tid", 0, "open on thread `TID`")
	c.Flags().BoolVar(&inverted, "inverted", false, "open on the inverted flame graph (leaf functions first)")
	c.Flags().StringVar(&diff, "diff", "", "colour by what grew and shrank since run `BASE` (an id or a saved file)")
	c.Flags().StringVar(&baseWin.From, "base-from", "", "the diff's base starts `SEC` seconds after its start (without --diff: a window of this run)")
	c.Flags().StringVar(&baseWin.To, "base-to", "", "the diff's base ends before `SEC` seconds after its start (-N: before the end; +N: after --base-from)")
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "`HOST:PORT` to listen on (anything but loopback lets other machines reach the page, token still required)")
	c.Flags().BoolVar(&open, "open", false, "open the page in the desktop's browser (xdg-open), through a file only this user can read that redirects to the URL")
	return c
}

// startWeb listens for the page of run id and prints its URL on urlOut, alone on its line
// for scripts.
func startWeb(g *globals, urlOut io.Writer, src web.Source, o web.Options, open bool, id string) (*web.Server, error) {
	srv, err := web.Listen(src, o)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if !srv.Loopback() {
		fmt.Fprintf(g.errOut, "stax: warning: %s is not a loopback address: other machines can reach this port (the token in the URL still guards the run)\n", o.Addr)
	}
	fmt.Fprintln(urlOut, srv.URL())
	if urlOut == g.out {
		fmt.Fprintf(g.errOut, "stax: serving run %s at the URL above; Ctrl-C stops\n", esc(id))
	}
	if open {
		openPage(g, srv)
	}
	return srv, nil
}

// openPage opens the page in the desktop's browser without putting its token in a command
// line, which every local user can read (/proc/PID/cmdline): the browser is handed a file
// only this user can read (0600, in the private socket directory) that redirects to the
// page, as Jupyter does. The file is removed when the server stops.
func openPage(g *globals, srv *web.Server) {
	opener := ""
	for _, name := range []string{"xdg-open", "sensible-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			opener = p
			break
		}
	}
	if opener == "" {
		fmt.Fprintln(g.errOut, "stax: --open: no xdg-open or sensible-browser here; open the URL yourself")
		return
	}
	path, err := writeRedirectPage(srv.URL())
	if err != nil {
		fmt.Fprintf(g.errOut, "stax: --open: %v; open the URL yourself\n", err)
		return
	}
	srv.AtClose(func() { os.Remove(path) })
	page := (&url.URL{Scheme: "file", Path: path}).String()
	if cmd := exec.Command(opener, page); cmd.Start() != nil {
		fmt.Fprintf(g.errOut, "stax: --open: %s failed; open the URL yourself\n", opener)
	} else {
		go cmd.Wait()
	}
}

// writeRedirectPage writes an HTML file, readable by this user alone, that sends a browser
// to target.
func writeRedirectPage(target string) (string, error) {
	dir, err := api.SocketDir()
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "web-*.html") // 0600, O_EXCL
	if err != nil {
		return "", fmt.Errorf("write the page to open: %w", err)
	}
	js, _ := json.Marshal(target) // escapes <, > and &: safe inside <script>
	h := html.EscapeString(target)
	_, err = fmt.Fprintf(f, `<!DOCTYPE html>
<html><head><meta charset="utf-8">
<meta http-equiv="refresh" content="0;url=%s">
<title>stax web</title></head>
<body><p>Opening <a href="%s">the run's page</a>.</p>
<script>window.location.replace(%s)</script>
</body></html>
`, h, h, js)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write the page to open: %w", err)
	}
	return f.Name(), nil
}
