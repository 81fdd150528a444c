// Letting go: a recording that runs for days among short processes (record -a on a busy
// host) must hold what the live processes need, not what every process ever seen left.
// Once an exited process's last samples are counted and named, and a grace period has
// passed, the namer folds its keys into its command's (agg.Run.Fold), and the tracker, the
// JIT watcher and the ring reader forget it. The grace period covers what still comes
// about it: records another CPU read late, and the JIT files a runtime writes as it exits.

package recorder

import (
	"sync"

	"github.com/stax-profiler/stax/internal/api"
)

// releaseGrace is how long after its exit (in sample time) a process is let go, once its
// samples up to then are counted and named.
const releaseGrace = uint64(5e9)

// releaseState is what letGo let go, for status, and the pids the ring reader must forget.
type releaseState struct {
	mu      sync.Mutex
	pending []uint32 // released, not yet forgotten by the ring reader
	kept    uint64   // exited processes kept: with JIT files, or keys not named
	pruned  uint64   // the time history was last cut before (the namer's alone)
}

// releases says whether exited processes are let go. They are not while off-CPU time is
// recorded: its intervals and wakers keep naming the threads of every process seen.
func (r *Recorder) releases() bool { return !r.off.on }

// letGo releases the processes that exited releaseGrace before the samples counted and
// named so far (through: what the ring reader had added when the last Resolve began).
func (r *Recorder) letGo(through uint64) {
	if !r.releases() || through <= releaseGrace {
		return
	}
	before := through - releaseGrace
	exited := r.tracker.Exited(before)
	if len(exited) > 0 {
		comms := make(map[uint32]string, len(exited))
		for _, p := range exited {
			if uint32(p.Pid) == uint32(r.meta.Pid) && !r.meta.SystemWide {
				continue // the target itself stays what the run is named after
			}
			if !r.jitw.Forget(p.Pid) {
				continue // its JIT files are still read
			}
			comms[uint32(p.Pid)] = p.Comm
		}
		kept := r.run.Fold(comms)
		for _, pid := range kept {
			delete(comms, pid)
		}
		var released []uint32
		for _, p := range exited {
			if _, ok := comms[uint32(p.Pid)]; ok && r.tracker.Release(p.Pid, p.ExitTime) {
				released = append(released, uint32(p.Pid))
			}
		}
		r.release.mu.Lock()
		r.release.pending = append(r.release.pending, released...)
		r.release.kept = uint64(len(exited) - len(released))
		r.release.mu.Unlock()
	}
	// Cutting history walks every mapping of every process under the tracker's lock, which
	// the stack workers read: once per grace period is enough.
	if before >= r.release.pruned+releaseGrace {
		r.release.pruned = before
		r.tracker.PruneHistory(before)
	}
}

// forgetReleased makes the ring reader forget the processes released since its last step
// (the ingest goroutine's).
func (r *Recorder) forgetReleased() {
	r.release.mu.Lock()
	pids := r.release.pending
	r.release.pending = nil
	r.release.mu.Unlock()
	for _, pid := range pids {
		delete(r.in.sampledPids, pid)
		if r.in.targets != nil && pid != uint32(r.meta.Pid) {
			delete(r.in.targets, pid)
		}
	}
}

// bounds says what the recording holds and what it let go, for status.
func (r *Recorder) bounds() *api.Bounds {
	ts := r.tracker.Stats()
	fs := r.run.FoldStats()
	st := r.run.Stats()
	r.release.mu.Lock()
	kept := r.release.kept
	r.release.mu.Unlock()
	b := &api.Bounds{
		ProcessesHeld: ts.Processes, ThreadsHeld: ts.Threads, MappingsHeld: ts.Mappings,
		ProcessesReleased: ts.ProcessesReleased, ThreadsReleased: ts.ThreadsReleased, MappingsPruned: ts.MappingsPruned,
		ExitedKept: kept, Keys: st.Keys, KeysFolded: fs.Keys, CommandsFolded: fs.Commands, ProcessesFolded: fs.Processes,
		JITWatched: r.jitw.Watched(), ReleaseGraceSec: float64(releaseGrace) / 1e9,
	}
	if !r.releases() {
		b.NotReleased = "off-CPU time is recorded: its intervals name the threads of every process seen, so exited processes are kept"
	}
	return b
}
