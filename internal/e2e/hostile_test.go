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

// startChrooted runs testdata/hostile.c, linked statically, as nobody in a chroot at root
// (which must hold a /tmp of the test's making), and returns its pid once it runs there.
func startChrooted(t *testing.T, root string) int {
	t.Helper()
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/hostile.c")
	testutil.CC(t, root, "prog", "gcc", append(append([]string{}, cflags...), "-static", src)...)
	os.Chmod(filepath.Join(root, "prog"), 0o755)
	target := &exec.Cmd{Path: "/prog", Args: []string{"/prog", "plain"}, Dir: "/"}
	target.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	stdout, err := target.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		target.Process.Kill()
		target.Wait()
	})
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.HasPrefix(line, "ready") {
		t.Fatalf("the chrooted program did not start: %q, %v", line, err)
	}
	return target.Process.Pid
}

// recordAttached records pid with record -p, calls during once the run is live, stops the
// recording and waits for stax to exit.
func recordAttached(t *testing.T, e *staxEnv, pid int, during func()) {
	t.Helper()
	rec := e.cmd("record", "-q", "-p", itoa(pid))
	var recOut syncBuffer
	rec.Stdout, rec.Stderr = &recOut, &recOut
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	defer rec.Process.Kill()
	if out, errOut, code := e.run("wait", "--for-samples", "1", "--timeout-ms", "60000"); code != 0 {
		t.Fatalf("wait: exit %d\n%s%s\n%s", code, out, errOut, recOut.String())
	}
	during()
	if out, errOut, code := e.run("stop"); code != 0 {
		t.Fatalf("stop: exit %d\n%s%s", code, out, errOut)
	}
	if err := rec.Wait(); err != nil {
		t.Fatalf("record -p: %v\n%s", err, recOut.String())
	}
}

// TestAttachFileStaysInTargetRoot: record -p of a chrooted process run as nobody makes the
// file that tells it it is recorded (/tmp/stax-PID.recording) as nobody, inside its root,
// and removes it at the end; where its /tmp is a symbolic link to a directory outside its
// root, nothing is made there (nor anywhere).
func TestAttachFileStaysInTargetRoot(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireRoot(t)
	e := newEnv(t)
	mkdir := func(prefix string, mode os.FileMode) string {
		d, err := os.MkdirTemp("", prefix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		os.Chmod(d, mode)
		return d
	}
	entries := func(dir string) []string {
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, d := range ents {
			names = append(names, d.Name())
		}
		return names
	}

	t.Run("own tmp", func(t *testing.T) {
		root := mkdir("stax-chroot-", 0o755)
		tmp := filepath.Join(root, "tmp")
		os.Mkdir(tmp, 0o777)
		os.Chmod(tmp, 0o1777)
		pid := startChrooted(t, root)
		flag := filepath.Join(tmp, "stax-"+itoa(pid)+".recording")
		recordAttached(t, e, pid, func() {
			st, err := os.Lstat(flag)
			if err != nil {
				t.Fatalf("while recording: %v (in its /tmp: %q)", err, entries(tmp))
			}
			if s := st.Sys().(*syscall.Stat_t); s.Uid != 65534 || !st.Mode().IsRegular() {
				t.Errorf("%s is %v owned by uid %d, want a regular file of nobody's (65534)", flag, st.Mode(), s.Uid)
			}
		})
		if _, err := os.Lstat(flag); !os.IsNotExist(err) {
			t.Errorf("%s left after the recording: %v", flag, err)
		}
	})

	t.Run("tmp links outside", func(t *testing.T) {
		root := mkdir("stax-chroot-", 0o755)
		outside := mkdir("stax-outside-", 0o777)
		if err := os.Symlink(outside, filepath.Join(root, "tmp")); err != nil {
			t.Fatal(err)
		}
		pid := startChrooted(t, root)
		before := entries(root)
		recordAttached(t, e, pid, func() {
			if names := entries(outside); len(names) > 0 {
				t.Errorf("made outside the target's root, in %s: %q", outside, names)
			}
		})
		if names := entries(outside); len(names) > 0 {
			t.Errorf("left outside the target's root, in %s: %q", outside, names)
		}
		if after := entries(root); strings.Join(after, " ") != strings.Join(before, " ") {
			t.Errorf("the target's root held %q, now %q", before, after)
		}
	})
}
