package recorder

import (
	"os/exec"
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
	deadline := time.Now().Add(10 * time.Second)
	for {
		if env, ok := processEnviron(pid); !ok {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("pid %d still has an environment (%d bytes) after 10 s", pid, len(env))
		}
		time.Sleep(time.Millisecond)
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
