package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// oneDNN's JIT kernels with no collector (--no-jit-api) and no perf map are unnamed, and
// stax status names the variable that makes oneDNN write one; started with it, the
// kernels are named from the perf map and the hint is gone.
func TestOneDNNWithoutCollectorNamesJITProfile(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireFile(t, "/usr/include/oneapi/dnnl/dnnl.hpp", "libdnnl-dev")
	prog := testutil.CC(t, t.TempDir(), "dnnlrounds", "g++", "-O1", "-g",
		filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/dnnlrounds.cc"), "-ldnnl")
	const hint = "which names them in a perf map when started with ONEDNN_JIT_PROFILE=2"
	for _, withMap := range []bool{false, true} {
		t.Run(fmt.Sprintf("perfmap=%v", withMap), func(t *testing.T) {
			e := newEnv(t)
			e.env = append(e.env, "STAX_JIT_DIR="+t.TempDir(), "OMP_NUM_THREADS=1", "ONEDNN_JIT_PROFILE=")
			if withMap {
				e.env = append(e.env, "ONEDNN_JIT_PROFILE=2")
			}
			if out, errOut, code := e.run("record", "-q", "--no-jit-api", "--", prog, "20"); code != 0 {
				t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
			}
			var st api.Status
			e.mustJSON(&st, "status")
			for _, s := range st.JIT {
				if s.Kind == "perfmap" {
					t.Cleanup(func() { os.Remove(s.Path) })
				}
			}
			notes := strings.Join(st.Meta.Notes, "\n")
			t.Logf("JIT samples %d, unnamed %d; notes:\n%s", st.JITSamples, st.JITUnnamed, notes)
			if st.JITSamples < 20 {
				t.Fatalf("only %d samples in JIT code\n%s", st.JITSamples, e.diagnosis())
			}
			if !withMap {
				if st.JITUnnamed*10 < st.JITSamples*9 || !strings.Contains(notes, hint) {
					t.Errorf("%d of %d JIT samples unnamed; want nearly all, and a note saying %q", st.JITUnnamed, st.JITSamples, hint)
				}
				return
			}
			if st.JITUnnamed*50 > st.JITSamples || strings.Contains(notes, "ONEDNN_JIT_PROFILE") {
				t.Errorf("with ONEDNN_JIT_PROFILE=2: %d of %d JIT samples unnamed, want under 2%% and no hint", st.JITUnnamed, st.JITSamples)
			}
			var top api.Top
			e.mustJSON(&top, "top", "-n", "20")
			var kernels []string
			for _, r := range top.Rows {
				if r.Kind == agg.KindJIT && strings.HasPrefix(r.Func, "jit_") {
					kernels = append(kernels, r.Func)
				}
			}
			if len(kernels) == 0 {
				text, _, _ := e.run("top", "-n", "10")
				t.Errorf("no oneDNN kernel named:\n%s", text)
			}
		})
	}
}
