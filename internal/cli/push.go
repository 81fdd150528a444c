package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/push"
	"github.com/stax-profiler/stax/internal/store"
)

// pushHelp explains push URLs, for record --push and stax push.
const pushHelp = `
Push URLs:
  otlp+http://HOST:4318       an OpenTelemetry Collector's OTLP/HTTP receiver: OTLP profiles
  otlp+https://HOST:4318      (protobuf) at /v1development/profiles; the Collector needs
                              --feature-gates=service.profilesSupport
  pyroscope+http://HOST:4040  Grafana Pyroscope's /ingest API, with the pprof export
  pyroscope+https://HOST:4040
A path after HOST:PORT prefixes the endpoint's (e.g. behind a proxy). Headers go in
--push-header NAME=VALUE, or, for credentials, where other users cannot read them (every
user can read a command line): --push-header @FILE reads "Name: value" lines from FILE
(curl's form; # comments and blank lines skipped), and $STAX_PUSH_HEADERS holds such
lines too (a command stax record runs does not inherit it). user:password@ in the URL is basic auth. https checks the server's
certificate against the system's roots. A redirect to another host is not followed.
Profiles are symbolized as stax names them (JIT code included), with host.name,
service.name, process.executable.path and process.pid; each sample has its thread.id
and thread.name.`

// pushFlags are the flags that push a run to a fleet store.
type pushFlags struct {
	url     string
	every   time.Duration
	headers []string
	service string
	timeout time.Duration

	errOut io.Writer // where a warning about a headers file goes
	read   bool      // the headers were read into parsed (or failed with readErr)
	parsed http.Header
	// readErr is the error reading the headers ended with.
	readErr error
}

// pushHeadersEnv holds headers to push with, one "Name: value" a line.
const pushHeadersEnv = "STAX_PUSH_HEADERS"

// envPushHeaders is what $STAX_PUSH_HEADERS held.
var envPushHeaders string

// pushHeadersFromEnv returns what $STAX_PUSH_HEADERS holds, and takes it out of the
// environment, so that the command stax record runs does not inherit the credentials.
func pushHeadersFromEnv() string {
	if s, ok := os.LookupEnv(pushHeadersEnv); ok {
		envPushHeaders = s
		os.Unsetenv(pushHeadersEnv)
	}
	return envPushHeaders
}

func (f *pushFlags) add(g *globals, c *cobra.Command, live bool) {
	f.errOut = g.errOut
	if live {
		c.Flags().StringVar(&f.url, "push", "", "push the profile to `URL` every --push-every while recording (otlp+http://HOST:4318, pyroscope+http://HOST:4040; see below)")
		c.Flags().DurationVar(&f.every, "push-every", 10*time.Second, "send the samples since the last push every `DURATION` (at least 100ms)")
		c.Flags().DurationVar(&f.timeout, "push-timeout", 10*time.Second, "give up one push attempt after `DURATION` (it is retried; at the end, what is queued is sent for this long)")
	} else {
		c.Flags().DurationVar(&f.timeout, "push-timeout", 10*time.Second, "give up after `DURATION`")
	}
	c.Flags().StringArrayVar(&f.headers, "push-header", nil, "add the HTTP header `NAME=VALUE` to every push (repeatable), e.g. X-Scope-OrgID=team; @FILE reads \"Name: value\" lines from FILE (for credentials: see below)")
	c.Flags().StringVar(&f.service, "service", "", "`NAME` pushed profiles carry as service.name (Pyroscope: the application name; default: the program's file name, stax with -a)")
}

// target checks the flags and reads the URL.
func (f *pushFlags) target(url string) (push.Target, map[string][]string, error) {
	t, err := push.ParseTarget(url)
	if err != nil {
		return push.Target{}, nil, usageErr("%v", err)
	}
	h, err := f.headerSet()
	if err != nil {
		return push.Target{}, nil, err
	}
	if f.timeout <= 0 {
		return push.Target{}, nil, usageErr("--push-timeout must be positive")
	}
	return t, h, nil
}

// headerSet reads the headers of $STAX_PUSH_HEADERS and --push-header, once.
func (f *pushFlags) headerSet() (http.Header, error) {
	if f.read {
		return f.parsed, f.readErr
	}
	f.read = true
	h := http.Header{}
	if env := pushHeadersFromEnv(); env != "" {
		if err := push.ParseHeaderLines(h, env, "$"+pushHeadersEnv); err != nil {
			f.readErr = usageErr("%v", err)
			return nil, f.readErr
		}
	}
	for _, a := range f.headers {
		if path, ok := strings.CutPrefix(a, "@"); ok {
			text, warn, err := readHeadersFile(path)
			if err == nil {
				err = push.ParseHeaderLines(h, text, path)
			}
			if err != nil {
				f.readErr = usageErr("--push-header @%s: %v", path, err)
				return nil, f.readErr
			}
			if warn != "" && f.errOut != nil {
				fmt.Fprintf(f.errOut, "stax: warning: %s\n", esc(warn))
			}
			continue
		}
		one, err := push.ParseHeaders([]string{a})
		if err != nil {
			f.readErr = usageErr("%v", err)
			return nil, f.readErr
		}
		for k, vs := range one {
			h[k] = append(h[k], vs...)
		}
	}
	f.parsed = h
	return h, nil
}

// readHeadersFile reads a --push-header @FILE: a regular file (opened without blocking,
// so a FIFO is refused rather than waited on) of at most push.MaxHeaderText bytes. warn
// is set when other users may read it.
func readHeadersFile(path string) (text, warn string, err error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return "", "", &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", "", err
	}
	if !info.Mode().IsRegular() {
		return "", "", fmt.Errorf("not a regular file (%s)", info.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, push.MaxHeaderText+1))
	if err != nil {
		return "", "", err
	}
	if len(b) > push.MaxHeaderText {
		return "", "", fmt.Errorf("more than %d bytes", push.MaxHeaderText)
	}
	if perm := info.Mode().Perm(); perm&0o044 != 0 {
		warn = fmt.Sprintf("--push-header @%s: the file is readable by other users (mode %04o): chmod 600 it", path, perm)
	}
	return string(b), warn, nil
}

// resource describes what was recorded, for the pushed profiles.
func (f *pushFlags) resource(meta *store.Meta, exe string) push.Resource {
	host, _ := os.Hostname()
	res := push.Resource{Host: host, Service: f.service, Exe: exe}
	if !meta.SystemWide {
		res.Pid = meta.Pid
	}
	if res.Exe == "" && len(meta.Command) > 0 && !meta.SystemWide {
		res.Exe = meta.Command[0]
	}
	if res.Service == "" {
		switch {
		case res.Exe != "":
			res.Service = filepath.Base(res.Exe)
		case meta.SystemWide:
			res.Service = "stax"
		default:
			res.Service = fmt.Sprintf("pid-%d", meta.Pid)
		}
	}
	return res
}

// targetExe is the path of the program a recording runs or attaches to.
func targetExe(args []string, pid int) string {
	if len(args) > 0 {
		if p, err := exec.LookPath(args[0]); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				return abs
			}
			return p
		}
		return args[0]
	}
	if pid != 0 {
		if p, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
			return strings.TrimSuffix(p, " (deleted)")
		}
	}
	return ""
}

// startPush starts pushing a live recording; the queue lives beside the run in the store.
func (f *pushFlags) startPush(src push.Source, id string, meta store.Meta, exe string) (*push.Pusher, error) {
	t, h, err := f.target(f.url)
	if err != nil {
		return nil, err
	}
	return push.Start(src, push.Options{Target: t, Headers: h, Every: f.every, Timeout: f.timeout,
		Encoder:  push.Encoder{Protocol: t.Protocol, Resource: f.resource(&meta, exe)},
		QueueDir: store.PushQueuePath(id)})
}

func pushCmd(g *globals) *cobra.Command {
	var rf runFlags
	var pf pushFlags
	c := &cobra.Command{
		Use:   "push [--run ID|FILE] URL",
		Short: "Send a run's profile once to an OpenTelemetry Collector or Pyroscope",
		Long: `Send a whole run (stored, saved with stax save, or live as it stands) once, as one
profile, to a fleet's profile store. To push while recording, use stax record --push.
--from/--to send part of the run.
` + pushHelp,
		Args: argsBetween(1, 1, "one URL", "where to send the run, e.g. otlp+http://127.0.0.1:4318 or pyroscope+http://127.0.0.1:4040"),
		RunE: func(c *cobra.Command, args []string) error {
			t, h, err := pf.target(args[0])
			if err != nil {
				return err
			}
			r, err := rf.pick()
			if err != nil {
				return err
			}
			run, err := readRun(context.Background(), g, r, store.All)
			if err != nil {
				return withCode(err)
			}
			if run, _, err = rf.window.Apply(run); err != nil {
				return usageErr("%v", err)
			}
			enc := push.Encoder{Protocol: t.Protocol, Resource: pf.resource(&run.Meta, "")}
			req, empty, err := enc.Window(run, 0, 0, 1)
			if err != nil {
				return err
			}
			if empty {
				return fmt.Errorf("push run %s: it has no samples to send", run.Meta.ID)
			}
			ctx, cancel := context.WithTimeout(context.Background(), pf.timeout)
			defer cancel()
			if err := push.Send(ctx, t, h, pf.timeout, req); err != nil {
				return err
			}
			sent := run.Profile.TotalSamples() - min(req.LeftOut, run.Profile.TotalSamples())
			fmt.Fprintf(g.out, "pushed run %s (%s samples, %s) to %s\n", esc(run.Meta.ID), commas(sent), bytesText(int64(len(req.Body))), t)
			if req.LeftOut > 0 {
				fmt.Fprintf(g.errOut, "stax: %s samples of events other than the first (%s) not pushed: Pyroscope takes the first event's\n",
					commas(req.LeftOut), esc(run.Meta.EventNames()[0]))
			}
			return nil
		},
	}
	c.Flags().StringVar(&rf.run, "run", "", "run `ID` to send, or a file written by stax save (default: the live run, else the newest stored one with samples; see stax list)")
	rf.addWindow(c)
	pf.add(g, c, false)
	return c
}
