package agg

import (
	"testing"
)

// 5,000 short processes of two commands, each sampled a few times in one of a handful of
// stacks (at its own load address, as ASLR places it): once folded, the run holds a key
// per command and stack, not per process; every sample is still counted, under its
// command, in the totals and in any window of the series.
func TestFoldBoundsKeys(t *testing.T) {
	const procs = 5000
	r := NewRun()
	res := newFakeResolver(64)
	// A long-lived process beside them: never folded.
	addLong := func(ts uint64) {
		r.AddSample(10, 10, 0, ts, 0, []uint64{textBase + 5*funcSize + 1, textBase + 6*funcSize + 1})
	}
	var samples uint64
	maxKeys := 0
	pending := map[uint32]string{}
	ts := uint64(1)
	for i := 0; i < procs; i++ {
		pid := uint32(1000 + i)
		comm := "true"
		if i%2 == 1 {
			comm = "sleep"
		}
		// The fake resolver names addresses by function: a process's own load address
		// would be the same function at another address; here it is the same function
		// with another leaf offset, per process.
		off := uint64(i % 7)
		for s := 0; s < 3; s++ {
			stack := []uint64{textBase + uint64(s)*funcSize + 1 + off, textBase + 9*funcSize + 1}
			r.AddSample(pid, pid, 0, ts, 0, stack)
			ts++
			samples++
		}
		addLong(ts)
		ts++
		samples++
		pending[pid] = comm
		if len(pending) == 100 {
			r.Resolve(res)
			if kept := r.Fold(pending); len(kept) != 0 {
				t.Fatalf("Fold kept %v: every key was named", kept)
			}
			pending = map[uint32]string{}
		}
		maxKeys = max(maxKeys, r.Stats().Keys)
	}
	st := r.Stats()
	// Before a fold, 100 processes of 3 keys each; after, per command 3 stacks with 7
	// leaf offsets (the same function: one key), and the long-lived process's one key.
	if maxKeys > 100*3+2*3+1 {
		t.Errorf("the run held up to %d keys, want at most %d", maxKeys, 100*3+2*3+1)
	}
	if st.Keys != 2*3+1 {
		t.Errorf("%d keys after folding, want %d (3 stacks of 2 commands, and the long-lived process)", st.Keys, 2*3+1)
	}
	fs := r.FoldStats()
	if fs.Processes != procs || fs.Commands != 2 || fs.Keys != procs*3 {
		t.Errorf("fold stats %+v, want %d processes, 2 commands, %d keys", fs, procs, procs*3)
	}
	threads := r.FoldedThreads()
	if len(threads) != 2 || threads[0].Name != "true" || threads[0].Folded != procs/2 || !IsFolded(threads[0].Tid) {
		t.Errorf("folded threads %+v", threads)
	}
	p := r.Profile(threads)
	var total, long uint64
	byTid := map[uint32]uint64{}
	for _, e := range p.Entries {
		total += e.Count
		byTid[e.Tid] += e.Count
		if e.Pid == 10 {
			long += e.Count
		}
	}
	if total != samples || long != procs || byTid[threads[0].Tid] != procs/2*3 || byTid[threads[1].Tid] != procs/2*3 {
		t.Errorf("counts: total %d (want %d), long-lived %d (want %d), by command %v", total, samples, long, procs, byTid)
	}
	// The series still finds every sample's entry: a window over the whole run counts as
	// the totals, and one over the first 100 processes counts their samples under their
	// commands.
	w, err := p.Window(0, 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	var wt uint64
	for _, e := range w.Entries {
		wt += e.Count
	}
	if wt != samples {
		t.Errorf("a window over the whole run counts %d samples, want %d", wt, samples)
	}
	w, err = p.Window(1, 1+400)
	if err != nil {
		t.Fatal(err)
	}
	byTid = map[uint32]uint64{}
	for _, e := range w.Entries {
		byTid[e.Tid] += e.Count
	}
	if byTid[threads[0].Tid] != 150 || byTid[threads[1].Tid] != 150 || byTid[10] != 100 {
		t.Errorf("the first 100 processes' window by thread: %v", byTid)
	}
	// A folded key is not named again when the resolver learns something (nor is the
	// long-lived process's: all its frames are named).
	res.bump()
	calls := res.calls
	r.Resolve(res)
	if res.calls != calls {
		t.Errorf("Resolve named %d keys again after folding", res.calls-calls)
	}
}

// A process whose keys are not all named is not folded: its pid comes back, to be kept.
func TestFoldKeepsUnnamed(t *testing.T) {
	r := NewRun()
	r.AddSample(5, 5, 0, 1, 0, []uint64{textBase + 1})
	if kept := r.Fold(map[uint32]string{5: "x"}); len(kept) != 1 || kept[0] != 5 {
		t.Fatalf("Fold before naming kept %v, want [5]", kept)
	}
	if r.Stats().Keys != 1 || r.FoldStats().Processes != 0 {
		t.Errorf("after a refused fold: %+v %+v", r.Stats(), r.FoldStats())
	}
}
