package e2e

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// callRow returns the row of fn among a function's callers or callees.
func callRow(f api.CallFunction, fn string) (api.CallRow, bool) {
	for _, r := range f.Rows {
		if r.Func == fn {
			return r, true
		}
	}
	return api.CallRow{}, false
}

// hotLeafCallers asks stax callers hot_leaf (with args) and returns hot_leaf's answer.
func (e *staxEnv) hotLeafCallers(args ...string) (api.Callers, api.CallFunction) {
	e.t.Helper()
	var c api.Callers
	e.mustJSON(&c, append([]string{"callers", "^hot_leaf$"}, args...)...)
	if c.Direction != api.DirCallers || len(c.Functions) != 1 || c.Functions[0].Func != "hot_leaf" {
		e.t.Fatalf("callers of hot_leaf %v: %+v", args, c)
	}
	return c, c.Functions[0]
}

// checkSplit checks that b holds three quarters of a+b, within the tolerance of their count.
func checkSplit(t *testing.T, what string, a, b uint64) {
	t.Helper()
	if a+b < 1000 {
		t.Fatalf("%s: too few samples to judge: %d and %d (about 2,000 expected from 2 s of CPU time)", what, a, b)
	}
	share := float64(b) * 100 / float64(a+b)
	tol := shareTolerance(0.75, a+b)
	t.Logf("%s: path_a %d, path_b %d: path_b %.1f%% (want 75 ± %.1f)", what, a, b, share, tol)
	if math.Abs(share-75) > tol {
		t.Errorf("%s: path_b has %.1f%% of hot_leaf's samples, want 75 ± %.1f", what, share, tol)
	}
}

// TestCallersAndTransforms: hot_leaf does one part of its work under path_a and three under
// path_b. stax callers and the inverted flame split it 1:3, live and stored; the stack
// transforms move or drop exactly the samples they name, in every view.
func TestCallersAndTransforms(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/callers.c")
	prog := testutil.CC(t, t.TempDir(), "callers", "gcc", append(cflags, src)...)

	// 0.5 s of CPU under path_a and 1.5 s under path_b: about 2,000 samples at 999 Hz.
	rec := e.startUntilReady(t.TempDir(), prog, "500", "wait")
	live, f := e.hotLeafCallers()
	if live.State != api.StateLive {
		t.Errorf("callers of the running program: state %q, want live", live.State)
	}
	a, _ := callRow(f, "path_a")
	b, _ := callRow(f, "path_b")
	checkSplit(t, "live callers", a.Total, b.Total)
	var liveFlame api.Flame
	e.mustJSON(&liveFlame, "flame", "--inverted")
	if !liveFlame.Inverted || liveFlame.State != api.StateLive {
		t.Errorf("live inverted flame: inverted %v, state %q", liveFlame.Inverted, liveFlame.State)
	}
	rec.finish(t)

	// The stored run: every figure below comes from it, so they must agree exactly.
	c, f := e.hotLeafCallers()
	if c.State != api.StateStored {
		t.Errorf("callers after the run: state %q, want stored", c.State)
	}
	a, okA := callRow(f, "path_a")
	b, okB := callRow(f, "path_b")
	if !okA || !okB {
		t.Fatalf("hot_leaf's callers lack path_a or path_b: %+v", f.Rows)
	}
	if _, ok := callRow(f, "hot_leaf"); ok {
		t.Errorf("hot_leaf is its own caller: %+v", f.Rows)
	}
	checkSplit(t, "callers", a.Total, b.Total)
	sum := f.Outermost
	for _, r := range f.Rows {
		sum += r.Total
	}
	if sum != f.Total || math.Abs(a.Pct+b.Pct-float64(a.Total+b.Total)*100/float64(f.Total)) > 1e-9 {
		t.Errorf("hot_leaf's rows add up to %d of its %d samples: %+v", sum, f.Total, f.Rows)
	}
	text, _, _ := e.run("callers", "hot_leaf")
	if !strings.Contains(text, "path_b  [") || !strings.Contains(text, "CALLER") {
		t.Errorf("text callers lack path_b:\n%s", text)
	}
	var callees api.Callers
	e.mustJSON(&callees, "callees", "^main$")
	if len(callees.Functions) != 1 {
		t.Fatalf("callees of main: %+v", callees)
	}
	ca, _ := callRow(callees.Functions[0], "path_a")
	cb, _ := callRow(callees.Functions[0], "path_b")
	checkSplit(t, "callees of main", ca.Total, cb.Total)

	// Inverted: hot_leaf, where most samples land, at the root, its callers below it. Its
	// samples there are those it was running itself (the callers' self).
	var inv api.Flame
	e.mustJSON(&inv, "flame", "--inverted", "--threshold-pct", "0", "-d", "0")
	if !inv.Inverted || inv.Root == nil || len(inv.Root.Children) == 0 || inv.Root.Children[0].Func != "hot_leaf" {
		t.Fatalf("inverted flame: hot_leaf is not its hottest root: %+v", inv.Root)
	}
	leaf := inv.Root.Children[0]
	ia, ib := child(leaf, "path_a"), child(leaf, "path_b")
	if ia == nil || ib == nil || ia.Total != a.Self || ib.Total != b.Self || child(ib, "main") == nil {
		t.Fatalf("inverted flame under hot_leaf: %+v; want path_a %d, path_b %d (callers' self), main under them", leaf.Children, a.Self, b.Self)
	}
	checkSplit(t, "inverted flame", ia.Total, ib.Total)

	// --focus path_a: only the samples through path_a, rooted there, in top, flame, the
	// timeline and export.
	var top api.Top
	e.mustJSON(&top, "top", "-n", "100", "--focus", "^path_a$")
	_, pathTotal, ok := row(top, "path_a")
	_, leafTotal, _ := row(top, "hot_leaf")
	if !ok || pathTotal != top.Samples || leafTotal != a.Total || top.Transform == nil || top.Transform.Focus != "^path_a$" {
		t.Errorf("top --focus path_a: %d samples, path_a %d, hot_leaf %d (want %d, callers' path_a row), transform %+v",
			top.Samples, pathTotal, leafTotal, a.Total, top.Transform)
	}
	for _, gone := range []string{"path_b", "main"} {
		if _, _, ok := row(top, gone); ok {
			t.Errorf("top --focus path_a lists %s", gone)
		}
	}
	var fl api.Flame
	e.mustJSON(&fl, "flame", "--focus", "^path_a$", "--threshold-pct", "0")
	if fl.Samples != top.Samples || len(fl.Root.Children) != 1 || fl.Root.Children[0].Func != "path_a" || fl.Root.Children[0].Total != top.Samples {
		t.Errorf("flame --focus path_a: %d samples, top level %+v; want path_a alone with %d", fl.Samples, fl.Root.Children, top.Samples)
	}
	var tl api.Timeline
	e.mustJSON(&tl, "timeline", "--focus", "^path_a$")
	var inTimeline uint64
	for _, n := range tl.Total {
		inTimeline += n
	}
	if inTimeline != top.Samples {
		t.Errorf("timeline --focus path_a counts %d samples, top %d", inTimeline, top.Samples)
	}
	folded, errOut, code := e.run("export", "--format", "folded", "-o", "-", "--focus", "^path_a$")
	if code != 0 {
		t.Fatalf("export --focus: exit %d: %s", code, errOut)
	}
	var exported uint64
	for _, line := range strings.Split(strings.TrimSpace(folded), "\n") {
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseUint(line[i+1:], 10, 64)
		if err != nil || !strings.HasPrefix(line, "path_a") {
			t.Errorf("export --focus path_a wrote %q", line)
		}
		exported += n
	}
	if exported != top.Samples {
		t.Errorf("export --focus path_a wrote %d samples, top counts %d", exported, top.Samples)
	}

	// --hide path_b: its samples go to main, which called it.
	_, hidden := e.hotLeafCallers("--hide", "^path_b$")
	ha, _ := callRow(hidden, "path_a")
	hm, okM := callRow(hidden, "main")
	if _, ok := callRow(hidden, "path_b"); ok || !okM || hm.Total != b.Total || ha.Total != a.Total || hidden.Total != f.Total {
		t.Errorf("callers of hot_leaf with path_b hidden: %+v; want main %d, path_a %d", hidden.Rows, b.Total, a.Total)
	}
	var hiddenTop api.Top
	e.mustJSON(&hiddenTop, "top", "-n", "100", "--hide", "^path_b$")
	if _, _, ok := row(hiddenTop, "path_b"); ok || hiddenTop.Samples != c.Samples {
		t.Errorf("top --hide path_b: %d samples (want all %d), rows %+v", hiddenTop.Samples, c.Samples, hiddenTop.Rows)
	}

	// --ignore hot_leaf: its samples are gone from every view; where it held them all,
	// the selection matches nothing (exit 5).
	if c.Samples == f.Total {
		if _, errOut, code := e.run("top", "-n", "100", "--ignore", "^hot_leaf$"); code != 5 || !strings.Contains(errOut, "match --ignore") {
			t.Errorf("top --ignore hot_leaf of a run whose samples are all in it: exit %d, %q; want 5", code, errOut)
		}
	} else {
		var ignored api.Top
		e.mustJSON(&ignored, "top", "-n", "100", "--ignore", "^hot_leaf$")
		if _, _, ok := row(ignored, "hot_leaf"); ok || ignored.Samples != c.Samples-f.Total {
			t.Errorf("top --ignore hot_leaf: %d samples, want %d - %d; rows %+v", ignored.Samples, c.Samples, f.Total, ignored.Rows)
		}
	}
	if _, errOut, code := e.run("callers", "^hot_leaf$", "--ignore", "^hot_leaf$"); code != 5 ||
		!strings.Contains(errOut, "no sampled function matches") && !strings.Contains(errOut, "match --ignore") {
		t.Errorf("callers of an ignored function: exit %d, %q; want 5", code, errOut)
	}
}

// child returns n's child named fn.
func child(n *api.FlameNode, fn string) *api.FlameNode {
	for _, c := range n.Children {
		if c.Func == fn {
			return c
		}
	}
	return nil
}
