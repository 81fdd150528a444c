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
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestFIFOFilesDoNotStallRootRecorder: a user's program whose .gnu_debuglink debug file is
// a FIFO, and which puts a FIFO where its jitdump is sought, is recorded by root with
// record -p -l 2. The recorder ends on time with samples saved, and status counts and
// names both FIFOs.
func TestFIFOFilesDoNotStallRootRecorder(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireRoot(t)
	setpriv := testutil.RequireTool(t, "setpriv")
	e := newEnv(t)
	// A directory the user can reach, holding her stripped program and, where its debug
	// file is sought, a FIFO.
	dir, err := os.MkdirTemp("", "stax-hostile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/hostile.c")
	prog := testutil.CC(t, dir, "hostile", "gcc", append(cflags, src)...)
	debug := filepath.Join(dir, "hostile.debug")
	testutil.Run(t, "", "objcopy", "--only-keep-debug", prog, debug)
	testutil.Run(t, "", "strip", "--strip-all", prog)
	testutil.Run(t, dir, "objcopy", "--add-gnu-debuglink="+debug, prog)
	os.Remove(debug)
	if err := syscall.Mkfifo(debug, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(prog, 0o755)

	target := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", prog)
	stdout, err := target.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	jitFIFO := ""
	t.Cleanup(func() {
		target.Process.Kill()
		target.Wait()
		if jitFIFO != "" {
			os.Remove(jitFIFO)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready ") {
		t.Fatalf("the program did not start: %q, %v", line, err)
	}
	jitFIFO = strings.TrimSpace(strings.TrimPrefix(line, "ready "))

	// The recording stops after 2 s: give it that and a wide margin for a loaded machine
	// (the stall this guards against lasted until something wrote to the FIFO).
	const limit = 2 * time.Second
	const margin = 60 * time.Second
	rec := e.cmd("record", "-q", "-l", "2", "-p", itoa(target.Process.Pid))
	var recOut syncBuffer
	rec.Stdout, rec.Stderr = &recOut, &recOut
	start := time.Now()
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rec.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("record: %v\n%s", err, recOut.String())
		}
	case <-time.After(limit + margin):
		rec.Process.Kill()
		t.Fatalf("record -l 2 still running after %v\n%s", limit+margin, recOut.String())
	}
	took := time.Since(start)

	var st api.Status
	e.mustJSON(&st, "status")
	t.Logf("record -l 2 took %v; %d samples; %d files refused, %d abandoned; notes %q",
		took, st.Meta.Samples, st.Meta.FilesRefused, st.Meta.FilesAbandoned, st.Meta.Notes)
	if st.Meta.Samples == 0 {
		t.Errorf("no samples saved\n%s", e.diagnosis())
	}
	if d := st.Meta.End.Sub(st.Meta.Start); d > limit+margin {
		t.Errorf("the run lasted %v, for -l 2", d)
	}
	if st.Meta.FilesRefused < 2 {
		t.Errorf("%d files refused, want the two FIFOs counted", st.Meta.FilesRefused)
	}
	for _, want := range []string{"hostile.debug: is a FIFO", filepath.Base(jitFIFO) + ": is a FIFO"} {
		found := false
		for _, n := range st.Meta.Notes {
			found = found || strings.HasPrefix(n, "refused ") && strings.HasSuffix(n, want)
		}
		if !found {
			t.Errorf("no note says %q: %q", want, st.Meta.Notes)
		}
	}
	txt, _, _ := e.run("status")
	if !strings.Contains(txt, "files:     ") || !strings.Contains(txt, " refused (not regular files") {
		t.Errorf("status does not show the refused files:\n%s", txt)
	}
}
