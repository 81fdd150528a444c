package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/vdso"
)

// TestVDSOFramesNamed records a program that spends its time in clock_gettime, which the
// vdso answers without a system call, with stax and perf at once. Every [vdso] row stax
// lists is a function: one its symbols name (__vdso_clock_gettime, on older kernels), or a
// function range of its .eh_frame named after the range's start (recent kernels read the
// clock in a static function no symbol covers, which perf shows one row per address). The
// hottest holds most of the vdso's samples, as many as perf shows under its name or at
// addresses inside its range, and annotates whole from the bytes kept in the run.
func TestVDSOFramesNamed(t *testing.T) {
	testutil.RequirePerf(t)
	own, err := vdso.Self()
	if err != nil {
		testutil.Require(t, testutil.EnvPerf, "no vdso here: %v", err)
	}
	img := filepath.Join(t.TempDir(), "vdso.so")
	if err := os.WriteFile(img, own, 0o644); err != nil {
		t.Fatal(err)
	}
	fdes := readelfFDEs(t, img) // every process of this kernel maps this vdso

	e := newEnv(t)
	e.env = []string{"DEBUGINFOD_URLS="}
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/vdso.c")
	prog := testutil.CC(t, t.TempDir(), "vdso", "gcc", append(cflags, src)...)
	data := recordBoth(t, e, []string{"-g"}, prog, "500")
	var top api.Top
	e.mustJSON(&top, "top", "-n", "100000")
	rows, staxAll := checkRows(t, top, "[vdso]", fdes)
	for _, r := range rows {
		if off, ok := rangeStart(r); ok {
			if _, in := fdeHolding(fdes, off); !in {
				t.Errorf("a [vdso] row for an address no function holds: %+v", r)
			}
		}
	}
	if len(rows) == 0 || rows[0].Self*2 <= staxAll {
		t.Fatalf("no [vdso] function holds most of the vdso's %d samples: %+v", staxAll, rows)
	}
	hot := rows[0]
	var perfIn, perfAll uint64
	size := uint64(0)
	prows := perfRows(t, data)
	if off, ok := rangeStart(hot); ok {
		f, _ := fdeHolding(fdes, off)
		size = f.end - f.start
		perfIn, perfAll = perfSamplesIn(prows, "[vdso]", "", f.start, f.end)
	} else {
		if !strings.Contains(hot.Func, "clock_gettime") {
			t.Errorf("the hottest vdso function is %s, not clock_gettime", hot.Func)
		}
		perfIn, perfAll = perfSamplesIn(prows, "[vdso]", hot.Func, 0, 0)
		if perfIn == 0 {
			t.Errorf("perf report does not name %s as stax does: %+v", hot.Func, prows)
		}
	}
	checkShare(t, hot.Func, hot.Self, staxAll, perfIn, perfAll)
	text, _, code := e.run("top", "-n", "50")
	if code != 0 || !strings.Contains(text, hot.Func+"  [vdso]") {
		t.Errorf("stax top does not show %s [vdso]:\n%s", hot.Func, text)
	}
	checkAnnotated(t, e, hot, size)
}
