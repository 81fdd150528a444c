package e2e

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// A real JVM that writes its perf map only at exit (-XX:+DumpPerfMapAtExit): its compiled
// methods are named at their 1:2 work, and after the JVM is gone stax annotate shows the
// method's code versions, every sample of the method accounted for in them, and none of
// its sampled instructions is made of the zeros a page held before the method was compiled
// into it.
func TestJVMPerfMapAtExit(t *testing.T) {
	testutil.RequirePerf(t)
	for _, tool := range []string{"java", "javac"} {
		testutil.RequireTool(t, tool)
	}
	dir := t.TempDir()
	testutil.Run(t, "", "javac", "-d", dir, filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/jvm/Hot.java"))
	e := newEnv(t)
	if out, errOut, code := e.run("record", "-q", "--", "java", "-XX:+UnlockDiagnosticVMOptions", "-XX:+DumpPerfMapAtExit",
		"-XX:+PreserveFramePointer", "-cp", dir, "Hot", "1500"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "40")
	alpha, _, okA := row(top, "long Hot.alpha(long)")
	beta, _, okB := row(top, "long Hot.beta(long)")
	if !okA || !okB || alpha < 100 {
		t.Fatalf("Hot.alpha %d and Hot.beta %d samples: not named\n%s", alpha, beta, e.diagnosis())
	}
	share := float64(beta) / float64(alpha+beta)
	if tol := shareTolerance(2.0/3, alpha+beta) / 100; math.Abs(share-2.0/3) > tol+0.05 {
		t.Errorf("beta's share of the two is %.3f, want 2/3 ± %.3f (alpha %d, beta %d)", share, tol+0.05, alpha, beta)
	}
	var st api.Status
	e.mustJSON(&st, "status")
	if st.JITSamples == 0 || st.JITUnnamed*50 > st.JITSamples {
		t.Errorf("%d of %d JIT samples unnamed: want under 2%%", st.JITUnnamed, st.JITSamples)
	}

	var res api.Annotate
	e.mustJSON(&res, "annotate", "--json", "Hot.beta")
	if res.Annotation == nil || len(res.Versions) == 0 {
		t.Fatalf("annotate Hot.beta after the JVM exited: no code\n%+v", res)
	}
	var sum, hottest uint64
	for _, v := range res.Versions {
		if v.Error != "" {
			t.Errorf("version %d: %s", v.Index, v.Error)
		}
		sum += v.Samples
		hottest = max(hottest, v.Samples)
	}
	if sum != beta {
		t.Errorf("versions hold %d samples, top says %d", sum, beta)
	}
	if res.Annotation.Total < hottest || res.Annotation.Total*10 < beta*9 {
		t.Errorf("the annotated version holds %d of %d samples: want the hottest, with most of them", res.Annotation.Total, beta)
	}
	hot := 0
	for _, in := range res.Annotation.Insts {
		if in.Samples > 0 {
			hot++
		}
	}
	if hot == 0 || len(res.Annotation.Insts) < 10 || len(res.Annotation.Gaps) > 0 {
		t.Errorf("%d instructions, %d with samples, gaps %+v: the bytes were not kept", len(res.Annotation.Insts), hot, res.Annotation.Gaps)
	}
	// Every version of both methods: no sampled instruction is zero bytes, the content of a
	// page read before the method was compiled into it.
	for _, name := range []string{"Hot.alpha", "Hot.beta"} {
		var first api.Annotate
		e.mustJSON(&first, "annotate", "--json", name)
		for i, v := range first.Versions {
			if v.Error != "" {
				continue
			}
			var vr api.Annotate
			e.mustJSON(&vr, "annotate", "--json", name, "--version", strconv.Itoa(i+1))
			if n := zeroSampled(vr.Annotation); n > 0 {
				text, _, _ := e.run("annotate", name, "--version", strconv.Itoa(i+1))
				t.Errorf("%s version %d: %d sampled instructions are zero bytes (add %%al,(%%rax)): bytes read before the code was there\n%s", name, i+1, n, text)
			}
		}
	}
}

// zeroSampled counts the sampled instructions of an annotation whose bytes are 00 00.
func zeroSampled(a *api.Annotation) int {
	n := 0
	for _, in := range a.Insts {
		if in.Samples > 0 && len(in.Bytes) >= 2 && in.Bytes[0] == 0 && in.Bytes[1] == 0 {
			n++
		}
	}
	return n
}

// A V8 function compiled again and again (its argument's shape keeps changing): after node
// exits, stax annotate lists every code version, their samples add up to the function's,
// and the version annotated is the hottest.
func TestNodeFunctionVersionsAfterExit(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireTool(t, "node")
	e := newEnv(t)
	work := t.TempDir() // node writes its jitdump in its working directory
	src, _ := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/versions.js"))
	os.WriteFile(filepath.Join(work, "versions.js"), src, 0o644)
	cmd := e.cmd("record", "-q", "--", "node", "--perf-prof", "--interpreted-frames-native-stack", "versions.js")
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "40")
	self := uint64(0)
	for _, r := range top.Rows {
		if r.Kind == "jit" && strings.Contains(r.Func, "hot ") {
			self += r.Self
		}
	}
	var res api.Annotate
	e.mustJSON(&res, "annotate", "--json", "JS:*hot")
	if res.Annotation == nil || len(res.Versions) < 2 {
		t.Fatalf("annotate hot: want several code versions, got %d\n%s", len(res.Versions), e.diagnosis())
	}
	var sum, hottest uint64
	for _, v := range res.Versions {
		sum += v.Samples
		hottest = max(hottest, v.Samples)
	}
	if sum == 0 || sum > self {
		t.Errorf("the versions hold %d samples; top has %d in optimised hot", sum, self)
	}
	if res.Annotation.Total != hottest {
		t.Errorf("annotated a version with %d samples, the hottest has %d", res.Annotation.Total, hottest)
	}
	t.Logf("%d versions, %d samples, the hottest %d", len(res.Versions), sum, hottest)
}
