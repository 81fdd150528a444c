package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/testutil"
)

// checkOneLine asserts a failure printed exactly one line starting "stax: " and no Go
// runtime dump.
func checkOneLine(t *testing.T, what, stderr string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "stax: ") {
		t.Errorf("%s: want one line starting 'stax: ', got %q", what, stderr)
	}
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
		t.Errorf("%s: Go runtime dump in %q", what, stderr)
	}
}

func TestBadInputGivesOneLineAndExitCode(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	notExec := filepath.Join(dir, "data.txt")
	os.WriteFile(notExec, []byte("not a program\n"), 0o644)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown subcommand", []string{"frobnicate"}, 2, "unknown command"},
		{"unknown flag", []string{"top", "--bogus"}, 2, "unknown flag"},
		{"record without target", []string{"record"}, 2, "give a command"},
		{"record with both", []string{"record", "-p", "1", "--", "true"}, 2, "not several"},
		{"record -a with a pid", []string{"record", "-a", "-p", "1"}, 2, "not several"},
		{"bad sort", []string{"top", "--sort", "middle"}, 2, "--sort"},
		{"wait without condition", []string{"wait"}, 2, "wait needs"},
		{"missing command", []string{"record", "--", "/nonexistent/stax-test-cmd"}, 127, "command not found"},
		{"not executable", []string{"record", "--", notExec}, 126, "not executable"},
		{"missing run", []string{"top", "--run", "no-such-run"}, 5, "no-such-run"},
		{"no runs at all", []string{"top"}, 5, "no runs yet"},
		{"stop with nothing live", []string{"stop"}, 5, "no live run"},
		{"missing pid", []string{"record", "-p", "999999999"}, 5, "no such process"},
		{"pid not a number", []string{"record", "-p", "abc"}, 2, `"abc" is not a whole number`},
		{"negative row count", []string{"top", "-n", "-1"}, 2, "-n must be 1 or more"},
		{"zero threads", []string{"threads", "-n", "0"}, 2, "-n must be 1 or more"},
		{"threshold over 100", []string{"flame", "--threshold-pct", "200"}, 2, "between 0 and 100"},
		{"negative depth", []string{"flame", "-d", "-3"}, 2, "--depth"},
		{"zero frequency", []string{"record", "-F", "0", "--", "true"}, 2, "-F must be"},
		{"negative duration", []string{"record", "-l", "-1", "--", "true"}, 2, "must not be negative"},
		{"negative tid", []string{"top", "--tid", "-4"}, 2, "--tid"},
		{"rm of a run that is not there", []string{"rm", "no-such-run"}, 5, "no stored run"},
		{"gc without --keep", []string{"gc"}, 2, "--keep"},
		{"bad call graph", []string{"record", "--call-graph", "lbr", "--", "true"}, 2, "--call-graph must be fp or dwarf"},
		{"stack size too small", []string{"record", "--call-graph", "dwarf", "--stack-size", "100", "--", "true"}, 2, "--stack-size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := e.run(c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, c.code, stderr)
			}
			checkOneLine(t, c.name, stderr)
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr %q does not say %q", stderr, c.want)
			}
		})
	}
}

func TestDamagedRunFileIsOneLineError(t *testing.T) {
	e := newEnv(t)
	runs := filepath.Join(e.home, "runs")
	os.MkdirAll(runs, 0o700)
	os.WriteFile(filepath.Join(runs, "broken.stax"), []byte("STAXRUN\x00garbage"), 0o600)
	_, stderr, code := e.run("top", "--run", "broken")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	checkOneLine(t, "damaged run", stderr)
}

// asNobody runs stax as an unprivileged user, for the checks that mean something only
// without root.
func asNobody(t *testing.T) (*staxEnv, string) {
	t.Helper()
	testutil.RequireRoot(t) // to switch to an unprivileged user
	setpriv := testutil.RequireTool(t, "setpriv")
	// A world-readable copy of stax and a home the user can write.
	dir, err := os.MkdirTemp("", "stax-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	data, err := os.ReadFile(testutil.Stax(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "stax")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	// The user's own: stax refuses a store in a directory others can write to.
	home := filepath.Join(dir, "home")
	os.Mkdir(home, 0o700)
	if err := os.Chown(home, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return &staxEnv{t: t, bin: bin, home: home}, setpriv
}

func (e *staxEnv) runAs(setpriv string, args ...string) (string, string, int) {
	e.t.Helper()
	full := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", e.bin}, args...)
	c := exec.Command(setpriv, full...)
	c.Env = []string{"PATH=/usr/bin:/bin", "STAX_HOME=" + e.home, "HOME=" + e.home}
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("run %v: %v", full, err)
	}
	return out.String(), errb.String(), code
}

func TestPidOfAnotherUserAsNonRoot(t *testing.T) {
	e, setpriv := asNobody(t)
	_, stderr, code := e.runAs(setpriv, "record", "-p", "1")
	if code != 1 {
		t.Errorf("exit %d, want 1 (stderr %q)", code, stderr)
	}
	checkOneLine(t, "pid of another user", stderr)
	if !strings.Contains(stderr, "permission denied") {
		t.Errorf("stderr %q does not say permission denied", stderr)
	}
}

// TestUnreadableBinary: the kernel drops the events of an unprivileged profiler when the
// program it execs cannot be read, so stax refuses with one line instead of recording nothing.
func TestUnreadableBinary(t *testing.T) {
	e, setpriv := asNobody(t)
	dir := filepath.Dir(e.bin)
	prog := buildRatio(t)
	data, _ := os.ReadFile(prog)
	exe := filepath.Join(dir, "ratio")
	if err := os.WriteFile(exe, data, 0o711); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := e.runAs(setpriv, "record", "-q", "--", exe, "50")
	if code != 1 {
		t.Errorf("exit %d, want 1 (stderr %q)", code, stderr)
	}
	checkOneLine(t, "unreadable binary", stderr)
	if !strings.Contains(stderr, "cannot read") {
		t.Errorf("stderr %q does not say the program cannot be read", stderr)
	}
}

// TestSystemWideAsNonRoot: a user the kernel does not let watch whole CPUs gets one line
// saying what -a needs, not a crash.
func TestSystemWideAsNonRoot(t *testing.T) {
	testutil.RequirePerf(t)
	e, setpriv := asNobody(t)
	b, _ := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if level, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || level < 1 {
		t.Skipf("kernel.perf_event_paranoid is %q: every user may record every CPU here", b)
	}
	_, stderr, code := e.runAs(setpriv, "record", "-a", "-l", "1")
	if code != 1 {
		t.Errorf("exit %d, want 1 (stderr %q)", code, stderr)
	}
	checkOneLine(t, "record -a as non-root", stderr)
	for _, want := range []string{"record -a", "root or CAP_PERFMON", "kernel.perf_event_paranoid=0"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not say %q", stderr, want)
		}
	}
}
