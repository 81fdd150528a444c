package recorder

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestCPUWideKeepsTheTargetsSamples: sampled through CPU-wide events, a launched program
// and the child it forks keep their samples, under their own functions, while a
// bystander burning CPU beside them is dropped and counted.
func TestCPUWideKeepsTheTargetsSamples(t *testing.T) {
	testutil.RequirePerf(t)
	t.Setenv("STAX_HOME", t.TempDir())
	prog := testutil.CC(t, t.TempDir(), "forks", "gcc", "-O1", "-g", "-fno-omit-frame-pointer", filepath.Join("testdata", "forks.c"))
	bystander := exec.Command(prog, "alone", "600000")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		bystander.Process.Kill()
		bystander.Wait()
	}()
	// The bystander runs before the recording starts.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(bystander.Process.Pid) + "/stat"); err == nil {
			if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 12 && f[11] != "0" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the bystander used no CPU time in 10 s")
		}
	}
	r, err := Start(Options{Argv: []string{prog, "400"}, Freq: 999, CallGraph: "fp", OffCPU: true})
	if err != nil {
		t.Fatal(err)
	}
	if code := r.Loop(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	run, err := store.Load(r.StorePath())
	if err != nil {
		t.Fatal(err)
	}
	m := run.Meta
	if !m.CPUWide {
		t.Skip("CPU-wide events are not allowed here (root, CAP_PERFMON or kernel.perf_event_paranoid <= 0)")
	}
	pids := map[uint32]bool{}
	for _, th := range run.Profile.Threads {
		pids[th.Pid] = true
	}
	if pids[uint32(bystander.Process.Pid)] {
		t.Errorf("the bystander (pid %d) has samples in the run; threads %+v", bystander.Process.Pid, run.Profile.Threads)
	}
	if !pids[uint32(m.Pid)] || len(pids) != 2 {
		t.Errorf("threads %+v: want the launched pid %d and its child", run.Profile.Threads, m.Pid)
	}
	if m.ForeignSamples == 0 {
		t.Errorf("no foreign sample dropped, with a bystander burning CPU meanwhile")
	}
	// Each process burns 400 ms of CPU: about 400 samples each, under its own function.
	total := map[string]uint64{}
	p := &run.Profile
	p.ExpandStacks()
	for _, e := range p.Entries {
		seen := map[string]bool{}
		for _, f := range p.FrameStacks[e.Stack] {
			if fn := p.Frames[f].Func; !seen[fn] {
				seen[fn] = true
				total[fn] += e.Count
			}
		}
	}
	t.Logf("%d samples, %d foreign; parent_burn %d, child_burn %d, bystander_burn %d", m.Samples, m.ForeignSamples, total["parent_burn"], total["child_burn"], total["bystander_burn"])
	for _, fn := range []string{"parent_burn", "child_burn"} {
		if total[fn] < 200 {
			t.Errorf("%s: %d samples, want about 400", fn, total[fn])
		}
	}
	if total["bystander_burn"] != 0 {
		t.Errorf("bystander_burn: %d samples", total["bystander_burn"])
	}
}
