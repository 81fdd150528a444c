package e2e

import (
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// perfLost records the command with perf record -g at freq and returns the samples perf
// kept and the samples it reports lost.
func perfLost(t *testing.T, freq int, args ...string) (kept, lost uint64) {
	t.Helper()
	perf := testutil.RequireTool(t, "perf")
	data := filepath.Join(t.TempDir(), "perf.data")
	rec := exec.Command(perf, append([]string{"record", "-q", "-g", "-F", strconv.Itoa(freq), "-o", data, "--"}, args...)...)
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, out)
	}
	out, err := exec.Command(perf, "report", "-i", data, "--stats").CombinedOutput()
	if err != nil {
		t.Fatalf("perf report --stats: %v\n%s", err, out)
	}
	return perfStats(out)
}

// perfStats reads the samples kept and lost from perf report --stats.
func perfStats(out []byte) (kept, lost uint64) {
	num := func(re string) uint64 {
		m := regexp.MustCompile(re).FindSubmatch(out)
		if m == nil {
			return 0
		}
		n, _ := strconv.ParseUint(string(m[1]), 10, 64)
		return n
	}
	return num(`SAMPLE events:\s+(\d+)`), num(`LOST_SAMPLES events:\s+(\d+)`) + num(`(?m)^\s*LOST events:\s+(\d+)`)
}

// TestNoLossAt10kHz records one CPU-bound thread per CPU at 10,000 Hz: stax loses no more
// samples than perf record -g does on the same program (none, on this machine kind).
func TestNoLossAt10kHz(t *testing.T) {
	testutil.RequirePerf(t)
	const freq = 10000
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/spin.c")
	prog := testutil.CC(t, t.TempDir(), "spin", "gcc", append(cflags, "-pthread", src)...)
	n := strconv.Itoa(runtime.NumCPU())
	// 500 ms of CPU time per thread: 5,000 samples each at 10 kHz.
	if out, errOut, code := e.run("record", "-q", "--call-graph", "fp", "-F", strconv.Itoa(freq), "--", prog, n, "500"); code != 0 { // fp, as perf -g
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var st api.Status
	e.mustJSON(&st, "status")
	perfKept, perfLostN := perfLost(t, freq, prog, n, "500")
	t.Logf("%s threads at %d Hz: stax kept %d, lost %d (ring %d pages); perf kept %d, lost %d",
		n, freq, st.Meta.Samples, st.Meta.Lost, st.Meta.RingPages, perfKept, perfLostN)
	if st.Meta.Lost > perfLostN {
		t.Errorf("stax lost %d samples where perf lost %d", st.Meta.Lost, perfLostN)
	}
	if st.Meta.Samples < perfKept*9/10 {
		t.Errorf("stax kept %d samples, perf %d", st.Meta.Samples, perfKept)
	}
}

// TestSlowDebuginfodLosesNoSamples: names wait on a debuginfod that answers after 5 s,
// while samples at 10,000 Hz keep being read.
func TestSlowDebuginfodLosesNoSamples(t *testing.T) {
	testutil.RequirePerf(t)
	var asked atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
		http.NotFound(w, r)
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()

	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/spin.c")
	prog := testutil.CC(t, t.TempDir(), "spin", "gcc", "-O1", "-s", "-pthread", src) // stripped: names come from debuginfod
	rec := e.cmd("record", "-q", "--call-graph", "fp", "-F", "10000", "--", prog, "2", "1000")
	rec.Env = append(rec.Env, "DEBUGINFOD_URLS=http://"+l.Addr().String(), "DEBUGINFOD_CACHE_PATH="+t.TempDir(), "DEBUGINFOD_TIMEOUT=30")
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	var st api.Status
	e.mustJSON(&st, "status")
	t.Logf("debuginfod asked %d times; %d samples kept, %d lost", asked.Load(), st.Meta.Samples, st.Meta.Lost)
	if asked.Load() == 0 {
		t.Fatalf("stax never asked the slow debuginfod: the test proves nothing")
	}
	// 2 threads x 1 s of CPU time at 10 kHz: 20,000 samples.
	if st.Meta.Lost != 0 || st.Meta.Samples < 18000 {
		t.Errorf("with a slow debuginfod: %d samples kept, %d lost; want about 20,000 and none lost", st.Meta.Samples, st.Meta.Lost)
	}
}

// TestFiveHundredBusyThreads: 500 CPU-bound threads crowd the recorder off the CPUs. stax
// still keeps at least 98% of the samples perf record -g keeps, and what it misses it
// reports as lost; a live query answers while the threads run. Both tools record the same
// execution (stax records perf record, which runs the program): with 500 short-lived
// threads in frequency mode, two executions differ by several percent.
func TestFiveHundredBusyThreads(t *testing.T) {
	testutil.RequirePerf(t)
	perf := testutil.RequireTool(t, "perf")
	const freq, threads, cpuMs = 999, 500, 10 // 5 s of CPU time: about 5,000 samples
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/spin.c")
	prog := testutil.CC(t, t.TempDir(), "spin", "gcc", append(cflags, "-pthread", src)...)
	data := filepath.Join(t.TempDir(), "perf.data")
	rec := e.cmd("record", "-q", "--call-graph", "fp", "-F", strconv.Itoa(freq), "--",
		perf, "record", "-q", "-g", "-F", strconv.Itoa(freq), "-o", data, "--", prog, strconv.Itoa(threads), strconv.Itoa(cpuMs))
	var out strings.Builder
	rec.Stdout, rec.Stderr = &out, &out
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	// A live query while the threads run.
	if _, errOut, code := e.run("wait", "--for-samples", "500", "--timeout-ms", "120000"); code != 0 {
		t.Errorf("stax wait during the run: exit %d: %s", code, errOut)
	}
	began := time.Now()
	if _, errOut, code := e.run("status"); code != 0 {
		t.Errorf("stax status during the run: exit %d: %s", code, errOut)
	}
	statusTook := time.Since(began)
	if err := rec.Wait(); err != nil {
		t.Fatalf("record: %v\n%s", err, out.String())
	}
	var st api.Status
	e.mustJSON(&st, "status")
	var top struct{ Samples uint64 }
	e.mustJSON(&top, "top", "--json", "--comm", "spin", "-n", "1")
	stats, err := exec.Command(perf, "report", "-i", data, "--stats").CombinedOutput()
	if err != nil {
		t.Fatalf("perf report --stats: %v\n%s", err, stats)
	}
	perfKept, perfLostN := perfStats(stats)
	t.Logf("%d threads x %d ms CPU at %d Hz: stax kept %d of the program (%d in all), lost %d; perf kept %d, lost %d; a live status took %v",
		threads, cpuMs, freq, top.Samples, st.Meta.Samples, st.Meta.Lost, perfKept, perfLostN, statusTook.Round(time.Millisecond))
	if perfKept < threads*cpuMs/2 {
		t.Fatalf("perf kept only %d samples: the program did not run as sized", perfKept)
	}
	if top.Samples*100 < perfKept*98 {
		t.Errorf("stax kept %d samples of the program, under 98%% of perf's %d", top.Samples, perfKept)
	}
	if top.Samples+st.Meta.Lost < perfKept*98/100 {
		t.Errorf("stax kept %d and reports %d lost: its shortfall against perf's %d is not reported", top.Samples, st.Meta.Lost, perfKept)
	}
}
