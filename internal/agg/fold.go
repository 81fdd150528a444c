package agg

import "sort"

// Folding: a system-wide recording meets tens of short processes a second, each counted
// under keys of its own (thread, raw stack, address-space generation). Once such a process
// has exited and its stacks are named, nothing tells its keys apart from those of another
// run of the same command but the pid, so the recorder folds them (Fold): each key's
// samples move to a key of the command, one per named stack and leaf, and the process's
// keys stop being looked up or named again. The command is a thread of its own in the
// profile, with a marker id (FoldBase and above) as its tid and pid, named after the
// command, so views and filters by thread, process or name still find its samples.

// FoldBase is the first marker id: a tid or pid at or above it stands for the exited
// processes of one command, folded together (kernel pids stay below 1<<22).
const FoldBase = 1 << 31

// maxFoldCommands bounds the commands folded apart; the processes of any further command
// fold into one more marker, named FoldOther.
const maxFoldCommands = 4096

// FoldOther names the marker of the commands folded past maxFoldCommands.
const FoldOther = "[other exited processes]"

// IsFolded reports whether a tid or pid is a folding marker.
func IsFolded(id uint32) bool { return id >= FoldBase }

type foldKey struct {
	marker uint32
	rstack int32 // of locations without address or mapping
}

type foldState struct {
	index    map[foldKey]uint32 // the command's key for a named stack and leaf
	markers  map[string]uint32  // by command
	names    []string           // by marker - FoldBase
	procs    []uint64           // processes folded, by marker - FoldBase
	aliases  int                // keys folded into another (their samples counted there)
	released uint64             // processes folded
}

// FoldStats says what folding let go.
type FoldStats struct {
	Processes uint64 `json:"processes"` // exited processes whose keys were folded
	Keys      int    `json:"keys"`      // their keys, now counted under their commands'
	Commands  int    `json:"commands"`  // commands folded into
}

// Fold moves the keys of the exited processes in comms (pid to command name) into
// per-command keys. A key not named yet stays as it is and its pid is returned in kept: the
// caller releases the others' state (their keys will not be named again). Call it after
// Resolve has named every key of those processes.
func (r *Run) Fold(comms map[uint32]string) (kept []uint32) {
	if len(comms) == 0 {
		return nil
	}
	r.resolveMu.Lock() // no Resolve may name a key while it moves
	defer r.resolveMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	f := &r.fold
	if f.index == nil {
		f.index, f.markers = map[foldKey]uint32{}, map[string]uint32{}
	}
	unnamed := map[uint32]bool{}
	for i := range r.keys {
		k := &r.keys[i]
		if _, ok := comms[k.Pid]; ok && k.alias == 0 && k.rstack < 0 {
			unnamed[k.Pid] = true
		}
	}
	counted := map[uint32]bool{}
	for i := range r.keys {
		k := &r.keys[i]
		comm, ok := comms[k.Pid]
		if !ok || k.alias != 0 || unnamed[k.Pid] {
			continue
		}
		m := r.foldMarker(comm)
		if !counted[k.Pid] {
			counted[k.Pid] = true
			f.procs[m-FoldBase]++
		}
		fk := foldKey{m, r.foldStack(k.rstack)}
		j, ok := f.index[fk]
		if !ok {
			j = uint32(len(r.keys))
			f.index[fk] = j
			r.keys = append(r.keys, keyState{rawKey: rawKey{Tid: m, Pid: m, Stack: k.Stack}, time: k.time,
				rstack: fk.rstack, leafFunc: k.leafFunc, unresolved: k.unresolved, version: k.version})
			k = &r.keys[i] // the append may have moved it
		}
		t := &r.keys[j]
		t.count += k.count
		t.time = min(t.time, k.time)
		delete(r.keyIndex, k.rawKey)
		k.count, k.alias = 0, j+1
		f.aliases++
	}
	f.released += uint64(len(counted))
	for pid := range comms {
		if unnamed[pid] {
			kept = append(kept, pid)
		}
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i] < kept[j] })
	return kept
}

// foldStack is a named stack's functions and lines: its locations at address 0, in no
// mapping. r.mu is held.
func (r *Run) foldStack(rstack int32) int32 {
	ids := r.ids[:0]
	for _, loc := range r.rstacks.Get(uint32(rstack)) {
		s := r.locs.seqs.Get(uint32(loc))
		lines := r.lines[:0]
		for _, v := range s[2:] {
			lines = append(lines, Line{Func: uint32(v >> 32), Line: int32(uint32(v))})
		}
		r.lines = lines
		ids = append(ids, uint64(r.locs.intern(0, 0, lines)))
	}
	r.ids = ids
	return int32(r.rstacks.Intern(ids))
}

// foldMarker is the marker of a command, made on first use; r.mu is held.
func (r *Run) foldMarker(comm string) uint32 {
	f := &r.fold
	if m, ok := f.markers[comm]; ok {
		return m
	}
	if len(f.names) >= maxFoldCommands {
		comm = FoldOther
		if m, ok := f.markers[comm]; ok {
			return m
		}
	}
	m := uint32(FoldBase + len(f.names))
	f.markers[comm] = m
	f.names = append(f.names, comm)
	f.procs = append(f.procs, 0)
	return m
}

// FoldedThreads names the markers of the commands folded so far, as threads, with the
// processes folded into each.
func (r *Run) FoldedThreads() []ThreadInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ThreadInfo, len(r.fold.names))
	for i, name := range r.fold.names {
		m := uint32(FoldBase + i)
		out[i] = ThreadInfo{Tid: m, Pid: m, Name: name, Folded: r.fold.procs[i]}
	}
	return out
}

// FoldStats says what folding let go so far.
func (r *Run) FoldStats() FoldStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return FoldStats{Processes: r.fold.released, Keys: r.fold.aliases, Commands: len(r.fold.names)}
}
