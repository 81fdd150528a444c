// The resolve stage: a goroutine of its own names new stacks every resolveEvery, once per
// distinct stack, and keeps the code at the leaves of named stacks for annotate. Symbol
// loading (large images, debuginfod) happens here, never on the ring reader's path.

package recorder

import (
	"time"

	"github.com/stax-profiler/stax/internal/resolve"
)

// resolveEvery is how often new stacks are named.
const resolveEvery = 200 * time.Millisecond

// nameLoop names new stacks each time kick says to (the ring reader's loop does, every
// resolveEvery, right after a step: the process wakes once for both) and writes a checkpoint
// every opts.Checkpoint, on its own goroutine: a slow symbol load (a large image, a
// debuginfod that takes its time) or a slow disk never delays reading the rings.
func (r *Recorder) nameLoop(kick <-chan struct{}, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	lastCheckpoint := time.Now()
	every := r.opts.Checkpoint
	for {
		select {
		case <-stop:
			return
		case <-kick:
		}
		through := r.addedAt.Load() // named by the Resolve below
		r.resolveAndNotify()
		r.letGo(through)
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
	if v := r.res.Version(); v != r.namer.codeVersion {
		r.namer.codeVersion = v
		r.upgradeCode()
	}
	for _, l := range leaves {
		if l.Unresolved && l.Addr >= 1<<63 {
			continue // unnamed kernel code: nothing to annotate
		}
		id := codeID{l.Frame, r.res.CodeKey(l.Pid, l.Addr, l.Time)}
		if _, ok := r.namer.codeSeen[id]; ok {
			continue
		}
		r.namer.codeSeen[id] = struct{}{}
		r.mu.Lock()
		full := len(r.codes) >= maxCodes || r.codeBytes >= maxCodeBytes
		r.mu.Unlock()
		if full {
			if !r.namer.codeFull {
				r.namer.codeFull = true
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
