package cli

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/asuser"
	"github.com/stax-profiler/stax/internal/collectorabi"
	"github.com/stax-profiler/stax/internal/proc"
)

// withGoSpans turns on the spans of stax's Go package (pkg/stax) in a launched command,
// unless the user set STAX_SPANS.
func withGoSpans(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, collectorabi.EnvSpans+"=") {
			return env
		}
	}
	return append(env, collectorabi.EnvSpans+"=1")
}

// attachSpans tells a process stax attached to that it is recorded: stax's Go package
// writes spans while /tmp/stax-PID.recording (PID as the process sees itself) exists in
// its root. It returns what removes the file.
//
// The process's user controls its /tmp (a symbolic link to /etc, in a chroot), so the file
// is made as she could make it herself: as her (asuser), with the path resolved inside the
// process's root (openat2 with RESOLVE_IN_ROOT, which keeps every symbolic link and ".."
// within it, and RESOLVE_NO_MAGICLINKS), O_CREAT|O_EXCL|O_NOFOLLOW. It is removed, as her
// too, from the directory it was made in (held open meanwhile), whatever that directory's
// path has become, and whether or not the process still runs. Without openat2 (Linux
// before 5.6) no file is made.
func attachSpans(pid int) func() {
	none := func() {}
	creds, err := proc.ReadCreds(pid)
	if err != nil {
		return none
	}
	name := collectorabi.AttachName(proc.NSPid(pid))
	root, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return none
	}
	defer unix.Close(root)
	dir := -1
	err = asuser.Run(&creds, func() error {
		d, err := unix.Openat2(root, strings.TrimPrefix(collectorabi.DefaultDir, "/"), &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err != nil {
			return err
		}
		fd, err := unix.Openat(d, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0o644)
		if err != nil {
			unix.Close(d)
			return err
		}
		unix.Close(fd)
		dir = d
		return nil
	})
	if err != nil {
		return none // another stax records it, or its /tmp cannot be written by its user
	}
	return func() {
		asuser.Run(&creds, func() error { return unix.Unlinkat(dir, name, 0) })
		unix.Close(dir)
	}
}
