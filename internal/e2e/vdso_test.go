package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestVDSOFramesNamed records a program that spends its time in clock_gettime, which the
// vdso answers without a system call, with stax and perf at once: stax names the vdso's
// function from the vdso image as perf report does, leaves no [vdso] frame unnamed, and
// annotates the function from the bytes kept in the run.
func TestVDSOFramesNamed(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/vdso.c")
	prog := testutil.CC(t, t.TempDir(), "vdso", "gcc", append(cflags, src)...)
	data := recordBoth(t, e, []string{"-g"}, prog, "500")
	var top api.Top
	e.mustJSON(&top, "top", "-n", "50")
	var named agg.TopRow
	for _, r := range top.Rows {
		if r.Image != "[vdso]" {
			continue
		}
		if strings.HasPrefix(r.Func, "[unknown]") || strings.HasPrefix(r.Func, "[vdso]+") {
			t.Errorf("unnamed vdso frame: %+v", r)
		}
		if strings.Contains(r.Func, "clock_gettime") && r.Self > named.Self {
			named = r
		}
	}
	if named.Func == "" || named.SelfPct < 20 {
		t.Fatalf("no clock_gettime frame in [vdso] with most samples: %+v", top.Rows)
	}
	perf := perfSelfShares(t, data)
	t.Logf("stax: %s [vdso] %.1f%% self; perf: %s %.1f%%", named.Func, named.SelfPct, named.Func, perf[named.Func])
	if perf[named.Func] == 0 {
		t.Errorf("perf report does not name %s as stax does: %v", named.Func, perf)
	}
	text, _, code := e.run("top", "-n", "50")
	if code != 0 || !strings.Contains(text, named.Func+"  [vdso]") {
		t.Errorf("stax top does not show %s [vdso]:\n%s", named.Func, text)
	}
	var res query.AnnotateResult
	e.mustJSON(&res, "annotate", named.Func)
	if res.Annotation.Func != named.Func || res.Annotation.Total == 0 || len(res.Annotation.Insts) == 0 || res.Annotation.Outside > 0 {
		t.Errorf("annotate %s: func %q, %d samples (%d outside), %d instructions", named.Func, res.Annotation.Func, res.Annotation.Total, res.Annotation.Outside, len(res.Annotation.Insts))
	}
}
