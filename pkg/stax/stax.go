package stax

import (
	"sync/atomic"
)

const (
	stateUnknown = iota // no call yet: the attach watcher has not started
	stateOff
	stateOn
)

var state atomic.Uint32

// Span is a span that has begun; End ends it. The zero Span (stax was not recording at
// Begin) does nothing.
type Span struct {
	w     *writer
	key   uint64
	start uint64
	tid   uint32
}

// Begin starts a span called name on the calling goroutine's thread; call End on what it
// returns when the work is done.
func Begin(name string) Span {
	if s := state.Load(); s != stateOn {
		if s == stateUnknown {
			startWatch()
		}
		return Span{}
	}
	return begin(name)
}

// End ends the span; call it on the goroutine that called Begin. Ending the zero Span
// does nothing; a span begun in an earlier recording is not written.
func (s Span) End() {
	if s.w == nil {
		return
	}
	end(s)
}

// Mark records an instant marker called name on the calling goroutine's thread.
func Mark(name string) {
	if s := state.Load(); s != stateOn {
		if s == stateUnknown {
			startWatch()
		}
		return
	}
	mark(name)
}

// Recording reports whether stax records the process now (the spans go somewhere).
func Recording() bool { return state.Load() == stateOn }
