package e2e

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

func buildITTJIT(t *testing.T) string {
	src := filepath.Join(testutil.RepoRoot(t), "collector/testdata/ittjit.c")
	return testutil.CC(t, t.TempDir(), "ittjit", "gcc", "-O1", "-fno-omit-frame-pointer", src, "-ldl")
}

// TestJITProfilingAPINamesWithNoChange records a JIT that only speaks Intel's JIT Profiling
// API (through a stub that loads $INTEL_JIT_PROFILER64): stax sets the variable to its
// collector, and every method, split region, inline level and reused address is named.
func TestJITProfilingAPINamesWithNoChange(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildITTJIT(t)
	if out, errOut, code := e.run("record", "-q", "--", prog, "150ms"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	defer removeJITFiles(t, e)
	var top api.Top
	e.mustJSON(&top, "top", "-n", "40")
	for _, fn := range []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"} {
		if self, _, ok := row(top, fn); !ok || self < 30 {
			t.Errorf("%s: %d samples, want a named [jit] row with samples", fn, self)
		}
	}
	gammaRows := 0
	for _, r := range top.Rows {
		if r.Func == "gamma" {
			gammaRows++
		}
		if (r.Func == "delta_inl1" || r.Func == "delta_inl2") && !r.Inlined {
			t.Errorf("%s is not marked inlined", r.Func)
		}
	}
	if gammaRows != 1 {
		t.Errorf("split method gamma shows as %d rows, want 1", gammaRows)
	}
	// gamma's first region jumps to its second, each a loop of the same work: named as
	// one method, the second region's lines (33, 34) hold about half of gamma's samples.
	// (Against the other functions' samples, a unit of work took from 82 to 180 samples
	// on a machine busy now and then: the regions run in turns, so they share its load.)
	var byLine api.Top
	e.mustJSON(&byLine, "top", "-n", "200", "--by", "line")
	var first, second uint64
	for _, r := range byLine.Rows {
		switch {
		case r.Func != "gamma":
		case r.Line >= 33:
			second += r.Self
		case r.Line >= 30:
			first += r.Self
		}
	}
	share := 0.0
	if first+second > 0 {
		share = float64(second) / float64(first+second)
	}
	t.Logf("gamma's regions: lines 30-32 %d samples, lines 33-34 %d", first, second)
	if tol := shareTolerance(0.5, first+second); first+second < 30 || math.Abs(share-0.5)*100 > tol {
		t.Errorf("gamma's regions: lines 30-32 %d samples, lines 33-34 %d (%.1f%%): want about half in each (within %.1f points): the second region is not named gamma\n%+v",
			first, second, share*100, tol, byLine.Rows)
	}
	var fl api.Flame
	e.mustJSON(&fl, "flame", "-d", "40", "--threshold-pct", "0")
	if !hasPath(fl.Root, []string{"delta", "delta_inl1", "delta_inl2"}) {
		t.Errorf("flame lacks delta -> delta_inl1 -> delta_inl2")
	}
	txt, _, _ := e.run("top", "-n", "12")
	t.Logf("\n%s", txt)
	// Line tables from the API's LineNumberInfo reach annotate.
	ann, errOut, code := e.run("annotate", "alpha")
	if code != 0 || !strings.Contains(ann, "ittjit.js:") {
		t.Errorf("annotate alpha: exit %d, no ittjit.js lines:\n%s%s", code, ann, errOut)
	}
}

func TestJITProfilingAPIOptOut(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildITTJIT(t)
	for _, args := range [][]string{
		{"record", "-q", "--no-jit-api", "--", prog, "20000000"},
		{"record", "-q", "--", "env", "INTEL_JIT_PROFILER64=/nonexistent/lib.so", prog, "20000000"},
	} {
		out, errOut, code := e.run(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		if strings.Contains(out, "initialize 1") {
			t.Errorf("%v: the collector was loaded although the user opted out:\n%s", args, out)
		}
		var st api.Status
		e.mustJSON(&st, "status")
		if len(st.JIT) != 0 {
			t.Errorf("%v: JIT sources found without the collector: %+v", args, st.JIT)
		}
	}
}
