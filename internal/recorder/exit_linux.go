package recorder

import "github.com/stax-profiler/stax/internal/perfrecord"

// A task's time from its exit record to its last switch out (perfevent's exit_linux.go):
// its own events are gone then, and it may wait for a CPU on a busy machine. The CPU-wide
// events that see each task's last switch out end it: the time is counted, runnable,
// under [exiting] ([runnable] above it), and kept as an interval.

// exitedTask is a task past its exit record: its process and when.
type exitedTask struct {
	pid uint32
	at  uint64
}

// deathSample decodes the sample of a task's last switch out: the task in wakee, marked
// bad where its raw data does not hold it.
func (w *stackWorker) deathSample(rec []byte) batchedSample {
	var s perfrecord.Sample
	if err := w.runtimeDec.Sample(rec, &s); err != nil {
		return batchedSample{bad: true}
	}
	v, ok := w.deadPid.Value(s.Raw)
	if !ok || v <= 0 || v > 1<<30 {
		return batchedSample{bad: true}
	}
	return batchedSample{kind: kindDeath, pid: s.Pid, tid: s.Tid, cpu: s.CPU, time: s.Time, wakee: uint32(v)}
}

// offExited notes thread tid of process pid past its exit record at t.
func (r *Recorder) offExited(pid, tid uint32, t uint64) {
	o := &r.off
	r.mu.Lock()
	o.counts.ExitedTasks++
	r.mu.Unlock()
	if !o.deaths {
		return
	}
	if o.exited == nil || len(o.exited) >= maxOffThreads {
		o.exited = map[uint32]exitedTask{} // tasks whose last switch was not seen: forgotten
	}
	o.exited[tid] = exitedTask{pid, t}
}

// offDeath ends, at t, the time since its exit record of task tid, switched out for the
// last time: of a task that is not the target's (or whose exit record was not read),
// nothing.
func (r *Recorder) offDeath(tid uint32, t uint64) {
	o := &r.off
	e, ok := o.exited[tid]
	if !ok {
		return
	}
	delete(o.exited, tid)
	if t <= e.at {
		return
	}
	th := &offThread{pid: e.pid, out: e.at, preempt: true, exiting: true}
	r.offEnd(tid, th, t)
	r.mu.Lock()
	o.counts.ExitingNs += t - e.at
	o.counts.ExitingTasks++
	r.mu.Unlock()
}
