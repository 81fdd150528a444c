// The ingest stage: the ring reader's goroutine takes every record in time order, applies
// those that change the process tree at once (mappings, names, forks, exits, losses),
// batches the samples for the stack workers (stacks_linux.go) and adds their results to
// the run. It never waits on naming, symbol loading, JIT files or the disk.

package recorder

import (
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/perfrecord"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/spans"
)

type heldSample struct {
	pid, tid, cpu uint32
	time          uint64
	chain         []uint64
	event, period uint32
	counters      []uint64
	raw           []byte // a traced sample's raw data
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
		if watched(m.Path) {
			r.jitw.AddMmapPath(pid, m.Path)
		}
		r.checkITTLibrary(pid, m.Path)
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
	r.in.stepCut, r.in.stepFinal = cut, final
	if fs, ok := r.src.(fillSource); ok && !final {
		r.in.overload.observe(fs.Fill())
		if r.in.overload.behind && !r.in.boosted {
			r.in.boosted = true
			if nice, ok := raisePriority(); ok {
				r.mu.Lock()
				r.meta.RecorderNice = &nice
				r.mu.Unlock()
			}
		}
	} else {
		r.in.overload.behind = false // the last records are unwound in full
	}
	var err error
	if ordered, ok := r.src.(orderedSource); ok {
		// Records after the cut wait in their rings: the JIT sources were read before them,
		// and so are the mappings they may need on another CPU.
		until := cut
		if final {
			until = math.MaxUint64
		}
		err = ordered.ReadOrdered(until, r.in.dec.Time, r.read, r.flushBatch)
	} else {
		err = r.src.Read(r.read)
		r.flushBatch()
	}
	if err != nil {
		r.note("read samples: %v", err)
	}
	if _, ok := r.src.(orderedSource); ok {
		r.offFlush(cut, final) // every switch before the cut has been read
		if final {
			r.off.countNext = 0 // the kernel's last count
			r.offCountRuntime()
		}
		r.offRate(cut)
		r.offCountWakeups(cut, final)
	}
	r.mu.Lock()
	held := r.pending
	r.pending = nil
	r.mu.Unlock()
	keep := held[:0]
	for _, h := range held {
		if final || h.time < cut {
			r.add(h.event, h.period, h.pid, h.tid, h.cpu, h.time, h.chain, h.counters, h.raw)
		} else {
			keep = append(keep, h)
		}
	}
	r.mu.Lock()
	r.pending = append(keep, r.pending...)
	r.mu.Unlock()
	if final {
		cut = math.MaxUint64
	}
	r.addedAt.Store(cut) // the namer lets go of what exited well before it (letGo)
	r.forgetReleased()
}

// commit adds a sample, once its stack is made, to the run; one taken after this step's cut
// (a source that does not hold such records back) waits for the next step.
func (r *Recorder) commit(event, period, pid, tid, cpu uint32, t uint64, chain, counters []uint64, raw []byte) {
	if r.meta.SystemWide && pid > 0 && !r.in.sampledPids[pid] {
		r.in.sampledPids[pid] = true // its JIT files are looked for once it runs code
		r.jitw.Track(int(pid))
	}
	if !r.in.stepFinal && t >= r.in.stepCut {
		r.mu.Lock()
		r.pending = append(r.pending, heldSample{pid, tid, cpu, t, append([]uint64(nil), chain...), event, period, slices.Clone(counters), slices.Clone(raw)})
		r.mu.Unlock()
		return
	}
	r.add(event, period, pid, tid, cpu, t, chain, counters, raw)
}

// add counts a sample of the event numbered event (Options.Events), taken period events
// after its thread's sample before; raw is the raw data of a traced sample (nil: none).
func (r *Recorder) add(event, period, pid, tid, cpu uint32, t uint64, chain, counters []uint64, raw []byte) {
	gen := r.res.Generation(pid, t)
	if raw != nil {
		r.run.AddTracedSample(event, pid, tid, cpu, t, gen, chain, counters, raw)
	} else {
		r.run.AddCountedSample(event, pid, tid, cpu, t, gen, chain, counters)
	}
	r.ev.count(event, period)
	if len(chain) >= 2 && chain[0] == perfrecord.ContextUser {
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
	h, err := perfrecord.ParseHeader(rec)
	if err != nil {
		r.countBad()
		return
	}
	if h.Type == perfrecord.TypeSample && r.in.cpuWide {
		if pid, ok := r.in.dec.SamplePid(rec); ok && !r.in.targets[pid] {
			r.in.foreign.Add(1)
			return
		}
	}
	if h.Type == perfrecord.TypeSample || (h.Type == perfrecord.TypeSwitch || h.Type == perfrecord.TypeSwitchCPU) && r.off.on {
		r.addToBatch(cpu, rec) // a switch keeps its place among the stacks of switches
		return
	}
	if r.off.on && (h.Type == perfrecord.TypeExit || h.Type == perfrecord.TypeFork) {
		// A thread's start and end apply to its off-CPU state after the switches before
		// them (the batch's records stay valid until the step releases them).
		r.flushBatch()
	}
	r.handle(cpu, h, rec)
}

func (r *Recorder) handle(cpu int, h perfrecord.Header, rec []byte) {
	switch h.Type {
	case perfrecord.TypeMmap2, perfrecord.TypeMmap:
		m, err := r.in.dec.Mmap2(rec)
		if err != nil {
			r.countBad()
			return
		}
		r.tracker.AddMapping(int(m.Pid), proc.Mapping{Start: m.Addr, End: m.Addr + m.Len, Pgoff: m.Pgoff,
			Path: m.Filename, BuildID: m.BuildID, Maj: m.Maj, Min: m.Min, Ino: m.Ino, Time: m.SampleID.Time})
		if watched(m.Filename) {
			r.jitw.AddMmapPath(int(m.Pid), m.Filename)
		} else if proc.CodeOf(m.Filename) == proc.CodeJIT {
			r.jitw.Poke(int(m.Pid)) // code no file describes: a JIT may be starting
		}
		r.checkITTLibrary(int(m.Pid), m.Filename)
	case perfrecord.TypeComm:
		c, err := r.in.dec.Comm(rec)
		if err != nil {
			r.countBad()
			return
		}
		if c.Exec {
			r.tracker.Exec(int(c.Pid), c.SampleID.Time, c.Comm)
			r.jitw.Poke(int(c.Pid))
		} else {
			r.tracker.Comm(int(c.Pid), int(c.Tid), c.Comm)
		}
	case perfrecord.TypeFork:
		t, err := r.in.dec.Task(rec)
		if err != nil {
			r.countBad()
			return
		}
		r.tracker.Fork(int(t.Pid), int(t.PPid), int(t.Tid), int(t.PTid), t.Time)
		if r.off.on {
			r.offFork(t.Pid, t.Tid, t.Time)
		}
		if r.in.cpuWide {
			r.in.targets[t.Pid] = true // the side band is the target's own
		}
		if t.Pid != t.PPid && !r.meta.SystemWide { // system-wide: tracked once sampled
			r.jitw.Track(int(t.Pid))
		}
	case perfrecord.TypeExit:
		t, err := r.in.dec.Task(rec)
		if err != nil {
			r.countBad()
			return
		}
		r.tracker.Exit(int(t.Pid), int(t.Tid), t.Time)
		if t.Pid == t.Tid {
			r.jitw.Exited(int(t.Pid)) // its /proc is gone: not searched again
		}
		if r.off.on {
			r.offExit(t.Tid, t.Time)
		}
	case perfrecord.TypeLost, perfrecord.TypeLostSamples:
		l, err := r.in.dec.Lost(rec)
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

// watched says whether a mapped file is one the JIT watcher reads: a jitdump, or a marker
// file (mapped to announce it, as for samply).
func watched(path string) bool {
	if _, ok := jit.IsJitdumpName(path); ok {
		return true
	}
	_, _, ok := spans.IsMarkerName(path)
	return ok
}
