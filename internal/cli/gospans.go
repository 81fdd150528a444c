package cli

import (
	"os"
	"strconv"
	"strings"

	"github.com/stax-profiler/stax/internal/proc"
)

// withGoSpans turns on the spans of stax's Go package (pkg/stax) in a launched command,
// unless the user set STAX_SPANS.
func withGoSpans(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "STAX_SPANS=") {
			return env
		}
	}
	return append(env, "STAX_SPANS=1")
}

// attachSpans tells a process stax attached to that it is recorded: stax's Go package
// writes spans while /tmp/stax-PID.recording (PID as the process sees itself) exists in
// its root. It returns what removes the file.
func attachSpans(pid int) func() {
	name := "/tmp/stax-" + strconv.Itoa(proc.NSPid(pid)) + ".recording"
	path := "/proc/" + strconv.Itoa(pid) + "/root" + name
	if a, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/root/"); err == nil {
		if b, err := os.Stat("/"); err == nil && os.SameFile(a, b) {
			path = name // the same root: the file can go once the process is gone too
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return func() {} // another stax records it, or its /tmp cannot be written
	}
	f.Close()
	return func() { os.Remove(path) }
}
