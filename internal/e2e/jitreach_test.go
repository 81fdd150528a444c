package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// A JIT whose code lives in a shared mapping of /dev/zero (PHP's opcache does this) is
// named from its perf map, and its samples count as JIT samples. zero_epsilon holds nearly
// all the samples taken in user code: the rest are the program's start (the loader's
// relocations), its clock reads and its exit, about 3% of them; 90% is five standard
// errors below that at 300 samples (300 ms of CPU time). Fewer than half of those in user
// code leaves too few to judge.
func TestJITInSharedDevZero(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildCJIT(t)
	if out, errOut, code := e.run("record", "-q", "--", prog, "devzero", "300"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var st api.Status
	e.mustJSON(&st, "status")
	defer os.Remove("/tmp/perf-" + strconv.Itoa(st.Meta.Pid) + ".map")
	var top api.Top
	e.mustJSON(&top, "top", "-n", "5")
	self, _, _ := row(top, "zero_epsilon")
	user := e.userSamples()
	if user < 150 || float64(self) < 0.9*float64(user) || st.JITSamples < self || st.JITUnnamed != 0 {
		t.Errorf("zero_epsilon %d of %d samples in user code (%d in all); status: %d JIT samples, %d unnamed\n%+v", self, user, top.Samples, st.JITSamples, st.JITUnnamed, top.Rows)
	}
}

// A perf map that puts a second function at the first one's address: the samples of each
// keep their own name (the later line ends the earlier one when it was written).
func TestPerfMapReuseKeepsNames(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildCJIT(t)
	if out, errOut, code := e.run("record", "-q", "--", prog, "mapreuse", "300"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var st api.Status
	e.mustJSON(&st, "status")
	defer os.Remove("/tmp/perf-" + strconv.Itoa(st.Meta.Pid) + ".map")
	var top api.Top
	e.mustJSON(&top, "top", "-n", "20")
	alpha, _, _ := row(top, "map_alpha")
	beta, _, _ := row(top, "map_beta")
	if st.JITUnnamed != 0 || alpha+beta != st.JITSamples {
		t.Errorf("JIT samples %d, unnamed %d, alpha %d + beta %d", st.JITSamples, st.JITUnnamed, alpha, beta)
	}
	share := float64(beta) / float64(alpha+beta)
	if tol := shareTolerance(2.0/3, alpha+beta) / 100; share < 2.0/3-tol || share > 2.0/3+tol {
		t.Errorf("map_beta has %.3f of the two's samples, want 0.667 ± %.3f", share, tol)
	}
	// In time, every alpha sample comes before every beta sample.
	var tl api.Timeline
	e.mustJSON(&tl, "timeline", "--bucket", "10")
	var order []string
	for _, ph := range tl.Phases {
		if strings.HasPrefix(ph.Func, "map_") && (len(order) == 0 || order[len(order)-1] != ph.Func) {
			order = append(order, ph.Func)
		}
	}
	if strings.Join(order, " ") != "map_alpha map_beta" {
		t.Errorf("phases in time: %v, want map_alpha then map_beta", order)
	}
}

// Attached to node --perf-prof a second after it started, until it exits: the JIT
// functions that existed before the attach and those compiled after are named.
func TestAttachToNodeNamesJIT(t *testing.T) {
	testutil.RequirePerf(t)
	node := testutil.RequireTool(t, "node")
	e := newEnv(t)
	work := t.TempDir()
	src, _ := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/bench.js"))
	os.WriteFile(filepath.Join(work, "bench.js"), src, 0o644)
	cmd := exec.Command(node, "--perf-prof", "--interpreted-frames-native-stack", "bench.js", "3000")
	cmd.Dir = work
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Attach once node has opened its jitdump (it has compiled code by then).
	dump := filepath.Join(work, "jit-"+strconv.Itoa(cmd.Process.Pid)+".dump")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if fi, err := os.Stat(dump); err == nil && fi.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node wrote no jitdump at %s", dump)
		}
		time.Sleep(20 * time.Millisecond) // polling for a file node creates; not a timing assumption
	}
	if out, errOut, code := e.run("record", "-q", "-p", strconv.Itoa(cmd.Process.Pid)); code != 0 {
		t.Fatalf("record -p: exit %d\n%s%s", code, out, errOut)
	}
	var st api.Status
	e.mustJSON(&st, "status")
	if st.JITSamples < 500 || float64(st.JITUnnamed) > 0.02*float64(st.JITSamples) {
		t.Errorf("attached: %d JIT samples, %d unnamed (want under 2%%); sources %+v", st.JITSamples, st.JITUnnamed, st.JIT)
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "5")
	if len(top.Rows) == 0 || !strings.Contains(top.Rows[0].Func, "fib") || top.Rows[0].Image != "[jit]" {
		t.Errorf("the hottest function is not the JIT'd fib: %+v", top.Rows)
	}
}

// A JIT in its own pid namespace (a container) names its jitdump after its pid there: it
// is found and read, its header's pid checked against that pid.
func TestJITInPidNamespace(t *testing.T) {
	testutil.RequirePerf(t)
	unshare := testutil.RequireTool(t, "unshare")
	if out, err := exec.Command(unshare, "--pid", "--fork", "true").CombinedOutput(); err != nil {
		testutil.Require(t, testutil.EnvRoot, "cannot make a pid namespace here: %v %s", err, out)
	}
	e := newEnv(t)
	prog := buildCJIT(t)
	os.Remove("/tmp/jit-1.dump")
	defer os.Remove("/tmp/jit-1.dump") // pid 1 of the namespace
	if out, errOut, code := e.run("record", "-q", "--", unshare, "--pid", "--fork", prog, "reuse", "300"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var st api.Status
	e.mustJSON(&st, "status")
	var top api.Top
	e.mustJSON(&top, "top", "-n", "5")
	alpha, _, _ := row(top, "reuse_alpha")
	beta, _, _ := row(top, "reuse_beta")
	if st.JITSamples < 500 || st.JITUnnamed != 0 || alpha+beta != st.JITSamples {
		t.Errorf("JIT samples %d, unnamed %d, alpha %d, beta %d; sources %+v", st.JITSamples, st.JITUnnamed, alpha, beta, st.JIT)
	}
}

// A JIT run by an unprivileged user whose debug info names a file that user cannot read
// (/etc/shadow) or a FIFO: annotate, run as root, shows neither, says nothing it must not,
// and never blocks.
func TestAnnotateHostileDebugInfo(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireRoot(t) // to run the JIT as another user
	setpriv := testutil.RequireTool(t, "setpriv")
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	toy := filepath.Join(dir, "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")
	fifo := filepath.Join(dir, "loops.fifo")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	// The jitdump goes to a directory of the JIT's user: in /tmp, a file left by an earlier
	// root process of the same pid would make it refuse to write one (as it must).
	jitDir := filepath.Join(dir, "jit")
	if err := os.Mkdir(jitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(jitDir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, source := range []string{"/etc/shadow", fifo} {
		t.Run(filepath.Base(source), func(t *testing.T) {
			e := newEnv(t)
			if out, errOut, code := e.run("record", "-q", "--", setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
				toy, "-cpu", "300ms", "-source", source, "-dir", jitDir); code != 0 {
				t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
			}
			done := make(chan string, 1)
			go func() {
				out, errOut, _ := e.run("annotate", "jitted_func2")
				done <- out + errOut
			}()
			select {
			case out := <-done:
				if !strings.Contains(out, source) || strings.Contains(out, "root:") {
					t.Errorf("annotate shows the source file's name or lines it must not:\n%s", out)
				}
				if !strings.Contains(out, "note: source not shown") {
					t.Errorf("annotate does not say why the source is not shown:\n%s", out)
				}
				if !strings.Contains(out, "add") {
					t.Errorf("annotate shows no code:\n%s", out)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("annotate blocked on the named file")
			}
		})
	}
}

// stax record -a while three programs run, one of them the toy JIT: top --by process lists
// all three, each under its own hot function, and the JIT's functions are named. Their
// shares of the machine are not the claim: they depend on what else it runs, and on the
// samples a recorder built with the race detector loses recording every CPU of a busy
// machine (its reader falls behind on some CPUs' rings more than others').
func TestSystemWideRecording(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireRoot(t) // system-wide recording needs root or CAP_PERFMON
	e := newEnv(t)
	dir := t.TempDir()
	toy := filepath.Join(dir, "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")
	phases := buildPhases(t)
	spin := testutil.CC(t, dir, "spin", "gcc", "-O1", "-pthread", filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/spin.c"))
	var procs []*exec.Cmd
	for _, argv := range [][]string{{toy, "-cpu", "60s"}, {phases, "30000", "1"}, {spin, "1", "60000"}} {
		c := exec.Command(argv[0], argv[1:]...)
		c.Dir = dir
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, c)
	}
	t.Cleanup(func() {
		for _, c := range procs {
			c.Process.Kill()
			c.Wait()
		}
	})
	if out, errOut, code := e.run("record", "-q", "-a", "-l", "4"); code != 0 {
		t.Fatalf("record -a: exit %d\n%s%s", code, out, errOut)
	}
	var st api.Status
	e.mustJSON(&st, "status")
	if !st.Meta.SystemWide {
		t.Errorf("the run is not marked system-wide: %+v", st.Meta)
	}
	t.Logf("%d samples, %d lost", st.Meta.Samples, st.Meta.Lost)
	var top api.Top
	e.mustJSON(&top, "top", "--by", "process", "-n", "1000")
	// Each program spends nearly all its time in one function; with 20 samples that function
	// is the hottest, whatever share the kernel's scheduling takes on a busy machine.
	for i, hot := range []string{"jitted_func", "phase_a", "spin"} {
		c := procs[i]
		var found *api.ProcessRow
		for j, p := range top.Processes {
			if int(p.Pid) == c.Process.Pid {
				found = &top.Processes[j]
			}
		}
		if found == nil || found.Samples < 20 || !strings.HasPrefix(found.TopFunc, hot) {
			t.Errorf("%s (pid %d) is not listed with 20 samples or more, most in %s: %+v", filepath.Base(c.Path), c.Process.Pid, hot, found)
		}
	}
	var jit api.Top
	e.mustJSON(&jit, "top", "--comm", "toyjit", "-n", "5")
	one, _, _ := row(jit, "jitted_func1")
	two, _, _ := row(jit, "jitted_func2")
	if user := e.userSamples("--comm", "toyjit"); one+two < user*8/10 {
		t.Errorf("the toy JIT's functions hold %d+%d of its %d samples in user code (%d in all): %+v", one, two, user, jit.Samples, jit.Rows)
	}
	os.Remove("/tmp/jit-" + strconv.Itoa(procs[0].Process.Pid) + ".dump")
}

// A short JIT run that writes its jitdump outside /tmp is found through its open files
// before it exits (after its exit only /tmp can be searched): its code is named.
func TestShortJITWithDumpOutsideTmp(t *testing.T) {
	testutil.RequirePerf(t)
	dir := t.TempDir()
	toy := filepath.Join(dir, "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")
	e := newEnv(t)
	if out, errOut, code := e.run("record", "-q", "--", toy, "-cpu", "300ms", "-dir", dir); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var st api.Status
	e.mustJSON(&st, "status")
	if st.JITSamples < 100 || st.JITUnnamed != 0 {
		t.Errorf("JIT samples %d, unnamed %d; sources %+v", st.JITSamples, st.JITUnnamed, st.JIT)
	}
}
