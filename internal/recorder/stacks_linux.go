package recorder

import (
	"encoding/binary"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/perfrecord"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/resolve"
	"github.com/stax-profiler/stax/internal/unwind"
)

// The rings are read by one goroutine, in time order across CPUs: a sample must meet the
// mappings its process made on another CPU before it. Merging costs tens of nanoseconds a
// record; what costs is a sample's own work (decoding it, checking or unwinding its stack:
// microseconds with DWARF). So the reader applies the side-band records (mappings, forks,
// names) at once and gathers samples into a batch; stackWorkers decode and unwind the batch
// on several cores, against the tracker's history at each sample's time; then the reader
// adds the results to the run in their order. The ring space of a batch goes back to the
// kernel only once the batch is done. Workers cost wakeups and take cores from the profiled
// program, so batches are spread only while one core would be kept busy (ingestLoad).

// maxBatch bounds the samples decoded at once (and the frames kept for them).
const maxBatch = 8192

// maxWorkers bounds the stack workers by default. Adding the results in order stays on one
// goroutine and costs about a seventh of what decoding and unwinding a DWARF sample does
// (BenchmarkDwarfIngest's profile), so more workers than this add little; and each keeps an
// unwinder's caches (about half a MiB).
const maxWorkers = 8

// minParallel is the smallest batch spread over several workers.
const minParallel = 256

// stackWorker decodes samples and makes their stacks countable: frame-pointer chains are
// checked, DWARF stacks unwound. Each worker has its own decoder and unwinder; the tracker
// and the call-frame tables are shared.
type stackWorker struct {
	dec   perfrecord.Decoder
	dwarf *dwarfUnwinder // nil with frame pointers
	fp    fpStacks
	// pre checks the frame-pointer stacks of preemptions (sampleBatch.cheap): how they end
	// is not counted with the samples' stacks.
	pre  fpStacks
	leaf [2]uint64 // the chain of a sample that has none: its ip
	// copyChain holds a DWARF-mode sample's chain with its user part walked in the stack
	// copy (userChainFromCopy).
	copyChain []uint64
	// isSwitch tells the context-switch event's samples by their event id (nil: off-CPU
	// time is not recorded).
	isSwitch func(id uint64) bool
	// isWaking tells the sched_waking events' samples by their event id (nil: wakers are
	// not recorded); wakeDec decodes them (with their raw data), wakingPid is where their
	// raw data holds the woken thread.
	isWaking func(id uint64) bool
	// isEvery tells, of those, the events that take every stack while not sampled (nil:
	// none, perfevent.Session.IsEveryEvent).
	isEvery   func(id uint64) bool
	wakeDec   perfrecord.Decoder
	wakingPid perfevent.TraceField
	// wakingFlags is where their raw data holds the trace entry's flags, which say a
	// wakeup was made in an interrupt (perfevent.IRQContextFlags).
	wakingFlags perfevent.TraceField
	// isRuntime tells the sched_stat_runtime events' samples by their event id (nil:
	// not recorded); runtimeDec decodes them, runtimePid and runtimeNs are where their raw
	// data holds the thread and the run time added to it (oncpu_linux.go).
	isRuntime             func(id uint64) bool
	isDeath               func(id uint64) bool // the events of tasks' last switches (exit_linux.go)
	deadPid               perfevent.TraceField
	runtimeDec            perfrecord.Decoder
	runtimePid, runtimeNs perfevent.TraceField
	// eventOf tells the event (its index in Options.Events) of a CPU sample by its id
	// (nil: one event).
	eventOf func(id uint64) int
	// fixed tells the events sampled with a fixed period by their id, whose samples carry
	// no period (perfevent.Session.FixedPeriod), and fixedDec decodes them; nil: none, or
	// a recording of one such event, whose samples carry no id (onlyPeriod: its period).
	fixed      func(id uint64) (uint64, bool)
	fixedDec   perfrecord.Decoder
	onlyPeriod uint64
	// ctr decodes the samples that read the counters (counters_linux.go); reads holds
	// the batch's reads, back to back.
	ctr   counterDecoding
	reads []uint64
	// traced has a bit per event whose samples keep their raw data (a tracepoint's
	// fields); raws holds the batch's, back to back.
	traced uint32
	raws   []byte
	// frames holds the batch's stacks, back to back.
	frames []uint64
	// fitSize is the stack copy the sampling events take now (stackFit.cur; 0: not
	// fitted): the unwinds of such samples measure how much of it stacks need. switched
	// is the resize in progress, whose samples say whose events took them.
	fitSize  uint32
	switched stackSwitch
}

// batchedSample is a sample of the batch once its worker is done with it.
type batchedSample struct {
	pid, tid, cpu uint32
	bad           bool // the record could not be decoded
	kind          batchKind
	preempt       bool   // a switch out: the thread was still runnable
	every         bool   // a stack of a switch out or wakeup from an event that takes every one
	wakee         uint32 // a wakeup: the thread woken
	irq           bool   // a wakeup made in an interrupt, not by the thread it interrupted
	period        uint32 // a wakeup, a sample: how many the kernel counted since the one before it sampled
	runtime       uint64 // a run time the scheduler added to thread wakee (kindRuntime)
	event         uint32 // a sample: its event, an index in Options.Events
	time          uint64
	worker        uint32
	lo, hi        uint32 // its chain is workers[worker].frames[lo:hi]
	// rlo and rn locate a sample's counter read in workers[worker].reads (rn 0: none).
	rlo, rn uint32
	// rawLo and rawN locate a traced sample's raw data in workers[worker].raws (rawN 0:
	// none).
	rawLo, rawN uint32
	// fit is how the unwind of a sample with the current stack copy used it (fitNone:
	// not measured); high how many of its bytes it read.
	fit  fitUse
	high uint32
	// set is whose events took a CPU sample during a resize of the stack copy.
	set stackSet
}

// fitUse is how a sample's unwind used its stack copy.
type fitUse uint8

const (
	fitNone fitUse = iota // not unwound, or taken with another copy size
	fitRead               // read high bytes of it
	fitCut                // ran off its end
)

// batchKind is what a batched record is.
type batchKind uint8

const (
	kindSample    batchKind = iota // a CPU sample
	kindOffStack                   // the stack a thread is switched out with
	kindSwitchOut                  // a thread switched out (no stack)
	kindSwitchIn                   // a thread switched in (no stack)
	kindWaking                     // a thread woke another (with its stack)
	kindRuntime                    // the scheduler added to a thread's run time
	kindDeath                      // a task switched out for the last time
)

type sampleBatch struct {
	cpus []uint32
	recs [][]byte
	out  []batchedSample
	// cheap marks the stacks of preemptions (their switch out followed them on their
	// CPU): taken from the frame-pointer chain, not unwound (store.OffCPUMeta.PreemptedFP).
	// lastOff is, per CPU, the index of the latest switch-out stack not yet followed by
	// its switch out (-1: none).
	cheap   []bool
	lastOff []int32
}

// ingestLoad estimates how busy decoding and unwinding would keep one core: the work a
// sample costs times the rate samples come in.
type ingestLoad struct {
	nsPerSample   float64 // of one core, smoothed over batches
	windowStart   time.Time
	windowSamples int
	parallel      bool
}

// Spread batches once one core would be busy more than half the time with them; go back to
// one below 30%.
const (
	parallelAbove = 0.5
	serialBelow   = 0.3
	loadWindow    = 250 * time.Millisecond
)

// observe takes a batch of n samples that kept parts cores busy for d.
func (l *ingestLoad) observe(n, parts int, d time.Duration, now time.Time) {
	ns := float64(d.Nanoseconds()) * float64(parts) / float64(n)
	if l.nsPerSample == 0 {
		l.nsPerSample = ns
	} else {
		l.nsPerSample += (ns - l.nsPerSample) / 8
	}
	if l.windowStart.IsZero() {
		l.windowStart = now
	}
	l.windowSamples += n
	if el := now.Sub(l.windowStart); el >= loadWindow {
		busy := float64(l.windowSamples) / el.Seconds() * l.nsPerSample / 1e9
		l.parallel = busy > parallelAbove || (l.parallel && busy > serialBelow)
		l.windowStart, l.windowSamples = now, 0
	}
}

func newStackWorkers(n int, dec perfrecord.Decoder, dwarf bool, maxStack int, res *resolve.Resolver) []*stackWorker {
	if n <= 0 {
		n = min(runtime.GOMAXPROCS(0), maxWorkers)
	}
	loader := &unwind.FileLoader{Open: openImage}
	ws := make([]*stackWorker, n)
	for i := range ws {
		w := &stackWorker{dec: perfrecord.Decoder{SampleType: dec.SampleType, RegsUserMask: dec.RegsUserMask, SampleIDAll: dec.SampleIDAll}}
		w.fp.maxStack, w.pre.maxStack = maxStack, maxStack
		if dwarf {
			w.dwarf = &dwarfUnwinder{loader: loader, maxStack: maxStack}
			w.dwarf.u.JIT = jitUnwindInfo{res}
		}
		ws[i] = w
	}
	return ws
}

// work decodes recs and makes their stacks, into out (one per record). fast: DWARF stacks
// are not unwound; their frame-pointer chain stands for them (the recorder is behind, see
// overload).
func (w *stackWorker) work(tr *proc.Tracker, index uint32, cpus []uint32, recs [][]byte, cheap []bool, out []batchedSample, fast bool) {
	w.frames, w.reads, w.raws = w.frames[:0], w.reads[:0], w.raws[:0]
	w.fp.cache.reset()
	w.pre.cache.reset()
	if w.dwarf != nil {
		w.dwarf.cache.reset()
	}
	for k, rec := range recs {
		if h, err := perfrecord.ParseHeader(rec); err == nil && (h.Type == perfrecord.TypeSwitch || h.Type == perfrecord.TypeSwitchCPU) {
			sw, err := w.dec.Switch(rec)
			id := sw.SampleID
			out[k] = batchedSample{bad: err != nil, kind: kindSwitchIn, pid: id.Pid, tid: id.Tid, cpu: cpus[k], time: id.Time, preempt: sw.Preempt}
			if sw.Out {
				out[k].kind = kindSwitchOut
			}
			continue
		}
		if w.isRuntime != nil && len(rec) >= 16 && w.isRuntime(binary.LittleEndian.Uint64(rec[8:])) {
			out[k] = w.runtimeSample(rec)
			continue
		}
		if w.isDeath != nil && len(rec) >= 16 && w.isDeath(binary.LittleEndian.Uint64(rec[8:])) {
			out[k] = w.deathSample(rec)
			continue
		}
		var s perfrecord.Sample
		dec := &w.dec
		waking := w.isWaking != nil && len(rec) >= 16 && w.isWaking(binary.LittleEndian.Uint64(rec[8:]))
		if waking {
			dec = &w.wakeDec
		}
		fixedPeriod := w.onlyPeriod
		if !waking && w.fixed != nil && len(rec) >= 16 {
			if p, ok := w.fixed(binary.LittleEndian.Uint64(rec[8:])); ok {
				dec, fixedPeriod = &w.fixedDec, p
			}
		}
		dec = w.ctr.decoder(dec, rec, waking)
		if err := dec.Sample(rec, &s); err != nil {
			out[k] = batchedSample{bad: true}
			continue
		}
		if fixedPeriod > 0 {
			s.Period = fixedPeriod
		}
		kind := kindSample
		var wakee uint32
		switch {
		case waking:
			v, ok := w.wakingPid.Value(s.Raw)
			if !ok || v <= 0 || v > 1<<30 {
				out[k] = batchedSample{bad: true}
				continue
			}
			kind, wakee = kindWaking, uint32(v)
			if f, ok := w.wakingFlags.Value(s.Raw); ok && f&perfevent.IRQContextFlags != 0 {
				out[k] = batchedSample{kind: kindWaking, pid: s.Pid, tid: s.Tid, time: s.Time, wakee: wakee, irq: true,
					period: uint32(min(s.Period, 1<<32-1)), every: w.isEvery != nil && w.isEvery(s.ID)}
				continue // its stack is the interrupted thread's: not unwound
			}
		case w.isSwitch != nil && w.isSwitch(s.ID):
			kind = kindOffStack
		}
		chain := s.Callchain
		chainEnd := unwind.EndComplete
		if w.dwarf != nil {
			chain, chainEnd = w.userChainFromCopy(&s, chain)
		}
		if len(chain) == 0 {
			w.leaf = [2]uint64{perfrecord.ContextUser, s.IP}
			if s.Misc&perfrecord.MiscCPUModeMask == perfrecord.MiscKernel {
				w.leaf[0] = perfrecord.ContextKernel
			}
			chain = w.leaf[:]
		}
		switch {
		case cheap[k]:
			chain = w.pre.check(tr, &s, chain, chainEnd)
		case w.dwarf != nil && !fast:
			chain = w.dwarf.chainOf(tr, &s, chain, chainEnd)
		case w.dwarf != nil:
			// Behind: the frame-pointer chain stands for the walk, with the frame it skips
			// above a function without one (a syscall wrapper) put back.
			chain = w.fp.check(tr, &s, w.dwarf.leafFixed(tr, &s, chain), chainEnd)
		default:
			chain = w.fp.check(tr, &s, chain, chainEnd)
		}
		lo := len(w.frames)
		w.frames = append(w.frames, chain...)
		out[k] = batchedSample{pid: s.Pid, tid: s.Tid, cpu: cpus[k], time: s.Time, worker: index, lo: uint32(lo), hi: uint32(len(w.frames)), kind: kind, wakee: wakee,
			period: uint32(min(s.Period, 1<<32-1)), every: kind != kindSample && w.isEvery != nil && w.isEvery(s.ID)}
		if kind == kindSample {
			out[k].set = w.switched.set(uint32(s.StackSize))
			if w.eventOf != nil {
				out[k].event = uint32(w.eventOf(s.ID))
			}
			if dec.SampleType&perfrecord.SampleRead != 0 {
				out[k].rlo, out[k].rn = w.ctr.keep(&s, &w.reads)
			}
			if ev := out[k].event; ev < 32 && w.traced&(1<<ev) != 0 && len(s.Raw) > 0 {
				out[k].rawLo, out[k].rawN = uint32(len(w.raws)), uint32(len(s.Raw))
				w.raws = append(w.raws, s.Raw...)
			}
		}
		// The copy is fitted to the depth of the stacks walked to their outermost frame, and
		// grows back for those cut by its end: a walk cut short otherwise (no call-frame
		// information, a loop) read less than the stack holds, and says nothing of its depth.
		if kind == kindSample && w.fitSize != 0 && !cheap[k] && !fast && uint32(s.StackSize) == w.fitSize && w.dwarf.unwound &&
			(w.dwarf.end == unwind.EndTruncated || w.dwarf.u.Measured()) {
			out[k].fit, out[k].high = fitRead, uint32(min(w.dwarf.u.High(), 1<<20))
			if w.dwarf.end == unwind.EndTruncated && uint64(len(s.Stack)) == s.StackSize {
				out[k].fit = fitCut
			}
		}
	}
}

// userChainFromCopy returns chain with the user part that a DWARF-mode recording of a
// program built without frame pointers leaves out (perfevent.Config.NoUserFPChain) walked
// in the stack copy instead, and why that part ends short (EndTruncated at the copy's end,
// EndMaxDepth at the depth limit). It serves where the kernel's chain serves: stacks the
// recorder does not unwind while behind, preemptions, and a DWARF walk that runs out of
// call-frame information. A chain that has its user part is kept.
func (w *stackWorker) userChainFromCopy(s *perfrecord.Sample, chain []uint64) ([]uint64, unwind.EndReason) {
	if len(s.Regs) < 3 || s.RegsABI == 0 {
		return chain, unwind.EndComplete
	}
	kernel, user := perfrecord.SplitCallchain(chain)
	if len(user) > 0 {
		return chain, unwind.EndComplete
	}
	depth := w.fp.maxStack
	if depth <= 0 {
		depth = maxUnwoundFrames
	}
	depth = max(depth-len(kernel), 1)
	w.copyChain = w.copyChain[:0]
	if len(kernel) > 0 {
		w.copyChain = append(append(w.copyChain, perfrecord.ContextKernel), kernel...)
	}
	w.copyChain = append(w.copyChain, perfrecord.ContextUser)
	head := len(w.copyChain)
	w.copyChain = slices.Grow(w.copyChain, depth)
	user, cut := unwind.FPChainOfCopy(unwind.Regs{BP: s.Regs[0], SP: s.Regs[1], IP: s.Regs[2]}, s.Stack, w.copyChain[head:head:head+depth])
	w.copyChain = w.copyChain[:head+len(user)]
	switch {
	case cut && len(user) == depth:
		return w.copyChain, unwind.EndMaxDepth
	case cut:
		return w.copyChain, unwind.EndTruncated
	}
	return w.copyChain, unwind.EndComplete
}

// stackEnds sums how the workers' stacks ended (in dwarf mode, those unwound and those
// taken from frame pointers while the recorder was behind).
func stackEnds(ws []*stackWorker) (sum [unwind.NumEndReasons]uint64) {
	for _, w := range ws {
		for i := range sum {
			sum[i] += w.fp.ends[i].Load()
			if w.dwarf != nil {
				sum[i] += w.dwarf.u.Counts[i].Load()
			}
		}
	}
	return sum
}

// overload says whether the ingest stage is behind: its rings are filling faster than it
// reads them (the machine's cores are all busy, and the recorder gets too little of them).
// Behind, DWARF samples take their frame-pointer chain (with the frames it skips above the
// sampled function put back) instead of being unwound, which costs a tenth as much: the recorder catches up, and the samples are kept (their
// stacks may be shorter) where they would otherwise be lost at random. Status says how
// many.
type overload struct {
	behind      bool
	fastSamples atomic.Uint64 // samples whose stacks were not unwound
	periods     atomic.Uint64 // times the recorder fell behind
}

// Ring fill levels at which the recorder is behind, and caught up again.
const (
	behindAbove   = 0.5
	caughtUpBelow = 0.2
)

// observe takes the fullest ring's fill before a step.
func (o *overload) observe(fill float64) {
	switch {
	case !o.behind && fill > behindAbove:
		o.behind = true
		o.periods.Add(1)
	case o.behind && fill < caughtUpBelow:
		o.behind = false
	}
}

// addToBatch queues a sample record; a full batch is processed at once (its records stay
// valid until the source gets their space back, after the step).
func (r *Recorder) addToBatch(cpu int, rec []byte) {
	b := &r.in.batch
	if r.off.on && r.meta.CallGraph == "dwarf" {
		r.markPreempted(cpu, rec)
	}
	b.cpus = append(b.cpus, uint32(cpu))
	b.recs = append(b.recs, rec)
	b.cheap = append(b.cheap, false)
	if len(b.recs) >= maxBatch {
		r.flushBatch()
	} else if len(b.recs)%1024 == 0 && r.off.counter != nil {
		r.offRate(0) // a batch takes long to fill when the stacks are large
	}
}

// markPreempted follows the switch-out stacks of each CPU in the batch to their switch-out
// records (the kernel writes both in one call, the stack first): the stack of a preemption
// is marked cheap. rec is about to take the batch's next index.
func (r *Recorder) markPreempted(cpu int, rec []byte) {
	b := &r.in.batch
	for len(b.lastOff) <= cpu {
		b.lastOff = append(b.lastOff, -1)
	}
	h, err := perfrecord.ParseHeader(rec)
	if err != nil {
		return
	}
	switch {
	case h.Type == perfrecord.TypeSample && len(rec) >= 16 && r.off.isSwitch(binary.LittleEndian.Uint64(rec[8:])):
		b.lastOff[cpu] = int32(len(b.recs))
	case (h.Type == perfrecord.TypeSwitch || h.Type == perfrecord.TypeSwitchCPU) && h.Misc&perfrecord.MiscSwitchOut != 0:
		if i := b.lastOff[cpu]; i >= 0 && h.Misc&perfrecord.MiscSwitchPreempt != 0 {
			b.cheap[i] = true
		}
		b.lastOff[cpu] = -1
	}
}

// flushBatch decodes and unwinds the queued samples, spread over the workers when there are
// enough of them, then adds them to the run in their order.
func (r *Recorder) flushBatch() {
	b := &r.in.batch
	n := len(b.recs)
	if n == 0 {
		return
	}
	if cap(b.out) < n {
		b.out = make([]batchedSample, n, max(n, maxBatch))
	}
	out := b.out[:n]
	ws := r.in.workers
	parts := 1
	if n >= r.in.minParallel && (r.in.load.parallel || r.in.alwaysParallel) {
		parts = max(1, min(len(ws), n/(r.in.minParallel/2)))
	}
	fast := r.in.overload.behind && r.meta.CallGraph == "dwarf"
	began := time.Now()
	if parts <= 1 {
		ws[0].work(r.tracker, 0, b.cpus, b.recs, b.cheap, out, fast)
	} else {
		var wg sync.WaitGroup
		for i := 1; i < parts; i++ {
			lo, hi := i*n/parts, (i+1)*n/parts
			wg.Go(func() {
				ws[i].work(r.tracker, uint32(i), b.cpus[lo:hi], b.recs[lo:hi], b.cheap[lo:hi], out[lo:hi], fast)
			})
		}
		ws[0].work(r.tracker, 0, b.cpus[:n/parts], b.recs[:n/parts], b.cheap[:n/parts], out[:n/parts], fast)
		wg.Wait()
	}
	r.in.load.observe(n, parts, time.Since(began), time.Now())
	if fast {
		stacks := 0
		for i := range out {
			if k := out[i].kind; !out[i].bad && (k == kindSample || k == kindOffStack || k == kindWaking) && out[i].hi > out[i].lo {
				stacks++
			}
		}
		r.in.overload.fastSamples.Add(uint64(stacks))
	}
	for i := range out {
		s := &out[i]
		if s.bad {
			r.countBad()
			continue
		}
		switch s.kind {
		case kindSample:
			if s.set != setNone && !r.in.fit.handover(s.tid, s.cpu, s.set) {
				continue // its thread is sampled by the other events on this CPU
			}
			if s.fit != fitNone {
				r.in.fit.observe(int(s.high), s.fit == fitCut)
			}
			if r.off.waitStacks && s.event == 0 {
				r.offCPUSample(s.pid, s.tid, ws[s.worker].frames[s.lo:s.hi])
			}
			var ctrs []uint64
			if s.rn > 0 {
				ctrs = r.ctr.deltas(s.tid, s.cpu, ws[s.worker].reads[s.rlo:s.rlo+s.rn])
			}
			var raw []byte
			if s.rawN > 0 {
				raw = ws[s.worker].raws[s.rawLo : s.rawLo+s.rawN]
			}
			r.commit(s.event, s.period, s.pid, s.tid, s.cpu, s.time, ws[s.worker].frames[s.lo:s.hi], ctrs, raw)
		case kindOffStack:
			if !r.offKeep(s.time, s.every) {
				continue
			}
			if b.cheap[i] {
				r.mu.Lock()
				r.off.counts.PreemptedFP++
				r.mu.Unlock()
			}
			r.offStack(s.pid, s.tid, s.time, ws[s.worker].frames[s.lo:s.hi])
		case kindRuntime:
			r.offRuntime(s.tid, s.wakee, s.cpu, s.time, s.runtime)
		case kindDeath:
			r.offDeath(s.wakee, s.time)
		case kindWaking:
			keep := r.offKeep(s.time, s.every)
			if s.irq || !r.offOwnWakeup(s.pid, s.tid, s.wakee) {
				if keep {
					r.off.rejected += uint64(max(s.period, 1))
				}
				continue
			}
			if !keep {
				continue
			}
			r.offWakingSampled(s.pid, s.tid, s.wakee, s.time, s.period, ws[s.worker].frames[s.lo:s.hi])
		default:
			r.offSwitch(s.pid, s.tid, s.time, s.kind == kindSwitchOut, s.preempt)
		}
	}
	clear(b.recs) // the ring's bytes are not kept past the step
	b.cpus, b.recs, b.cheap = b.cpus[:0], b.recs[:0], b.cheap[:0]
	for i := range b.lastOff {
		b.lastOff[i] = -1
	}
	if r.off.counter != nil {
		r.offRate(0) // on the kernel's count and clock: a step far behind its rings is long
	}
}

// jitFrames sums the frames in JIT code without unwinding info the workers' walks went
// through, by how they were unwound; nil when there were none.
func jitFrames(ws []*stackWorker) map[string]uint64 {
	var fp, tramp uint64
	for _, w := range ws {
		if w.dwarf != nil {
			fp += w.dwarf.u.JITFrames.FramePointer.Load()
			tramp += w.dwarf.u.JITFrames.Trampoline.Load()
		}
	}
	if fp == 0 && tramp == 0 {
		return nil
	}
	return map[string]uint64{"frame_pointer": fp, "cpython_trampoline": tramp}
}
