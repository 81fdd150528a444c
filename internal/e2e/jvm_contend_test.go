package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// reachShare reads folded stacks (root first) and sums the weight of the stacks with a
// frame for which under says true, and of those, the weight of the stacks that also hold
// a frame for which root says true; bad lists the outermost frames of the others, most
// weight first.
func reachShare(t *testing.T, folded string, under, root func(string) bool) (all, reach uint64, bad []string) {
	t.Helper()
	outer := map[string]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(folded), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		n, err := strconv.ParseUint(line[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("folded line %q", line)
		}
		frames := strings.Split(line[:i], ";")
		in, rooted := false, false
		for _, f := range frames {
			in = in || under(f)
			rooted = rooted || root(f)
		}
		if !in {
			continue
		}
		all += n
		if rooted {
			reach += n
		} else {
			outer[strings.Join(frames[:min(3, len(frames))], ";")] += n
		}
	}
	keys := make([]string, 0, len(outer))
	for k := range outer {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return outer[keys[i]] > outer[keys[j]] })
	for _, k := range keys[:min(len(keys), 8)] {
		bad = append(bad, fmt.Sprintf("%d %s", outer[k], k))
	}
	return all, reach, bad
}

// Threads of a JVM 17 contend on a synchronized block, the JIT's code named by a perf map
// written at exit, its compiled code keeping frame pointers (-XX:+PreserveFramePointer):
// the CPU samples and the time off CPU under the Java methods have stacks that reach the
// thread's start (start_thread, or JavaMain for the main thread), not a JIT frame as root.
func TestJVMContendedStacksReachThreadStart(t *testing.T) {
	testutil.RequirePerf(t)
	for _, tool := range []string{"java", "javac"} {
		testutil.RequireTool(t, tool)
	}
	dir := t.TempDir()
	testutil.Run(t, "", "javac", "-d", dir, filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/jvm/Contend.java"))
	e := newEnv(t)
	// Four threads, 500 ms of CPU time each.
	if out, errOut, code := e.run("record", "-q", "--", "java", "-XX:+UnlockDiagnosticVMOptions", "-XX:+DumpPerfMapAtExit",
		"-XX:+PreserveFramePointer", "-cp", dir, "Contend", "500", "4"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	java := func(f string) bool { return strings.Contains(f, "Contend.") && strings.HasSuffix(f, "_[j]") }
	start := func(f string) bool { return f == "start_thread" || f == "JavaMain" }
	for _, c := range []struct {
		what string
		args []string
		min  uint64
	}{
		{"CPU samples", nil, 200},
		{"off-CPU ns", []string{"--off-cpu"}, 50e6},
	} {
		folded, errOut, code := e.run(append([]string{"export", "--format", "folded", "-o", "-"}, c.args...)...)
		if code != 0 {
			t.Fatalf("export %v: exit %d\n%s", c.args, code, errOut)
		}
		all, reach, bad := reachShare(t, folded, java, start)
		t.Logf("%s under the Java methods: %d, of which %d reach start_thread or JavaMain", c.what, all, reach)
		if all < c.min {
			t.Fatalf("only %d %s under the Java methods (want %d at least)\n%s", all, c.what, c.min, e.diagnosis())
		}
		if float64(reach) < 0.95*float64(all) {
			t.Errorf("%s: %d of %d under the Java methods reach the thread's start, want 95%%; outermost frames of the others:\n%s",
				c.what, reach, all, strings.Join(bad, "\n"))
		}
	}
}

// attachUntil attaches `stax record -p` to pid until the run has n samples, stops it, and
// returns the stored run's status (asked after the recording ended, so that a recorder
// slow to answer on a loaded machine does not fail the test).
func (e *staxEnv) attachUntil(t *testing.T, pid, n int) string {
	t.Helper()
	rec := e.cmd("record", "-q", "-p", itoa(pid))
	var recOut syncBuffer
	rec.Stdout, rec.Stderr = &recOut, &recOut
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	defer rec.Process.Kill()
	if out, errOut, code := e.run("wait", "--for-samples", itoa(n), "--timeout-ms", "120000"); code != 0 {
		t.Fatalf("wait: exit %d\n%s%s\n%s", code, out, errOut, recOut.String())
	}
	if out, errOut, code := e.run("stop"); code != 0 {
		t.Fatalf("stop: exit %d\n%s%s", code, out, errOut)
	}
	if err := rec.Wait(); err != nil {
		t.Fatalf("record -p: %v\n%s", err, recOut.String())
	}
	status, errOut, code := e.run("status")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, errOut)
	}
	return status
}

// A JVM started with no perf map option, attached to: stax status names the jcmd command
// that writes one; once run, a new attach names the JIT's methods from it, as any
// perf-map runtime's.
func TestJVMAttachedWithoutPerfMapNamesJcmd(t *testing.T) {
	testutil.RequirePerf(t)
	for _, tool := range []string{"java", "javac", "jcmd"} {
		testutil.RequireTool(t, tool)
	}
	dir := t.TempDir()
	testutil.Run(t, "", "javac", "-d", dir, filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/jvm/Contend.java"))
	// Two threads with ten minutes of CPU time each: stopped by the test.
	java := exec.Command("java", "-XX:+PrintCompilation", "-cp", dir, "Contend", "600000", "2")
	stdout, err := java.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := java.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { java.Process.Kill(); java.Wait() })
	pid := java.Process.Pid
	// Wait until the JIT has compiled Contend.work: its code is what needs a name.
	sc := bufio.NewScanner(stdout)
	for compiled := false; !compiled; {
		if !sc.Scan() {
			t.Fatalf("java ended before compiling Contend::work: %v", sc.Err())
		}
		compiled = strings.Contains(sc.Text(), "Contend::work")
	}
	go io.Copy(io.Discard, stdout)
	t.Cleanup(func() { os.Remove(fmt.Sprintf("/tmp/perf-%d.map", pid)) })

	e := newEnv(t)
	status := e.attachUntil(t, pid, 300)
	if want := fmt.Sprintf("`jcmd %d Compiler.perfmap`", pid); !strings.Contains(status, want) {
		t.Fatalf("status of a JVM attached with no perf map does not name %s:\n%s", want, status)
	}
	testutil.Run(t, "", "jcmd", itoa(pid), "Compiler.perfmap")
	e.attachUntil(t, pid, 300)
	var top api.Top
	e.mustJSON(&top, "top", "-n", "50")
	var named, all uint64
	for _, r := range top.Rows {
		all += r.Self
		if r.Kind == agg.KindJIT && strings.Contains(r.Func, "Contend.work") {
			named += r.Self
		}
	}
	var st api.Status
	e.mustJSON(&st, "status")
	t.Logf("after jcmd: %d of %d samples in Contend.work; JIT sources %+v", named, all, st.JIT)
	if named == 0 {
		text, _, _ := e.run("top", "-n", "15")
		t.Errorf("after jcmd Compiler.perfmap, no sample is named Contend.work:\n%s\n%s", text, e.diagnosis())
	}
	for _, n := range st.Meta.Notes {
		if strings.Contains(n, "jcmd") {
			t.Errorf("the hint stays once the perf map is there: %s", n)
		}
	}
}
