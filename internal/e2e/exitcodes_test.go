package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestExitCodesPerCommand checks the README's table of exit codes over real runs of a
// ping-pong of two threads: a selection that matches nothing (--focus, --tid, --from,
// --span, a function) exits 5 with one line, whatever the command; a run without what a
// command needs (off-CPU time, wakers) exits 1 and says why; a bad command line exits 2.
func TestExitCodesPerCommand(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireRoot(t) // the wakers' tracepoint
	e := newEnv(t)
	dir := t.TempDir()
	prog := buildOffCPU(t, dir)
	record := func(name string, flags ...string) string {
		idFile := filepath.Join(dir, name+".id")
		args := append(append([]string{"record", "-q", "--run-id-file", idFile}, flags...), "--", prog, "pingpong", "5000")
		if out, errOut, code := e.run(args...); code != 0 {
			t.Fatalf("record %v: exit %d\n%s%s", flags, code, out, errOut)
		}
		id, err := os.ReadFile(idFile)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(id))
	}
	full, noOff, noWakers := record("full"), record("nooff", "--no-off-cpu"), record("nowakers", "--no-wakers")

	const none = "999999999" // a thread id no run has
	cases := []struct {
		run  string
		args []string
		code int
		want string // in the error line
	}{
		// Answers.
		{full, []string{"top"}, 0, ""},
		{full, []string{"top", "--off-cpu"}, 0, ""},
		{full, []string{"wakers"}, 0, ""},
		{full, []string{"threads"}, 0, ""},
		{full, []string{"timeline", "--states"}, 0, ""},
		// A selection that matches nothing.
		{full, []string{"top", "--focus", "^no_such_fn$"}, 5, "match --focus"},
		{full, []string{"top", "--off-cpu", "--focus", "^no_such_fn$"}, 5, "match --focus"},
		{full, []string{"top", "--ignore", "."}, 5, "match --ignore"},
		{full, []string{"top", "--tid", none}, 5, "thread " + none},
		{full, []string{"top", "--pid", "4000000"}, 5, "match --pid"},
		{full, []string{"top", "--from", "1000"}, 5, "past the end"},
		{full, []string{"top", "--span", "no_such_span"}, 5, "no span named"},
		{full, []string{"flame", "--focus", "^no_such_fn$"}, 5, "match --focus"},
		{full, []string{"flame", "--off-cpu", "--tid", none}, 5, "match --tid"},
		{full, []string{"callers", "^no_such_fn$"}, 5, "no sampled function matches"},
		{full, []string{"callees", "^no_such_fn$"}, 5, "no sampled function matches"},
		{full, []string{"callees", "main", "--focus", "^no_such_fn$"}, 5, "match --focus"},
		{full, []string{"annotate", "^no_such_fn$"}, 5, "no sampled function matches"},
		{full, []string{"annotate", "main", "--focus", "^no_such_fn$"}, 5, "match --focus"},
		{full, []string{"timeline", "--tid", none}, 5, "thread " + none},
		{full, []string{"timeline", "--focus", "^no_such_fn$"}, 5, "match --focus"},
		{full, []string{"timeline", "--states", "--tid", none}, 5, "match --tid"},
		{full, []string{"threads", "--focus", "^no_such_fn$"}, 5, "match --focus"},
		{full, []string{"wakers", "--tid", none}, 5, "match --tid"},
		{full, []string{"export", "-f", "folded", "-o", "-", "--focus", "^no_such_fn$"}, 5, "match --focus"},
		{full, []string{"export", "-f", "pprof", "-o", "-", "--from", "1000"}, 5, "past the end"},
		// A run without what the command needs.
		{noOff, []string{"top", "--off-cpu"}, 1, "--no-off-cpu"},
		{noOff, []string{"flame", "--wall"}, 1, "--no-off-cpu"},
		{noOff, []string{"threads"}, 0, ""},
		{noOff, []string{"timeline", "--states"}, 1, "--no-off-cpu"},
		{noOff, []string{"wakers"}, 1, "--no-off-cpu"},
		{noOff, []string{"export", "-f", "folded", "-o", "-", "--off-cpu"}, 1, "no off-CPU time"},
		{noWakers, []string{"wakers"}, 1, "--no-wakers"},
		// Bad command lines.
		{full, []string{"top", "--from", "3", "--to", "2"}, 2, "window is empty"},
		{full, []string{"top", "--focus", "("}, 2, "not a regular expression"},
		{full, []string{"top", "--sort", "middle"}, 2, "--sort"},
		{full, []string{"top", "--wall", "--runnable"}, 2, "do not go together"},
		{full, []string{"export", "-f", "pprof", "-o", "-", "--off-cpu"}, 2, "leave --off-cpu out"},
	}
	for _, c := range cases {
		args := append(append([]string{}, c.args...), "--run", c.run)
		out, errOut, code := e.run(args...)
		if code != c.code {
			t.Errorf("stax %s (run %s): exit %d, want %d\n%s", strings.Join(c.args, " "), c.run, code, c.code, errOut)
			continue
		}
		if code == 0 {
			continue
		}
		checkOneLine(t, strings.Join(c.args, " "), errOut)
		if !strings.Contains(errOut, c.want) {
			t.Errorf("stax %s: %q does not say %q", strings.Join(c.args, " "), errOut, c.want)
		}
		if out != "" {
			t.Errorf("stax %s exits %d with output:\n%s", strings.Join(c.args, " "), code, out)
		}
	}
}

// exitCase is a command line and the exit code and error line it gives.
type exitCase struct {
	args []string
	code int
	want string // in the error line
}

// TestExitCodesLive: the live recorder's answers exit as the stored run's do: a selection
// that matches nothing 5, a run without what the command needs 1, a bad command line 2.
func TestExitCodesLive(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireRoot(t) // the wakers' tracepoint
	e := newEnv(t)
	dir := t.TempDir()
	prog := buildOffCPU(t, dir)
	const none = "999999999"
	for _, c := range []struct {
		flags []string
		cases []exitCase
	}{
		{[]string{"--no-wakers"}, []exitCase{
			{[]string{"wakers"}, 1, "--no-wakers"},
			{[]string{"top", "--focus", "^no_such_fn$"}, 5, "match --focus"},
			{[]string{"top", "--off-cpu", "--focus", "^no_such_fn$"}, 5, "match --focus"},
			{[]string{"top", "--tid", none}, 5, "thread " + none},
			{[]string{"callees", "^no_such_fn$"}, 5, "no sampled function matches"},
			{[]string{"timeline", "--tid", none}, 5, "thread " + none},
			{[]string{"threads", "--focus", "^no_such_fn$"}, 5, "match --focus"},
			{[]string{"top", "--from", "3", "--to", "2"}, 2, "window is empty"},
		}},
		{[]string{"--no-off-cpu"}, []exitCase{
			{[]string{"top", "--off-cpu"}, 1, "--no-off-cpu"},
			{[]string{"timeline", "--states"}, 1, "--no-off-cpu"},
			{[]string{"wakers"}, 1, "--no-off-cpu"},
		}},
	} {
		live := e.startRecordUntilReady(dir, c.flags, prog, "stuck", "1")
		// The program is ready before stax answers on its socket: stax wait waits for that.
		if out, errOut, code := e.run("wait", "--for-seconds", "0.1", "--timeout-ms", "60000"); code != 0 {
			t.Fatalf("wait: exit %d\n%s%s", code, out, errOut)
		}
		for _, k := range c.cases {
			out, errOut, code := e.run(k.args...)
			if code != k.code {
				t.Errorf("record %v: stax %s: exit %d, want %d\n%s", c.flags, strings.Join(k.args, " "), code, k.code, errOut)
				continue
			}
			checkOneLine(t, strings.Join(k.args, " "), errOut)
			if !strings.Contains(errOut, k.want) || out != "" {
				t.Errorf("record %v: stax %s: %q does not say %q, or printed %q", c.flags, strings.Join(k.args, " "), errOut, k.want, out)
			}
		}
		var top api.Top
		e.mustJSON(&top, "top")
		if !top.Live {
			t.Errorf("record %v: the run ended before the checks: they did not ask a live recorder", c.flags)
		}
		live.finish(t)
	}
}
