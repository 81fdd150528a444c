package resolve

import (
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/store"
)

// JITWatcher finds the jitdump files and perf maps of every recorded process and tails them
// into the resolver's JIT tables.
type JITWatcher struct {
	res *Resolver

	mu        sync.Mutex
	pids      map[int]*watchedProc
	lastScan  time.Time
	nextOrig  uint32
	defaultID uint32 // uid assumed for processes whose owner cannot be read any more
}

type watchedProc struct {
	pid     int
	nsPid   int // pid in its own pid namespace: what its JIT files are named after
	uid     uint32
	sources map[string]*watchedSource // by the path as the process sees it
}

// refreshUID takes the process's current owner: a launched command may change user after
// stax starts following it (setpriv, su, a setuid program), before it writes JIT files.
func (p *watchedProc) refreshUID() {
	if fi, err := os.Stat("/proc/" + strconv.Itoa(p.pid)); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			p.uid = st.Uid
		}
	}
}

type watchedSource struct {
	origin  uint32
	kind    jit.SourceKind
	path    string // path opened
	dump    *jit.Tailer
	pmap    *jit.PerfMapTailer
	openErr string
	retryAt time.Time
}

// NewJITWatcher returns a watcher feeding res.
func NewJITWatcher(res *Resolver) *JITWatcher {
	return &JITWatcher{res: res, pids: map[int]*watchedProc{}, defaultID: uint32(os.Getuid())}
}

// Track adds a process to watch.
func (w *JITWatcher) Track(pid int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.track(pid)
}

func (w *JITWatcher) track(pid int) *watchedProc {
	p := w.pids[pid]
	if p == nil {
		p = &watchedProc{pid: pid, nsPid: proc.NSPid(pid), uid: w.defaultID, sources: map[string]*watchedSource{}}
		p.refreshUID()
		w.pids[pid] = p
	}
	return p
}

// AddMmapPath is told about an mmap of a file named jit-<pid>.dump by process pid.
func (w *JITWatcher) AddMmapPath(pid int, path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.track(pid)
	w.add(p, path, "/proc/"+strconv.Itoa(pid)+"/root"+path, jit.SourceJitdump)
}

func (w *JITWatcher) add(p *watchedProc, inner, open string, kind jit.SourceKind) {
	if _, ok := p.sources[inner]; ok {
		return
	}
	w.nextOrig++
	p.sources[inner] = &watchedSource{origin: w.nextOrig, kind: kind, path: open}
}

// Poll discovers new files (at most every scanEvery) and reads what every file appended.
// final makes it look everywhere once more, including for processes that have exited.
func (w *JITWatcher) Poll(final bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	const scanEvery = 500 * time.Millisecond
	if final || time.Since(w.lastScan) >= scanEvery {
		w.lastScan = time.Now()
		for _, p := range w.pids {
			cands, err := jit.Discover(p.pid, p.nsPid)
			if err != nil {
				// The process is gone: look for its files in our own /tmp (a JVM writes
				// its perf map as it exits).
				if !final {
					continue
				}
				for _, c := range []struct {
					path string
					kind jit.SourceKind
				}{
					{"/tmp/jit-" + strconv.Itoa(p.pid) + ".dump", jit.SourceJitdump},
					{"/tmp/perf-" + strconv.Itoa(p.pid) + ".map", jit.SourcePerfMap},
				} {
					if fi, err := os.Lstat(c.path); err == nil && fi.Mode().IsRegular() {
						w.add(p, c.path, c.path, c.kind)
					}
				}
				continue
			}
			for _, c := range cands {
				w.add(p, c.Inner, c.Path, c.Kind)
			}
		}
	}
	for _, p := range w.pids {
		for inner, s := range p.sources {
			w.pollSource(p, inner, s, final)
		}
	}
}

func (w *JITWatcher) pollSource(p *watchedProc, inner string, s *watchedSource, final bool) {
	if s.dump == nil && s.pmap == nil {
		if !final && time.Now().Before(s.retryAt) {
			return
		}
		var err error
		path := s.path
		if _, statErr := os.Lstat(path); statErr != nil && path != inner {
			path = inner // the process is gone; its root link with it
		}
		p.refreshUID()
		switch s.kind {
		case jit.SourcePerfMap:
			s.pmap, err = jit.OpenPerfMapTailer(path, p.uid)
		default:
			s.dump, err = jit.OpenTailer(path, p.nsPid, p.uid)
		}
		if err != nil {
			s.openErr = err.Error()
			s.retryAt = time.Now().Add(2 * time.Second)
			return
		}
		s.openErr = ""
	}
	table := w.res.JIT(uint32(p.pid))
	switch {
	case s.dump != nil:
		recs, reset, err := s.dump.Poll()
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
		entries, reset, err := s.pmap.Poll()
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
}

// Sources reports every JIT source found, for status and the saved run.
func (w *JITWatcher) Sources() []store.JITSource {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []store.JITSource
	for _, p := range w.pids {
		for inner, s := range p.sources {
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
			if len(st.Skipped) > 0 {
				js.Skipped = st.Skipped
			}
			if js.Error == "" {
				js.Error = st.LastError
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
		if s.dump != nil || s.pmap != nil {
			return p.uid, true
		}
	}
	return 0, false
}
