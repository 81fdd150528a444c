package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestStatusITTHint: a launched program that loads an ITT library (libittnotify.so) while
// no collector is named for it (--no-jit-api) gets a one-line hint in stax status, text and
// JSON; one given stax's collector gets none.
func TestStatusITTHint(t *testing.T) {
	testutil.RequirePerf(t)
	dir := t.TempDir()
	lib := filepath.Join(dir, "libittnotify.so")
	libSrc := filepath.Join(dir, "itt.c")
	progSrc := filepath.Join(dir, "loads.c")
	if err := os.WriteFile(libSrc, []byte("int itt_lib_work(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * i; return s; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(progSrc, []byte(`#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
	void *h = dlopen(argv[1], RTLD_NOW);
	int (*work)(int) = h ? (int (*)(int))dlsym(h, "itt_lib_work") : 0;
	if (!work) { fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror()); return 1; }
	printf("%d\n", work(1000));
	return 0;
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.CC(t, dir, "libittnotify.so", "gcc", "-shared", "-fPIC", "-O1", libSrc)
	prog := testutil.CC(t, dir, "loads", "gcc", "-O1", progSrc, "-ldl")
	e := newEnv(t)
	for _, c := range []struct {
		args []string
		hint bool
	}{
		{[]string{"record", "-q", "--no-jit-api", "--", prog, lib}, true},
		{[]string{"record", "-q", "--", prog, lib}, false},
	} {
		idFile := filepath.Join(dir, "run.id")
		args := append([]string{c.args[0], "--run-id-file", idFile}, c.args[1:]...)
		if out, errOut, code := e.run(args...); code != 0 {
			t.Fatalf("stax %v: exit %d\n%s%s", args, code, out, errOut)
		}
		id, err := os.ReadFile(idFile)
		if err != nil {
			t.Fatal(err)
		}
		run := strings.TrimSpace(string(id))
		text, _, _ := e.run("status", "--run", run)
		var st api.Status
		e.mustJSON(&st, "status", "--run", run)
		var lines []string
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "hint:") {
				lines = append(lines, l)
			}
		}
		if !c.hint {
			if len(lines) != 0 || st.Meta.ITTHint != "" {
				t.Errorf("stax %v: a hint although the collector was named: %q, %q", c.args, lines, st.Meta.ITTHint)
			}
			continue
		}
		if len(lines) != 1 || !strings.Contains(lines[0], "loaded libittnotify.so, which reports ITT tasks, but no collector was named") ||
			!strings.Contains(lines[0], "without --no-jit-api") {
			t.Errorf("stax %v: status hint lines %q, want one on libittnotify.so\n%s", c.args, lines, text)
		}
		if !strings.Contains(st.Meta.ITTHint, "libittnotify.so") {
			t.Errorf("stax %v: status --json meta.itt_hint %q", c.args, st.Meta.ITTHint)
		}
	}
}
