package e2e

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// loopShare is the share of the function's samples on its loop body: the instructions
// between the loop's label and its backward branch.
func loopShare(t *testing.T, res api.Annotate) float64 {
	t.Helper()
	a := res.Annotation
	var body, total uint64
	inLoop := false
	for _, in := range a.Insts {
		if in.Label != "" {
			inLoop = true
		}
		if inLoop {
			body += in.Samples
		}
		if in.Backward {
			inLoop = false
		}
		total += in.Samples
	}
	if total == 0 {
		return 0
	}
	return float64(body) * 100 / float64(total)
}

func TestAnnotateToyJITLiveAndAfterDumpRemoved(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	toy := filepath.Join(t.TempDir(), "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")
	rec := e.startUntilReady(t.TempDir(), toy, "-cpu", "1s", "-wait")
	if out, errOut, code := e.run("wait", "--until-symbol", "jitted_func2", "--for-samples", "700", "--timeout-ms", "60000"); code != 0 {
		t.Fatalf("wait: exit %d\n%s%s", code, out, errOut)
	}
	check := func(when string) {
		var res api.Annotate
		e.mustJSON(&res, "annotate", "jitted_func2")
		text, _, _ := e.run("annotate", "jitted_func2")
		for _, m := range []string{"cmp", "add", "jmp"} {
			if !regexp.MustCompile(`\b` + m + `\b`).MatchString(text) {
				t.Errorf("%s: annotate lacks %s:\n%s", when, m, text)
			}
		}
		if !strings.Contains(text, "loops.toy:") {
			t.Errorf("%s: annotate lacks source lines from the jitdump debug info:\n%s", when, text)
		}
		if s := loopShare(t, res); res.Annotation.Total < 100 || s < 95 {
			t.Errorf("%s: %d samples, %.1f%% on the loop body; want nearly all\n%s", when, res.Annotation.Total, s, text)
		}
	}
	check("live")
	rec.finish(t)
	var st api.Status
	e.mustJSON(&st, "status")
	dump := "/tmp/jit-" + strconv.Itoa(st.Meta.Pid) + ".dump"
	if err := os.Remove(dump); err != nil {
		t.Fatalf("remove the dump: %v", err)
	}
	check("after the run, dump removed")
}

func TestAnnotateNativeAndErrors(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildRatio(t)
	if out, errOut, code := e.run("record", "-q", "--", prog, "300"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var res api.Annotate
	e.mustJSON(&res, "annotate", "WORK_B")
	if res.Annotation.Func != "work_b" || res.Annotation.Total < 100 {
		t.Fatalf("annotate WORK_B picked %q with %d samples", res.Annotation.Func, res.Annotation.Total)
	}
	text, _, _ := e.run("annotate", "work_b")
	if !strings.Contains(text, "call") || !strings.Contains(text, "<touch>") {
		t.Errorf("call target not named:\n%s", text)
	}
	if !strings.Contains(text, "ratio.c:") {
		t.Errorf("no DWARF source lines in the annotation:\n%s", text)
	}
	// An ambiguous name picks the hottest and lists the others.
	both, _, _ := e.run("annotate", "work_")
	if !strings.Contains(both, "work_b") || !strings.Contains(both, "also matching: work_a") {
		t.Errorf("ambiguous target: want work_b annotated and work_a listed:\n%s", both)
	}
	start := res.Annotation.Start
	e.mustJSON(&res, "annotate", "0x"+strconv.FormatUint(start+4, 16))
	if res.Annotation.Func != "work_b" {
		t.Errorf("annotate by address picked %q", res.Annotation.Func)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"annotate", "no_such_function_anywhere"}, 5, "no sampled function"},
		{[]string{"annotate", "0x10"}, 5, "outside any sampled function"},
		{[]string{"annotate"}, 2, "annotate needs one TARGET"},
	} {
		_, stderr, code := e.run(c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
		checkOneLine(t, strings.Join(c.args, " "), stderr)
	}
}

// TestAnnotateJITVersions records a JIT that compiles ver_fn three times (the third at the
// first one's address) and runs them for 1, 2 and 3 shares of CPU time: annotate lists
// three versions with those shares, annotates the hottest, and --version picks another.
func TestAnnotateJITVersions(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/cjitver.c")
	prog := testutil.CC(t, t.TempDir(), "cjitver", "gcc", "-O1", "-fno-omit-frame-pointer", src)
	// 0.2 + 0.4 + 0.6 s of CPU time: about 1,200 samples.
	if out, errOut, code := e.run("record", "-q", "--", prog, "200"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	defer removeJITFiles(t, e)
	var res api.Annotate
	e.mustJSON(&res, "annotate", "ver_fn")
	text, _, _ := e.run("annotate", "ver_fn")
	if len(res.Versions) != 3 {
		t.Fatalf("want 3 versions of ver_fn, got %+v\n%s", res.Versions, text)
	}
	var all uint64
	for _, v := range res.Versions {
		all += v.Samples
	}
	if res.Versions[0].Start != res.Versions[2].Start || res.Versions[0].Start == res.Versions[1].Start {
		t.Errorf("versions 1 and 3 share an address, 2 is elsewhere: %+v", res.Versions)
	}
	for i, v := range res.Versions {
		want := float64(i+1) / 6
		tol := shareTolerance(want, all)
		got := float64(v.Samples) * 100 / float64(all)
		t.Logf("version %d at %#x (%d bytes): %d samples, %.1f%% (want %.1f ± %.1f)", v.Index, v.Start, v.Size, v.Samples, got, want*100, tol)
		if math.Abs(got-want*100) > tol {
			t.Errorf("version %d has %.1f%% of %d samples, want %.1f ± %.1f\n%s", v.Index, got, all, want*100, tol, text)
		}
		if v.LoadSec == nil {
			t.Errorf("version %d has no load time", v.Index)
		}
	}
	a := res.Annotation
	if all < 600 || res.Version != 3 || a.Total != res.Versions[2].Samples || a.Outside*100 > a.Total {
		t.Errorf("annotated version %d: %d samples, %d outside; want version 3 with its %d and under 1%% outside\n%s",
			res.Version, a.Total, a.Outside, res.Versions[2].Samples, text)
	}
	if !strings.Contains(text, "3 code versions") {
		t.Errorf("the text lacks the versions header:\n%s", text)
	}
	var v1 api.Annotate
	e.mustJSON(&v1, "annotate", "ver_fn", "--version", "1")
	if v1.Version != 1 || v1.Annotation.Start != res.Versions[0].Start || v1.Annotation.Total != res.Versions[0].Samples {
		t.Errorf("--version 1 annotated version %d at %#x with %d samples", v1.Version, v1.Annotation.Start, v1.Annotation.Total)
	}
}

// TestAnnotatePerfMapWrittenAtExit: the perf map names the code only when the process
// exits, so its bytes must have been read while it ran.
func TestAnnotatePerfMapWrittenAtExit(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildCJIT(t)
	if out, errOut, code := e.run("record", "-q", "--", prog, "mapexit", "300"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	defer removeJITFiles(t, e)
	text, errOut, code := e.run("annotate", "mapped_gamma")
	if code != 0 {
		files, _ := filepath.Glob(filepath.Join(e.home, "runs", "*.stax"))
		for _, f := range files {
			r, _ := store.Load(f)
			for _, c := range r.Code {
				t.Logf("kept code: %q start=%#x size=%d load=%d time=%d origin=%s nbytes=%d err=%q", r.Profile.Frames[c.Frame].Func, c.Start, c.Size, c.LoadTime, c.Time, c.Origin, len(c.Bytes), c.Error)
			}
			t.Logf("notes: %v", r.Meta.Notes)
		}
		t.Fatalf("annotate mapped_gamma: exit %d: %s", code, errOut)
	}
	var res api.Annotate
	e.mustJSON(&res, "annotate", "mapped_gamma")
	if s := loopShare(t, res); res.Annotation.Total < 100 || s < 95 || res.Warning != "" {
		t.Errorf("%d samples, %.1f%% on the loop body (warning %q); want nearly all\n%s", res.Annotation.Total, s, res.Warning, text)
	}
}

// waitSamples waits until the live run holds n samples.
func (e *staxEnv) waitSamples(n int) {
	e.t.Helper()
	if out, errOut, code := e.run("wait", "--for-samples", strconv.Itoa(n), "--timeout-ms", "60000"); code != 0 {
		e.t.Fatalf("wait for %d samples: exit %d\n%s%s", n, code, out, errOut)
	}
}

// TestAnnotateCodeWrittenIntoASampledPage: share_beta is written into the page that held
// share_alpha, after share_alpha's samples had stax read that page, and both are named only
// at exit: annotate shows each one's own instructions with its samples, never the zeros
// the page held before share_beta was written.
func TestAnnotateCodeWrittenIntoASampledPage(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildCJIT(t)
	// 0.3 s of CPU time in share_alpha, 0.6 s in share_beta: about 900 samples, taken in
	// once most have arrived (the process then names its code and exits).
	rec := e.startUntilReady(t.TempDir(), prog, "pageshare", "300")
	e.waitSamples(600)
	rec.finish(t)
	defer removeJITFiles(t, e)
	for _, c := range []struct {
		name, add string
		min       uint64
	}{{"share_alpha", "add    $0x1,%rax", 100}, {"share_beta", "add    $0x3,%rax", 200}} {
		var res api.Annotate
		e.mustJSON(&res, "annotate", c.name)
		text, _, _ := e.run("annotate", c.name)
		a := res.Annotation
		if n := zeroSampled(a); n > 0 || len(a.Gaps) > 0 || res.Warning != "" {
			t.Errorf("%s: %d sampled instructions are zero bytes, gaps %+v, warning %q:\n%s", c.name, n, a.Gaps, res.Warning, text)
		}
		if s := loopShare(t, res); a.Total < c.min || s < 95 || !strings.Contains(text, c.add) {
			t.Errorf("%s: %d samples, %.1f%% on the loop body (want %d, nearly all, on a loop with %q):\n%s", c.name, a.Total, s, c.min, c.add, text)
		}
	}
}

// TestAnnotateCodeFreedBeforeItWasNamed: freed_delta's memory is overwritten after it ran
// and before its perf map line is written, while the process lives on: annotate shows the
// code as it was when it was sampled, not what the memory held when the line was read.
func TestAnnotateCodeFreedBeforeItWasNamed(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildCJIT(t)
	// 0.3 s of CPU time in freed_delta: about 300 samples, most of them taken in before the
	// code is overwritten and named.
	rec := e.startUntilReady(t.TempDir(), prog, "mapfree", "300")
	e.waitSamples(200)
	rec.stdin.Write([]byte("\n"))
	if out, errOut, code := e.run("wait", "--until-symbol", "freed_delta", "--timeout-ms", "60000"); code != 0 {
		t.Fatalf("wait: exit %d\n%s%s", code, out, errOut)
	}
	rec.finish(t)
	defer removeJITFiles(t, e)
	var res api.Annotate
	e.mustJSON(&res, "annotate", "freed_delta")
	text, _, _ := e.run("annotate", "freed_delta")
	a := res.Annotation
	if s := loopShare(t, res); a.Total < 100 || s < 95 || len(a.Gaps) > 0 || strings.Contains(text, "int3") || !strings.Contains(text, "add    $0x1,%rax") {
		t.Errorf("%d samples, %.1f%% on the loop body, gaps %+v; want the loop as it ran, not the int3 bytes written over it:\n%s", a.Total, s, a.Gaps, text)
	}
}
