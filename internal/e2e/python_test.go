package e2e

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// pyenvPython returns the newest CPython minor (e.g. "3.12") that pyenv installed, or "".
func pyenvPython(minor string) string {
	root := os.Getenv("PYENV_ROOT")
	if root == "" {
		home, _ := os.UserHomeDir()
		root = filepath.Join(home, ".pyenv")
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "versions", minor+".*"))
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		p := filepath.Join(dirs[i], "bin", "python"+minor)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
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
			py := pyenvPython(tc.minor)
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
					if strings.HasPrefix(f, "py::") {
						inner = f
					}
				}
				switch {
				case strings.HasPrefix(inner, "py::spin_a:"):
					a += n
				case strings.HasPrefix(inner, "py::spin_b:"):
					b += n
				default:
					continue
				}
				module := false
				for _, f := range frames {
					module = module || strings.HasPrefix(f, "py::<module>:")
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
			// --python: Python frames only (and the native leaf), <module> the callers' root.
			var fl api.Flame
			e.mustJSON(&fl, "flame", "--python", "-d", "2", "--threshold-pct", "0")
			var under uint64
			for _, m := range fl.Root.Children {
				if !strings.HasPrefix(m.Func, "py::<module>:") {
					continue
				}
				for _, c := range m.Children {
					if strings.HasPrefix(c.Func, "py::spin_a:") || strings.HasPrefix(c.Func, "py::spin_b:") {
						under += c.Total
					}
				}
			}
			if float64(under) < 0.95*float64(a+b) {
				roots, _, _ := e.run("flame", "--python", "-d", "3")
				t.Errorf("flame --python: %d of %d samples of spin_a/spin_b right under <module>\n%s", under, a+b, roots)
			}
		})
	}
	if ran == 0 {
		testutil.Require(t, testutil.EnvPerf, "neither CPython 3.12 nor 3.13 is installed by pyenv (pyenv versions)")
	}
}

// A CPython 3.12+ started without perf support names none of its Python functions:
// stax status names the option that does.
func TestPythonWithoutPerfSupportIsNamedInStatus(t *testing.T) {
	testutil.RequirePerf(t)
	py := pyenvPython("3.12")
	if py == "" {
		if py = pyenvPython("3.13"); py == "" {
			testutil.Require(t, testutil.EnvPerf, "neither CPython 3.12 nor 3.13 is installed by pyenv (pyenv versions)")
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
