package web

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil/browser"
)

// pythonRun is a CPython run with perf support: Python functions (kind python) between
// the interpreter's native frames.
func pythonRun() *store.Run {
	const eval = "libpython3.12.so.1.0:_PyEval_EvalFrameDefault"
	run := namedRun("python",
		work{101, []string{"_start", eval, "<module> (/app.py)", eval, "spin_b (/app.py)", eval}, 200},
		work{101, []string{"_start", eval, "<module> (/app.py)", eval, "spin_a (/app.py)", eval, "libpython3.12.so.1.0:_PyObject_Malloc"}, 100},
		work{101, []string{"_start", "libc.so.6:write"}, 30},
	)
	for i, f := range run.Profile.Frames {
		if strings.HasSuffix(f.Func, " (/app.py)") {
			run.Profile.Frames[i].Kind, run.Profile.Frames[i].Image, run.Profile.Frames[i].File = agg.KindPython, "[jit]", "/app.py"
		}
	}
	return run
}

// The Python toggle asks for the python transform (Python functions and the native leaf,
// as `stax flame --python`) and is kept in the URL; Python frames have their own colour,
// named in the legend.
func TestPythonToggle(t *testing.T) {
	bctx := browser.Require(t)
	run := pythonRun()
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "")
	colour := func(fn string) string { return eval[string](t, ctx, frameColourJS+"("+strconv.Quote(fn)+")") }
	css := func(name string) string { return eval[string](t, ctx, cssColourJS+"("+strconv.Quote(name)+")") }
	want := css("--k-python")
	if want == css("--k-jit") || want == css("--k-kernel") || want == css("--k-user") {
		t.Fatalf("Python's colour %s is another kind's", want)
	}
	until(t, ctx, "spin_b in Python's colour", func() (bool, string) {
		got := colour("spin_b (/app.py)")
		return got == want, got + ", want " + want
	})
	if got := text(ctx, "#legend"); !strings.Contains(got, "Python") {
		t.Errorf("the legend %q does not name Python", got)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#python")); err != nil {
		t.Fatal(err)
	}
	py := flameOf(t, run, query.FlameOptions{Transform: api.Transform{Python: true}})
	if got := childrenOf(py); got != "<module> (/app.py)=300 write=30" {
		t.Fatalf("the python transform's roots: %s", got)
	}
	until(t, ctx, "the Python graph", func() (bool, string) {
		got := rootChildren(t, ctx)
		return got == childrenOf(py), got
	})
	if got := pageURL(t, ctx).Query().Get("python"); got != "1" {
		t.Errorf("the URL says python=%q", got)
	}
	// Unchecked, the native frames come back.
	if err := chromedp.Do(ctx, chromedp.Click("#python")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the whole graph", func() (bool, string) {
		got := rootChildren(t, ctx)
		return got == "_start=330", got
	})
	noErrors(t, ctx)
}
