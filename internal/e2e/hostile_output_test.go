package e2e

import (
	"bufio"
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/testutil/synthrun"
)

// TestPushHeaderFileKeepsSecretOffCmdline: a credential given as --push-header @FILE and
// $STAX_PUSH_HEADERS reaches the push endpoint with every request, the command line of
// the running recorder (which every local user can read) does not hold it, and the
// recorded command does not inherit $STAX_PUSH_HEADERS.
func TestPushHeaderFileKeepsSecretOffCmdline(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	const secret = "s3cret-token-7f3a"
	var mu sync.Mutex
	var auths, orgs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		orgs = append(orgs, r.Header.Get("X-Scope-OrgID"))
		mu.Unlock()
	}))
	defer srv.Close()
	hf := filepath.Join(t.TempDir(), "push-headers")
	if err := os.WriteFile(hf, []byte("# the fleet store's token\n\nAuthorization: Bearer "+secret+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.env = append(e.env, "STAX_PUSH_HEADERS=X-Scope-OrgID: team-env")
	rec := e.startRecordUntilReady(t.TempDir(), []string{"--push", "otlp+" + srv.URL, "--push-every", "1s", "--push-header", "@" + hf},
		"sh", "-c", "echo \"inherited=[$STAX_PUSH_HEADERS]\"; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo ready; read x")
	cmdline, err := os.ReadFile("/proc/" + itoa(rec.cmd.Process.Pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cmdline, []byte("@"+hf)) {
		t.Fatalf("read the wrong process's command line: %q", cmdline)
	}
	if bytes.Contains(cmdline, []byte(secret)) {
		t.Errorf("the recorder's command line holds the secret: %q", cmdline)
	}
	rec.finish(t)
	if !strings.Contains(rec.out.String(), "inherited=[]\n") {
		t.Errorf("the recorded command inherited $STAX_PUSH_HEADERS:\n%s", rec.out.String())
	}
	if strings.Contains(rec.out.String(), secret) || strings.Contains(rec.out.String(), "warning") {
		t.Errorf("record printed the secret or a warning:\n%s", rec.out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) == 0 {
		t.Fatalf("nothing was pushed:\n%s", rec.out.String())
	}
	for i := range auths {
		if auths[i] != "Bearer "+secret || orgs[i] != "team-env" {
			t.Errorf("push %d: Authorization %q, X-Scope-OrgID %q", i, auths[i], orgs[i])
		}
	}
}

// TestWebOpenKeepsTokenOffCmdline: stax web --open hands the browser (here a fake
// xdg-open first on PATH that records its arguments) a file, not the URL with its token:
// the file is this user's alone (0600), redirects to the page, and is removed when stax
// web stops.
func TestWebOpenKeepsTokenOffCmdline(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	run := filepath.Join(dir, "run.stax")
	if err := store.Save(run, &store.Run{Meta: store.Meta{ID: "webopen", Samples: 2000, Finished: true, StartNs: 1e9},
		Profile: *synthrun.Profile(2000, 50)}); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	argv := filepath.Join(dir, "argv")
	// It records its arguments, one a line, and the mode and text of the file it was given.
	script := "#!/bin/sh\n{ for a in \"$@\"; do echo \"arg $a\"; done; f=${1#file://}; stat -c 'mode %a' \"$f\"; cat \"$f\"; } > " + argv + ".tmp\nmv " + argv + ".tmp " + argv + "\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e.env = append(e.env, "PATH="+bin+":"+os.Getenv("PATH"))
	cmd := e.cmd("web", "--run", run, "--open")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		cmd.Wait()
		t.Fatalf("stax web printed no URL:\n%s", stderr.String())
	}
	url := sc.Text()
	_, token, ok := strings.Cut(url, "?token=")
	if !ok || len(token) < 16 {
		t.Fatalf("URL %q carries no token", url)
	}
	var got []byte
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if got, err = os.ReadFile(argv); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("xdg-open was not run:\n%s", stderr.String())
		}
	}
	text := string(got)
	args, rest, _ := strings.Cut(text, "\nmode ")
	if strings.Contains(args, token) {
		t.Errorf("xdg-open's arguments hold the token: %q", args)
	}
	page, ok := strings.CutPrefix(args, "arg file://")
	if !ok || strings.Contains(page, "\n") {
		t.Fatalf("xdg-open was given %q, want one file:// URL\n%s", args, text)
	}
	if !strings.HasPrefix(rest, "600\n") {
		t.Errorf("the page file's mode is %q, want 600", strings.SplitN(rest, "\n", 2)[0])
	}
	if !strings.Contains(rest, `http-equiv="refresh" content="0;url=`+url+`"`) || !strings.Contains(rest, `window.location.replace("`+url+`")`) {
		t.Errorf("the page file does not redirect to %s:\n%s", url, rest)
	}
	if _, err := os.Stat(page); err != nil {
		t.Errorf("the page file is gone while stax web runs: %v", err)
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Errorf("stax web: %v\n%s", err, stderr.String())
	}
	if _, err := os.Stat(page); !os.IsNotExist(err) {
		t.Errorf("the page file outlives stax web: %v", err)
	}
}

// TestSharedRunStoreRefused: a run store other users can write to (runs/ mode 0777) is
// refused by record and list with the one-line fix, and nothing is written into it.
func TestSharedRunStoreRefused(t *testing.T) {
	e := newEnv(t)
	runs := filepath.Join(e.home, "runs")
	if err := os.Mkdir(runs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(runs, 0o777); err != nil {
		t.Fatal(err)
	}
	want := "stax: run store " + runs + " can be written by other users (mode 0777): they could plant files that stax writes through; chmod go-w " + runs + ", or set STAX_HOME to a directory of your own\n"
	for _, args := range [][]string{{"record", "-q", "--", "true"}, {"list"}} {
		out, errOut, code := e.run(args...)
		if code == 0 || !strings.HasSuffix(errOut, want) {
			t.Errorf("stax %v: exit %d\n%s%s\nwant the error %q", args, code, out, errOut, want)
		}
	}
	if ents, _ := os.ReadDir(runs); len(ents) != 0 {
		t.Errorf("written into the shared store: %v", ents)
	}
}
