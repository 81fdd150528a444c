package e2e

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestSpansFromOneDNN records a program of Debian's oneDNN (libdnnl-dev), a library that
// reports the primitives it runs as ITT tasks and announces its JIT kernels through the
// JIT Profiling API, both to stax's collector: stax spans lists a matmul and an eltwise
// task per round, and --span of each holds its own JIT kernels, not the other's.
func TestSpansFromOneDNN(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireFile(t, "/usr/include/oneapi/dnnl/dnnl.hpp", "libdnnl-dev")
	e := newEnv(t)
	// One thread: a task per primitive and round.
	e.env = append(e.env, "STAX_JIT_DIR="+t.TempDir(), "OMP_NUM_THREADS=1")
	prog := testutil.CC(t, t.TempDir(), "dnnlrounds", "g++", "-O1", "-g",
		filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/dnnlrounds.cc"), "-ldnnl")
	const rounds = 40
	if out, errOut, code := e.run("record", "-q", "--", prog, itoa(rounds)); code != 0 {
		t.Fatalf("stax record: exit %d\n%s%s", code, out, errOut)
	}
	var res api.Spans
	e.mustJSON(&res, "spans")
	for _, name := range []string{"matmul", "eltwise"} {
		if s, ok := spanRow(res, name); !ok || s.Count != rounds || s.Samples == 0 {
			t.Errorf("%s spans: %+v, want %d with samples inside (all: %+v)", name, s, rounds, res.Rows)
		}
	}
	jit := func(span string) map[string]uint64 {
		var top api.Top
		e.mustJSON(&top, "top", "--span", span, "-n", "100")
		out := map[string]uint64{}
		for _, r := range top.Rows {
			if r.Kind == agg.KindJIT && r.Self > 0 {
				out[r.Func] = r.Self
			}
		}
		return out
	}
	mm, el := jit("matmul"), jit("eltwise")
	t.Logf("JIT code inside matmul: %v; inside eltwise: %v", mm, el)
	if len(mm) == 0 || len(el) == 0 {
		t.Fatalf("no JIT code inside matmul (%v) or eltwise (%v)", mm, el)
	}
	for fn := range mm {
		if _, ok := el[fn]; ok {
			t.Errorf("%s is inside both matmul and eltwise", fn)
		}
	}
	hottest := func(m map[string]uint64) string {
		names := make([]string, 0, len(m))
		for fn := range m {
			names = append(names, fn)
		}
		sort.Slice(names, func(i, j int) bool { return m[names[i]] > m[names[j]] })
		return names[0]
	}
	t.Logf("the matmul kernel: %s; the eltwise kernel: %s", hottest(mm), hottest(el))
}
