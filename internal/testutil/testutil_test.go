package testutil

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// outcome records how a requirement ended a test: skipped or failed, and the message.
type outcome struct {
	testing.TB
	skipped, failed string
}

func (o *outcome) Helper() {}

func (o *outcome) Fatalf(format string, args ...any) {
	o.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (o *outcome) Skip(args ...any) {
	o.skipped = fmt.Sprint(args...)
	runtime.Goexit()
}

func (o *outcome) Skipf(format string, args ...any) { o.Skip(fmt.Sprintf(format, args...)) }

func run(f func(t testing.TB)) *outcome {
	o := &outcome{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(o)
	}()
	<-done
	return o
}

// TestRequire: a missing requirement skips, unless its variable is 1 (CI): then it fails.
func TestRequire(t *testing.T) {
	defer func(f func() bool) { unitOnly = f }(unitOnly)
	unitOnly = func() bool { return false }
	for _, env := range []string{EnvPerf, EnvRoot, EnvBrowser} {
		t.Setenv(env, "")
		o := run(func(t testing.TB) { Require(t, env, "no %s here", "thing") })
		if o.skipped != "no thing here" || o.failed != "" {
			t.Errorf("%s unset: skipped %q, failed %q", env, o.skipped, o.failed)
		}
		t.Setenv(env, "1")
		o = run(func(t testing.TB) { Require(t, env, "no %s here", "thing") })
		if o.skipped != "" || !strings.HasPrefix(o.failed, "no thing here") || !strings.Contains(o.failed, env+"=1") {
			t.Errorf("%s=1: skipped %q, failed %q", env, o.skipped, o.failed)
		}
	}
	t.Setenv(EnvPerf, "1")
	if o := run(func(t testing.TB) { RequireTool(t, "stax-no-such-tool") }); !strings.Contains(o.failed, "stax-no-such-tool is not installed") {
		t.Errorf("a missing tool on CI: failed %q, skipped %q", o.failed, o.skipped)
	}
	if o := run(func(t testing.TB) { RequireFile(t, "/nonexistent/stax", "stax-dbg") }); !strings.Contains(o.failed, "apt-get install stax-dbg") {
		t.Errorf("a missing file on CI: failed %q, skipped %q", o.failed, o.skipped)
	}
}

// TestRequireUnitOnly: under -short a test that needs more than the unit tests have is
// skipped, even where CI's variables say it must run.
func TestRequireUnitOnly(t *testing.T) {
	defer func(f func() bool) { unitOnly = f }(unitOnly)
	unitOnly = func() bool { return true }
	for _, env := range []string{EnvPerf, EnvRoot, EnvBrowser} {
		t.Setenv(env, "1")
		o := run(func(t testing.TB) { Require(t, env, "no %s here", "thing") })
		if o.failed != "" || !strings.Contains(o.skipped, "no thing here") {
			t.Errorf("%s=1 under -short: skipped %q, failed %q", env, o.skipped, o.failed)
		}
	}
	if o := run(RequirePerf); o.failed != "" || o.skipped == "" {
		t.Errorf("RequirePerf under -short: skipped %q, failed %q", o.skipped, o.failed)
	}
	if o := run(RequireRoot); o.failed != "" || o.skipped == "" {
		t.Errorf("RequireRoot under -short: skipped %q, failed %q", o.skipped, o.failed)
	}
}
