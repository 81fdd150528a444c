package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// noPerfPython skips a test that needs CPython 3.12 or 3.13: Debian 12, which CI runs on,
// packages only 3.11, so it cannot be required there.
func noPerfPython(t *testing.T) {
	t.Helper()
	testutil.RequirePerf(t)
	t.Skip("neither CPython 3.12 nor 3.13 is installed (pyenv versions; Debian 12 packages 3.11 only)")
}

// pyFrame returns NAME of a Python function's frame in folded stacks, NAME (FILE)_[j], or "".
func pyFrame(f string) string {
	name, _, ok := strings.Cut(strings.TrimSuffix(f, ")_[j]"), " (")
	if !ok || !strings.HasSuffix(f, ".py)_[j]") {
		return ""
	}
	return name
}

// CPython 3.12 (-X perf: a perf map) and 3.13 (-X perf_jit: a jitdump) put a trampoline
// with no frame pointer in front of each Python function. Stacks must go through them:
// spin_b twice spin_a, nearly every sample under them reaches <module> and _start, and
// almost no stack ends for want of call-frame information.
func TestPythonPerfStacksReachStart(t *testing.T) {
	testutil.RequirePerf(t)
	script := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/spin.py")
	ran := 0
	for _, tc := range []struct{ minor, opt string }{{"3.12", "perf"}, {"3.13", "perf_jit"}} {
		t.Run(tc.minor, func(t *testing.T) {
			py := testutil.PyenvPython(tc.minor)
			if py == "" {
				t.Skipf("no CPython %s installed by pyenv", tc.minor)
			}
			ran++
			e := newEnv(t)
			if out, errOut, code := e.run("record", "-q", "--", py, "-X", tc.opt, script, "2"); code != 0 {
				t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
			}
			folded, errOut, code := e.run("export", "--format", "folded", "-o", "-")
			if code != 0 {
				t.Fatalf("export: exit %d\n%s", code, errOut)
			}
			var a, b, whole, all uint64
			var bad []string
			for _, line := range strings.Split(strings.TrimSpace(folded), "\n") {
				i := strings.LastIndexByte(line, ' ')
				n, err := strconv.ParseUint(line[i+1:], 10, 64)
				if err != nil {
					t.Fatalf("folded line %q", line)
				}
				frames := strings.Split(line[:i], ";")
				all += n
				// The innermost Python function of the stack.
				inner := ""
				for _, f := range frames {
					if n := pyFrame(f); n != "" {
						inner = n
					}
				}
				switch inner {
				case "spin_a":
					a += n
				case "spin_b":
					b += n
				default:
					continue
				}
				module := false
				for _, f := range frames {
					module = module || pyFrame(f) == "<module>"
				}
				if module && frames[0] == "_start" {
					whole += n
				} else if len(bad) < 5 {
					bad = append(bad, line)
				}
			}
			var st api.Status
			e.mustJSON(&st, "status")
			var ends uint64
			for _, n := range st.Meta.StackEnds {
				ends += n
			}
			t.Logf("%d samples; spin_a %d, spin_b %d; %d of them through <module> to _start; stack ends %v; jit frames %v",
				all, a, b, whole, st.Meta.StackEnds, st.Meta.JITFrames)
			if a+b < 300 {
				t.Fatalf("only %d samples under spin_a and spin_b", a+b)
			}
			share := float64(b) * 100 / float64(a+b)
			if tol := shareTolerance(2.0/3, a+b); share < 200.0/3-tol || share > 200.0/3+tol {
				t.Errorf("spin_b has %.1f%% of spin_a+spin_b, want 66.7%% ± %.1f", share, tol)
			}
			if float64(whole) < 0.95*float64(a+b) {
				t.Errorf("%d of %d samples under spin_a/spin_b reach <module> and _start; e.g.\n%s", whole, a+b, strings.Join(bad, "\n"))
			}
			if noCFI := st.Meta.StackEnds["no_cfi"]; noCFI*100 > ends {
				t.Errorf("%d of %d stacks ended no_cfi", noCFI, ends)
			}
			if st.Meta.JITFrames["cpython_trampoline"] == 0 {
				t.Errorf("no CPython trampoline frames counted: %v", st.Meta.JITFrames)
			}
			// --python: Python frames only (and the native leaf), <module> the callers' root;
			// each named NAME (FILE), of kind python.
			var fl api.Flame
			e.mustJSON(&fl, "flame", "--python", "-d", "2", "--threshold-pct", "0")
			var under uint64
			for _, m := range fl.Root.Children {
				if m.Func != "<module> ("+script+")" || m.Kind != agg.KindPython {
					continue
				}
				for _, c := range m.Children {
					if (c.Func == "spin_a ("+script+")" || c.Func == "spin_b ("+script+")") && c.Kind == agg.KindPython {
						under += c.Total
					}
				}
			}
			if float64(under) < 0.95*float64(a+b) {
				roots, _, _ := e.run("flame", "--python", "-d", "3")
				t.Errorf("flame --python: %d of %d samples of spin_a/spin_b right under <module>\n%s", under, a+b, roots)
			}
			// top --python: the Python functions, and native leaves only below them.
			var top api.Top
			e.mustJSON(&top, "top", "--python", "-n", "1000")
			var pyTotal uint64
			for _, r := range top.Rows {
				if r.Kind == agg.KindPython {
					pyTotal += r.Total
					if r.File == "" || !strings.HasSuffix(r.Func, " ("+r.File+")") || r.Image != "[jit]" {
						t.Errorf("top --python: %s has file %q, image %q", r.Func, r.File, r.Image)
					}
				} else if r.Total != r.Self {
					t.Errorf("top --python: %s (%s) has callees (total %d, self %d): only Python frames call", r.Func, r.Kind, r.Total, r.Self)
				}
			}
			if pyTotal == 0 {
				t.Errorf("top --python: no Python function: %+v", top.Rows)
			}
			// callers --python spin_b: <module> calls it.
			var cs api.Callers
			e.mustJSON(&cs, "callers", "--python", "^spin_b ")
			if len(cs.Functions) != 1 || len(cs.Functions[0].Rows) == 0 || cs.Functions[0].Rows[0].Func != "<module> ("+script+")" ||
				float64(cs.Functions[0].Rows[0].Total) < 0.95*float64(cs.Functions[0].Total) {
				out, _, _ := e.run("callers", "--python", "^spin_b ")
				t.Errorf("callers --python spin_b: <module> is not its caller in 95%% of its samples\n%s", out)
			}
		})
	}
	if ran == 0 {
		noPerfPython(t)
	}
}

// A CPython 3.12+ started without perf support names none of its Python functions:
// stax status names the option that does.
func TestPythonWithoutPerfSupportIsNamedInStatus(t *testing.T) {
	testutil.RequirePerf(t)
	py := testutil.PyenvPython("3.12")
	if py == "" {
		if py = testutil.PyenvPython("3.13"); py == "" {
			noPerfPython(t)
		}
	}
	script := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/spin.py")
	e := newEnv(t)
	e.env = append(e.env, "PYTHONPERFSUPPORT=")
	if out, errOut, code := e.run("record", "-q", "--", py, script, "0.5"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := e.run("status")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, errOut)
	}
	if want := "start it with `python -X perf` (3.12+) or `-X perf_jit` (3.13+), or PYTHONPERFSUPPORT=1"; !strings.Contains(out, want) {
		t.Errorf("status does not name the option (%q):\n%s", want, out)
	}
}

// A CPython 3.12+ started with perf support, attached to: its Python functions are named
// from the perf map it has been writing, as any perf-map runtime's, kind python.
func TestPythonPerfAttached(t *testing.T) {
	testutil.RequirePerf(t)
	py := testutil.PyenvPython("3.12")
	if py == "" {
		if py = testutil.PyenvPython("3.13"); py == "" {
			noPerfPython(t)
		}
	}
	script := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/spin.py")
	// Ten minutes of CPU time: stopped by the test.
	target := exec.Command(py, "-X", "perf", script, "600")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Process.Kill(); target.Wait() })
	pid := target.Process.Pid
	t.Cleanup(func() { os.Remove("/tmp/perf-" + strconv.Itoa(pid) + ".map") })
	e := newEnv(t)
	e.attachUntil(t, pid, 500)
	var top api.Top
	e.mustJSON(&top, "top", "--python", "--sort", "total", "-n", "50")
	got := map[string]uint64{}
	for _, r := range top.Rows {
		if r.Kind == agg.KindPython {
			got[r.Func] = r.Total
		}
	}
	a, b := got["spin_a ("+script+")"], got["spin_b ("+script+")"]
	t.Logf("%d samples; spin_a %d, spin_b %d; Python functions %v", top.Samples, a, b, got)
	if a+b < top.Samples/2 || a == 0 || b == 0 {
		text, _, _ := e.run("top", "-n", "10")
		t.Errorf("attached: spin_a %d and spin_b %d of %d samples named\n%s\n%s", a, b, top.Samples, text, e.diagnosis())
	}
}
