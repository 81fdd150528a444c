package proc

import "testing"

// churn plays a shell (pid 100, 30 library mappings) that forks n short children, one every
// 10 ms of record time; each execs a program that maps 5 images and exits 2 ms later.
// Every 100 children, the processes that exited more than grace ago are released, as the
// recorder does once their samples are named. It returns the most processes and mappings
// the tracker held at once.
func churn(t *testing.T, tr *Tracker, n int, grace uint64, pids func(i int) int) (maxProcs, maxMaps int) {
	t.Helper()
	const ms = uint64(1e6)
	tr.Fork(100, 1, 100, 1, 1)
	tr.Exec(100, 2, "bash")
	for i := 0; i < 30; i++ {
		tr.AddMapping(100, mk("/usr/lib/lib"+string(rune('a'+i))+".so", 0x7f0000000000+uint64(i)<<20, 0x7f0000000000+uint64(i)<<20+0x80000, 0, 3))
	}
	now := 10 * ms
	for i := 0; i < n; i++ {
		pid := pids(i)
		tr.Fork(pid, 100, pid, 100, now)
		tr.Exec(pid, now+ms/10, "true")
		for j := 0; j < 5; j++ {
			tr.AddMapping(pid, mk("/usr/bin/true", 0x400000+uint64(j)<<16, 0x400000+uint64(j)<<16+0x1000, 0, now+ms/5))
		}
		if m := tr.Find(pid, 0x400010, now+ms); m == nil || m.Path != "/usr/bin/true" {
			t.Fatalf("child %d (pid %d): Find = %v, want /usr/bin/true", i, pid, m)
		}
		tr.Exit(pid, pid, now+2*ms)
		now += 10 * ms
		if i%100 == 99 {
			for _, p := range tr.Exited(now - grace) {
				tr.Release(p.Pid, p.ExitTime)
			}
			tr.PruneHistory(now - grace)
		}
		st := tr.Stats()
		maxProcs, maxMaps = max(maxProcs, st.Processes), max(maxMaps, st.Mappings)
	}
	return maxProcs, maxMaps
}

// After thousands of short processes the tracker holds the live ones and those within the
// grace period, not every process ever seen.
func TestReleaseBoundsTracker(t *testing.T) {
	const n = 5000
	const grace = uint64(2e9) // 2 s: 200 children at one every 10 ms
	tr := NewTracker()
	maxProcs, maxMaps := churn(t, tr, n, grace, func(i int) int { return 1000 + i })
	st := tr.Stats()
	// Within the grace period: 200 children, plus the 100 between two releases.
	if maxProcs > 1+300+1 {
		t.Errorf("the tracker held up to %d processes, want at most %d", maxProcs, 302)
	}
	// Each child holds its 5 mappings and the 30 its parent's fork copied: 35.
	if maxMaps > 30+301*35 {
		t.Errorf("the tracker held up to %d mappings, want at most %d", maxMaps, 30+301*35)
	}
	if st.ProcessesReleased < n-300 || st.ThreadsReleased != st.ProcessesReleased {
		t.Errorf("released %d processes and %d threads of %d, want at least %d, one thread each", st.ProcessesReleased, st.ThreadsReleased, n, n-300)
	}
	if st.MappingsPruned < (n-300)*35 {
		t.Errorf("pruned %d mappings, want at least %d", st.MappingsPruned, (n-300)*35)
	}
	// The shell lives on, whole.
	if m := tr.Find(100, 0x7f0000000010, 1<<62); m == nil || m.Path != "/usr/lib/liba.so" {
		t.Errorf("the shell's mapping after the churn: %v", m)
	}
	if th, ok := tr.Thread(100); !ok || th.Name != "bash" {
		t.Errorf("the shell's thread after the churn: %+v %v", th, ok)
	}
}

// Pids come around again (pid_max is 32768 on many machines): a pid reused by a new process
// after the old one exited, released or not, is a new process with its own mappings.
func TestReleasePidReuse(t *testing.T) {
	tr := NewTracker()
	// 50 pids reused in turn: each is reused every 500 ms, while the grace is 2 s, so a
	// pid comes back before its last process was released.
	_, _ = churn(t, tr, 2000, 2e9, func(i int) int { return 1000 + i%50 })
	if st := tr.Stats(); st.Processes > 51 {
		t.Errorf("the tracker holds %d processes with 50 pids, want at most 51", st.Processes)
	}
	// A reused pid not yet released: the new process's parent's mappings were copied in
	// (the old process's fork flag does not stop it) and the old one's program ended.
	tr.Fork(2000, 100, 2000, 100, 1e15)
	tr.Exit(2000, 2000, 1e15+1)
	tr.Fork(2000, 100, 2000, 100, 1e15+2)
	if m := tr.Find(2000, 0x7f0000000010, 1e15+3); m == nil || m.Path != "/usr/lib/liba.so" {
		t.Errorf("a reused pid's inherited mapping: %v", m)
	}
	if th, _ := tr.Thread(2000); th.ExitTime != 0 {
		t.Errorf("a reused tid keeps the old thread's exit time %d", th.ExitTime)
	}
	if tr.Release(2000, 1e15+1) {
		t.Error("Release let go of a live process that reused an exited one's pid")
	}
}

// PruneHistory keeps the generation of later times as it was: samples of one state of an
// address space keep one key.
func TestPruneHistoryKeepsGenerations(t *testing.T) {
	tr := NewTracker()
	tr.Fork(7, 1, 7, 1, 1)
	for i := uint64(0); i < 100; i++ {
		// A JIT-like region replaced 100 times: each replacement is a destructive change.
		tr.AddMapping(7, mk("//anon", 0x10000, 0x20000, 0, 10+i*10))
	}
	before := tr.Generation(7, 2000)
	mid := tr.Generation(7, 905)
	tr.PruneHistory(900)
	if got := tr.Generation(7, 2000); got != before {
		t.Errorf("generation after pruning %d, want %d", got, before)
	}
	if got := tr.Generation(7, 905); got != mid {
		t.Errorf("generation at 905 after pruning %d, want %d", got, mid)
	}
	if st := tr.Stats(); st.Mappings > 12 {
		t.Errorf("%d mappings held after pruning the history before 900, want at most 12", st.Mappings)
	}
	if m := tr.FindLive(7, 0x10010, 995); m == nil || m.Time != 990 {
		t.Errorf("the live mapping after pruning: %+v", m)
	}
}
