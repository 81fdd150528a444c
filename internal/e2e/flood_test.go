package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// rssKB reads a process's resident set size.
func rssKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(rest)[0])
			return n
		}
	}
	t.Fatalf("no VmRSS for pid %d", pid)
	return 0
}

// floodHelper starts a process holding n connections to sock (each asking for the whole
// run and never reading, when deaf) and returns once they are open; they close when the
// test ends.
func floodHelper(t *testing.T, sock string, n int, deaf bool) {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^TestFloodHelper$")
	c.Env = append(os.Environ(), "STAX_FLOOD_SOCK="+sock, "STAX_FLOOD_N="+strconv.Itoa(n), "STAX_FLOOD_DEAF="+strconv.FormatBool(deaf))
	stdin, _ := c.StdinPipe()
	stdout, _ := c.StdoutPipe()
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); c.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "connected") {
		t.Fatalf("flood helper: %q, %v", line, err)
	}
}

// TestFloodHelper is the body of floodHelper's processes; it does nothing in a normal run.
func TestFloodHelper(t *testing.T) {
	sock := os.Getenv("STAX_FLOOD_SOCK")
	if sock == "" {
		return
	}
	n, _ := strconv.Atoi(os.Getenv("STAX_FLOOD_N"))
	deaf := os.Getenv("STAX_FLOOD_DEAF") == "true"
	conns := make([]net.Conn, 0, n)
	for len(conns) < n {
		c, err := net.Dial("unix", sock)
		if err != nil {
			time.Sleep(time.Millisecond) // the listen backlog is full: let the server accept
			continue
		}
		if deaf {
			fmt.Fprintf(c, "GET /v1/run HTTP/1.1\r\nHost: stax\r\n\r\n")
		}
		conns = append(conns, c)
	}
	fmt.Println("connected", len(conns))
	io.Copy(io.Discard, os.Stdin)
}

// TestClientFloodDoesNotStopRecording opens 20,000 idle connections and 200 clients that
// ask for the whole run and never read, during a recording: checkpoints go on, a normal
// query is answered, the recorder's memory stays bounded and it never runs out of file
// descriptors.
func TestClientFloodDoesNotStopRecording(t *testing.T) {
	testutil.RequirePerf(t)
	const idleConns, deafClients = 20000, 200
	e := newEnv(t)
	prog := buildRatio(t)
	rec := e.cmd("record", "-q", "--", prog, "100", "forever")
	var recOut syncBuffer
	rec.Stdout, rec.Stderr = &recOut, &recOut
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Process.Kill() })
	id := waitForCheckpoint(t, e)
	meta, err := store.ReadMeta(e.runPath(id))
	if err != nil || meta.Pid <= 0 {
		t.Fatalf("read the checkpoint: %+v, %v", meta, err)
	}
	t.Cleanup(func() { syscall.Kill(meta.Pid, syscall.SIGKILL) }) // it loops forever
	sock := filepath.Join(e.home, "live", id+".sock")
	rssBefore := rssKB(t, rec.Process.Pid)

	// The clients live in helper processes (this test binary, run as TestFloodHelper), so
	// no process needs more descriptors than RLIMIT_NOFILE allows.
	start := time.Now()
	const perHelper = 4000
	for n := 0; n < idleConns; n += perHelper {
		floodHelper(t, sock, perHelper, false)
	}
	floodHelper(t, sock, deafClients, true)
	t.Logf("%d idle and %d non-reading clients connected in %v", idleConns, deafClients, time.Since(start))

	queried := time.Now()
	var top api.Top
	e.mustJSON(&top, "top", "-n", "5")
	t.Logf("stax top answered in %v during the flood (%d samples, %s)", time.Since(queried), top.Samples, top.State)
	if top.State != api.StateLive {
		t.Errorf("top during the flood: state %q, want live", top.State)
	}

	// Checkpoints go on: the stored copy passes the samples top just saw.
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, err := store.ReadMeta(e.runPath(id))
		if err == nil && m.Samples > top.Samples {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint past %d samples within 60 s of the flood (%+v, %v)", top.Samples, m, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rssDuring := rssKB(t, rec.Process.Pid)
	t.Logf("recorder RSS %d MB before the flood, %d MB during", rssBefore>>10, rssDuring>>10)
	// The cap keeps at most 512 connections (a goroutine and two small buffers each) and
	// at most 64 MB of unread answers: measured +35 MB. Built with -race, every goroutine
	// and allocation also has the detector's shadow memory (measured +324 MB).
	limitMB := 100
	if testutil.Race {
		limitMB = 600
	}
	if grow := (rssDuring - rssBefore) >> 10; grow > limitMB {
		t.Errorf("the recorder grew by %d MB during the flood, want at most %d", grow, limitMB)
	}
	if _, stderr, code := e.run("stop"); code != 0 {
		t.Fatalf("stop: exit %d: %s", code, stderr)
	}
	deadline = time.Now().Add(60 * time.Second)
	for !strings.Contains(recOut.String(), "keeps running") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	var st api.Status
	e.mustJSON(&st, "status")
	for _, n := range st.Meta.Notes {
		if strings.Contains(n, "too many open files") {
			t.Errorf("the run records a descriptor shortage: %s", n)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(recOut.String()))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "too many open files") {
			t.Errorf("the recorder said: %s", sc.Text())
		}
	}
}
