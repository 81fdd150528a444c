package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// PHP's opcache JIT keeps its code in a shared mapping of /dev/zero and announces it in a
// perf map (jit_debug 0x10) or a jitdump (0x20): every mode names func_one and func_two at
// their 1:2 shares, with no JIT sample left unnamed.
func TestPHPOpcacheJIT(t *testing.T) {
	testutil.RequirePerf(t)
	php := testutil.RequireTool(t, "php")
	script := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/hot.php")
	for _, tc := range []struct{ jit, debug string }{
		{"function", "0x10"}, {"tracing", "0x10"}, {"function", "0x20"},
	} {
		t.Run(tc.jit+"-"+tc.debug, func(t *testing.T) {
			e := newEnv(t)
			dir := t.TempDir()
			args := []string{"record", "-q", "--", php, "-d", "opcache.enable_cli=1", "-d", "opcache.jit_buffer_size=32M",
				"-d", "opcache.jit=" + tc.jit, "-d", "opcache.jit_debug=" + tc.debug, script, "1500"}
			c := e.cmd(args...)
			c.Dir = dir // the jitdump lands in the working directory
			if out, err := c.CombinedOutput(); err != nil || !strings.Contains(string(out), "done") {
				t.Fatalf("record: %v\n%s", err, out)
			}
			var st api.Status
			e.mustJSON(&st, "status")
			var top api.Top
			e.mustJSON(&top, "top", "-n", "1000")
			var one, two uint64
			for _, r := range top.Rows {
				if r.Kind != "jit" {
					continue
				}
				switch {
				case strings.Contains(r.Func, "func_one"):
					one += r.Self
				case strings.Contains(r.Func, "func_two"):
					two += r.Self
				}
			}
			if st.JITSamples == 0 || float64(st.JITUnnamed) > 0.01*float64(st.JITSamples) {
				t.Errorf("JIT samples %d, unnamed %d: want nearly all named\n%+v", st.JITSamples, st.JITUnnamed, top.Rows[:min(len(top.Rows), 8)])
			}
			if n := one + two; n < top.Samples*8/10 {
				t.Fatalf("func_one and func_two hold %d of %d samples\n%+v", n, top.Samples, top.Rows[:min(len(top.Rows), 8)])
			}
			share := float64(two) / float64(one+two)
			if tol := shareTolerance(2.0/3, one+two) / 100; share < 2.0/3-tol || share > 2.0/3+tol {
				t.Errorf("func_two has %.3f of the two functions' samples, want 0.667 ± %.3f", share, tol)
			}
			os.Remove("/tmp/perf-" + itoa(st.Meta.Pid) + ".map")
		})
	}
}
