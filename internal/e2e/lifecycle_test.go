package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// runPath is where the run store of this stax home keeps run id.
func (e *staxEnv) runPath(id string) string { return filepath.Join(e.home, "runs", id+".stax") }

// waitForCheckpoint polls the run store until the run file of the only run holds samples:
// the event a crash test needs before it kills the recorder. It returns the run's id.
func waitForCheckpoint(t *testing.T, e *staxEnv) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ents, _ := os.ReadDir(filepath.Join(e.home, "runs"))
		for _, ent := range ents {
			if !strings.HasSuffix(ent.Name(), ".stax") {
				continue
			}
			if m, err := store.ReadMeta(filepath.Join(e.home, "runs", ent.Name())); err == nil && m.Samples > 0 {
				return m.ID
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no checkpoint with samples within 60 s")
	return ""
}

// TestCrashedRunIsCrashedEverywhere kills the recorder with SIGKILL mid-run: every command
// then calls the run crashed, answers from its last checkpoint, and the stale socket goes.
func TestCrashedRunIsCrashedEverywhere(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildRatio(t)
	rec := e.cmd("record", "-q", "--", prog, "100", "forever")
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	id := waitForCheckpoint(t, e)
	meta, err := store.ReadMeta(e.runPath(id))
	if err != nil || meta.Pid <= 0 {
		t.Fatalf("read the checkpoint: %+v, %v", meta, err)
	}
	target := meta.Pid
	t.Cleanup(func() { syscall.Kill(target, syscall.SIGKILL) }) // orphaned by the crash
	rec.Process.Kill()
	rec.Wait()

	sockets := func() []string {
		m, _ := filepath.Glob(filepath.Join(e.home, "live", "*.sock"))
		return m
	}
	if len(sockets()) != 1 {
		t.Fatalf("want the dead recorder's socket left behind before any command runs, got %v", sockets())
	}
	var l api.List
	e.mustJSON(&l, "list")
	if len(l.Runs) != 1 || l.Runs[0].State != api.StateCrashed || l.Runs[0].Live {
		t.Errorf("list: want one crashed run, got %+v", l.Runs)
	}
	if s := sockets(); len(s) != 0 {
		t.Errorf("the stale socket was not removed: %v", s)
	}
	var top api.Top
	e.mustJSON(&top, "top")
	if top.State != api.StateCrashed || top.Live || top.Samples == 0 {
		t.Errorf("top: state %q live %v samples %d, want crashed with the checkpoint's samples", top.State, top.Live, top.Samples)
	}
	text, _, _ := e.run("top")
	if !strings.Contains(text, "(crashed, newest)") {
		t.Errorf("top text does not say crashed:\n%s", text)
	}
	status, _, _ := e.run("status")
	if !strings.Contains(status, "("+api.StateCrashed+", newest)") || strings.Contains(status, "((") || strings.Contains(status, " in 0.0s") {
		t.Errorf("status of a crashed run:\n%s", status)
	}
	if _, _, code := e.run("wait", "--run", id, "--for-samples", "100000000"); code != 3 {
		t.Errorf("wait on a crashed run: exit %d, want 3 (the run ended)", code)
	}
	if _, stderr, code := e.run("wait", "--for-samples", "100000000"); code != 5 || !strings.Contains(stderr, "crashed run "+id) {
		t.Errorf("wait with only a crashed run: exit %d, %q; want 5 naming it", code, stderr)
	}
	_, stderr, code := e.run("stop")
	if code != 5 || !strings.Contains(stderr, "crashed") {
		t.Errorf("stop on a crashed run: exit %d, %q; want 5 saying it crashed", code, stderr)
	}
	checkOneLine(t, "stop", stderr)
}

// TestTwoRecordersOnOnePid attaches twice to one process in the same second: two runs,
// two sockets, neither overwriting the other.
func TestTwoRecordersOnOnePid(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	target := startRatio(t)
	var recs []*exec.Cmd
	for range 2 {
		r := e.cmd("record", "-q", "-p", itoa(target.Process.Pid))
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Process.Kill() })
		recs = append(recs, r)
	}
	var l api.List
	deadline := time.Now().Add(30 * time.Second)
	for {
		e.mustJSON(&l, "list")
		live := 0
		for _, r := range l.Runs {
			if r.Live {
				live++
			}
		}
		if live == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("want two live runs, list says %+v", l.Runs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if l.Runs[0].ID == l.Runs[1].ID {
		t.Fatalf("both recorders got run id %s", l.Runs[0].ID)
	}
	for _, r := range l.Runs {
		if _, errOut, code := e.run("wait", "--run", r.ID, "--for-samples", "200", "--timeout-ms", "60000"); code != 0 {
			t.Fatalf("wait on %s: exit %d: %s", r.ID, code, errOut)
		}
		if _, errOut, code := e.run("stop", "--run", r.ID); code != 0 {
			t.Fatalf("stop %s: exit %d: %s", r.ID, code, errOut)
		}
	}
	for _, r := range recs {
		if err := r.Wait(); err != nil {
			t.Errorf("recorder: %v", err)
		}
	}
	for _, r := range l.Runs {
		var top api.Top
		e.mustJSON(&top, "top", "--run", r.ID)
		if top.State != api.StateStored || top.Samples < 200 {
			t.Errorf("run %s after stop: state %q, %d samples", r.ID, top.State, top.Samples)
		}
	}
}

// TestCtrlCReachesTheCommandOnce sends SIGINT to the process group of stax and the command,
// as a terminal's Ctrl-C does: the command sees one SIGINT, not a second forwarded copy.
func TestCtrlCReachesTheCommandOnce(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/sigint.c")
	prog := testutil.CC(t, t.TempDir(), "sigint", "gcc", "-O1", src)
	rec := e.cmd("record", "-q", "--", prog)
	rec.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := rec.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut syncBuffer
	rec.Stderr = &errOut
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-rec.Process.Pid, syscall.SIGKILL) })
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("the program did not start: %q %s", sc.Text(), errOut.String())
	}
	if err := syscall.Kill(-rec.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := rec.Wait(); err != nil {
		t.Errorf("record: %v (%s)", err, errOut.String())
	}
	if len(lines) != 1 || lines[0] != "sigints 1" {
		t.Errorf("the command printed %q, want [sigints 1]", lines)
	}
}

// TestStopLeavesLaunchedCommandRunning: stax stop on a launched command ends the
// recording and says so; the command runs on to its end and stax exits with its status.
func TestStopLeavesLaunchedCommandRunning(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	toy := filepath.Join(t.TempDir(), "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")
	rec := e.startUntilReady(t.TempDir(), toy, "-cpu", "300ms", "-wait")
	if _, stderr, code := e.run("stop"); code != 0 {
		t.Fatalf("stop: exit %d: %s", code, stderr)
	}
	var top api.Top
	e.mustJSON(&top, "top")
	if top.State != api.StateStored || top.Samples == 0 {
		t.Errorf("after stop the run is %q with %d samples, want stored with samples", top.State, top.Samples)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(rec.out.String(), "keeps running") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(rec.out.String(), "recording stopped") || !strings.Contains(rec.out.String(), "keeps running") {
		t.Errorf("record did not say the recording stopped while the command runs on: %q", rec.out.String())
	}
	if rec.cmd.ProcessState != nil {
		t.Fatalf("stax record exited before its command did")
	}
	rec.finish(t) // the command ends now; stax exits with its status, 0
	var after api.Top
	e.mustJSON(&after, "top")
	if after.Samples != top.Samples {
		t.Errorf("the stored run changed after stop: %d then %d samples", top.Samples, after.Samples)
	}
	removeJITFiles(t, e)
}

// TestDamagedRunAmongGoodOnes: a damaged file is listed as damaged with its reason,
// skipped when picking the newest run, and removed by gc --damaged.
func TestDamagedRunAmongGoodOnes(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildRatio(t)
	for range 2 {
		if _, stderr, code := e.run("record", "-q", "--", prog, "20"); code != 0 {
			t.Fatalf("record: exit %d: %s", code, stderr)
		}
	}
	var l api.List
	e.mustJSON(&l, "list")
	if len(l.Runs) != 2 {
		t.Fatalf("want two runs, got %+v", l.Runs)
	}
	newestGood := l.Runs[0].ID
	good, err := os.ReadFile(e.runPath(newestGood))
	if err != nil {
		t.Fatal(err)
	}
	// Newer than both: a bit flip past the meta, and a file cut short.
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-8] ^= 0x20
	later := time.Now().Add(time.Minute)
	for name, b := range map[string][]byte{"zz-flipped": flipped, "zz-truncated": good[:len(good)/2]} {
		p := filepath.Join(e.home, "runs", name+".stax")
		os.WriteFile(p, b, 0o600)
		os.Chtimes(p, later, later)
	}
	e.mustJSON(&l, "list")
	states := map[string]string{}
	for _, r := range l.Runs {
		states[r.ID] = r.State
	}
	if states["zz-truncated"] != "damaged" {
		t.Errorf("a truncated file is listed as %q, want damaged: %+v", states["zz-truncated"], l.Runs)
	}
	var top api.Top
	e.mustJSON(&top, "top")
	if top.Run != newestGood {
		t.Errorf("a bare top picked %s, want the newest whole run %s", top.Run, newestGood)
	}
	if _, stderr, code := e.run("top", "--run", "zz-flipped"); code != 1 || !strings.Contains(stderr, "checksum") {
		t.Errorf("top of a damaged run: exit %d, %q; want 1 naming the checksum", code, stderr)
	}
	if out, stderr, code := e.run("gc", "--damaged"); code != 0 || !strings.Contains(out, "zz-truncated") {
		t.Errorf("gc --damaged: exit %d, %q %q", code, out, stderr)
	}
	if out, stderr, code := e.run("gc", "--keep", "1"); code != 0 || !strings.Contains(out, "removed") {
		t.Errorf("gc --keep 1: exit %d, %q %q", code, out, stderr)
	}
	e.mustJSON(&l, "list")
	var ids []string
	for _, r := range l.Runs {
		ids = append(ids, r.ID+":"+r.State)
	}
	// gc --keep counts whole runs only; the bit-flipped file has a readable meta and is the
	// newest, so it is the one kept.
	if len(l.Runs) != 1 {
		t.Errorf("after gc --keep 1: %v", ids)
	}
}
