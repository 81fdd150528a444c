package recorder

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/spans"
)

// TestITTHintExitedProcess: a launched process that mapped an ITT library and exited
// before it was looked at (its environ reads empty) is judged by the launched
// command's environment, which named stax's collector: no hint.
func TestITTHintExitedProcess(t *testing.T) {
	cmd := exec.Command("/bin/true")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start /bin/true:", err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	// Not waited for, it stays a zombie once it exits.
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 0 && f[0] == "Z" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d is not a zombie after 10 s: %s", pid, b)
		}
		time.Sleep(time.Millisecond)
	}
	if env, ok := processEnviron(pid); ok {
		t.Fatalf("a zombie's environment reads as known: %q", env)
	}
	for _, c := range []struct {
		env  []string
		hint bool
	}{
		{[]string{"PATH=/bin", spans.EnvITTCollector + "=/lib/libstaxitt.so"}, false},
		{[]string{"PATH=/bin"}, true},
	} {
		r := &Recorder{}
		r.opts.Env = c.env
		r.checkITTLibrary(pid, "/opt/lib/libittnotify.so")
		if got := r.meta.ITTHint != ""; got != c.hint {
			t.Errorf("launched env %q: hint %q, want one: %v", c.env, r.meta.ITTHint, c.hint)
		}
		if c.hint && !strings.Contains(r.meta.ITTHint, "libittnotify.so") {
			t.Errorf("hint %q does not name the library", r.meta.ITTHint)
		}
	}
}

// TestProcessEnvironAlive: a live process's environment is read, and known.
func TestProcessEnvironAlive(t *testing.T) {
	env, ok := processEnviron(os.Getpid())
	if !ok || !bytes.Contains(env, []byte("=")) {
		t.Errorf("processEnviron(self) = %d bytes, %v", len(env), ok)
	}
}
