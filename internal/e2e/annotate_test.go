package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/testutil"
)

// loopShare is the share of the function's samples on its loop body: the instructions
// between the loop's label and its backward branch.
func loopShare(t *testing.T, res query.AnnotateResult) float64 {
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
		var res query.AnnotateResult
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
	var res query.AnnotateResult
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
		{[]string{"annotate"}, 2, "accepts 1 arg"},
	} {
		_, stderr, code := e.run(c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
		checkOneLine(t, strings.Join(c.args, " "), stderr)
	}
}
