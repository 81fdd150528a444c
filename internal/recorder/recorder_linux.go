// Package recorder runs one recording: it opens the perf events, follows the process tree,
// tails JIT sources, aggregates samples, answers live queries and writes the run to the
// store.
package recorder

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/launch"
	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/record"
	"github.com/stax-profiler/stax/internal/replay"
	"github.com/stax-profiler/stax/internal/resolve"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/symconf"
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
	StackSize  int           // bytes of user stack copied per sample in dwarf mode (0: 16 KiB)
	Workers    int           // goroutines that decode and unwind samples (0: GOMAXPROCS)
	Notef      func(format string, args ...any)
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

// Recorder is one live recording.
type Recorder struct {
	opts    Options
	id      string
	meta    store.Meta
	start   time.Time
	src     Source
	capture *replay.Writer // STAX_CAPTURE: every record read is also written here
	// The ingest goroutine's own state: the samples read and not yet added, the workers
	// that decode and unwind them, the step's cut.
	batch          sampleBatch
	workers        []*stackWorker
	load           ingestLoad
	minParallel    int
	alwaysParallel bool // tests: spread every batch that minParallel allows
	stepCut        uint64
	stepFinal      bool
	// sampledPids are the processes seen in samples (system-wide: JIT sources are looked
	// for only in those). Ingest goroutine only.
	sampledPids map[uint32]bool
	gate        *launch.Gate
	tracker     *proc.Tracker
	res         *resolve.Resolver
	jitw        *resolve.JITWatcher
	run         *agg.Run
	dec         record.Decoder

	// mu guards the fields below it. Lock order: agg.Run's locks are never taken while mu
	// is held; mu is held only for bookkeeping.
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
	codes      []store.Code
	codeBytes  int   // bytes kept in codes
	memCodes   []int // codes whose bytes were read from memory

	// The run's samples file, where sealed chunks of samples go; save's alone.
	samples       *store.SampleLog
	samplesFile   *store.SampleFile
	samplesErr    error
	samplesClosed bool

	// collectCode's state, guarded by codeMu (taken before mu).
	codeMu      sync.Mutex
	codeSeen    map[codeID]struct{}
	codeVersion uint64
	codeFull    bool

	stoppedFirst atomic.Bool // the recording ended while the launched command runs on

	stopOnce sync.Once
	stopCh   chan struct{}
	doneCh   chan struct{}
	gateDone chan int
}

type heldSample struct {
	pid, tid, cpu uint32
	time          uint64
	chain         []uint64
}

// NewID makes a run id from the time and the target's pid.
func NewID(pid int) string {
	return fmt.Sprintf("%s-%d", time.Now().Format("20060102-150405"), pid)
}

// Start opens the events and starts the target (or attaches to it). Recording begins at
// once; call Loop to process it.
func Start(opts Options) (*Recorder, error) {
	r := newRecorder(opts)
	opts = r.opts
	cfg := perfevent.Config{Freq: opts.Freq, RingPages: opts.RingPages, CallGraph: opts.CallGraph, StackSize: opts.StackSize}
	if len(opts.Argv) > 0 {
		gate, err := launch.Start(opts.Argv, opts.Env)
		if err != nil {
			return nil, err
		}
		r.gate = gate
		cfg.Pids = []int{gate.Pid()}
		cfg.EnableOnExec = true
		r.meta.Pid = gate.Pid()
		r.meta.Command = opts.Argv
	} else if opts.SystemWide {
		cfg.SystemWide = true
		r.meta.SystemWide = true
		r.meta.Command = []string{"(system-wide)"}
	} else {
		if err := checkPid(opts.Pid); err != nil {
			return nil, err
		}
		tids, err := proc.ThreadIDs(opts.Pid)
		if err != nil {
			return nil, fmt.Errorf("attach to pid %d: %w", opts.Pid, err)
		}
		cfg.Pids = append([]int{opts.Pid}, without(tids, opts.Pid)...)
		r.meta.Pid = opts.Pid
		r.meta.Attached = true
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", opts.Pid)); err == nil {
			r.meta.Command = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		}
	}
	sess, err := perfevent.Open(cfg)
	if err != nil {
		if r.gate != nil {
			r.gate.Abort()
		}
		switch {
		case opts.SystemWide:
			return nil, fmt.Errorf("record -a: %w", err)
		case len(opts.Argv) > 0:
			return nil, fmt.Errorf("record %s: %w", opts.Argv[0], err)
		}
		return nil, fmt.Errorf("attach to pid %d: %w", opts.Pid, err)
	}
	r.src = sess
	if sess.Note != "" {
		r.note("%s", sess.Note)
	}
	r.meta.Event = sess.Event
	r.meta.RingPages = sess.RingPages
	r.meta.UserOnly = sess.UserOnly
	if err := r.begin(); err != nil {
		sess.Close()
		if r.gate != nil {
			r.gate.Abort()
		}
		return nil, err
	}
	r.meta.Terminal = proc.Terminal()
	if r.meta.Pid > 0 {
		r.jitw.Track(r.meta.Pid)
		if c, err := proc.ReadCreds(r.meta.Pid); err == nil {
			r.meta.TargetUID, r.meta.TargetGIDs = &c.UID, c.GIDs
		}
	}

	if r.gate != nil {
		if err := r.gate.Release(); err != nil {
			sess.Close()
			return nil, err
		}
		go func() { r.gateDone <- r.gate.Wait() }()
	} else {
		if opts.SystemWide {
			r.synthesizeAll()
		} else {
			r.synthesize(opts.Pid)
		}
		if err := sess.Enable(); err != nil {
			sess.Close()
			return nil, err
		}
	}
	r.save(false) // the claimed file holds a readable run from the start
	return r, nil
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
	if opts.Notef == nil {
		opts.Notef = func(string, ...any) {}
	}
	r := &Recorder{
		opts:        opts,
		tracker:     proc.NewTracker(),
		run:         agg.NewRun(),
		tick:        make(chan struct{}),
		lostByCPU:   map[int]uint64{},
		lostByTid:   map[uint32]uint64{},
		sampledPids: map[uint32]bool{},
		stopCh:      make(chan struct{}),
		doneCh:      make(chan struct{}),
		gateDone:    make(chan int, 1),
		start:       time.Now(),
		codeSeen:    map[codeID]struct{}{},
	}
	r.res = resolve.New(r.tracker, symconf.Options(r.note))
	r.jitw = resolve.NewJITWatcher(r.res)
	st, regs := perfevent.SampleTypeFor(perfevent.Config{CallGraph: opts.CallGraph})
	r.dec = record.Decoder{SampleType: st, RegsUserMask: regs, SampleIDAll: true}
	dwarf := opts.CallGraph == "dwarf"
	r.workers = newStackWorkers(opts.Workers, r.dec, dwarf, perfevent.MaxStack(), r.res)
	r.minParallel = minParallel
	r.meta.CallGraph = "fp"
	if dwarf {
		r.meta.CallGraph = "dwarf"
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

// synthesize records the state of an already running process: its executable mappings and
// its threads' names.
func (r *Recorder) synthesize(pid int) {
	maps, err := proc.ReadMaps(pid, 0)
	if err != nil && !r.meta.SystemWide { // system-wide, processes come and go (and kernel threads have none)
		r.note("%v", err)
	}
	for _, m := range maps {
		r.tracker.AddMapping(pid, m)
		if _, ok := jit.IsJitdumpName(m.Path); ok {
			r.jitw.AddMmapPath(pid, m.Path)
		}
	}
	if tids, err := proc.ThreadIDs(pid); err == nil {
		for _, tid := range tids {
			r.tracker.Comm(pid, tid, proc.ThreadName(pid, tid))
		}
	}
}

// synthesizeAll records the state of every running process (system-wide recording).
func (r *Recorder) synthesizeAll() {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		r.note("list processes: %v", err)
		return
	}
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			r.synthesize(pid)
		}
	}
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
	// maxWait, for the JIT sources and the samples held back by the last step.
	const maxWait = 50 * time.Millisecond
	var deadline time.Time
	if r.opts.Duration > 0 {
		deadline = time.Now().Add(r.opts.Duration)
	}
	namerStop, namerDone := make(chan struct{}), make(chan struct{})
	go r.nameLoop(namerStop, namerDone)
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
		default:
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			r.note("recording stopped after %v", r.opts.Duration)
			break loop
		}
		r.src.Wait(maxWait)
		r.step(false)
		if fs, ok := r.src.(finiteSource); ok {
			select {
			case <-fs.Done():
				break loop
			default:
			}
		} else if r.gate == nil && !r.meta.SystemWide && proc.Gone(r.meta.Pid) {
			break loop
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

// saveFinal writes the finished run, its samples made durable first.
func (r *Recorder) saveFinal() {
	if err := r.spill(); err != nil {
		r.note("%v", err)
	}
	if r.samples != nil {
		if err := r.samples.Sync(); err != nil {
			r.note("save samples: %v", err)
		}
		r.samples.Close()
		r.samplesClosed = true
	}
	r.save(true)
}

// nameLoop names new stacks every 200 ms and writes a checkpoint every opts.Checkpoint, on
// its own goroutine: a slow symbol load (a large image, a debuginfod that takes its time)
// or a slow disk never delays reading the rings.
func (r *Recorder) nameLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	const resolveEvery = 200 * time.Millisecond
	ticker := time.NewTicker(resolveEvery)
	defer ticker.Stop()
	lastCheckpoint := time.Now()
	every := r.opts.Checkpoint
	for {
		select {
		case <-stop:
			return
		case <-ticker.C:
		}
		r.resolveAndNotify()
		if time.Since(lastCheckpoint) >= every {
			began := time.Now()
			r.save(false)
			lastCheckpoint = time.Now()
			// A checkpoint rewrites the run, which grows with its samples: space them so
			// that writing them takes at most 1/20 of this goroutine's time.
			every = max(r.opts.Checkpoint, 20*lastCheckpoint.Sub(began))
		}
	}
}

// Bounds on how the rings wait for the JIT files (read by the JIT watcher's goroutine).
const (
	// maxJITLag is how far behind the rings the JIT files may be read before samples are
	// counted without waiting for them: a JIT file too large to keep up with never makes
	// the rings overflow.
	maxJITLag = 100 * time.Millisecond
	// finalJITTime is what the JIT files are given to be read to their end once the
	// recording stops.
	finalJITTime = 500 * time.Millisecond
)

// step reads the rings up to the JIT watcher's watermark: samples taken after the JIT files
// were last read wait for the next step, so a JIT function announced before it ran is known
// when its samples are counted. When the watcher falls behind by more than maxJITLag,
// samples are read without waiting for it.
func (r *Recorder) step(final bool) {
	cut := perfevent.MonotonicNow()
	if wm := r.jitw.Watermark(); wm < cut && cut-wm < uint64(maxJITLag) {
		cut = wm
	}
	r.stepCut, r.stepFinal = cut, final
	var err error
	if ordered, ok := r.src.(orderedSource); ok {
		// Records after the cut wait in their rings: the JIT sources were read before them,
		// and so are the mappings they may need on another CPU.
		until := cut
		if final {
			until = math.MaxUint64
		}
		err = ordered.ReadOrdered(until, r.dec.Time, r.read, r.flushBatch)
	} else {
		err = r.src.Read(r.read)
		r.flushBatch()
	}
	if err != nil {
		r.note("read samples: %v", err)
	}
	r.mu.Lock()
	held := r.pending
	r.pending = nil
	r.mu.Unlock()
	keep := held[:0]
	for _, h := range held {
		if final || h.time < cut {
			r.add(h.pid, h.tid, h.cpu, h.time, h.chain)
		} else {
			keep = append(keep, h)
		}
	}
	r.mu.Lock()
	r.pending = append(keep, r.pending...)
	r.mu.Unlock()
}

// commit adds a sample, once its stack is made, to the run; one taken after this step's cut
// (a source that does not hold such records back) waits for the next step.
func (r *Recorder) commit(pid, tid, cpu uint32, t uint64, chain []uint64) {
	if r.meta.SystemWide && pid > 0 && !r.sampledPids[pid] {
		r.sampledPids[pid] = true // its JIT files are looked for once it runs code
		r.jitw.Track(int(pid))
	}
	if !r.stepFinal && t >= r.stepCut {
		r.mu.Lock()
		r.pending = append(r.pending, heldSample{pid, tid, cpu, t, append([]uint64(nil), chain...)})
		r.mu.Unlock()
		return
	}
	r.add(pid, tid, cpu, t, chain)
}

func (r *Recorder) add(pid, tid, cpu uint32, t uint64, chain []uint64) {
	gen := r.res.Generation(pid, t)
	r.run.AddSample(pid, tid, cpu, t, gen, chain)
	if len(chain) >= 2 && chain[0] == record.ContextUser {
		r.res.NoteLeaf(pid, t, gen, chain[1]) // keeps unnamed JIT code's bytes for annotate
	}
}

// read takes one record from the source (and copies it to the capture, if one is made).
// Samples are batched; the records that change the process tree apply at once, and since
// the tracker keeps its history by time, the batch's samples still see the tree as it was
// when each was taken.
func (r *Recorder) read(cpu int, rec []byte) {
	if r.capture != nil {
		r.capture.Add(cpu, rec)
	}
	h, err := record.ParseHeader(rec)
	if err != nil {
		r.countBad()
		return
	}
	if h.Type == record.TypeSample {
		r.addToBatch(cpu, rec)
		return
	}
	r.handle(cpu, h, rec)
}

func (r *Recorder) handle(cpu int, h record.Header, rec []byte) {
	switch h.Type {
	case record.TypeMmap2, record.TypeMmap:
		m, err := r.dec.Mmap2(rec)
		if err != nil {
			r.countBad()
			return
		}
		r.tracker.AddMapping(int(m.Pid), proc.Mapping{Start: m.Addr, End: m.Addr + m.Len, Pgoff: m.Pgoff,
			Path: m.Filename, BuildID: m.BuildID, Maj: m.Maj, Min: m.Min, Ino: m.Ino, Time: m.SampleID.Time})
		if _, ok := jit.IsJitdumpName(m.Filename); ok {
			r.jitw.AddMmapPath(int(m.Pid), m.Filename)
		}
	case record.TypeComm:
		c, err := r.dec.Comm(rec)
		if err != nil {
			r.countBad()
			return
		}
		if c.Exec {
			r.tracker.Exec(int(c.Pid), c.SampleID.Time, c.Comm)
		} else {
			r.tracker.Comm(int(c.Pid), int(c.Tid), c.Comm)
		}
	case record.TypeFork:
		t, err := r.dec.Task(rec)
		if err != nil {
			r.countBad()
			return
		}
		r.tracker.Fork(int(t.Pid), int(t.PPid), int(t.Tid), int(t.PTid), t.Time)
		if t.Pid != t.PPid && !r.meta.SystemWide { // system-wide: tracked once sampled
			r.jitw.Track(int(t.Pid))
		}
	case record.TypeExit:
		t, err := r.dec.Task(rec)
		if err != nil {
			r.countBad()
			return
		}
		r.tracker.Exit(int(t.Pid), int(t.Tid), t.Time)
	case record.TypeLost, record.TypeLostSamples:
		l, err := r.dec.Lost(rec)
		if err != nil {
			r.countBad()
			return
		}
		r.mu.Lock()
		r.lost += l.Lost
		r.lostByCPU[cpu] += l.Lost
		if l.SampleID.Tid != 0 {
			r.lostByTid[l.SampleID.Tid] += l.Lost
		}
		r.mu.Unlock()
	}
}

func (r *Recorder) countBad() {
	r.mu.Lock()
	r.bad++
	r.mu.Unlock()
}

func (r *Recorder) resolveAndNotify() {
	newFrames := r.run.Resolve(r.res)
	r.collectCode()
	r.mu.Lock()
	for _, f := range newFrames {
		r.frameNames = append(r.frameNames, f.Func)
	}
	close(r.tick)
	r.tick = make(chan struct{})
	r.mu.Unlock()
}

// Bounds on the code kept for annotate: past them, new code is noted but not kept.
const (
	maxCodes     = 1 << 16
	maxCodeBytes = 256 << 20
)

type codeID struct {
	frame uint32
	key   resolve.CodeKey
}

// collectCode keeps the code at the leaf of each newly named stack, once per piece of
// code (a JIT function compiled again, or new code at a reused address, is a new piece),
// while the process is still there to read it from. Finding a leaf's piece is a lookup;
// reading memory and copying bytes happen once per piece.
func (r *Recorder) collectCode() {
	r.codeMu.Lock()
	defer r.codeMu.Unlock()
	leaves := r.run.TakeNewLeaves()
	if v := r.res.Version(); v != r.codeVersion {
		r.codeVersion = v
		r.upgradeCode()
	}
	for _, l := range leaves {
		if l.Unresolved && l.Addr >= 1<<63 {
			continue // unnamed kernel code: nothing to annotate
		}
		id := codeID{l.Frame, r.res.CodeKey(l.Pid, l.Addr, l.Time)}
		if _, ok := r.codeSeen[id]; ok {
			continue
		}
		r.codeSeen[id] = struct{}{}
		r.mu.Lock()
		full := len(r.codes) >= maxCodes || r.codeBytes >= maxCodeBytes
		r.mu.Unlock()
		if full {
			if !r.codeFull {
				r.codeFull = true
				r.note("annotate: more code was sampled than stax keeps (%d pieces, %d MiB); later code is not kept", maxCodes, maxCodeBytes>>20)
			}
			continue
		}
		c := r.res.CodeFor(l.Pid, l.Addr, l.Time)
		c.Frame = l.Frame
		r.mu.Lock()
		if c.Origin == "memory" {
			r.memCodes = append(r.memCodes, len(r.codes))
		}
		r.codes = append(r.codes, c)
		r.codeBytes += len(c.Bytes)
		r.mu.Unlock()
	}
}

// upgradeCode replaces bytes read from memory, and the gaps where none were captured, by
// the JIT's own copy where a jitdump has since announced the same code (a runtime writing
// both a perf map and a jitdump).
func (r *Recorder) upgradeCode() {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.memCodes[:0]
	for _, i := range r.memCodes {
		c := &r.codes[i]
		b, load, ok := r.res.JITCopy(uint32(c.Pid), c.Start, c.Time)
		if !ok {
			kept = append(kept, i)
			continue
		}
		r.codeBytes += len(b) - len(c.Bytes)
		c.Bytes, c.Gaps, c.Size, c.LoadTime, c.Origin, c.Warning = b, nil, uint64(len(b)), load, "jitdump", ""
	}
	r.memCodes = kept
}

func (r *Recorder) threads() []agg.ThreadInfo {
	ths := r.tracker.Threads()
	out := make([]agg.ThreadInfo, len(ths))
	for i, t := range ths {
		out[i] = agg.ThreadInfo{Tid: uint32(t.Tid), Pid: uint32(t.Pid), Name: t.Name}
	}
	return out
}

// Snapshot resolves what is pending and returns the run as it stands.
func (r *Recorder) Snapshot() *store.Run {
	r.run.Resolve(r.res)
	r.collectCode()
	return r.snapshot(false)
}

func (r *Recorder) snapshot(final bool) *store.Run {
	st := r.run.Stats()
	r.mu.Lock()
	meta := r.meta
	meta.Lost = r.lost
	meta.BadRecords = r.bad
	if b := r.res.JITBudget(); b.Used() > 0 {
		meta.JITMemory, meta.JITMemoryLimit = uint64(b.Used()), uint64(b.Limit())
	}
	meta.StackEnds = map[string]uint64{}
	for i, n := range stackEnds(r.workers) {
		if n > 0 {
			meta.StackEnds[unwind.EndReason(i).String()] = n
		}
	}
	meta.LostByCPU = make(map[string]uint64, len(r.lostByCPU))
	for cpu, n := range r.lostByCPU {
		meta.LostByCPU[strconv.Itoa(cpu)] = n
	}
	meta.LostByThread = make(map[string]uint64, len(r.lostByTid))
	for tid, n := range r.lostByTid {
		meta.LostByThread[strconv.Itoa(int(tid))] = n
	}
	meta.Notes = append([]string(nil), r.notes...)
	meta.ExitCode = r.exitCode
	codes := append([]store.Code(nil), r.codes...)
	r.mu.Unlock()
	meta.Notes = append(meta.Notes, r.symbolNotes()...)
	r.targetIdentity(&meta)
	meta.Samples = st.Samples
	meta.Unresolved = st.UnresolvedFrames
	meta.Finished = final
	meta.End = time.Now() // for a checkpoint, its time: a crashed run's last known moment
	run := &store.Run{Meta: meta, Profile: *r.run.Profile(r.threads()), JIT: r.jitw.Sources(), Code: codes}
	run.Meta.Notes = append(run.Meta.Notes, unnamedJITNotes(run, r.comm)...)
	return run
}

// targetIdentity records who the target is for the files it names: its credentials now
// (a launched command may have changed user since it started), and the owner of its JIT
// files when that differs (they were written as that user).
func (r *Recorder) targetIdentity(meta *store.Meta) {
	if c, err := proc.ReadCreds(r.meta.Pid); err == nil {
		r.mu.Lock()
		r.meta.TargetUID, r.meta.TargetGIDs = &c.UID, c.GIDs
		r.mu.Unlock()
		meta.TargetUID, meta.TargetGIDs = &c.UID, c.GIDs
	}
	if uid, ok := r.jitw.Owner(r.meta.Pid); ok && (meta.TargetUID == nil || *meta.TargetUID != uid) {
		meta.TargetUID, meta.TargetGIDs = &uid, nil
	}
}

// comm is a process's name, for notes.
func (r *Recorder) comm(pid int) string {
	for _, p := range r.tracker.Processes() {
		if p.Pid == pid {
			return p.Comm
		}
	}
	return ""
}

// unnamedJITNotes says, per process with samples in JIT code no source names yet, why that
// may be and what to do.
func unnamedJITNotes(run *store.Run, comm func(int) string) []string {
	p := &run.Profile
	unnamed := map[uint32]uint64{}
	for _, e := range p.Entries {
		if st := p.Stacks[e.Stack]; len(st) > 0 {
			if f := p.Frames[st[0]]; f.Kind == agg.KindJIT && strings.HasPrefix(f.Func, "[unknown]") {
				unnamed[e.Pid] += e.Count
			}
		}
	}
	pids := make([]uint32, 0, len(unnamed))
	for pid := range unnamed {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	var notes []string
	for _, pid := range pids {
		var dump, emptyMap, anyMap, failed string
		for _, s := range run.JIT {
			if s.Pid != int(pid) {
				continue
			}
			switch {
			case s.Error != "" && s.Functions == 0:
				failed = s.Error
			case s.Kind == "jitdump":
				dump = s.Path
			case s.Functions == 0:
				emptyMap = s.Path
			default:
				anyMap = s.Path
			}
		}
		who := fmt.Sprintf("pid %d", pid)
		if c := comm(int(pid)); c != "" {
			who += " (" + c + ")"
		}
		why := "no jitdump or perf map names it yet: runtimes that write their perf map at exit (JVM " +
			"DumpPerfMapAtExit, Mono --jitmap) are named then; others need their option (node --perf-prof " +
			"or --perf-basic-prof, PHP opcache.jit_debug=0x10)"
		switch {
		case failed != "":
			why = "its JIT file could not be read: " + failed
		case emptyMap != "" && dump == "" && anyMap == "":
			why = "its perf map " + emptyMap + " is empty: some runtimes write it only at exit " +
				"(Mono --jitmap, JVM DumpPerfMapAtExit), and the names will appear then"
		case dump != "":
			why = "its jitdump " + dump + " has not announced this code yet: runtimes buffer what they " +
				"write (V8 in 2 MiB blocks), and the names appear when they write it or exit"
		case anyMap != "":
			why = "its perf map " + anyMap + " has no line for this code yet"
		}
		notes = append(notes, fmt.Sprintf("%s: %d samples in JIT code with no name; %s", who, unnamed[pid], why))
	}
	return notes
}

// symbolNotes says which symbol sources failed, so unnamed frames have a reason.
func (r *Recorder) symbolNotes() []string {
	var notes []string
	if err := r.res.KernelError(); err != nil {
		notes = append(notes, "kernel frames are unnamed: "+err.Error())
	}
	errs := r.res.ImageErrors()
	paths := make([]string, 0, len(errs))
	for p := range errs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		notes = append(notes, "no symbols for "+p+": "+errs[p])
	}
	return notes
}

// keptChunks is how many sealed chunks of samples (64 KiB, some 13,000 samples each) stay
// in memory once written to the run's samples file: a live view of the last seconds reads
// no file.
const keptChunks = 2

// save writes the run to the store: the sealed chunks of samples not yet in the run's
// samples file are appended to it (and leave memory), then the run's file is rewritten
// with the rest (names, stacks, counts, code), which lists the chunks by reference. A
// checkpoint so costs what changed and the distinct stacks, not every sample again.
func (r *Recorder) save(final bool) {
	if err := r.spill(); err != nil {
		r.note("%v", err)
	}
	run := r.snapshot(final)
	if err := store.SaveStored(store.Path(r.id), run); err != nil {
		r.note("%v", err)
	}
}

// spill appends the sealed chunks of samples to the run's samples file, creating it at
// the first call. Only save calls it (from one goroutine at a time).
func (r *Recorder) spill() error {
	if r.samplesErr != nil || r.samplesClosed {
		return nil // said once; the samples stay in memory
	}
	if r.samples == nil {
		path := store.SamplesPath(r.id)
		os.Remove(path) // a file left by a run of the same id that is gone (its id was free)
		r.samples, r.samplesErr = store.CreateSampleLog(path)
		if r.samplesErr != nil {
			return fmt.Errorf("samples stay in memory: %w", r.samplesErr)
		}
		r.samplesFile = store.OpenSampleFile(path)
	}
	if err := r.run.SpillSeries(r.samples.Append, r.samplesFile, keptChunks); err != nil {
		r.samplesErr = err
		return fmt.Errorf("samples stay in memory: %w", err)
	}
	return nil
}

// Status describes the live run.
func (r *Recorder) Status() api.Status {
	run := r.Snapshot()
	st := api.StatusOf(run)
	st.Live, st.State = true, api.StateLive
	select {
	case <-r.doneCh:
		st.Live, st.State = false, api.StateStored
	default:
	}
	st.ElapsedSec = time.Since(r.start).Seconds()
	for _, p := range r.tracker.Processes() {
		st.Processes = append(st.Processes, api.ProcessStatus{Pid: p.Pid, PPid: p.PPid, Comm: p.Comm, Exited: p.ExitTime != 0})
	}
	return st
}

// Wait blocks until cond holds, the run ends, or ctx ends.
func (r *Recorder) Wait(ctx context.Context, cond api.WaitCondition) api.Wait {
	out := api.Wait{Schema: api.Schema, Run: r.id}
	for {
		r.mu.Lock()
		tick := r.tick
		names := r.frameNames
		r.mu.Unlock()
		samples := r.run.Samples()
		elapsed := time.Since(r.start).Seconds()
		out.Samples, out.ElapsedSec = samples, elapsed
		met := true
		if cond.Samples > 0 && samples < cond.Samples {
			met = false
		}
		if cond.Seconds > 0 && elapsed < cond.Seconds {
			met = false
		}
		if cond.Symbol != "" && !containsFold(names, cond.Symbol) {
			met = false
		}
		if met {
			out.Outcome = api.WaitMet
			return out
		}
		select {
		case <-r.doneCh:
			// One last look: the final resolve may have met the condition.
			r.mu.Lock()
			names = r.frameNames
			r.mu.Unlock()
			samples = r.run.Samples()
			out.Samples = samples
			if (cond.Samples == 0 || samples >= cond.Samples) && cond.Seconds == 0 &&
				(cond.Symbol == "" || containsFold(names, cond.Symbol)) {
				out.Outcome = api.WaitMet
			} else {
				out.Outcome = api.WaitEnded
			}
			return out
		case <-ctx.Done():
			out.Outcome = api.WaitTimeout
			return out
		case <-tick:
		}
	}
}

func containsFold(names []string, s string) bool {
	s = strings.ToLower(s)
	for _, n := range names {
		if strings.Contains(strings.ToLower(n), s) {
			return true
		}
	}
	return false
}

// StorePath is where the run is saved.
func (r *Recorder) StorePath() string { return filepath.Clean(store.Path(r.id)) }
