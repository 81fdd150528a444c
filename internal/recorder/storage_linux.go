// The storage stage: checkpoints and the final save. Sealed chunks of samples go to the
// run's samples file and leave memory, and the records of new spans to its spans file;
// what changed in the rest (names, stacks, counts, code) is appended to the run's delta
// file, and now and then the run's file is rewritten with it whole (the spans' names too),
// listing the chunks and the spans by reference.

package recorder

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/unwind"
)

// finalTries is how many times the final save is tried, finalPause apart, before the run
// is given up as incomplete: room a full disk makes (a file removed, a log rotated) within
// them saves the run whole.
const (
	finalTries = 4
	finalPause = 500 * time.Millisecond
)

// saveFinal writes the finished run, its samples and spans made durable first. A save that
// fails is tried again; if none succeeds, the run's end file says that the run is
// incomplete, with what was recorded (the run's file keeps its last good checkpoint), and
// the error is returned (SaveResult).
func (r *Recorder) saveFinal() error {
	var err error
	for try := 1; try <= finalTries; try++ {
		if try > 1 {
			time.Sleep(finalPause)
		}
		if r.storage.samples != nil && !r.storage.samplesClosed {
			r.spill() // what it cannot write stays in memory, and the run's file holds it
			if err = r.storage.samples.Sync(); err != nil {
				err = fmt.Errorf("save samples to %s: %w", store.SamplesPath(r.id), err)
				continue
			}
			r.storage.samples.Close()
			r.storage.samplesClosed = true
		}
		if err = r.save(true); err == nil {
			break
		}
	}
	if r.storage.spans != nil && r.storage.spansErr == nil {
		r.storage.spans.Close()
	}
	r.storage.spansClosed = true
	if r.storage.samples != nil && !r.storage.samplesClosed {
		r.storage.samples.Close()
		r.storage.samplesClosed = true
	}
	r.mu.Lock()
	r.saveErr = err
	r.mu.Unlock()
	if err == nil {
		if rerr := store.RemoveEnd(r.id); rerr != nil {
			r.note("%v", rerr)
		}
		return nil
	}
	end := store.End{Incomplete: true, Reason: err.Error(), Samples: r.run.Stats().Samples, Seconds: time.Since(r.start).Seconds()}
	r.mu.Lock()
	end.ExitCode = r.exitCode
	r.mu.Unlock()
	if werr := store.WriteEnd(r.id, end); werr != nil {
		r.note("%v", werr)
	}
	return err
}

// SavedCheckpoint is what the run store holds of a run: its last checkpoint saved whole.
type SavedCheckpoint struct {
	Samples uint64
	Seconds float64 // from the run's start
	Saved   bool    // false: no checkpoint was saved at all
}

// SaveResult says, once Done is closed, what the store holds of the run as its last
// checkpoint saved whole, and why the final save failed (nil: the run is saved whole).
func (r *Recorder) SaveResult() (SavedCheckpoint, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.storage.good, r.saveErr
}

func (r *Recorder) threads() []agg.ThreadInfo {
	ths := r.tracker.Threads()
	out := make([]agg.ThreadInfo, len(ths), len(ths)+r.run.FoldStats().Commands)
	for i, t := range ths {
		out[i] = agg.ThreadInfo{Tid: uint32(t.Tid), Pid: uint32(t.Pid), Name: t.Name}
	}
	return append(out, r.run.FoldedThreads()...) // the commands of exited processes folded (sorted after: markers are above every tid)
}

// snapshot is the run as it stands. With bufs, its profile and its intervals off CPU are
// built in memory kept for the next snapshot with them, and are valid until then (a
// checkpoint writes them and drops them).
func (r *Recorder) snapshot(final bool, bufs *agg.ProfileBuffers) *store.Run {
	st := r.run.Stats()
	threads := r.threads()
	offCPU := r.offCPUProfile(threads)
	wakeNs, wakeN := r.wakersProfiles(threads)
	var intervals []agg.Interval
	if bufs != nil {
		intervals = r.offIntervals(offCPU, r.storage.ivBuf)
		r.storage.ivBuf = intervals
	} else {
		intervals = r.offIntervals(offCPU, nil)
	}
	r.mu.Lock()
	meta := r.meta
	meta.Lost = r.lost
	meta.ForeignSamples = r.in.foreign.Load()
	meta.BadRecords = r.bad
	meta.OverloadSamples = r.in.overload.fastSamples.Load()
	if b := r.res.JITBudget(); b.Used() > 0 {
		meta.JITMemory, meta.JITMemoryLimit = uint64(b.Used()), uint64(b.Limit())
		meta.JITMemoryShare, meta.JITProcesses = uint64(b.Share()), b.Shares()
	}
	meta.StackEnds = map[string]uint64{}
	for i, n := range stackEnds(r.in.workers) {
		if n > 0 {
			meta.StackEnds[unwind.EndReason(i).String()] = n
		}
	}
	meta.JITFrames = jitFrames(r.in.workers)
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
	meta.Notes = append(meta.Notes, r.fileCounts(&meta)...)
	r.targetIdentity(&meta)
	meta.Events = r.eventsMeta()
	meta.Counters, meta.CountersByDefault = r.ctr.meta(r.opts.Counters), r.opts.CountersByDefault
	meta.Unresolved = st.UnresolvedFrames
	meta.Finished = final
	meta.End = time.Now() // for a checkpoint, its time: a crashed run's last known moment
	meta.OffCPU = r.offCPUMeta()
	traces := r.traces() // before the profile, which then has every key they name
	var prof *agg.Profile
	if bufs != nil {
		prof = r.run.ProfileInto(threads, bufs)
	} else {
		prof = r.run.Profile(threads)
	}
	// The samples are the profile's, counted as it was built: samples added meanwhile, or
	// not yet named (a stack is in the profile once named), are the next snapshot's.
	meta.Samples = 0
	for i := range prof.Entries {
		meta.Samples += prof.Entries[i].Count
	}
	run := &store.Run{Meta: meta, Profile: *prof, OffCPU: offCPU, OffCPUIntervals: intervals, WakersNs: wakeNs, WakersN: wakeN, JIT: r.jitw.Sources(), Code: codes}
	run.Spans, run.Meta.SpanSources = r.spans.Snapshot()
	run.Traces = traces
	run.Meta.Notes = append(run.Meta.Notes, unnamedJITNotes(run, r.comm)...)
	run.Meta.Notes = append(run.Meta.Notes, cpythonNotes(run, r.comm)...)
	r.applyWindow(run)
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

// keptChunks is how many sealed chunks of samples (64 KiB, some 13,000 samples each) stay
// in memory once written to the run's samples file: a live view of the last seconds reads
// no file.
const keptChunks = 2

// save writes the run to the store: the sealed chunks of samples not yet in the run's
// samples file are appended to it (and leave memory), then what changed in the rest
// (names, stacks, counts, code) since the last checkpoint is appended to the run's delta
// file, the chunks listed by reference (store.DeltaWriter); now and then, and at the end,
// the run's file is rewritten whole. A checkpoint so costs what changed, not the run.
//
// A save that fails (a full disk) keeps in memory what it could not write, and the run's
// file keeps the last checkpoint saved whole; the next save tries again. Chunks the samples
// file did not take are written in the run's file. The first failure is said once, with
// where and why, and the first success after it.
func (r *Recorder) save(final bool) error {
	spillErr := r.spill()
	run := r.snapshot(final, &r.storage.profile)
	run.IntervalCache = &r.storage.intervals
	if serr := r.spillSpans(run, final); serr != nil {
		r.note("%v", serr)
		run.Meta.Notes = append(run.Meta.Notes, serr.Error())
	}
	if r.storage.samples != nil {
		run.Meta.SamplesFileSize = r.storage.samples.Size()
	}
	r.advanceWindow(run)
	if r.storage.delta == nil {
		r.storage.delta = store.NewDeltaWriter(store.Path(r.id))
	}
	err := r.storage.delta.Save(run, final)
	if final && err == nil {
		r.storage.delta.Close()
	}
	if err != nil && spillErr != nil {
		err = fmt.Errorf("%w (and %v)", err, spillErr)
	}
	if final {
		heapLimit.release()
	} else {
		heapLimit.afterCheckpoint()
	}
	st := &r.storage
	if err != nil {
		if st.failures == 0 && !final {
			r.note("checkpoint of run %s to %s failed: %v; what it could not write stays in memory, and the next checkpoint tries again",
				r.id, store.Dir(), err)
		}
		st.failures++
		return err
	}
	if st.failures > 0 {
		r.note("run %s saved again to %s after %d failed tries", r.id, store.Dir(), st.failures)
		st.failures = 0
	}
	r.mu.Lock()
	st.good = SavedCheckpoint{Samples: run.Meta.Samples, Seconds: run.Meta.End.Sub(run.Meta.Start).Seconds(), Saved: true}
	r.mu.Unlock()
	return nil
}

// heapLimit keeps the Go runtime's soft memory limit (debug.SetMemoryLimit) at one and a
// half times the live heap, plus some room, from one checkpoint to the next. GOGC alone lets
// the heap reach twice what was live at the last collection, and keeps what it took from
// the system long after; the live heap of a recording is its distinct stacks, which grow
// slowly once the program's paths are known, and what it allocates besides (checkpoints
// reuse their memory) is little, so the tighter limit costs a collection every several
// seconds and keeps resident memory in proportion to the stacks. The final save puts back
// the limit there was before, and a GOMEMLIMIT of the user's is left alone.
var heapLimit = &memLimiter{
	set:  debug.SetMemoryLimit,
	live: liveHeap,
	user: os.Getenv("GOMEMLIMIT") != "",
}

const (
	// heapLimitSlack is added to one and a half times the live heap: room for what a
	// checkpoint and a burst of new stacks allocate at once.
	heapLimitSlack = 16 << 20
	// heapLimitFloor is the least limit set: a run's first seconds load symbols faster
	// than checkpoints follow the live heap.
	heapLimitFloor = 64 << 20
)

type memLimiter struct {
	set  func(int64) int64
	live func() uint64
	user bool

	mu    sync.Mutex
	prior int64 // the limit before the first checkpoint set one
	held  bool
}

// limitFor is the limit for a live heap of live bytes.
func limitFor(live uint64) int64 { return max(int64(live+live/2+heapLimitSlack), heapLimitFloor) }

// afterCheckpoint sets the limit from the live heap and returns it (0 when the user set
// GOMEMLIMIT).
func (m *memLimiter) afterCheckpoint() int64 {
	if m.user {
		return 0
	}
	limit := limitFor(m.live())
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.set(limit); !m.held {
		m.prior, m.held = old, true
	}
	return limit
}

// release puts back the limit there was before the first checkpoint: a recording that
// ends leaves the process's memory limit as it found it.
func (m *memLimiter) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held {
		m.set(m.prior)
		m.held = false
	}
}

// liveHeap is the heap that was live at the end of the last collection, in bytes.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// spillSpans appends the records of the run's spans not yet in its spans file to it,
// creating it at the first spans, and has the run list them by reference; the final save
// makes them durable. After an error the spans are written in the run's file, as a file
// that travels holds them.
func (r *Recorder) spillSpans(run *store.Run, final bool) error {
	st := &r.storage
	if st.spansErr != nil || st.spansClosed || run.Spans.Len() == 0 {
		return nil
	}
	if st.spans == nil {
		path := store.SpanLogPath(r.id)
		os.Remove(path) // a file left by a run of the same id that is gone
		if st.spans, st.spansErr = store.CreateSpanLog(path); st.spansErr != nil {
			return fmt.Errorf("spans stay in the run's file: %w", st.spansErr)
		}
	}
	err := st.spans.Append(run.Spans)
	if err == nil && final {
		err = st.spans.Sync()
	}
	if err != nil {
		st.spans.Close()
		st.spansErr = err
		return fmt.Errorf("spans stay in the run's file: %w", err)
	}
	run.SpanLog = st.spans
	return nil
}

// spill appends the sealed chunks of samples to the run's samples file, creating it at
// the first call. Only save calls it (from one goroutine at a time). Chunks it could not
// write (a full disk) stay in memory, and the next call writes them.
func (r *Recorder) spill() error {
	if r.storage.samplesClosed {
		return nil
	}
	if r.storage.samples == nil {
		path := store.SamplesPath(r.id)
		os.Remove(path) // a file left by a run of the same id that is gone (its id was free), or cut short
		var err error
		if r.storage.samples, err = store.CreateSampleLog(path); err != nil {
			return fmt.Errorf("samples stay in memory: %w", err)
		}
		r.storage.samplesFile = store.OpenSampleFile(path)
	}
	if err := r.run.SpillSeries(r.storage.samples.Append, r.storage.samplesFile, keptChunks); err != nil {
		return fmt.Errorf("samples stay in memory: %w", err)
	}
	return nil
}

// StorePath is where the run is saved.
func (r *Recorder) StorePath() string { return filepath.Clean(store.Path(r.id)) }
