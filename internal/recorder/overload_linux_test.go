package recorder

import (
	"testing"

	"github.com/stax-profiler/stax/internal/replay"
	"github.com/stax-profiler/stax/internal/store"
)

func TestOverloadHysteresis(t *testing.T) {
	var o overload
	for _, c := range []struct {
		fill   float64
		behind bool
	}{{0.1, false}, {0.45, false}, {0.6, true}, {0.3, true}, {0.21, true}, {0.1, false}, {0.55, true}} {
		o.observe(c.fill)
		if o.behind != c.behind {
			t.Fatalf("fill %.2f: behind %v, want %v", c.fill, o.behind, c.behind)
		}
	}
	if o.periods.Load() != 2 {
		t.Errorf("%d periods behind, want 2", o.periods.Load())
	}
}

// fullSource is a replay whose rings always look full: the recorder is behind throughout.
type fullSource struct{ *replay.Source }

func (fullSource) Fill() float64 { return 0.9 }

// TestOverloadKeepsSamplesWithFramePointerStacks replays a real dwarf-mode recording as if
// the recorder were behind all along: every sample is kept, its stack taken from the
// kernel's frame-pointer chain instead of unwound, and the run says how many.
func TestOverloadKeepsSamplesWithFramePointerStacks(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	recs, pid := dwarfCapture(t, t.TempDir(), 200, 999)
	_, normalRun := replayed(t, recs, pid, "dwarf", 1, minParallel)

	r, err := Replay(fullSource{replay.NewSource(recs, 1000)}, store.Meta{Pid: pid, Command: []string{"replay"}, Event: "cpu-clock"},
		Options{Freq: 999, CallGraph: "dwarf", Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	r.Loop()
	run, err := store.Load(r.StorePath())
	if err != nil {
		t.Fatal(err)
	}
	if run.Meta.Samples != normalRun.Meta.Samples || run.Meta.Samples == 0 {
		t.Fatalf("%d samples kept behind, %d unwound in full", run.Meta.Samples, normalRun.Meta.Samples)
	}
	if run.Meta.OverloadSamples == 0 || run.Meta.OverloadSamples > run.Meta.Samples {
		t.Fatalf("%d samples counted as taken while behind, of %d", run.Meta.OverloadSamples, run.Meta.Samples)
	}
	// The program is built without frame pointers: its frame-pointer stacks are shorter
	// than its unwound ones.
	deepest := func(run *store.Run) (n int) {
		for _, st := range run.Profile.FuncStacks() {
			n = max(n, len(st))
		}
		return n
	}
	if deepest(normalRun) <= deepest(run) {
		t.Errorf("unwound stacks (%d frames at most) are no deeper than frame-pointer ones (%d)", deepest(normalRun), deepest(run))
	}
}
