package resolve

import (
	"errors"
	"fmt"
	"os"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/proc"

	"github.com/stax-profiler/stax/internal/spans"
)

// pollMarkers reads a chunk of a marker file into the span set. It reports whether the
// file holds more to read now. w.mu must be held.
func (w *JITWatcher) pollMarkers(s *watchedSource) (more bool) {
	if pr := s.marks.Progress(); pr.Consumed >= MaxJITFileBytes {
		s.stop(fmt.Sprintf("stopped reading after %s: stax reads at most %s of one marker file", mib(pr.Consumed), mib(MaxJITFileBytes)))
		w.spans.SetError(s.spanSrc, s.stopped)
		return false
	}
	markers, bad, _, more, err := s.marks.PollUpTo(pollChunk)
	s.openErr = ""
	for _, m := range markers {
		w.spans.Add(spans.Span{Name: m.Name, Pid: uint32(s.pid), Tid: s.tid, Start: m.Start, End: m.End, Source: s.spanSrc})
	}
	if bad > 0 {
		w.spans.Count(s.spanSrc, uint64(bad), 0)
	}
	if err != nil {
		s.openErr = err.Error()
	}
	w.spans.SetError(s.spanSrc, s.openErr)
	return more
}

// pollITT reads a chunk of an ITT spans file into the span set. It reports whether the
// file holds more to read now. w.mu must be held.
func (w *JITWatcher) pollITT(s *watchedSource) (more bool) {
	if pr := s.itt.Progress(); pr.Consumed >= MaxSpanFileBytes {
		s.stop(fmt.Sprintf("stopped reading after %s: stax reads at most %s of one spans file", mib(pr.Consumed), mib(MaxSpanFileBytes)))
		w.spans.SetError(s.spanSrc, s.stopped)
		return false
	}
	var bad int
	var dropped uint64
	var err error
	if w.spans.Full() {
		// The spans read now would all be dropped: they are counted, not made.
		var n uint64
		n, bad, dropped, more, err = s.itt.SkipUpTo(pollChunk)
		dropped += n
	} else {
		batch := w.ittBatch[:0]
		bad, dropped, more, err = s.itt.PollUpTo(pollChunk, func(sp spans.Span) {
			sp.Pid, sp.Source = uint32(s.pid), s.spanSrc
			batch = append(batch, sp)
		})
		w.spans.AddAll(batch)
		w.ittBatch = batch[:0]
	}
	if bad > 0 || dropped > 0 {
		w.spans.Count(s.spanSrc, uint64(bad), dropped)
	}
	if um, uf := s.itt.Notes(); um > 0 || uf > 0 {
		w.spans.SetNotes(s.spanSrc, um, uf)
	}
	s.openErr = ""
	if err != nil {
		s.openErr = err.Error()
	}
	if n, errno := s.itt.WriteFailures(); n > 0 {
		s.openErr = joinWhy(s.openErr, fmt.Sprintf("%d writes of the collector failed (the last: %v), their spans are counted dropped", n, errno))
	}
	w.spans.SetError(s.spanSrc, s.openErr)
	return more
}

// joinWhy joins two reasons with "; ", either of which may be empty.
func joinWhy(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// RemoveSpansFiles removes the ITT spans files (itt-PID.spans, stax-PID.spans) read for the
// processes that have exited: for a run that launched its command, once it is over, so that
// they do not pile up in /tmp. A file is removed only if it is still the one read (the same
// inode at the path as the process named it, or as opened). It returns the files removed.
func (w *JITWatcher) RemoveSpansFiles() (removed []string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.pids {
		if !proc.Gone(p.pid) {
			continue
		}
		for inner, s := range p.sources {
			if s.kind != jit.SourceITTSpans || s.itt == nil {
				continue
			}
			for _, path := range []string{s.path, inner} {
				if !s.itt.Is(path) {
					continue
				}
				if rmErr := os.Remove(path); rmErr != nil {
					err = errors.Join(err, rmErr)
				} else {
					removed = append(removed, path)
				}
				break
			}
		}
	}
	return removed, err
}

// MaxSpanFileBytes bounds the bytes read from one ITT spans file (the collector bounds
// what it writes too, 256 MiB by default).
const MaxSpanFileBytes = 512 << 20

// Spans is the set the spans of marker files go to.
func (w *JITWatcher) Spans() *spans.Set { return w.spans }
