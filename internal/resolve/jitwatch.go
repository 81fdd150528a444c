package resolve

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/collectorabi"
	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/targetfile"
)

// Bounds on what the JIT files of the recorded processes may cost. Those files are written
// by the profiled programs: whatever they hold, the recorder's memory and the time it takes
// to finish stay bounded.
const (
	// MaxJITMemory bounds what the JIT tables of one run keep (names, code, line tables).
	// Each process with JIT files may keep an equal share of it (jit.Budget): past its
	// share, its oldest functions are dropped and counted. STAX_JIT_MEMORY (MiB) lowers
	// or raises it.
	MaxJITMemory = 256 << 20
	// MaxJITFileBytes bounds the bytes read from one JIT file (a file rewritten from its
	// start counts again): reading stops there, and the status says so.
	MaxJITFileBytes = 256 << 20
	// pollChunk is what one source is read at a time before the others (and a request to
	// stop) get their turn.
	pollChunk = 1 << 20
	// pollEvery is how often the files are looked at once every one has been read.
	pollEvery = 20 * time.Millisecond
	// scanEvery is how often each process is searched for new JIT files; a young one (see
	// youngFor) every youngScanEvery, while there are at most maxYoungScans of them: a short
	// run that writes its files outside /tmp (found through its open files) is over before
	// a slower scan, and after its exit only /tmp can be searched.
	scanEvery      = 500 * time.Millisecond
	youngScanEvery = 50 * time.Millisecond
	maxYoungScans  = 64
	// envEvery is how often a process's environment is read again for its STAX_JIT_DIR
	// (it changes only when the process execs): reading another process's memory costs.
	envEvery = 200 * time.Millisecond
	// maxScanEvery bounds the backoff of a watcher that follows many processes
	// (SetBackoff, system-wide recording): a process with no JIT file is searched again
	// after twice as long each time, up to maxScanEvery, and at once after it execs or
	// maps memory no file describes (Poke).
	maxScanEvery = 8 * time.Second
)

// JITWatcher finds the jitdump files and perf maps of every recorded process and tails them
// into the resolver's JIT tables, on a goroutine of its own (Run): a large or fast-growing
// JIT file never holds up the reading of the rings. The recorder reads samples up to the
// watcher's Watermark, so a function announced before it ran is known when its samples are
// counted.
type JITWatcher struct {
	res      *Resolver
	spans    *spans.Set   // where the spans of marker files go
	ittBatch []spans.Span // the spans of one ITT poll, reused (w.mu held)

	// inMu guards inbox, what the ingest goroutine asks to watch; it is never held while
	// anything else is done, so asking never waits for a file being read.
	inMu  sync.Mutex
	inbox []watchRequest

	// mu guards the fields below and every source's state. It is held while one source
	// reads one chunk; Sources and Owner wait at most that.
	mu        sync.Mutex
	pids      map[int]*watchedProc
	nextOrig  uint32
	sharing   int    // processes with a JIT code file opened: they share the JIT budget
	defaultID uint32 // uid assumed for processes whose owner cannot be read any more

	backoff bool // SetBackoff: searches of a process that has no JIT file back off
	// looks, set by tests, is called before each look at a process's /proc (a search for
	// its files, its owner): none for a process known to have exited.
	looks func(pid int)

	watermark atomic.Uint64 // CLOCK_MONOTONIC ns: JIT records written before it are applied
	// noFiles says no file is watched: every JIT record is applied at any time, and the
	// watcher wakes only to search for files (and when asked to watch something: wake).
	noFiles atomic.Bool
	wake    chan struct{}
}

type watchRequest struct {
	pid  int
	path string // a jitdump the process mapped; empty: watch the process
	// exited: the process exited (its EXIT record), so it is not searched again until the
	// end; poke: it exec'd or mapped code no file describes, so it is searched soon. The
	// two are for processes already watched: they add none.
	exited, poke bool
}

type watchedProc struct {
	pid     int
	nsPid   int // pid in its own pid namespace: what its JIT files are named after
	uid     uint32
	since   time.Time                 // when it was first watched
	scanned time.Time                 // when its files were last searched for; zero: never
	sources map[string]*watchedSource // by the path as the process sees it
	// jitDir is the STAX_JIT_DIR of its environment, read while it ran: after its exit the
	// files it wrote there at the last moment (a collector's exit flush) are found there.
	jitDir string
	// env is the STAX_JIT_DIR of its environment as last read (envRead), for discovery.
	env     string
	envRead time.Time
	// startTicks and started are when it started (/proc/PID/stat), zero when it was gone
	// before it was first looked at: a file written before then is an earlier process's.
	startTicks uint64
	started    time.Time
	// sharing says that it holds a share of the JIT budget: a jitdump or perf map of its
	// was opened.
	sharing bool
	// exited: the process is gone (its EXIT record, or /proc said so): its /proc is not
	// looked at again, but for the last search when the recording ends.
	exited bool
	// every is how long until its next search, with backoff (SetBackoff); 0: scanEvery.
	every time.Duration
}

// youngFor is how long after its start a watched process has its owner looked at every
// round: a launched command changes user soon after it starts (setpriv, su), and if it
// exits before its JIT files are found, the files it left are checked against the owner
// last seen.
const youngFor = 5 * time.Second

// refreshUID takes the process's current owner: a launched command may change user after
// stax starts following it (setpriv, su, a setuid program), before it writes JIT files.
func (p *watchedProc) refreshUID() {
	if p.exited {
		return // what it had when it ran
	}
	fi, err := os.Stat("/proc/" + strconv.Itoa(p.pid))
	if err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			p.uid = st.Uid
		}
	} else if os.IsNotExist(err) {
		p.exited = true // gone: not looked at again
	}
}

type watchedSource struct {
	origin  uint32
	kind    jit.SourceKind
	path    string // path opened
	dump    *jit.Tailer
	pmap    *jit.PerfMapTailer
	marks   *jit.MarkerTailer
	itt     *jit.ITTSpanTailer
	spanSrc uint32 // marker files: the source's id in the span set
	tid     uint32 // marker files: the thread its spans are given
	pid     int
	openErr string
	retryAt time.Time
	// stopped says why the file is no longer read (a bound was reached); empty while it is.
	stopped string
	// overBudget counts its functions dropped because the JIT tables' budget was spent.
	overBudget uint64
}

// NewJITWatcher returns a watcher feeding res, and set with the spans of marker files.
func NewJITWatcher(res *Resolver, set *spans.Set) *JITWatcher {
	if set == nil {
		set = spans.NewSet()
	}
	return &JITWatcher{res: res, spans: set, pids: map[int]*watchedProc{}, defaultID: uint32(os.Getuid()),
		wake: make(chan struct{}, 1)}
}

// SetBackoff makes the searches of a process with no JIT file back off, from scanEvery up
// to maxScanEvery, woken by Poke: for a watcher following every process of the machine.
func (w *JITWatcher) SetBackoff(on bool) {
	w.mu.Lock()
	w.backoff = on
	w.mu.Unlock()
}

// Exited tells the watcher that process pid exited: it is not searched again (its files
// are looked for once more when the recording ends, or when it is forgotten).
func (w *JITWatcher) Exited(pid int) { w.ask(watchRequest{pid: pid, exited: true}) }

// Poke tells the watcher that process pid exec'd or mapped code no file describes: a JIT
// may be starting, so a watched process is searched soon, and its backoff starts again
// (with SetBackoff; without, processes are searched every scanEvery anyway).
func (w *JITWatcher) Poke(pid int) { w.ask(watchRequest{pid: pid, poke: true}) }

// Forget stops watching pid, an exited process, and drops what the watcher held of it,
// unless it has JIT files (found, or left in /tmp or its STAX_JIT_DIR: looked for now,
// once), which are still read. It reports whether pid is no longer watched.
func (w *JITWatcher) Forget(pid int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.takeRequests()
	p := w.pids[pid]
	if p == nil {
		return true
	}
	if len(p.sources) == 0 {
		w.addLeftFiles(p)
	}
	// A file never opened that is gone, or was written before the process started (an
	// earlier process's with the same pid), is not the process's. When its start could
	// not be read (gone before it was first looked at), it started shortly before it was
	// first watched.
	started := p.started
	if started.IsZero() {
		started = p.since.Add(-10 * time.Second)
	}
	for inner, s := range p.sources {
		if s.dump != nil || s.pmap != nil || s.marks != nil || s.itt != nil {
			continue
		}
		fi, err := os.Stat(s.path)
		if err != nil {
			fi, err = os.Stat(inner) // its root link went with it
		}
		if err != nil || jit.CheckWrittenSince(fi.ModTime(), started) != nil {
			delete(p.sources, inner)
		}
	}
	if len(p.sources) > 0 {
		return false
	}
	delete(w.pids, pid)
	return true
}

// Watched is the number of processes watched.
func (w *JITWatcher) Watched() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pids)
}

// Track adds a process to watch. It returns at once: the process is looked at by the
// watcher's goroutine.
func (w *JITWatcher) Track(pid int) { w.ask(watchRequest{pid: pid}) }

// AddMmapPath is told about an mmap of a file named jit-<pid>.dump or marker-<pid>.txt by
// process pid.
func (w *JITWatcher) AddMmapPath(pid int, path string) { w.ask(watchRequest{pid: pid, path: path}) }

func (w *JITWatcher) ask(req watchRequest) {
	w.inMu.Lock()
	w.inbox = append(w.inbox, req)
	w.inMu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// takeRequests moves what was asked into the watched set; w.mu must be held.
func (w *JITWatcher) takeRequests() {
	w.inMu.Lock()
	reqs := w.inbox
	w.inbox = nil
	w.inMu.Unlock()
	for _, req := range reqs {
		if req.exited || req.poke {
			if p := w.pids[req.pid]; p != nil {
				p.exited = p.exited || req.exited
				if req.poke && !p.exited && w.backoff {
					// Searched at the next round, unless it was searched just now: a
					// JIT maps code often, and each mapping pokes.
					p.every = 0
					if time.Since(p.scanned) >= youngScanEvery {
						p.scanned = time.Time{}
					}
				}
			}
			continue
		}
		if p := w.pids[req.pid]; p != nil && p.exited && req.path == "" {
			// Asked to watch a pid whose process exited: a new process has it now.
			if len(p.sources) == 0 {
				delete(w.pids, req.pid)
			} else {
				p.exited, p.every = false, 0
			}
		}
		p := w.track(req.pid)
		if req.path != "" {
			kind := jit.SourceJitdump
			if _, _, ok := spans.IsMarkerName(req.path); ok {
				kind = jit.SourceMarkers
			}
			w.add(p, req.path, "/proc/"+strconv.Itoa(req.pid)+"/root"+req.path, kind)
		}
	}
}

func (w *JITWatcher) track(pid int) *watchedProc {
	p := w.pids[pid]
	if p == nil {
		// A process is young from its own start: one that ran long before the recording
		// (attached to, or met by a system-wide one) has opened its JIT files already.
		since := time.Now()
		if age, err := proc.Age(pid); err == nil {
			since = since.Add(-age)
		}
		p = &watchedProc{pid: pid, nsPid: proc.NSPid(pid), uid: w.defaultID, since: since, sources: map[string]*watchedSource{}}
		if ticks, at, err := proc.Start(pid); err == nil {
			p.startTicks, p.started = ticks, at
		}
		p.refreshUID()
		w.pids[pid] = p
	}
	return p
}

func (w *JITWatcher) add(p *watchedProc, inner, open string, kind jit.SourceKind) {
	if _, ok := p.sources[inner]; ok {
		return
	}
	w.nextOrig++
	s := &watchedSource{origin: w.nextOrig, kind: kind, path: open, pid: p.pid}
	if kind == jit.SourceITTSpans {
		s.spanSrc = w.spans.Source(spans.KindOf(inner), p.pid, filepath.Clean(inner))
	}
	if kind == jit.SourceMarkers {
		s.spanSrc = w.spans.Source(spans.KindMarkerFile, p.pid, filepath.Clean(inner))
		s.tid = uint32(p.pid)
		if _, tid, _ := spans.IsMarkerName(inner); tid != 0 && p.nsPid == p.pid {
			s.tid = uint32(tid)
		}
	}
	p.sources[inner] = s
}

// Watermark is the CLOCK_MONOTONIC time before which every JIT record written to a watched
// file has been applied to the tables.
func (w *JITWatcher) Watermark() uint64 {
	if w.noFiles.Load() {
		return monotonicNow()
	}
	return w.watermark.Load()
}

// Run tails the files until stop is closed, then returns. With no file to tail it sleeps
// until the next search for files is due, or until it is asked to watch something: an idle
// recorder is not woken 50 times a second for nothing.
func (w *JITWatcher) Run(stop <-chan struct{}) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		caughtUp := w.round(false, stop)
		wait := pollEvery
		switch {
		case !caughtUp:
			wait = 0 // a file holds more: read on, giving the others their turn
		case w.noFiles.Load():
			wait = w.nextScanIn(time.Now())
		}
		t.Reset(wait)
		select {
		case <-stop:
			return
		case <-t.C:
		case <-w.wake:
		}
	}
}

// nextScanIn is how long until a watched process is due a search for files (discover),
// between pollEvery and scanEvery.
func (w *JITWatcher) nextScanIn(now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	young := w.youngCount(now)
	next := scanEvery
	for _, p := range w.pids {
		if !p.exited {
			next = min(next, p.scanned.Add(w.scanInterval(p, young, now)).Sub(now))
		}
	}
	return max(next, pollEvery)
}

// youngCount is how many watched processes are young (youngFor); w.mu must be held.
func (w *JITWatcher) youngCount(now time.Time) int {
	young := 0
	for _, p := range w.pids {
		if !p.exited && now.Sub(p.since) < youngFor {
			young++
		}
	}
	return young
}

// scanInterval is how often p is searched for new files, given how many processes are
// young.
func (w *JITWatcher) scanInterval(p *watchedProc, young int, now time.Time) time.Duration {
	if young <= maxYoungScans && now.Sub(p.since) < youngFor && !w.backoff {
		// Following every process of a machine (backoff), the young are many: each is
		// searched at once when it execs (Poke), then with backoff like the others.
		return youngScanEvery
	}
	if p.every > 0 {
		return p.every
	}
	return scanEvery
}

// Finish reads what the files still hold, looking everywhere once more (processes that have
// exited included), until every file is read or deadline passes; files it could not read to
// their end say so in their status, and so do files that end in part of a record (a torn
// record, which is ignored). Call it after Run has returned.
func (w *JITWatcher) Finish(deadline time.Time) {
	final := true
	caughtUp := false
	for {
		if w.round(final, nil) {
			caughtUp = true // what is left of a file is at most a torn record: said below
			break
		}
		final = false // discovery is done once
		if !time.Now().Before(deadline) {
			break
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.pids {
		for _, s := range p.sources {
			if s.stopped != "" {
				continue
			}
			var pr jit.Progress
			switch {
			case s.dump != nil:
				pr = s.dump.Progress()
			case s.pmap != nil:
				pr = s.pmap.Progress()
			case s.marks != nil:
				pr = s.marks.Progress()
			case s.itt != nil:
				pr = s.itt.Progress()
			default:
				continue
			}
			if s.itt != nil && pr.Offset < pr.Size {
				if torn := s.itt.Torn(); torn > 0 && torn == pr.Size-pr.Offset {
					// A record the writer did not finish: ignored, and said.
					s.stopped = fmt.Sprintf("ends in %d bytes of a record not written whole, ignored", torn)
					w.spans.SetError(s.spanSrc, joinWhy(s.openErr, s.stopped))
					continue
				}
			}
			if s.dump != nil && pr.Offset < pr.Size {
				if torn := s.dump.Torn(); torn > 0 && torn == pr.Size-pr.Offset {
					// A record its writer did not finish (it crashed, say): said, not
					// taken for a file read only in part.
					s.stopped = fmt.Sprintf("ends in %d bytes of a record not written whole, ignored", torn)
					continue
				}
			}
			if caughtUp {
				continue
			}
			if pr.Offset < pr.Size && s.itt != nil {
				// The spans left are counted, as dropped, so that every one the program
				// reported is accounted for.
				n, _ := s.itt.CountRest(MaxSpanFileBytes - pr.Offset)
				w.spans.Count(s.spanSrc, 0, n)
				s.stopped = fmt.Sprintf("not read to its end when the run ended (%s of %s): its last %d spans are counted dropped", mib(pr.Offset), mib(pr.Size), n)
				w.spans.SetError(s.spanSrc, s.stopped)
			} else if pr.Offset < pr.Size {
				s.stopped = fmt.Sprintf("not read to its end: %s of %s read when the run ended (its last functions are unnamed)",
					mib(pr.Offset), mib(pr.Size))
			}
		}
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// round discovers new files (see scanEvery; always when final) and reads a chunk
// of every file, unless stop is closed meanwhile. It reports whether every file has been
// read to its end, and then moves the watermark to the round's start.
func (w *JITWatcher) round(final bool, stop <-chan struct{}) (caughtUp bool) {
	began := monotonicNow()
	type item struct {
		p     *watchedProc
		inner string
		s     *watchedSource
	}
	var items []item
	w.mu.Lock()
	w.takeRequests()
	w.discover(final)
	for _, p := range w.pids {
		if !p.exited && !w.backoff && time.Since(p.since) < youngFor {
			if w.looks != nil {
				w.looks(p.pid)
			}
			p.refreshUID()
		}
		for inner, s := range p.sources {
			items = append(items, item{p, inner, s})
		}
	}
	w.noFiles.Store(len(items) == 0)
	w.mu.Unlock()
	caughtUp = true
	for _, it := range items {
		select {
		case <-stop:
			return false
		default:
		}
		w.mu.Lock()
		more := w.pollSource(it.p, it.inner, it.s, final)
		w.mu.Unlock()
		if more {
			caughtUp = false
		}
	}
	if caughtUp && began > w.watermark.Load() {
		w.watermark.Store(began)
	}
	return caughtUp
}

// discover looks for new files of the processes due a search (all of them when final);
// w.mu must be held.
func (w *JITWatcher) discover(final bool) {
	now := time.Now()
	young := w.youngCount(now)
	for _, p := range w.pids {
		if p.exited && !final {
			continue // gone: looked for once more at the end (or when forgotten)
		}
		if every := w.scanInterval(p, young, now); !final && !p.scanned.IsZero() && now.Sub(p.scanned) < every {
			continue
		}
		if w.looks != nil {
			w.looks(p.pid)
		}
		p.scanned = now
		if w.backoff && len(p.sources) == 0 && !final {
			p.every = min(max(2*p.every, scanEvery), maxScanEvery)
		}
		if p.refreshUID(); p.exited && !final {
			continue
		}
		if p.envRead.IsZero() || now.Sub(p.envRead) >= envEvery {
			var known bool
			if p.env, known = jit.ReadEnvJITDir(p.pid); known {
				p.envRead = now
			}
			if p.jitDir == "" && p.nsPid == p.pid && now.Sub(p.since) < youngFor {
				p.jitDir = p.env
			}
		}
		cands, err := jit.DiscoverIn(p.pid, p.nsPid, p.env)
		if err != nil {
			// The process is gone: look for its files in our own /tmp (a JVM writes
			// its perf map as it exits) and in the STAX_JIT_DIR it had (stax's collector
			// writes its spans there as it exits).
			p.exited = true // not searched again until then
			if !final {
				continue
			}
			w.addLeftFiles(p)
			continue
		}
		for _, c := range cands {
			w.add(p, c.Inner, c.Path, c.Kind)
		}
	}
}

// addLeftFiles adds the files an exited process p left in /tmp and in its STAX_JIT_DIR;
// w.mu must be held.
func (w *JITWatcher) addLeftFiles(p *watchedProc) {
	dirs := []string{"/tmp"}
	if p.jitDir != "" && p.jitDir != "/tmp" {
		dirs = append(dirs, p.jitDir)
	}
	pid := strconv.Itoa(p.pid)
	for _, dir := range dirs {
		for _, c := range []struct {
			name string
			kind jit.SourceKind
		}{
			{"jit-" + pid + ".dump", jit.SourceJitdump},
			{"perf-" + pid + ".map", jit.SourcePerfMap},
			{"marker-" + pid + ".txt", jit.SourceMarkers},
			{collectorabi.ITTSpansName(p.pid), jit.SourceITTSpans},
			{collectorabi.GoSpansName(p.pid), jit.SourceITTSpans},
		} {
			if c.kind == jit.SourcePerfMap && dir != "/tmp" {
				continue
			}
			path := filepath.Join(dir, c.name)
			if targetfile.Candidate(path) {
				w.add(p, path, path, c.kind)
			}
		}
	}
}

// pollSource opens the file if need be and reads a chunk of it into the process's table. It
// reports whether the file holds more to read now. w.mu must be held.
func (w *JITWatcher) pollSource(p *watchedProc, inner string, s *watchedSource, final bool) (more bool) {
	if s.stopped != "" {
		return false
	}
	if s.dump == nil && s.pmap == nil && s.marks == nil && s.itt == nil {
		if !final && time.Now().Before(s.retryAt) {
			return false
		}
		var err error
		path := s.path
		if _, statErr := os.Lstat(path); statErr != nil && path != inner {
			path = inner // the process is gone; its root link with it
		}
		p.refreshUID()
		// A file written before the process started is an earlier process's with the same
		// pid: not read, said in the status, and looked at again (the process may write
		// its own over it).
		if fi, statErr := os.Stat(path); statErr == nil {
			if err := jit.CheckWrittenSince(fi.ModTime(), p.started); err != nil {
				s.openErr = err.Error()
				s.retryAt = time.Now().Add(2 * time.Second)
				if s.kind == jit.SourceMarkers || s.kind == jit.SourceITTSpans {
					w.spans.SetError(s.spanSrc, s.openErr)
				}
				return false
			}
		}
		switch s.kind {
		case jit.SourcePerfMap:
			s.pmap, err = jit.OpenPerfMapTailer(path, p.uid)
		case jit.SourceMarkers:
			s.marks, err = jit.OpenMarkerTailer(path, p.uid)
		case jit.SourceITTSpans:
			s.itt, err = jit.OpenITTSpanTailer(path, p.nsPid, p.uid)
			if err == nil {
				s.itt.ExpectStart(p.startTicks)
			}
		default:
			s.dump, err = jit.OpenTailer(path, p.nsPid, p.uid)
		}
		if err != nil {
			s.openErr = err.Error()
			s.retryAt = time.Now().Add(2 * time.Second)
			if s.kind == jit.SourceMarkers || s.kind == jit.SourceITTSpans {
				w.spans.SetError(s.spanSrc, s.openErr)
			}
			return false
		}
		s.openErr = ""
		if s.dump != nil || s.pmap != nil {
			w.share(p)
		}
	}
	if s.marks != nil {
		return w.pollMarkers(s)
	}
	if s.itt != nil {
		return w.pollITT(s)
	}
	var pr jit.Progress
	if s.dump != nil {
		pr = s.dump.Progress()
	} else {
		pr = s.pmap.Progress()
	}
	// A process past its share of the JIT budget drops its own oldest functions as it
	// reads on (jit.Budget): the file is read to its end, up to MaxJITFileBytes.
	if pr.Consumed >= MaxJITFileBytes {
		s.stop(fmt.Sprintf("stopped reading after %s: stax reads at most %s of one JIT file (its later functions are unnamed)",
			mib(pr.Consumed), mib(MaxJITFileBytes)))
		return false
	}
	table := w.res.JIT(uint32(p.pid))
	dropped := table.Stats().OverBudget
	defer func() { s.overBudget += table.Stats().OverBudget - dropped }()
	switch {
	case s.dump != nil:
		recs, reset, more2, err := s.dump.PollUpTo(pollChunk)
		more = more2
		if reset {
			table.Reset(s.origin)
			w.res.Learned()
		}
		if len(recs) > 0 {
			table.Apply(s.origin, jit.SourceJitdump, recs)
			w.res.Learned()
		}
		if err != nil {
			s.openErr = err.Error()
		}
	case s.pmap != nil:
		entries, reset, more2, err := s.pmap.PollUpTo(pollChunk)
		more = more2
		if reset {
			table.Reset(s.origin)
			w.res.Learned()
		}
		if len(entries) > 0 {
			// A line counts from when it was written: the file's modification time bounds
			// it (it is exact when one poll reads one write), the time of reading else.
			at := monotonicNow()
			if w := s.pmap.WrittenAt(); w > 0 && w < at {
				at = w
			}
			table.AddPerfMap(s.origin, entries, at)
			w.res.Learned()
		}
		if err != nil {
			s.openErr = err.Error()
		}
	}
	return more
}

// share gives p a share of the JIT budget, if it has none yet: the shares of the others
// shrink, and a table over its new share drops its oldest functions now, so that p's fit
// whatever the others took before it came. w.mu must be held.
func (w *JITWatcher) share(p *watchedProc) {
	if p.sharing {
		return
	}
	p.sharing = true
	w.sharing++
	budget := w.res.JITBudget()
	budget.SetShares(w.sharing)
	limit := budget.Share()
	evicted := 0
	for _, q := range w.pids {
		if t := w.res.JITIfAny(uint32(q.pid)); q.sharing && t != nil {
			evicted += t.Shrink(limit)
		}
	}
	if evicted > 0 {
		w.res.Learned()
	}
}

// JITShares is the number of processes sharing the JIT budget.
func (w *JITWatcher) JITShares() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sharing
}

// stop ends the reading of a file for good.
func (s *watchedSource) stop(why string) {
	s.stopped = why
	if s.dump != nil {
		s.dump.Close()
	}
	if s.pmap != nil {
		s.pmap.Close()
	}
	if s.marks != nil {
		s.marks.Close()
	}
	if s.itt != nil {
		s.itt.Close()
	}
}

// Sources reports every JIT source found, for status and the saved run.
func (w *JITWatcher) Sources() []store.JITSource {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []store.JITSource
	for _, p := range w.pids {
		for inner, s := range p.sources {
			if s.kind == jit.SourceMarkers || s.kind == jit.SourceITTSpans {
				continue // spans, counted with the run's spans
			}
			js := store.JITSource{Pid: p.pid, Path: inner, Kind: s.kind.String(), Error: s.openErr}
			var st jit.Source
			switch {
			case s.dump != nil:
				st = s.dump.Status()
			case s.pmap != nil:
				st = s.pmap.Status()
			}
			js.Functions = int(st.Functions)
			js.Records = st.Records
			if t := w.res.JITIfAny(uint32(p.pid)); t != nil && (s.dump != nil || s.pmap != nil) {
				js.Evicted = t.EvictedFrom(s.origin)
			}
			if s.overBudget > 0 {
				if st.Skipped == nil {
					st.Skipped = map[string]uint64{}
				}
				st.Skipped[jit.SkipOverBudget] += s.overBudget
			}
			if st.NotWritten > 0 {
				if st.Skipped == nil {
					st.Skipped = map[string]uint64{}
				}
				st.Skipped[jit.SkipNotWritten] += st.NotWritten
			}
			if len(st.Skipped) > 0 {
				js.Skipped = st.Skipped
			}
			if js.Error == "" {
				js.Error = st.LastError
			}
			if st.WriteError != "" {
				js.Error = joinWhy(js.Error, "the collector gave the file up: "+st.WriteError)
			}
			if s.stopped != "" {
				if js.Error != "" {
					js.Error += "; "
				}
				js.Error += s.stopped
			}
			js.Path = filepath.Clean(js.Path)
			out = append(out, js)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pid != out[j].Pid {
			return out[i].Pid < out[j].Pid
		}
		return out[i].Path < out[j].Path
	})
	return out
}

// Close closes every file.
func (w *JITWatcher) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.pids {
		for _, s := range p.sources {
			if s.dump != nil {
				s.dump.Close()
			}
			if s.pmap != nil {
				s.pmap.Close()
			}
			if s.marks != nil {
				s.marks.Close()
			}
			if s.itt != nil {
				s.itt.Close()
			}
		}
	}
}

// monotonicNow is CLOCK_MONOTONIC in nanoseconds, the clock of sample times.
func monotonicNow() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// Owner is the user that owns pid's JIT files, once one was opened: the identity that
// wrote them, which files they name are checked against.
func (w *JITWatcher) Owner(pid int) (uint32, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pids[pid]
	if p == nil {
		return 0, false
	}
	for _, s := range p.sources {
		if s.dump != nil || s.pmap != nil || s.marks != nil || s.itt != nil {
			return p.uid, true
		}
	}
	return 0, false
}
