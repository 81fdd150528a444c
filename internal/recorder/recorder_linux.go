// Package recorder runs one recording: it opens the perf events, follows the process tree,
// tails JIT sources, aggregates samples, answers live queries and writes the run to the
// store.
package recorder

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/launch"
	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/perfrecord"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/replay"
	"github.com/stax-profiler/stax/internal/resolve"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/symconf"
	"github.com/stax-profiler/stax/internal/targetfile"
	"github.com/stax-profiler/stax/internal/unwind"
)

// Options configure a recording.
type Options struct {
	Argv       []string      // command to launch, or
	Pid        int           // process to attach to, or
	SystemWide bool          // every process on every CPU
	Freq       int           // Hz
	Duration   time.Duration // 0: until the target exits or stop
	Env        []string      // the launched command's environment
	Checkpoint time.Duration // how often the run is saved while recording (0: $STAX_CHECKPOINT_INTERVAL, else 2 s)
	RingPages  int           // pages per CPU ring (a power of two); 0 sizes them from Freq
	CallGraph  string        // "fp" (default) or "dwarf": unwind user stacks from .eh_frame
	StackSize  int           // bytes of user stack copied per sample in dwarf mode (0: perfevent.DefaultStackSize)
	Workers    int           // goroutines that decode and unwind samples (0: GOMAXPROCS)
	OffCPU     bool          // record the time threads spend switched out (not with SystemWide)
	OffCPURate int           // sample the stacks of switches out and wakeups at about this many a second per thread (0: every one)
	// ContextSwitchEvent takes every switch's stack from the context-switch event, as
	// without root, rather than the waits' alone from sched_switch.
	ContextSwitchEvent bool
	// NoWakers records off-CPU time without which thread ended each wait (sched_waking).
	NoWakers bool
	// PerThreadEvents samples the CPU through per-thread events even where CPU-wide ones
	// are allowed (perfevent.Config.CPUWide).
	PerThreadEvents bool
	// Events are the events to sample (stax record -e), resolved (perfevent.ResolveEvent);
	// empty: cycles, else cpu-clock, at Freq. With any but cpu-clock alone, the events are
	// per thread (not CPU-wide).
	Events []perfevent.EventSpec
	// TraceSamples is how many of each tracepoint's most recent samples keep their
	// fields (0: agg.DefaultTraceSamples).
	TraceSamples int
	// Counters are read with each sample of the first event (stax record --counters;
	// resolved, and only those this machine counts): per thread, not CPU-wide.
	Counters []perfevent.EventSpec
	// CountersByDefault says Counters are the default ones (--counters not given).
	CountersByDefault bool
	// Keep and KeepBytes bound the samples the run keeps on disk to a rolling window: the
	// last Keep of them, in at most KeepBytes with the run's files (0: no bound).
	Keep      time.Duration
	KeepBytes int64
	Notef     func(format string, args ...any)
}

// Source is where the recorder's perf records come from: the kernel's rings
// (*perfevent.Session) or a replay of a capture (*replay.Source).
type Source interface {
	// Read calls fn for each record available now, with the CPU of its ring. The records
	// stay valid until the next Read.
	Read(fn func(cpu int, rec []byte)) error
	// Wait blocks until records are likely available, or timeout passes.
	Wait(timeout time.Duration)
	Enable() error
	Disable()
	Close()
}

// fillSource is a Source that says how full its rings are (*perfevent.Session).
type fillSource interface {
	Fill() float64
}

// orderedSource is a Source that can hand over the records of all its rings in time order,
// holding back those timed at or after until (*perfevent.Session). The records stay valid
// until release returns.
type orderedSource interface {
	ReadOrdered(until uint64, timeOf func(rec []byte) uint64, fn func(cpu int, rec []byte), release func()) error
}

// finiteSource is a Source that ends by itself (a replay).
type finiteSource interface {
	Source
	Done() <-chan struct{}
}

// Recorder is one live recording. Its work is split into stages, each with one job and
// its own state:
//
//   - source: the kernel's rings, one per CPU (*perfevent.Session), or a replay;
//   - ingest (ingest_linux.go), on the goroutine that runs Loop: reads every record in time
//     order, applies those that change the process tree at once, and batches samples;
//   - unwind (stacks_linux.go, unwind_linux.go): stack workers that ingest runs on a batch,
//     on several cores when one would be kept busy;
//   - JIT watching (resolve.JITWatcher.Run), on its own goroutine: tails JIT files into the
//     resolver's tables and publishes the watermark ingest reads the rings up to;
//   - resolve (namer_linux.go), on its own goroutine: names new stacks and keeps code;
//   - storage (storage_linux.go), on the resolve goroutine and at the end: checkpoints.
//
// A new kind of event is a new source of records, handled by ingest and counted into the
// run; a new kind of file the target writes is a new watched source.
//
// Lock order: a goroutine holding one of these locks takes only locks listed after it:
// codeMu; agg.Run's locks (resolveMu, then its mu); the JIT watcher's mu; the resolver's,
// the JIT tables' and the tracker's locks; mu, held only for bookkeeping, last of all.
type Recorder struct {
	opts    Options
	id      string
	meta    store.Meta
	ev      eventCounts  // events_linux.go
	ctr     counterTrack // counters_linux.go
	start   time.Time
	src     Source
	capture *replay.Writer // STAX_CAPTURE: every record read is also written here
	gate    *launch.Gate
	// gateHeld: the launched command waits at its gate (not yet released); gateLost: its
	// release failed. Start's cleanup reads them.
	gateHeld, gateLost bool
	tracker            *proc.Tracker
	res                *resolve.Resolver
	jitw               *resolve.JITWatcher
	run                *agg.Run
	spans              *spans.Set // spans and markers the target reports, and stax mark's

	// pushStatus reports pushing to a fleet store (set before queries are served; nil: none).
	pushStatus func() *api.PushStatus

	in      ingestState  // the ingest goroutine's alone
	off     offCPUState  // the ingest goroutine's, but for its counters (under mu)
	namer   namerState   // collectCode's, under codeMu
	storage storageState // save's alone (one goroutine at a time)
	window  windowState  // the rolling window on disk (window_linux.go)

	// codeMu guards namer.
	codeMu sync.Mutex

	itt ittHintState

	release releaseState  // what letGo let go (release_linux.go)
	addedAt atomic.Uint64 // every sample taken before it has been added to run

	// mu guards the fields below it.
	mu         sync.Mutex
	lost       uint64            // samples the kernel dropped (PERF_RECORD_LOST, LOST_SAMPLES)
	lostByCPU  map[int]uint64    // of those, per CPU ring
	lostByTid  map[uint32]uint64 // of those, per thread where the record says
	bad        uint64            // records that could not be decoded
	notes      []string
	pending    []heldSample
	tick       chan struct{} // closed and replaced after each resolve
	frameNames []string
	exitCode   *int
	saveErr    error // the final save's (saveFinal)
	codes      []store.Code
	codeBytes  int   // bytes kept in codes
	memCodes   []int // codes whose bytes were read from memory

	stoppedFirst atomic.Bool // the recording ended while the launched command runs on

	stopOnce sync.Once
	stopCh   chan struct{}
	doneCh   chan struct{}
	gateDone chan int

	// filesBase is targetfile's counts (refused, abandoned) when the recording started.
	filesBase [2]uint64
}

// ingestState is the ingest stage's: the samples read and not yet added, the workers that
// decode and unwind them, the step's cut.
type ingestState struct {
	dec            perfrecord.Decoder
	batch          sampleBatch
	workers        []*stackWorker
	load           ingestLoad
	minParallel    int
	alwaysParallel bool // tests: spread every batch that minParallel allows
	stepCut        uint64
	stepFinal      bool
	overload       overload
	boosted        bool // the recorder's priority was raised (see raisePriority)
	// sampledPids are the processes seen in samples (system-wide: JIT sources are looked
	// for only in those).
	sampledPids map[uint32]bool
	fit         stackFit
	// cpuWide says the CPU-sampling events see every task (perfevent.Session.CPUWide):
	// samples of processes not in targets (the target and the processes it forked) are
	// dropped and counted in foreign.
	cpuWide bool
	targets map[uint32]bool
	foreign atomic.Uint64
}

// namerState is collectCode's: which pieces of code were kept.
type namerState struct {
	codeSeen    map[codeID]struct{}
	codeVersion uint64
	codeFull    bool
}

// storageState is the run's samples file, where sealed chunks of samples go, and its
// spans file, where the spans' records go.
type storageState struct {
	samples       *store.SampleLog
	samplesFile   *store.SampleFile
	samplesClosed bool
	failures      int             // saves failed since the last that succeeded
	good          SavedCheckpoint // the last save that succeeded (under mu)
	spans         *store.SpanLog
	spansErr      error
	spansClosed   bool
	profile       agg.ProfileBuffers  // the memory of the last checkpoint's profile
	intervals     store.IntervalCache // the intervals off CPU, compressed by the last checkpoint
	ivBuf         []agg.Interval      // the memory of the last checkpoint's intervals
	delta         *store.DeltaWriter  // writes checkpoints as deltas of the run's file
}

// NewID makes a run id from the time and the target's pid.
func NewID(pid int) string {
	return fmt.Sprintf("%s-%d", time.Now().Format("20060102-150405"), pid)
}

// Start opens the events and starts the target (or attaches to it). Recording begins at
// once; call Loop to process it. A start that fails undoes what it did, in one place
// (abortStart): the launched command is ended, the events closed, and the run's id and
// files given back, so it leaves nothing in the store.
func Start(opts Options) (_ *Recorder, err error) {
	capturing := opts.OffCPU && os.Getenv("STAX_CAPTURE") != ""
	if capturing {
		opts.OffCPU = false // a capture replays with the CPU samples' layout alone
	}
	r := newRecorder(opts)
	opts = r.opts
	defer func() {
		if err != nil {
			r.abortStart()
		}
	}()
	if capturing {
		r.note("off-CPU time is not recorded while STAX_CAPTURE captures the records")
	}
	cfg := perfevent.Config{Freq: opts.Freq, RingPages: opts.RingPages, CallGraph: opts.CallGraph, StackSize: opts.StackSize,
		OffCPU: opts.OffCPU, OffCPURate: opts.OffCPURate, ContextSwitchEvent: opts.ContextSwitchEvent, NoWakers: opts.NoWakers,
		Events: opts.Events, Counters: opts.Counters}
	if err := r.findTarget(opts, &cfg); err != nil {
		return nil, err
	}
	sess, err := r.openEvents(opts, cfg)
	if err != nil {
		return nil, err
	}
	if err := r.begin(); err != nil {
		return nil, err
	}
	r.meta.Terminal = proc.Terminal()
	if r.meta.Pid > 0 {
		r.jitw.Track(r.meta.Pid)
		if c, err := proc.ReadCreds(r.meta.Pid); err == nil {
			r.meta.TargetUID, r.meta.TargetGIDs = &c.UID, c.GIDs
		}
	}
	if err := r.startTarget(opts, sess); err != nil {
		return nil, err
	}
	r.save(false) // the claimed file holds a readable run from the start
	return r, nil
}

// findTarget launches the command held at its gate, or finds the process to attach to (or
// every process, system-wide), and sets cfg's threads and the run's meta for it.
func (r *Recorder) findTarget(opts Options, cfg *perfevent.Config) error {
	if len(opts.Argv) > 0 {
		start := launch.Start
		if os.Getenv("STAX_CAPTURE") != "" {
			// A capture holds records only: the command's first mappings must come as
			// the records its exec makes, behind the gate, not read from /proc.
			start = launch.StartGate
		}
		gate, err := start(opts.Argv, opts.Env)
		if err != nil {
			return err
		}
		r.gate, r.gateHeld = gate, true
		cfg.Pids = []int{gate.Pid()}
		cfg.EnableOnExec = !gate.Traced()
		r.meta.Pid = gate.Pid()
		r.meta.Command = opts.Argv
	} else if opts.SystemWide {
		cfg.SystemWide = true
		r.meta.SystemWide = true
		r.meta.Command = []string{"(system-wide)"}
	} else {
		if err := checkPid(opts.Pid); err != nil {
			return err
		}
		tids, err := proc.ThreadIDs(opts.Pid)
		if err != nil {
			return fmt.Errorf("attach to pid %d: %w", opts.Pid, err)
		}
		cfg.Pids = append([]int{opts.Pid}, without(tids, opts.Pid)...)
		r.meta.Pid = opts.Pid
		r.meta.Attached = true
		if b, err := targetfile.ReadPrefix(fmt.Sprintf("/proc/%d/cmdline", opts.Pid), 1<<20); err == nil {
			r.meta.Command = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		}
	}
	if cfg.CallGraph == "dwarf" && len(cfg.Pids) > 0 && (r.gate == nil || r.gate.Traced()) {
		// The program is known (exec'd, or attached to): its frame pointers decide.
		if !unwind.KeepsFramePointers(fmt.Sprintf("/proc/%d/exe", cfg.Pids[0])) {
			cfg.NoUserFPChain, r.meta.NoUserFPChain = true, true
		}
	}
	return nil
}

// openEvents opens the perf events for cfg and sets the recorder up for what the kernel
// granted.
func (r *Recorder) openEvents(opts Options, cfg perfevent.Config) (*perfevent.Session, error) {
	// CPU-wide sampling events where the kernel allows them: per-thread ones are switched
	// with their threads. Not behind a gate, whose events start at its exec (CPU-wide
	// events cannot), nor for a capture, which replays the target's records alone, nor
	// with DWARF stacks: the kernel would copy every other task's stack into the rings too
	// (8 KiB a sample), and on a busy machine they filled the rings until the recorder
	// fell behind and unwound the target's stacks cheaply.
	cfg.CPUWide = !opts.PerThreadEvents && !opts.SystemWide && !cfg.EnableOnExec && os.Getenv("STAX_CAPTURE") == "" &&
		cfg.CallGraph != "dwarf" && defaultEvents(opts.Events) && len(opts.Counters) == 0
	// Fitted to the stacks seen unless the user chose the size (stackfit_linux.go); a
	// capture replays without the events' reopening.
	cfg.ResizableStack = cfg.CallGraph == "dwarf" && opts.StackSize == 0 && !cfg.SystemWide && os.Getenv("STAX_CAPTURE") == "" &&
		(len(opts.Events) == 0 || len(opts.Events) == 1 && opts.Events[0].Period == 0) // see perfevent.Config.Events
	sess, err := perfevent.Open(cfg)
	if err != nil {
		switch {
		case opts.SystemWide:
			return nil, fmt.Errorf("record -a: %w", err)
		case len(opts.Argv) > 0:
			return nil, fmt.Errorf("record %s: %w", opts.Argv[0], err)
		}
		return nil, fmt.Errorf("attach to pid %d: %w", opts.Pid, err)
	}
	r.src = sess
	r.eventWorkers(sess, cfg)
	r.counterWorkers(sess, cfg)
	if n := sess.StackSize(); sess.Resizable() && n > 0 {
		r.in.fit = stackFit{on: true, max: n, cur: n}
		for _, w := range r.in.workers {
			w.fitSize = uint32(n)
		}
	}
	if sess.OffCPU {
		r.useOffCPU(sess, opts, cfg)
	}
	for _, line := range strings.Split(sess.Note, "\n") {
		if line != "" {
			r.note("%s", line) // one note a line: a note's own newline would be escaped
		}
	}
	r.meta.Event = sess.Event
	r.meta.RingPages = sess.RingPages
	if sess.CPUWide {
		r.in.cpuWide, r.meta.CPUWide = true, true
		r.in.targets = map[uint32]bool{uint32(r.meta.Pid): true}
	}
	r.meta.UserOnly = sess.UserOnly
	return sess, nil
}

// useOffCPU sets the recorder up for the off-CPU events sess opened.
func (r *Recorder) useOffCPU(sess *perfevent.Session, opts Options, cfg perfevent.Config) {
	r.off.on, r.off.isSwitch = true, sess.IsSwitchEvent
	for _, w := range r.in.workers {
		w.isSwitch, w.isEvery = sess.IsSwitchEvent, sess.IsEveryEvent
		if sess.Wakers {
			w.isWaking, w.wakingPid, w.wakingFlags = sess.IsWakingEvent, sess.WakingPid, sess.WakingFlags
			w.wakeDec = w.dec
			w.wakeDec.SampleType |= perfrecord.SampleRaw
		}
		if sess.Runtime {
			w.isRuntime, w.runtimePid, w.runtimeNs = sess.IsRuntimeEvent, sess.RuntimePid, sess.RuntimeNs
			w.runtimeDec = w.dec
			w.runtimeDec.SampleType, w.runtimeDec.RegsUserMask = perfevent.RuntimeSampleType(cfg), 0
		}
		if sess.Deaths {
			w.isDeath, w.deadPid = sess.IsDeathEvent, sess.DeadPid
			w.runtimeDec = w.dec
			w.runtimeDec.SampleType, w.runtimeDec.RegsUserMask = perfevent.RuntimeSampleType(cfg), 0
		}
	}
	r.off.wakers, r.off.counts.Wakers = sess.Wakers, sess.Wakers
	r.off.counts.WakersOff = opts.NoWakers
	r.off.sampled, r.off.counts.StackRate = sess.OffCPURate > 0, sess.OffCPURate
	if _, ok := sess.SwitchOutsCounted(); ok {
		// Counted from 0 as the events start: the first batch's look already sees
		// a target that switches fast from its start.
		r.off.counter, r.off.rateFrom = sess, perfevent.MonotonicNow()
	}
	r.off.waitStacks, r.off.counts.WaitStacks = sess.WaitStacks, sess.WaitStacks
	if sess.Runtime {
		r.off.runtime, r.off.counts.OnCPUClock = true, store.OnCPUScheduler
	}
	r.off.deaths, r.off.counts.Deaths = sess.Deaths, sess.Deaths
}

// startTarget starts recording the target: a launched command is let go from its gate
// (a traced one, stopped after its exec, is described from /proc first, and its events
// enabled), a process attached to (or every one) is described from /proc, and the events
// enabled.
func (r *Recorder) startTarget(opts Options, sess *perfevent.Session) error {
	r.off.begin = perfevent.MonotonicNow() // a thread on CPU since then has no switch in
	if r.gate != nil {
		if r.gate.Traced() {
			// Stopped after its exec: its mappings and name are in /proc, not in records.
			r.synthesize(r.meta.Pid)
			if err := startStep("enable", sess.Enable); err != nil {
				return err
			}
		}
		r.gateHeld = false // released, or left to abortStart to kill if that fails
		if err := startStep("release", r.gate.Release); err != nil {
			r.gateLost = true
			return err
		}
		go func() { r.gateDone <- r.gate.Wait() }()
		return nil
	}
	if opts.SystemWide {
		r.synthesizeAll()
	} else {
		r.synthesize(opts.Pid)
	}
	return startStep("enable", sess.Enable)
}

// startFault, set by tests, makes the start step it names fail: the steps after the run's
// id is claimed fail rarely for real (the kernel refusing to enable events it opened, a
// traced command that cannot be let go).
var startFault func(step string) error

// startStep runs one step of Start that can fail after the run's id is claimed.
func startStep(step string, fn func() error) error {
	if startFault != nil {
		if err := startFault(step); err != nil {
			return err
		}
	}
	return fn()
}

// abortStart undoes a start that failed, whatever step it reached: the events are closed,
// a launched command held at its gate is let go without running (one released, or whose
// release failed, is killed), JIT files opened are closed, and the run's id is given back
// with every file claimed or written under it.
func (r *Recorder) abortStart() {
	if r.src != nil {
		r.src.Close()
	}
	switch {
	case r.gate != nil && r.gateHeld:
		r.gate.Abort()
	case r.gate != nil && r.gateLost:
		r.gate.Kill()
	}
	r.jitw.Close()
	if r.capture != nil {
		r.capture.Close()
	}
	if r.id != "" {
		store.Remove(r.id)
	}
}

func newRecorder(opts Options) *Recorder {
	if opts.Freq <= 0 {
		opts.Freq = 999
	}
	if opts.Checkpoint <= 0 {
		opts.Checkpoint = 2 * time.Second
		if d, err := time.ParseDuration(os.Getenv("STAX_CHECKPOINT_INTERVAL")); err == nil && d > 0 {
			opts.Checkpoint = d
		}
	}
	if opts.SystemWide {
		opts.OffCPU = false // every thread of the machine: not yet (status says why)
	}
	if opts.Notef == nil {
		opts.Notef = func(string, ...any) {}
	}
	r := &Recorder{
		opts:      opts,
		tracker:   proc.NewTracker(),
		run:       agg.NewRun(),
		tick:      make(chan struct{}),
		lostByCPU: map[int]uint64{},
		lostByTid: map[uint32]uint64{},
		in:        ingestState{sampledPids: map[uint32]bool{}},
		off:       newOffCPU(),
		stopCh:    make(chan struct{}),
		doneCh:    make(chan struct{}),
		gateDone:  make(chan int, 1),
		start:     time.Now(),
		namer:     namerState{codeSeen: map[codeID]struct{}{}},
	}
	r.run.CountersPerSample(len(opts.Counters)) // a window of the run sums its samples' counters
	r.filesBase[0], r.filesBase[1] = targetfile.Counts()
	r.res = resolve.New(r.tracker, symconf.Options(r.note))
	r.spans = spans.NewSet()
	if opts.SystemWide {
		// Many users' programs: none may take the spans another would keep.
		r.spans.ShareAmongProcesses()
	}
	r.jitw = resolve.NewJITWatcher(r.res, r.spans)
	r.jitw.SetBackoff(opts.SystemWide) // every process of the machine: most have no JIT
	st, regs := perfevent.SampleTypeFor(perfevent.Config{CallGraph: opts.CallGraph, OffCPU: opts.OffCPU, Events: opts.Events, Counters: opts.Counters})
	r.in.dec = perfrecord.Decoder{SampleType: st, RegsUserMask: regs, SampleIDAll: true}
	dwarf := opts.CallGraph == "dwarf"
	r.in.workers = newStackWorkers(opts.Workers, r.in.dec, dwarf, perfevent.MaxStack(), r.res)
	r.in.minParallel = minParallel
	r.meta.CallGraph = "fp"
	if dwarf {
		r.meta.CallGraph = "dwarf"
		r.meta.StackSize = perfevent.StackCopy(perfevent.Config{CallGraph: "dwarf", StackSize: opts.StackSize})
	}
	return r
}

// Replay runs a recording from a capture instead of the kernel (tests, and reproducing a
// user's run): Loop ends when every record has been read. meta gives what the capture
// does not hold (the target's pid and command, the event).
func Replay(src finiteSource, meta store.Meta, opts Options) (*Recorder, error) {
	r := newRecorder(opts)
	r.src = src
	r.meta.Pid, r.meta.Command, r.meta.Attached = meta.Pid, meta.Command, meta.Attached
	r.meta.Event, r.meta.UserOnly, r.meta.RingPages = meta.Event, meta.UserOnly, meta.RingPages
	if err := r.begin(); err != nil {
		return nil, err
	}
	r.jitw.Track(r.meta.Pid)
	r.save(false)
	return r, nil
}

// begin claims the run's id and fills in the run's settings.
func (r *Recorder) begin() error {
	var err error
	base := NewID(r.meta.Pid)
	if r.meta.SystemWide {
		base = time.Now().Format("20060102-150405") + "-all"
	}
	if r.id, err = store.Claim(base); err != nil {
		return err
	}
	r.meta.ID = r.id
	if err := store.ReserveEnd(r.id); err != nil {
		r.note("%v", err)
	}
	r.meta.Freq = r.opts.Freq
	r.meta.Start = r.start
	r.meta.StartNs = perfevent.MonotonicNow() - uint64(time.Since(r.start))
	if path := os.Getenv("STAX_CAPTURE"); path != "" {
		if r.capture, err = replay.Create(path); err != nil {
			r.note("%v", err)
		}
	}
	return nil
}

func without(s []int, v int) []int {
	out := s[:0:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

func checkPid(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("attach to pid %d: not a valid pid", pid)
	}
	err := syscall.Kill(pid, 0)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ESRCH):
		return fmt.Errorf("attach to pid %d: no such process", pid)
	case errors.Is(err, syscall.EPERM):
		return fmt.Errorf("attach to pid %d: permission denied (it belongs to another user; run stax as that user or as root)", pid)
	}
	return fmt.Errorf("attach to pid %d: %w", pid, err)
}

func (r *Recorder) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.notes = append(r.notes, msg)
	r.mu.Unlock()
	r.opts.Notef("%s", msg)
}

// ID is the run's id.
func (r *Recorder) ID() string { return r.id }

// Pid is the target's pid.
func (r *Recorder) Pid() int { return r.meta.Pid }

// Done is closed when the recording has ended and the run is saved.
func (r *Recorder) Done() <-chan struct{} { return r.doneCh }

// Stop ends the recording (the target keeps running).
func (r *Recorder) Stop() { r.stopOnce.Do(func() { close(r.stopCh) }) }

// CommandRunsOn reports, once Done is closed, whether the recording ended (stax stop or
// the time limit) while the launched command goes on running.
func (r *Recorder) CommandRunsOn() bool { return r.stoppedFirst.Load() }

// ForwardSignal passes a signal to a launched command.
func (r *Recorder) ForwardSignal(sig os.Signal) bool {
	if r.gate == nil {
		return false
	}
	r.gate.Signal(sig)
	return true
}

// Loop records until the target exits, Stop is called or the duration passes; then it saves
// the final run. It returns the launched command's exit status (0 when attached).
func (r *Recorder) Loop() int {
	// The rings wake this loop when a quarter full; at low rates it still steps every
	// maxWait, for the JIT sources and the samples held back by the last step. Each wake
	// costs the whole process a round of its threads waking (the Go runtime's included):
	// the namer is kicked from here rather than woken by a timer of its own.
	const maxWait = 100 * time.Millisecond
	// An attached process's exit comes from a pidfd; where the kernel has none, it is
	// looked for every goneEvery, not at every step: the rings wake the loop hundreds of
	// times a second at high rates.
	const goneEvery = 100 * time.Millisecond
	var exited <-chan struct{}
	_, finite := r.src.(finiteSource)
	pollGone := r.gate == nil && !r.meta.SystemWide && !finite
	if pollGone {
		if ch, stop, err := proc.ExitWatch(r.meta.Pid); err == nil {
			exited, pollGone = ch, false
			defer stop()
		}
	}
	var goneChecked, kicked time.Time
	var deadline time.Time
	if r.opts.Duration > 0 {
		deadline = time.Now().Add(r.opts.Duration)
	}
	namerKick, namerStop, namerDone := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go r.nameLoop(namerKick, namerStop, namerDone)
	jitStop, jitDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(jitDone)
		r.jitw.Run(jitStop)
	}()
	exit := -1
loop:
	for {
		select {
		case <-r.stopCh:
			break loop
		case code := <-r.gateDone:
			exit = code
			break loop
		case <-exited:
			break loop
		default:
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			r.note("recording stopped after %v", r.opts.Duration)
			break loop
		}
		r.src.Wait(maxWait)
		r.step(false)
		r.fitStacks()
		r.forgetStoppedFollowers()
		if now := time.Now(); now.Sub(kicked) >= resolveEvery {
			kicked = now
			select {
			case namerKick <- struct{}{}:
			default:
			}
		}
		if fs, ok := r.src.(finiteSource); ok {
			select {
			case <-fs.Done():
				break loop
			default:
			}
		} else if pollGone && time.Since(goneChecked) >= goneEvery {
			goneChecked = time.Now()
			if proc.Gone(r.meta.Pid) {
				break loop
			}
		}
	}
	close(namerStop)
	<-namerDone
	close(jitStop)
	<-jitDone
	r.src.Disable()
	r.jitw.Finish(time.Now().Add(finalJITTime))
	r.step(true)
	r.src.Close()
	if r.capture != nil {
		if err := r.capture.Close(); err != nil {
			r.note("%v", err)
		}
	}
	r.jitw.Close()
	if r.gate != nil && exit >= 0 {
		// The launched command is over: the spans files read for its processes that have
		// exited are removed (their spans are the run's now), so that none piles up in /tmp.
		if _, err := r.jitw.RemoveSpansFiles(); err != nil {
			r.note("remove spans files: %v", err)
		}
	}
	r.resolveAndNotify()
	if err := r.res.Persist(); err != nil {
		r.note("%v", err)
	}
	if r.gate != nil {
		if exit < 0 {
			// Recording ended first (stop or time limit): the command runs on; its status is
			// still ours to return.
			r.stoppedFirst.Store(true)
			r.saveFinal()
			close(r.doneCh)
			exit = <-r.gateDone
			return exit
		}
		r.mu.Lock()
		r.exitCode = &exit
		r.mu.Unlock()
	}
	r.saveFinal()
	close(r.doneCh)
	if exit < 0 {
		exit = 0
	}
	return exit
}
