package proc

import "sort"

// What a long recording lets go of. A system-wide recording meets tens of new processes a
// second; the tracker keeps a process and its threads until its samples are counted and
// named, then the recorder releases it (Release), so that what it holds follows the
// processes alive, not every process ever seen. A live process's mapping history is cut
// the same way (PruneHistory): mappings that ended before every sample still to be named
// can no longer be asked for.

// TrackerStats counts what the tracker holds and what it has let go.
type TrackerStats struct {
	Processes         int    // processes held
	Threads           int    // threads held
	Mappings          int    // mappings held, every process's history included
	ProcessesReleased uint64 // processes released since the recording started
	ThreadsReleased   uint64 // threads released with them
	MappingsPruned    uint64 // mappings dropped: a released process's, or a history cut
}

// Stats returns what the tracker holds and has released.
func (tr *Tracker) Stats() TrackerStats {
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	st := TrackerStats{Processes: len(tr.procs), Threads: len(tr.threads), ProcessesReleased: tr.released.procs,
		ThreadsReleased: tr.released.threads, MappingsPruned: tr.released.maps}
	for _, p := range tr.procs {
		st.Mappings += len(p.maps)
	}
	return st
}

// Exited returns the processes that exited before t and have not run again since (a pid
// reused by a new process is alive), oldest exit first.
func (tr *Tracker) Exited(before uint64) []Process {
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	var out []Process
	for _, p := range tr.procs {
		if p.ExitTime != 0 && p.ExitTime < before {
			out = append(out, Process{Pid: p.Pid, PPid: p.PPid, Comm: p.Comm, ExitTime: p.ExitTime})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ExitTime < out[j].ExitTime })
	return out
}

// Release forgets pid, its threads and its mapping history, if it is still the process
// that exited at exitTime (a new process given the same pid since is kept). It reports
// whether it did. The caller releases a process once nothing will ask about it again: its
// last samples were counted and named.
func (tr *Tracker) Release(pid int, exitTime uint64) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	p := tr.procs[pid]
	if p == nil || p.ExitTime == 0 || p.ExitTime != exitTime {
		return false
	}
	delete(tr.procs, pid)
	tr.released.procs++
	tr.released.maps += uint64(len(p.maps))
	for tid, t := range tr.threads {
		if t.Pid == pid {
			delete(tr.threads, tid)
			tr.released.threads++
		}
	}
	return true
}

// PruneHistory drops the mappings of the live processes that ended before t, and the
// times of exec and of destructive changes before it: no sample still to be unwound or
// named is older than t. Generation numbers stay as they were (the changes dropped are
// still counted).
func (tr *Tracker) PruneHistory(before uint64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, p := range tr.procs {
		kept := p.maps[:0]
		var maxLen uint64
		for _, m := range p.maps {
			if m.EndTime != 0 && m.EndTime < before {
				tr.released.maps++
				continue
			}
			kept = append(kept, m)
			maxLen = max(maxLen, m.End-m.Start)
		}
		clear(p.maps[len(kept):])
		p.maps, p.maxLen = kept, maxLen
		if n := sort.Search(len(p.changes), func(i int) bool { return p.changes[i] >= before }); n > 0 {
			p.changesDropped += uint32(n)
			p.changes = append(p.changes[:0], p.changes[n:]...)
		}
		// The newest exec still cuts mappings read late; older ones cut nothing now.
		if n := sort.Search(len(p.execTimes), func(i int) bool { return p.execTimes[i] >= before }); n > 1 {
			p.execTimes = append(p.execTimes[:0], p.execTimes[n-1:]...)
		}
	}
}
