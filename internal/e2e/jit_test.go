package e2e

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// removeJITFiles deletes what a recorded JIT left in /tmp (its files, not stax's).
func removeJITFiles(t *testing.T, e *staxEnv) {
	t.Helper()
	var st api.Status
	e.mustJSON(&st, "status")
	for _, p := range st.Processes {
		os.Remove(filepath.Join("/tmp", "jit-"+itoa(p.Pid)+".dump"))
		os.Remove(filepath.Join("/tmp", "perf-"+itoa(p.Pid)+".map"))
	}
	os.Remove(filepath.Join("/tmp", "jit-"+itoa(st.Meta.Pid)+".dump"))
	os.Remove(filepath.Join("/tmp", "perf-"+itoa(st.Meta.Pid)+".map"))
}

// userSamples returns how many of the samples top selects (args: a filter, such as --comm)
// were taken in user code: their leaf is not a kernel function. A share meant for a
// program's own code is taken of these. The kernel's samples are its system calls and, on a
// busy machine, the scheduler's work each time the program is switched back in (a CPU-clock
// sample that comes due meanwhile is taken where it enables interrupts again): their share
// grows with the machine's load.
func (e *staxEnv) userSamples(args ...string) uint64 {
	e.t.Helper()
	const all = 1000000
	var top api.Top
	e.mustJSON(&top, append([]string{"top", "-n", itoa(all)}, args...)...)
	if len(top.Rows) >= all {
		e.t.Fatalf("top lists %d functions or more: the kernel's cannot all be counted", all)
	}
	var n uint64
	for _, r := range top.Rows {
		if r.Kind != agg.KindKernel {
			n += r.Self
		}
	}
	return n
}

func share(top api.Top, a, b string) (na, nb uint64, pctB float64) {
	na, _, _ = row(top, a)
	nb, _, _ = row(top, b)
	if na+nb > 0 {
		pctB = float64(nb) * 100 / float64(na+nb)
	}
	return
}

func listNames(t *testing.T, dir string) map[string]bool {
	ents, _ := os.ReadDir(dir)
	m := map[string]bool{}
	for _, e := range ents {
		m[e.Name()] = true
	}
	return m
}

func TestToyJITNamedLiveAndAfter(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	dir := t.TempDir()
	toy := filepath.Join(dir, "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")
	work := t.TempDir()
	tmpBefore := listNames(t, "/tmp")

	// 2 s of CPU time in 1:2 rounds: about 2,000 samples; the JIT then waits, so the run is
	// still live when it is asked.
	rec := e.startUntilReady(work, toy, "-cpu", "2s", "-wait")
	if out, errOut, code := e.run("wait", "--until-symbol", "jitted_func2", "--timeout-ms", "60000"); code != 0 {
		t.Fatalf("wait: exit %d\n%s%s\n%s", code, out, errOut, rec.out.String())
	}
	var live api.Top
	e.mustJSON(&live, "top", "-n", "10")
	if !live.Live {
		t.Errorf("top is not live during the run")
	}
	for _, fn := range []string{"jitted_func1", "jitted_func2"} {
		if _, _, ok := row(live, fn); !ok {
			t.Errorf("live top lacks %s: %+v", fn, live.Rows)
		}
	}
	rec.finish(t)
	var top api.Top
	e.mustJSON(&top, "top", "-n", "10", "--sort", "self")
	a, b, pctB := share(top, "jitted_func1", "jitted_func2")
	tol := shareTolerance(2.0/3, a+b)
	t.Logf("jitted_func1 %d, jitted_func2 %d samples: func2 share %.1f%% (want 66.7 ± %.1f)", a, b, pctB, tol)
	if a+b < 1000 || math.Abs(pctB-200.0/3) > tol {
		t.Errorf("jitted_func2 share %.1f%% of %d samples, want 66.7 ± %.1f", pctB, a+b, tol)
	}
	for _, r := range top.Rows {
		if strings.HasPrefix(r.Func, "jitted_func") && r.Image != "[jit]" {
			t.Errorf("%s has image %q, want [jit]", r.Func, r.Image)
		}
	}
	var fl api.Flame
	e.mustJSON(&fl, "flame", "-d", "30", "--threshold-pct", "0")
	if !hasPath(fl.Root, []string{"main.callJIT.abi0", "jitted_func2"}) {
		t.Errorf("flame lacks callJIT -> jitted_func2")
	}
	removeJITFiles(t, e)
	// stax leaves nothing behind: no jitted-*.so, nothing new where the JIT ran or in /tmp.
	if names := listNames(t, work); len(names) != 0 {
		t.Errorf("files left in the working directory: %v", names)
	}
	for name := range listNames(t, "/tmp") {
		if !tmpBefore[name] && (strings.HasSuffix(name, ".so") || strings.HasPrefix(name, "jitted-")) {
			t.Errorf("file left in /tmp: %s", name)
		}
	}
}

func buildCJIT(t *testing.T) string {
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/cjit.c")
	return testutil.CC(t, t.TempDir(), "cjit", "gcc", "-O1", "-fno-omit-frame-pointer", src)
}

func TestReusedJITAddressGetsBothNames(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildCJIT(t)
	// 0.5 s of CPU time for alpha, then 1 s for beta: about 1,500 samples at one address.
	if out, errOut, code := e.run("record", "-q", "--", prog, "reuse", "500"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	defer removeJITFiles(t, e)
	var top api.Top
	e.mustJSON(&top, "top", "-n", "10")
	a, b, pctB := share(top, "reuse_alpha", "reuse_beta")
	tol := shareTolerance(2.0/3, a+b)
	t.Logf("reuse_alpha %d, reuse_beta %d samples at one address: beta share %.1f%% (want 66.7 ± %.1f)", a, b, pctB, tol)
	if a+b < 750 || math.Abs(pctB-200.0/3) > tol {
		t.Errorf("reuse_beta share %.1f%% of %d samples, want 66.7 ± %.1f: samples were not split by time", pctB, a+b, tol)
	}
	var st api.Status
	e.mustJSON(&st, "status")
	if len(st.JIT) != 1 || !strings.HasPrefix(st.JIT[0].Path, "/tmp/jit-") || st.JIT[0].Functions != 2 {
		t.Errorf("want one /tmp jitdump (never mapped) with 2 functions, got %+v", st.JIT)
	}
}

func TestPerfMapWrittenAtExit(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildCJIT(t)
	if out, errOut, code := e.run("record", "-q", "--", prog, "mapexit", "300"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	defer removeJITFiles(t, e)
	var top api.Top
	e.mustJSON(&top, "top", "-n", "5")
	if self, _, ok := row(top, "mapped_gamma"); !ok || self < 100 {
		t.Errorf("mapped_gamma not named from the perf map written at exit: %+v", top.Rows)
	}
}

func recordNode(t *testing.T, e *staxEnv, flags ...string) api.Status {
	t.Helper()
	node := testutil.RequireTool(t, "node")
	work := t.TempDir()
	src, _ := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/bench.js"))
	os.WriteFile(filepath.Join(work, "bench.js"), src, 0o644)
	args := append([]string{"record", "-q", "--", node}, flags...)
	rec := e.cmd(append(args, "bench.js", "3000")...)
	rec.Dir = work
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("record node: %v\n%s", err, out)
	}
	var st api.Status
	e.mustJSON(&st, "status")
	return st
}

func checkNodeNames(t *testing.T, e *staxEnv, st api.Status) {
	t.Helper()
	var top api.Top
	e.mustJSON(&top, "top", "-n", "10")
	found := false
	for _, r := range top.Rows {
		if strings.HasPrefix(r.Func, "JS:") && strings.Contains(r.Func, "fib") && r.Image == "[jit]" {
			found = true
		}
	}
	if !found {
		t.Errorf("no JS:*fib row in top: %+v", top.Rows)
	}
	var fl api.Flame
	e.mustJSON(&fl, "flame", "-d", "60", "--threshold-pct", "1")
	if !flameHas(fl.Root, func(f string) bool { return strings.Contains(f, "fib") }) {
		t.Errorf("flame lacks fib")
	}
	unnamed := 0.0
	if st.JITSamples > 0 {
		unnamed = float64(st.JITUnnamed) * 100 / float64(st.JITSamples)
	}
	t.Logf("JIT samples %d, unnamed %d (%.2f%%)", st.JITSamples, st.JITUnnamed, unnamed)
	if st.JITSamples < 500 || unnamed >= 2 {
		t.Errorf("JIT samples %d with %.2f%% unnamed; want >= 500 and under 2%%", st.JITSamples, unnamed)
	}
}

func flameHas(n *api.FlameNode, match func(string) bool) bool {
	if n == nil {
		return false
	}
	if match(n.Func) {
		return true
	}
	for _, c := range n.Children {
		if flameHas(c, match) {
			return true
		}
	}
	return false
}

func TestNodePerfProfJitdump(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	st := recordNode(t, e, "--perf-prof", "--interpreted-frames-native-stack")
	defer removeJITFiles(t, e)
	if len(st.JIT) == 0 || st.JIT[0].Kind != "jitdump" {
		t.Errorf("want a jitdump source, got %+v", st.JIT)
	}
	checkNodeNames(t, e, st)
	// annotate shows the hot JS function's machine code with its JS source lines.
	text, errOut, code := e.run("annotate", "fib")
	if code != 0 {
		t.Fatalf("annotate fib: exit %d: %s", code, errOut)
	}
	if !strings.Contains(text, "bench.js:3") || !strings.Contains(text, "function fib(n)") {
		t.Errorf("annotate fib lacks the JS source lines:\n%s", text)
	}
	if !regexp.MustCompile(`\b(mov|push|cmp)\b`).MatchString(text) {
		t.Errorf("annotate fib shows no machine code:\n%s", text)
	}
}

func TestNodePerfBasicProfMap(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	st := recordNode(t, e, "--perf-basic-prof")
	defer removeJITFiles(t, e)
	if len(st.JIT) == 0 || st.JIT[0].Kind != "perfmap" {
		t.Errorf("want a perf map source, got %+v", st.JIT)
	}
	checkNodeNames(t, e, st)
}
