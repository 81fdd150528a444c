package recorder

import "github.com/stax-profiler/stax/internal/perfrecord"

// A thread's time on CPU from the scheduler's own clock (perfevent's runtime_linux.go):
// each sched:sched_stat_runtime sample is a run time the scheduler added to a thread, and
// their sum is what schedstat's first field gained while the events were on.

// runtimeSample decodes a sched_stat_runtime sample: the thread it ran (in wakee) and the
// run time (in runtime), marked bad where its raw data does not hold them.
func (w *stackWorker) runtimeSample(rec []byte) batchedSample {
	var s perfrecord.Sample
	if err := w.runtimeDec.Sample(rec, &s); err != nil {
		return batchedSample{bad: true}
	}
	of, ok := w.runtimePid.Value(s.Raw)
	ns, ok2 := w.runtimeNs.Value(s.Raw)
	if !ok || !ok2 || of < 0 || of > 1<<30 || ns < 0 {
		return batchedSample{bad: true}
	}
	return batchedSample{kind: kindRuntime, pid: s.Pid, tid: s.Tid, cpu: s.CPU, time: s.Time, wakee: uint32(of), runtime: uint64(ns)}
}

// offRuntime counts ns of run time the scheduler added, at t, to thread of, read from an
// event of thread tid on cpu. The kernel passes it to the events of the thread running
// (tid) and, where that is not of, to of's too (the tracepoint names the thread it is
// about): a wakeup made from another CPU into the run queue of the CPU of runs on adds to
// of's run time from the waker's context. So a run time of another thread counts for it
// if it is one of the target's, and the same one read twice (both threads the target's:
// two samples of one event, one after the other) once. A thread's first run time since
// the events began may hold time from before: it is counted from then.
func (r *Recorder) offRuntime(tid, of, cpu uint32, t, ns uint64) {
	o := &r.off
	if !o.runtime || ns == 0 {
		return
	}
	if of != tid {
		if th, ok := r.tracker.Thread(int(of)); !ok || th.ExitTime != 0 && th.ExitTime < t {
			return
		}
		last := runtimeRead{cpu, of, t, ns}
		if o.lastOther == last {
			return
		}
		o.lastOther = last
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	had, ok := o.onNs[of]
	if !ok {
		if len(o.onNs) >= 4*maxOffThreads {
			return
		}
		if o.begin != 0 && t > o.begin {
			ns = min(ns, t-o.begin)
		}
	}
	o.onNs[of] = had + ns
}

// runtimeRead is a run time read for a thread other than the one whose event it came
// from: the same read twice is one run time.
type runtimeRead struct {
	cpu, of uint32
	t, ns   uint64
}

// runtimeCounter is a Source that counts the run time its sched_stat_runtime events saw
// (*perfevent.Session).
type runtimeCounter interface{ RuntimeCounted() (uint64, bool) }

// offCountRuntime takes the kernel's count of the target's run time, at the end: past the
// run times read, what the records lost from full rings held.
func (r *Recorder) offCountRuntime() {
	rc, ok := r.src.(runtimeCounter)
	if !r.off.on || !r.off.runtime || !ok {
		return
	}
	if n, ok := rc.RuntimeCounted(); ok {
		r.mu.Lock()
		r.off.counts.OnCPUCounted = n
		r.mu.Unlock()
	}
}
