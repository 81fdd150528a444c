package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

func buildPhases(t *testing.T) string {
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/phases.c")
	return testutil.CC(t, t.TempDir(), "phases", "gcc", append(cflags, src)...)
}

// A program alternating phase_a and phase_b (1 s of CPU each, three times): the timeline
// shows six phases in turn, and top over one phase's window names only its function.
func TestTimelineAndWindows(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildPhases(t)
	if out, errOut, code := e.run("record", "-q", "--", prog, "1000", "3"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	// 100 ms buckets: each phase (1 s of CPU, more of wall time on a busy machine) spans
	// ten or more.
	var tl api.Timeline
	e.mustJSON(&tl, "timeline", "--bucket", "100")
	var names []string
	for _, ph := range tl.Phases {
		names = append(names, ph.Func)
	}
	want := "phase_a phase_b phase_a phase_b phase_a phase_b"
	if got := strings.Join(names, " "); got != want {
		text, _, _ := e.run("timeline")
		t.Fatalf("phases = %q, want %q\n%s", got, want, text)
	}
	var total uint64
	for _, n := range tl.Total {
		total += n
	}
	if len(tl.Threads) != 1 || tl.Threads[0].Samples != total || total < 5000 {
		t.Errorf("threads %+v with %d samples: want one thread holding all of about 6,000", tl.Threads, total)
	}
	for i, ph := range tl.Phases {
		if ph.LastBucket-ph.FirstBucket < 3 {
			t.Fatalf("phase %d spans buckets %d..%d: too short to window", i, ph.FirstBucket, ph.LastBucket)
		}
		// One bucket in from each edge, so the window holds this phase alone.
		from := tl.StartSec + float64(ph.FirstBucket+1)*tl.BucketSec
		to := tl.StartSec + float64(ph.LastBucket)*tl.BucketSec
		var top api.Top
		e.mustJSON(&top, "top", "--from", fmt.Sprintf("%.4f", from), "--to", fmt.Sprintf("%.4f", to))
		other := "phase_b"
		if ph.Func == "phase_b" {
			other = "phase_a"
		}
		self, _, _ := row(top, ph.Func)
		if _, _, ok := row(top, other); ok {
			t.Errorf("phase %d (%s, %.2f-%.2f s): top also lists %s\n%+v", i, ph.Func, from, to, other, top.Rows)
		}
		if top.Window == nil || top.Samples == 0 || float64(self) < 0.9*float64(top.Samples) {
			t.Errorf("phase %d (%s, %.2f-%.2f s): %d of %d samples in it, window %+v", i, ph.Func, from, to, self, top.Samples, top.Window)
		}
	}
	// The text view draws one sparkline and lists the phases.
	text, _, _ := e.run("timeline", "--bucket", "250")
	if strings.Count(text, "phase_a") != 3 || strings.Count(text, "phase_b") != 3 || !strings.Contains(text, "█") {
		t.Errorf("timeline text:\n%s", text)
	}
	// Bad windows are usage errors that say what to write.
	for _, args := range [][]string{{"--from", "abc"}, {"--from", "3", "--to", "2"}} {
		if _, errOut, code := e.run(append([]string{"top"}, args...)...); code != 2 || !strings.Contains(errOut, "--") {
			t.Errorf("top %v: exit %d, %q; want a usage error", args, code, errOut)
		}
	}
	// -N counts back from the end: the last half second is phase_b's.
	var top api.Top
	e.mustJSON(&top, "top", "--from", "-0.5")
	if self, _, _ := row(top, "phase_b"); top.Samples == 0 || float64(self) < 0.9*float64(top.Samples) {
		t.Errorf("--from -0.5: phase_b has %d of %d samples", self, top.Samples)
	}
}

// Record, save, then open the file in another stax home after deleting the program and its
// jitdump: every query prints what it printed before saving.
func TestSaveOpenWithoutBinaries(t *testing.T) {
	testutil.RequirePerf(t)
	toy := filepath.Join(t.TempDir(), "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")
	native := buildRatio(t)
	cases := []struct {
		name     string
		argv     []string
		annotate []string
	}{
		{"jit", []string{toy, "-cpu", "1s"}, []string{"jitted_func2", "jitted_func1"}},
		{"native", []string{native, "300"}, []string{"work_b", "inner"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if out, errOut, code := e.run(append([]string{"record", "-q", "--"}, tc.argv...)...); code != 0 {
				t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
			}
			queries := [][]string{{"top", "-n", "15"}, {"flame", "-d", "6"}, {"threads"}, {"timeline"},
				{"top", "--from", "0.1", "--to", "+0.2"}}
			for _, fn := range tc.annotate {
				queries = append(queries, []string{"annotate", fn})
			}
			before := make([]string, len(queries))
			for i, q := range queries {
				out, errOut, code := e.run(q...)
				if code != 0 {
					t.Fatalf("%v: exit %d\n%s%s", q, code, out, errOut)
				}
				before[i] = out
			}
			var st api.Status
			e.mustJSON(&st, "status")
			file := filepath.Join(t.TempDir(), "run.stax")
			if out, errOut, code := e.run("save", file); code != 0 || !strings.Contains(out, "saved run") {
				t.Fatalf("save: exit %d\n%s%s", code, out, errOut)
			}
			if err := os.Remove(tc.argv[0]); err != nil {
				t.Fatal(err)
			}
			os.Remove("/tmp/jit-" + strconv.Itoa(st.Meta.Pid) + ".dump")

			other := &staxEnv{t: t, bin: e.bin, home: t.TempDir()}
			if out, errOut, code := other.run("open", file); code != 0 || !strings.Contains(out, "imported as run "+st.Meta.ID) {
				t.Fatalf("open: exit %d\n%s%s", code, out, errOut)
			}
			for i, q := range queries {
				out, errOut, code := other.run(q...)
				if code != 0 {
					t.Fatalf("after open, %v: exit %d\n%s%s", q, code, out, errOut)
				}
				if out != before[i] {
					t.Errorf("%v prints differently after save and open:\nbefore:\n%s\nafter:\n%s", q, before[i], out)
				}
			}
			// The file answers directly too (its header gives no reason for the choice: it
			// was named).
			if out, _, code := other.run("top", "--run", file, "-n", "15"); code != 0 || out != strings.Replace(before[0], " (stored, newest) ", " (stored) ", 1) {
				t.Errorf("top --run FILE: exit %d\n%s", code, out)
			}
		})
	}
}

// Two runs of the phases program with 1:1 and 1:3 work: compare puts phase_b's growth first
// and fails the gate; flame --diff marks it.
func TestCompareAndFlameDiff(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildPhases(t)
	base, cand := filepath.Join(t.TempDir(), "base.stax"), filepath.Join(t.TempDir(), "cand.stax")
	for _, r := range []struct {
		file string
		args []string
	}{{base, []string{"400", "1", "400"}}, {cand, []string{"400", "1", "1200"}}} {
		if out, errOut, code := e.run(append([]string{"record", "-q", "--", prog}, r.args...)...); code != 0 {
			t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
		}
		if out, errOut, code := e.run("save", r.file); code != 0 {
			t.Fatalf("save: exit %d\n%s%s", code, out, errOut)
		}
	}
	var cmp api.Compare
	e.mustJSON(&cmp, "compare", base, cand)
	if len(cmp.Rows) < 2 || cmp.Rows[0].Func != "phase_b" && cmp.Rows[0].Func != "phase_a" {
		t.Fatalf("compare rows: %+v", cmp.Rows)
	}
	for _, r := range cmp.Rows[:2] {
		// 50% -> 75% for phase_b, 50% -> 25% for phase_a.
		want := 25.0
		if r.Func == "phase_a" {
			want = -25
		}
		n := min(cmp.Base.Samples, cmp.Cand.Samples)
		if tol := 2 * shareTolerance(0.5, n); r.DeltaSelfPct < want-tol || r.DeltaSelfPct > want+tol {
			t.Errorf("%s: self share changed %+.2f points, want %+.0f ± %.1f", r.Func, r.DeltaSelfPct, want, tol)
		}
	}
	if cmp.SamplesDeltaPct < 50 {
		t.Errorf("cand did 1.6 s of work against 0.8 s, yet samples changed %+.1f%%", cmp.SamplesDeltaPct)
	}
	out, _, code := e.run("compare", base, cand, "--fail-function-pct", "10")
	if code != 6 || !strings.Contains(out, "FAIL: phase_b") {
		t.Errorf("compare --fail-function-pct 10: exit %d, want 6 naming phase_b\n%s", code, out)
	}
	if _, _, code := e.run("compare", base, base, "--fail-function-pct", "1", "--fail-total-pct", "1"); code != 0 {
		t.Errorf("a run against itself failed the gate: exit %d", code)
	}
	flame, _, _ := e.run("flame", "--run", cand, "--diff", base)
	if !strings.Contains(flame, "phase_b") || !strings.Contains(flame, "▲") || !strings.Contains(flame, "▼") {
		t.Errorf("flame --diff marks no growth and shrinkage:\n%s", flame)
	}
}
