package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/testutil/browser"
)

// When the recording of stax record --web ends, the page is not stranded: the server
// serves the stored run until Ctrl-C, and the page switches from "live" to "stored" with
// the final count, the one stax status gives for the stored run.
func TestWebRecordServesTheStoredRun(t *testing.T) {
	testutil.RequirePerf(t)
	bctx := browser.Require(t)
	e := newEnv(t)
	toy := filepath.Join(t.TempDir(), "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")
	// The toy JIT runs until SIGTERM (stax passes it on), or a minute of CPU at most.
	cmd := e.cmd("record", "--web", "--", toy, "-cpu", "60s")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	})
	var errOut syncBuffer
	url := ""
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		fmt.Fprintln(&errOut, sc.Text())
		if strings.HasPrefix(sc.Text(), "http://127.0.0.1:") {
			url = sc.Text()
			break
		}
	}
	if url == "" {
		t.Fatalf("stax record --web printed no URL:\n%s", errOut.String())
	}
	serving := make(chan struct{})
	go func() {
		said := false
		for sc.Scan() {
			fmt.Fprintln(&errOut, sc.Text())
			if !said && strings.Contains(sc.Text(), "the page serves the stored run") {
				said = true
				close(serving)
			}
		}
	}()
	if _, out, code := e.run("wait", "--for-samples", "200", "--timeout-ms", "60000"); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, out)
	}
	ctx := browser.Within(t, bctx, 3*time.Minute)
	waitJIT(ctx, t, url)
	if got := pageSelectorText(ctx, "#state"); got != "live" {
		t.Fatalf("the page of a recording says %q", got)
	}
	id := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(pageSelectorText(ctx, "#run"), " · ", 2)[0], "run "))

	// The end of the recording: the toy JIT exits on SIGTERM, stax saves the run and keeps
	// serving it.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-serving:
	case err := <-exited:
		exited <- err
		t.Fatalf("stax exited (%v) at the end of the recording instead of serving the stored run:\n%s", err, errOut.String())
	case <-ctx.Done():
		t.Fatalf("stax never said it serves the stored run:\n%s", errOut.String())
	}
	var st struct {
		State string
		Meta  struct{ Samples uint64 }
	}
	e.mustJSON(&st, "status", "--json", "--run", id)
	if st.State != "stored" || st.Meta.Samples == 0 {
		t.Fatalf("status of run %s: %+v", id, st)
	}
	want := fmt.Sprint(st.Meta.Samples)
	var state, count, root string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		state = pageSelectorText(ctx, "#state")
		count = strings.ReplaceAll(pageSelectorText(ctx, "#samples"), ",", "")
		// The flame graph's root holds the final samples too: the views were loaded again.
		root, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`String((window.staxFrames().find((f) => f.depth === 0) || {}).total)`))
		if state == "stored" && count == want && root == want {
			break
		}
	}
	if state != "stored" || count != want || root != want {
		t.Errorf("the page says %q, %s samples, a graph of %s; stax status: stored, %s samples", state, count, root, want)
	}
	// Ctrl-C ends it.
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
	case <-time.After(30 * time.Second):
		t.Fatalf("stax still serves 30 s after Ctrl-C:\n%s", errOut.String())
	}
}
