package cli

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/launch"
	"github.com/stax-profiler/stax/internal/push"
	"github.com/stax-profiler/stax/internal/recorder"
	"github.com/stax-profiler/stax/internal/recordrun"
	"github.com/stax-profiler/stax/internal/web"
)

func recordCmd(g *globals) *cobra.Command {
	var f recordFlags
	c := &cobra.Command{
		Use:   "record [-F HZ] [-l SECS] (-a | -p PID | -- CMD ARGS...)",
		Short: "Record a command, or attach to a running process, and answer queries while it runs",
		Long: `Record a command from its first instruction (stdio passes through, Ctrl-C reaches the
command, and stax exits with the command's exit status, or 125 if the run could not be
saved whole: a full disk; the store then keeps its last good checkpoint), or attach to a running process
with -p (it keeps running when the recording stops). New threads, forked children and
exec are followed.

While recording, other shells can ask: stax wait, top, flame, threads, status. The run
is saved as it goes (and at the end) in the run store, so the same commands answer
after the recording ends.

Scripts: -q keeps stderr for the command's own output; --run-id-file FILE writes the
run's id (one line) to FILE once recording has begun, for --run:
  stax record -q --run-id-file run.id -- ./app &
  stax wait --run "$(cat run.id)" --for-samples 1000

JIT'd code is named from /tmp/jit-PID.dump and /tmp/perf-PID.map files and jitdump files
the process maps, read live. Launched commands also get INTEL_JIT_PROFILER64 and
INTEL_LIBITTNOTIFY64 pointing at stax's collector, for the JIT Profiling API and for ITT
tasks and markers (each unless already set; neither with --no-jit-api). Spans and markers
also come from marker-PID.txt files (samply's format) and stax mark.

--push URL sends the profile to an OpenTelemetry Collector or Pyroscope every
--push-every, as a machine-wide agent too (stax record -a --push URL). Each window is
queued on disk beside the run (at most 360 windows; the oldest is dropped past that) and
sent in order, retried with backoff while the endpoint is down: recording never waits
on it. stax status shows what was pushed, queued, failed and dropped, and the last error.
At the end, what is queued is sent for up to --push-timeout.
` + keepHelp + pushHelp,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			offRate, err := f.check(args)
			if err != nil {
				return err
			}
			cfg := f.config(g, args, offRate)
			if cfg.Recorder.Events, err = f.ef.events(c.Flags().Changed("freq")); err != nil {
				return err
			}
			quiet := f.quiet
			cfg.Recorder.Counters, err = f.ef.counterList(func(format string, a ...any) {
				if !quiet {
					fmt.Fprintf(g.errOut, "stax: %s\n", esc(fmt.Sprintf(format, a...)))
				}
			})
			if err != nil {
				return err
			}
			if def := defaultCounters(f.ef.counters, f.callGraph, f.all, cfg.Recorder.Events, openHere); def != nil {
				cfg.Recorder.Counters, cfg.Recorder.CountersByDefault = def, true
			}
			if cfg.Recorder.Keep, cfg.Recorder.KeepBytes, err = f.kf.bounds(c, f.all); err != nil {
				return err
			}
			return record(cfg)
		},
	}
	f.add(g, c)
	return c
}

// recordFlags are stax record's flags.
type recordFlags struct {
	freq, pid, pages, stackSize int
	all                         bool
	callGraph                   string
	seconds                     float64
	noJITAPI, quiet, webOn      bool
	noOffCPU, noWakers          bool
	perThread                   bool
	webAddr, runIDFile          string
	offCPURate                  string
	ef                          eventFlags
	kf                          keepFlags
	pf                          pushFlags
}

func (f *recordFlags) add(g *globals, c *cobra.Command) {
	c.Flags().SetInterspersed(false)
	c.Flags().IntVarP(&f.freq, "freq", "F", 999, "samples per second per CPU (per event, and per thread for events other than cpu-clock)")
	f.ef.add(c)
	f.kf.add(c)
	c.Flags().StringVar(&f.callGraph, "call-graph", defaultCallGraph(), "how user stacks are walked: dwarf (.eh_frame, from a copy of each sample's user stack: complete stacks through code built without frame pointers) or `fp` (frame pointers, walked by the kernel: cheaper, but skips callers of code without them)")
	c.Flags().IntVar(&f.stackSize, "stack-size", 0, "`BYTES` of user stack copied per sample with --call-graph dwarf (8192 to 65528; by default 8192, as perf record, then fitted to the stacks seen: see docs/stack-copy.md; status says when deeper stacks were cut short)")
	c.Flags().BoolVar(&f.noOffCPU, "no-off-cpu", false, "do not record where threads wait: the context switches of the target's threads, and the stack each blocked in (see stax top --off-cpu)")
	c.Flags().BoolVar(&f.noWakers, "no-wakers", false, "record off-CPU time without which thread ended each wait (stax wakers): a program that wakes its threads a hundred thousand times a second pays more for the wakers than for the rest of its off-CPU time (see docs/off-cpu.md)")
	c.Flags().StringVar(&f.offCPURate, "off-cpu-rate", strconv.Itoa(defaultOffCPURate), "stacks of switches out (and of wakeups) taken per second per thread, about (`HZ`, or all): a thread that switches more often than that has its time off CPU counted at every switch still, each wait with its own stack or its latest sampled one (stax status counts those)")
	c.Flags().IntVarP(&f.pages, "mmap-pages", "m", 0, "`PAGES` of ring buffer per CPU, a power of two (default: sized from -F to hold half a second)")
	c.Flags().Float64VarP(&f.seconds, "duration", "l", 0, "stop recording after `SECS` seconds (0: when the command exits or on stax stop)")
	c.Flags().IntVarP(&f.pid, "pid", "p", 0, "attach to the running process `PID` (all its threads)")
	c.Flags().BoolVarP(&f.all, "all-cpus", "a", false, "record every process on every CPU (root or CAP_PERFMON); stop with -l, Ctrl-C or stax stop")
	c.Flags().BoolVar(&f.perThread, "per-thread-events", false, "sample the CPU through events of the target's own threads, as without root, rather than one event per CPU that keeps the target's samples (see docs/sampling-events.md)")
	c.Flags().BoolVar(&f.noJITAPI, "no-jit-api", false, "do not set INTEL_JIT_PROFILER64 and INTEL_LIBITTNOTIFY64 for the launched command")
	c.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print nothing but errors (--run-id-file tells scripts the run's id)")
	c.Flags().StringVar(&f.runIDFile, "run-id-file", "", "write the run's id to `FILE` once recording has begun (for --run in scripts)")
	c.Flags().BoolVar(&f.webOn, "web", false, "serve the recording to a browser too (stax web; its URL is printed on stderr); once the run is saved, the page serves it until Ctrl-C")
	c.Flags().StringVar(&f.webAddr, "web-addr", "127.0.0.1:0", "`HOST:PORT` for --web")
	f.pf.add(g, c, true)
}

// check validates the flags with the command's args, and reads --off-cpu-rate.
func (f *recordFlags) check(args []string) (offRate int, err error) {
	targets := 0
	for _, given := range []bool{f.pid != 0, len(args) > 0, f.all} {
		if given {
			targets++
		}
	}
	if targets > 1 {
		return 0, usageErr("give one of -a, -p PID or a command, not several")
	}
	if targets == 0 {
		return 0, usageErr("give a command to record (stax record -- CMD ARGS), -p PID, or -a for every process")
	}
	if f.freq <= 0 || f.freq > 100000 {
		return 0, usageErr("-F must be between 1 and 100000 Hz")
	}
	if f.seconds < 0 || f.pid < 0 {
		return 0, usageErr("-l and -p must not be negative")
	}
	if f.callGraph != "fp" && f.callGraph != "dwarf" {
		return 0, usageErr("--call-graph must be fp or dwarf, not %q", f.callGraph)
	}
	if offRate, err = parseOffCPURate(f.offCPURate); err != nil {
		return 0, err
	}
	if f.stackSize != 0 && (f.stackSize < 8<<10 || f.stackSize > 64<<10-8 || f.stackSize%8 != 0) {
		return 0, usageErr("--stack-size must be a multiple of 8 from 8192 to 65528 bytes, not %d", f.stackSize)
	}
	if f.pages != 0 && (f.pages < 1 || f.pages&(f.pages-1) != 0 || f.pages > 1<<20) {
		return 0, usageErr("-m must be a power of two number of pages (e.g. 512 or 2048), not %d", f.pages)
	}
	if f.pf.url != "" {
		if _, _, err := f.pf.target(f.pf.url); err != nil {
			return 0, err
		}
		if f.pf.every < 100*time.Millisecond {
			return 0, usageErr("--push-every must be at least 100ms, not %s", f.pf.every)
		}
	}
	return offRate, nil
}

// config is the recording the flags and the command's args ask for: its environment,
// the recorder's options, and what to start beside it (push, web).
func (f *recordFlags) config(g *globals, args []string, offRate int) recordrun.Config {
	notef := func(format string, a ...any) {
		fmt.Fprintf(g.errOut, "stax: %s\n", esc(fmt.Sprintf(format, a...)))
	}
	env := os.Environ()
	if len(args) > 0 && !f.noJITAPI {
		env = withJITAPI(env, notef)
	}
	if len(args) > 0 {
		env = withGoSpans(env)
	}
	pid, quiet := f.pid, f.quiet
	cfg := recordrun.Config{
		Recorder: recorder.Options{
			Argv: args, Pid: f.pid, SystemWide: f.all, Freq: f.freq, Duration: time.Duration(f.seconds * float64(time.Second)), RingPages: f.pages,
			CallGraph: f.callGraph, StackSize: f.stackSize, OffCPU: !f.noOffCPU, OffCPURate: offRate, NoWakers: f.noWakers,
			PerThreadEvents: f.perThread, Env: env,
		},
		Quiet: f.quiet, RunIDFile: f.runIDFile, Notef: notef,
		Attached: func() func() {
			undo := attachSpans(pid)
			if !quiet {
				noteITTHint(pid, notef)
			}
			return undo
		},
	}
	if pf := f.pf; pf.url != "" {
		cfg.Push = recordrun.Push{URL: pf.url, Timeout: pf.timeout, Start: func(rec *recorder.Recorder) (*push.Pusher, error) {
			p, err := pf.startPush(rec, rec.ID(), rec.Snapshot().Meta, targetExe(args, pid))
			if err == nil {
				rec.SetKeepFloor(p.Cut) // nothing leaves the window before it was pushed
			}
			return p, err
		}}
	}
	if f.webOn {
		addr := f.webAddr
		cfg.StartWeb = func(h http.Handler, id string) (*web.Server, error) {
			return startWeb(g, g.errOut, web.HandlerSource{Handler: h}, web.Options{Addr: addr, Recording: true}, false, id)
		}
	}
	return cfg
}

// record records as cfg says until the recording ends, and says how it ended: the
// command's exit status, or why the run was not saved whole or could not start.
func record(cfg recordrun.Config) error {
	r, err := recordrun.Start(cfg)
	if err != nil {
		var nf *launch.NotFoundError
		var ne *launch.NotExecutableError
		switch {
		case errors.As(err, &nf):
			return &exitError{127, err}
		case errors.As(err, &ne):
			return &exitError{126, err}
		case strings.Contains(err.Error(), "no such process"):
			return notFound(err)
		}
		return err
	}
	defer r.Close()
	res := r.Wait()
	if !res.Saved {
		return &exitError{ExitNotSaved, errors.New("")}
	}
	if res.Exit != 0 {
		return &exitError{res.Exit, errors.New("")}
	}
	return nil
}

// defaultCallGraph is dwarf where stax unwinds .eh_frame itself (x86-64), else fp.
func defaultCallGraph() string {
	if runtime.GOARCH == "amd64" {
		return "dwarf"
	}
	return "fp"
}

// defaultOffCPURate is --off-cpu-rate's default: at every switch while a thread switches
// less than this many times a second; above, the stacks that the kernel takes at each
// switch and wakeup would cost the program more than its switches.
const defaultOffCPURate = 4000

// parseOffCPURate reads --off-cpu-rate: a rate in Hz, or all (0: every switch).
func parseOffCPURate(v string) (int, error) {
	if v == "all" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 100000 {
		return 0, usageErr("--off-cpu-rate must be a rate from 1 to 100000 Hz, or all (a stack at every switch), not %q", v)
	}
	return n, nil
}
