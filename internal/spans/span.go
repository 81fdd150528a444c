package spans

import (
	"sort"
	"sync"
)

// Kinds of span sources.
const (
	KindMarkerFile = "marker_file" // marker-PID.txt lines, as samply reads them
	KindITT        = "itt"         // ITT tasks and markers through stax's collector
	KindMark       = "mark"        // stax mark
	KindGo         = "go"          // stax-PID.spans of stax's Go package (pkg/stax)
)

// Bounds on what a run keeps.
const (
	// MaxName is the most bytes of a span's name kept; longer names are cut.
	MaxName = 1024
	// MaxSpans is the most spans a run keeps; later ones are dropped and counted.
	MaxSpans = 1 << 20
	// MaxNameBytes bounds the distinct names of a run, all together; a span with a new
	// name past it is dropped and counted.
	MaxNameBytes = 16 << 20
	// MaxSources bounds the sources a run counts spans for.
	MaxSources = 4096
)

// Span is one named interval of a thread's time (CLOCK_MONOTONIC ns). End == Start: an
// instant (a marker). Tid 0: no thread in particular (stax mark).
type Span struct {
	Name   string `json:"name"`
	Pid    uint32 `json:"pid"`
	Tid    uint32 `json:"tid"`
	Start  uint64 `json:"start"`
	End    uint64 `json:"end"`
	Depth  uint32 `json:"depth,omitempty"` // nesting level in its thread (ITT tasks)
	Source uint32 `json:"source"`          // index into the run's sources
}

// Source counts the spans of one source: a file a process wrote, or stax mark.
type Source struct {
	Kind     string `json:"kind"`
	Pid      int    `json:"pid,omitempty"`
	Path     string `json:"path,omitempty"`
	Received uint64 `json:"received"`          // spans read from it
	Dropped  uint64 `json:"dropped,omitempty"` // of those, not kept (a bound was reached)
	// Bad counts what could not be read as a span (garbage lines, damaged records); the
	// writer's own drops (a full buffer) are in Dropped.
	Bad uint64 `json:"bad,omitempty"`
	// Unmatched counts task ends without a begin; Unfinished tasks still open when their
	// thread or the process ended (ITT spans files).
	Unmatched  uint64 `json:"unmatched,omitempty"`
	Unfinished uint64 `json:"unfinished,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Set is a run's spans, bounded: appending never changes what earlier snapshots hold.
type Set struct {
	mu        sync.Mutex
	t         table
	nameBytes int
	sources   []Source
	srcIndex  map[srcKey]uint32
	// shared, where many programs' spans meet (a system-wide run), keeps each process to
	// its share of the bounds: perPid holds what each has taken.
	shared bool
	perPid map[uint32]*pidShare
}

// pidShare is what one process's spans take of a shared set's bounds.
type pidShare struct{ spans, nameBytes int }

// ShareAmongProcesses keeps each process to a share of the set's bounds from now on: of
// the spans and name bytes, a process may take at most what it would leave to one more,
// 1/(N+1) of each bound with N processes that have spans (of MaxSources processes at
// most: the spans of more are dropped). Spans are never let go, so the
// share of a process that took its fill before others came is not taken back; but no
// process can take all that is left, and each newcomer finds room.
func (s *Set) ShareAmongProcesses() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shared = true
	if s.perPid == nil {
		s.perPid = map[uint32]*pidShare{}
	}
}

type srcKey struct {
	kind, path string
	pid        int
}

// NewSet returns an empty set.
func NewSet() *Set {
	return &Set{srcIndex: map[srcKey]uint32{}}
}

// Source returns the id of the source (kind, pid, path), adding it when new. Past
// MaxSources every new source shares the last id.
func (s *Set) Source(kind string, pid int, path string) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := srcKey{kind, path, pid}
	if id, ok := s.srcIndex[k]; ok {
		return id
	}
	if len(s.sources) >= MaxSources {
		return uint32(len(s.sources) - 1)
	}
	id := uint32(len(s.sources))
	s.sources = append(s.sources, Source{Kind: kind, Pid: pid, Path: path})
	s.srcIndex[k] = id
	return id
}

// Add keeps sp (its Source an id from Source), or counts it dropped when a bound is
// reached. It reports whether sp was kept.
func (s *Set) Add(sp Span) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.add(sp)
}

// AddAll adds the spans as Add does, under one lock, and returns how many were kept.
func (s *Set) AddAll(sp []Span) (kept int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range sp {
		if s.add(sp[i]) {
			kept++
		}
	}
	return kept
}

func (s *Set) add(sp Span) bool {
	if int(sp.Source) >= len(s.sources) {
		return false
	}
	src := &s.sources[sp.Source]
	src.Received++
	if sp.End < sp.Start {
		src.Bad++
		return false
	}
	if s.t.n >= MaxSpans {
		src.Dropped++
		return false
	}
	var share *pidShare
	if s.shared && sp.Pid != 0 {
		if share = s.perPid[sp.Pid]; share == nil {
			if len(s.perPid) >= MaxSources {
				src.Dropped++
				return false
			}
			share = &pidShare{}
			s.perPid[sp.Pid] = share
		}
		n := len(s.perPid) + 1
		if share.spans >= MaxSpans/n {
			src.Dropped++
			return false
		}
	}
	id, ok := s.t.id(sp.Name)
	if !ok {
		name := CutName(sp.Name)
		if id, ok = s.t.id(name); !ok {
			if s.nameBytes+len(name) > MaxNameBytes || (share != nil && share.nameBytes+len(name) > MaxNameBytes/(len(s.perPid)+1)) {
				src.Dropped++
				return false
			}
			s.nameBytes += len(name)
			if share != nil {
				share.nameBytes += len(name)
			}
			id = s.t.intern(name)
		}
	}
	if share != nil {
		share.spans++
	}
	s.t.push(rec{start: sp.Start, end: sp.End, name: id, pid: sp.Pid, tid: sp.Tid, depth: sp.Depth, src: sp.Source})
	return true
}

// Full reports whether the set keeps no more spans (MaxSpans reached): every span added
// from now on is dropped.
func (s *Set) Full() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.n >= MaxSpans
}

// Count adds to a source's counts of what it could not read and of what its writer dropped.
func (s *Set) Count(src uint32, bad, dropped uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(src) < len(s.sources) {
		s.sources[src].Bad += bad
		s.sources[src].Received += dropped
		s.sources[src].Dropped += dropped
	}
}

// SetNotes sets a source's counts of task ends without a begin and of unfinished tasks.
func (s *Set) SetNotes(src uint32, unmatched, unfinished uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(src) < len(s.sources) {
		s.sources[src].Unmatched, s.sources[src].Unfinished = unmatched, unfinished
	}
}

// SetError records why a source cannot be read ("" once it can).
func (s *Set) SetError(src uint32, err string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(src) < len(s.sources) {
		s.sources[src].Error = err
	}
}

// Snapshot returns the spans kept so far, which share the set's storage, and a copy of the
// sources.
func (s *Set) Snapshot() (List, []Source) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.list(), append([]Source(nil), s.sources...)
}

// CutName cuts a name to MaxName bytes, not inside a UTF-8 sequence.
func CutName(name string) string {
	if len(name) <= MaxName {
		return name
	}
	n := MaxName
	for n > MaxName-4 && n > 0 && name[n]&0xc0 == 0x80 {
		n--
	}
	return name[:n]
}

// Sort orders spans by start, then thread, then depth (outer first).
func Sort(sp []Span) {
	sort.SliceStable(sp, func(i, j int) bool {
		a, b := &sp[i], &sp[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		if a.Tid != b.Tid {
			return a.Tid < b.Tid
		}
		return a.Depth < b.Depth
	})
}
