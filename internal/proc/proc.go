// Package proc tracks the processes, threads and executable mappings of a recorded process
// tree over time. Every change carries the kernel timestamp it happened at, so records that
// arrive out of order (they come from one ring per CPU) still build the right history.
package proc

import (
	"sort"
	"sync"
)

// Mapping is one executable mapping, valid from Time until EndTime (0: still valid).
type Mapping struct {
	Start, End uint64
	Pgoff      uint64
	Path       string
	BuildID    []byte
	Maj, Min   uint32
	Ino        uint64
	Time       uint64
	EndTime    uint64
}

// Code says what describes the code of an executable mapping, and so where its names and
// unwinding info come from.
type Code uint8

const (
	// CodeFile is a regular file's image (the [vdso] too: its image is read from memory).
	CodeFile Code = iota
	// CodeJIT is memory no regular file describes, so its code was written at run time:
	// anonymous memory, [anon:NAME] and other bracketed regions, memfd files, shared
	// /dev/zero mappings (PHP's opcache JIT) and System V shared memory. Only the JIT's own
	// records (jitdump, perf map) describe it.
	CodeJIT
	// CodeDeleted is a file deleted since it was mapped: a JIT's temporary file, or a
	// binary replaced or removed under a running program. The JIT's records are asked
	// first, then the image, read through the process (OpenImage).
	CodeDeleted
)

// CodeOf says what describes the code mapped from path (as an MMAP2 record or
// /proc/PID/maps gives it). It is the one definition of JIT code that naming and unwinding
// share.
func CodeOf(path string) Code {
	switch {
	case path == "[vdso]":
		return CodeFile
	case path == "" || path[0] == '[' || hasPrefix(path, "//") || hasPrefix(path, "/memfd:") ||
		hasPrefix(path, "/dev/zero") || hasPrefix(path, "/SYSV"):
		return CodeJIT
	case hasSuffix(path, " (deleted)"):
		return CodeDeleted
	}
	return CodeFile
}

// Anonymous reports whether the mapping holds JIT code only (CodeOf is CodeJIT).
func (m *Mapping) Anonymous() bool { return CodeOf(m.Path) == CodeJIT }

// Deleted reports whether the mapped file was deleted (CodeOf is CodeDeleted): JIT
// records are asked first, then the file as the process still maps it.
func (m *Mapping) Deleted() bool { return CodeOf(m.Path) == CodeDeleted }

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

func (m *Mapping) liveAt(t uint64) bool {
	return m.Time <= t && (m.EndTime == 0 || t < m.EndTime)
}

// Process is one process (one address space) of the recorded tree.
type Process struct {
	Pid       int
	PPid      int
	Comm      string
	ExitTime  uint64
	maps      []*Mapping // sorted by Start
	maxLen    uint64
	execTimes []uint64
	changes   []uint64 // sorted times of destructive changes to the address space
	forked    bool     // the parent's mappings were copied in
	// changesDropped counts the changes PruneHistory dropped from the front of changes.
	changesDropped uint32
}

// Thread is one thread.
type Thread struct {
	Tid, Pid  int
	Name      string
	StartTime uint64
	ExitTime  uint64
}

// Tracker holds every process and thread seen. It is safe for concurrent use.
type Tracker struct {
	mu       sync.RWMutex
	procs    map[int]*Process
	threads  map[int]*Thread
	released struct{ procs, threads, maps uint64 } // see Release and PruneHistory
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{procs: map[int]*Process{}, threads: map[int]*Thread{}}
}

func (tr *Tracker) proc(pid int) *Process {
	p := tr.procs[pid]
	if p == nil {
		p = &Process{Pid: pid}
		tr.procs[pid] = p
	}
	return p
}

func (tr *Tracker) thread(tid, pid int) *Thread {
	t := tr.threads[tid]
	if t == nil {
		t = &Thread{Tid: tid, Pid: pid}
		tr.threads[tid] = t
	}
	if pid != 0 {
		t.Pid = pid
	}
	return t
}

// AddMapping records an executable mapping that appeared at time m.Time.
func (tr *Tracker) AddMapping(pid int, m Mapping) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.proc(pid).add(m)
}

// add inserts a mapping, ending or cutting what it overlaps according to time.
func (p *Process) add(m Mapping) {
	nm := &m
	for _, te := range p.execTimes {
		if nm.Time < te && (nm.EndTime == 0 || nm.EndTime > te) {
			nm.EndTime = te
		}
	}
	var added []*Mapping
	for _, old := range p.maps {
		if old.End <= nm.Start || old.Start >= nm.End {
			continue
		}
		switch {
		case old.Time < nm.Time && (old.EndTime == 0 || old.EndTime > nm.Time):
			// The new mapping replaces the overlapped part of the old one from its time on;
			// the parts outside stay valid.
			if old.Start < nm.Start {
				left := *old
				left.End = nm.Start
				left.Time = nm.Time
				added = append(added, &left)
			}
			if old.End > nm.End {
				right := *old
				right.Start = nm.End
				right.Pgoff += nm.End - old.Start
				right.Time = nm.Time
				added = append(added, &right)
			}
			old.EndTime = nm.Time
			p.addChange(nm.Time)
		case old.Time > nm.Time && (nm.EndTime == 0 || nm.EndTime > old.Time):
			nm.EndTime = old.Time
			p.addChange(old.Time)
		}
	}
	added = append(added, nm)
	for _, a := range added {
		p.insert(a)
	}
}

func (p *Process) insert(m *Mapping) {
	i := sort.Search(len(p.maps), func(i int) bool { return p.maps[i].Start > m.Start })
	p.maps = append(p.maps, nil)
	copy(p.maps[i+1:], p.maps[i:])
	p.maps[i] = m
	if l := m.End - m.Start; l > p.maxLen {
		p.maxLen = l
	}
}

func (p *Process) addChange(t uint64) {
	i := sort.Search(len(p.changes), func(i int) bool { return p.changes[i] > t })
	if i > 0 && p.changes[i-1] == t {
		return // the same change, seen from another record
	}
	p.changes = append(p.changes, 0)
	copy(p.changes[i+1:], p.changes[i:])
	p.changes[i] = t
}

// Exec records that pid executed a new program at time t: its older mappings end.
func (tr *Tracker) Exec(pid int, t uint64, comm string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	p := tr.proc(pid)
	p.Comm = comm
	p.execTimes = append(p.execTimes, t)
	for _, m := range p.maps {
		if m.Time < t && (m.EndTime == 0 || m.EndTime > t) {
			m.EndTime = t
		}
	}
	p.addChange(t)
	th := tr.thread(pid, pid)
	th.Name = comm
}

// Comm records a thread's new name.
func (tr *Tracker) Comm(pid, tid int, comm string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	p := tr.proc(pid)
	if pid == tid || p.Comm == "" {
		p.Comm = comm
	}
	tr.thread(tid, pid).Name = comm
}

// Fork records a new thread (pid == ppid) or a new process that starts as a copy of its
// parent's address space.
func (tr *Tracker) Fork(pid, ppid, tid, ptid int, t uint64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	parent := tr.threads[ptid]
	th := tr.thread(tid, pid)
	th.StartTime = t
	if th.ExitTime != 0 && th.ExitTime <= t {
		th.ExitTime, th.Name = 0, "" // a new thread with an exited one's id
	}
	if parent != nil && th.Name == "" {
		th.Name = parent.Name
	}
	if pid == ppid {
		return
	}
	p := tr.proc(pid)
	if p.ExitTime != 0 && p.ExitTime <= t {
		// A new process with the pid of one that exited and was not released yet: the
		// old one's mappings end here and the parent's are copied in, as for any fork.
		p.ExitTime, p.forked, p.Comm = 0, false, ""
		for _, m := range p.maps {
			if m.EndTime == 0 || m.EndTime > t {
				m.EndTime = t
			}
		}
		p.addChange(t)
	}
	p.PPid = ppid
	pp := tr.procs[ppid]
	if pp == nil {
		return
	}
	if p.Comm == "" {
		p.Comm = pp.Comm
	}
	if p.forked {
		return
	}
	p.forked = true
	// The child's own mappings may have been read first (rings are read CPU by CPU): the
	// inherited ones go through the same overlap rules, so newer ones still win.
	for _, m := range pp.maps {
		if m.Time > t || (m.EndTime != 0 && m.EndTime <= t) {
			continue
		}
		c := *m
		c.Time = t
		c.EndTime = 0
		p.add(c)
	}
}

// Exit records a thread's exit.
func (tr *Tracker) Exit(pid, tid int, t uint64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.thread(tid, pid).ExitTime = t
	if pid == tid {
		tr.proc(pid).ExitTime = t
	}
}

// Find returns the mapping of pid that held addr at time t, falling back to the newest
// mapping that ever held it.
func (tr *Tracker) Find(pid int, addr, t uint64) *Mapping {
	return tr.find(pid, addr, t, true)
}

// FindLive returns the mapping of pid that held addr at time t, or nil: an address a
// process had not mapped yet, or no longer had (its program was replaced by exec), is in no
// mapping.
func (tr *Tracker) FindLive(pid int, addr, t uint64) *Mapping {
	return tr.find(pid, addr, t, false)
}

func (tr *Tracker) find(pid int, addr, t uint64, fallback bool) *Mapping {
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	p := tr.procs[pid]
	if p == nil {
		return nil
	}
	i := sort.Search(len(p.maps), func(i int) bool { return p.maps[i].Start > addr })
	var best *Mapping
	for j := i - 1; j >= 0; j-- {
		m := p.maps[j]
		if addr-m.Start >= p.maxLen {
			break
		}
		if addr >= m.End {
			continue
		}
		if m.liveAt(t) {
			return m
		}
		if fallback && (best == nil || m.Time > best.Time) {
			best = m
		}
	}
	return best
}

// Generation counts the destructive changes to pid's address space up to time t. Samples
// with the same stack and generation resolve to the same frames.
func (tr *Tracker) Generation(pid int, t uint64) uint32 {
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	p := tr.procs[pid]
	if p == nil {
		return 0
	}
	return p.changesDropped + uint32(sort.Search(len(p.changes), func(i int) bool { return p.changes[i] > t }))
}

// HasMappings reports whether any mapping of pid is known.
func (tr *Tracker) HasMappings(pid int) bool {
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	p := tr.procs[pid]
	return p != nil && len(p.maps) > 0
}

// Threads returns a copy of every thread.
func (tr *Tracker) Threads() []Thread {
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	out := make([]Thread, 0, len(tr.threads))
	for _, t := range tr.threads {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tid < out[j].Tid })
	return out
}

// Thread returns one thread.
func (tr *Tracker) Thread(tid int) (Thread, bool) {
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	t := tr.threads[tid]
	if t == nil {
		return Thread{}, false
	}
	return *t, true
}

// Processes returns a summary of every process.
func (tr *Tracker) Processes() []Process {
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	out := make([]Process, 0, len(tr.procs))
	for _, p := range tr.procs {
		out = append(out, Process{Pid: p.Pid, PPid: p.PPid, Comm: p.Comm, ExitTime: p.ExitTime})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pid < out[j].Pid })
	return out
}

// Mappings returns a copy of pid's mappings (all times).
func (tr *Tracker) Mappings(pid int) []Mapping {
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	p := tr.procs[pid]
	if p == nil {
		return nil
	}
	out := make([]Mapping, len(p.maps))
	for i, m := range p.maps {
		out[i] = *m
	}
	return out
}

func hasSuffix(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}

// Creds are the identity a process opens files with.
type Creds struct {
	UID  uint32   // file-system uid
	GIDs []uint32 // file-system gid, then supplementary groups
}
