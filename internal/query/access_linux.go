package query

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/asuser"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/targetfile"
)

// openAs opens path read-only as who could. When stax runs as root and who is another
// user, the open runs on a locked OS thread whose file-system uid, gid and supplementary
// groups are switched to who's, so that the kernel itself resolves every component of the
// path and applies permissions, ACLs and symbolic links as it would for the process:
// there is one open and no check of the path apart from it, so nothing can be swapped in
// between. (A walk in stax, component by component with O_PATH|O_NOFOLLOW, would have to
// re-implement the kernel's rules, ACLs, capabilities and security modules, and would
// still miss some.) Otherwise stax's own permissions bound what it opens.
func openAs(path string, who *proc.Creds) (*os.File, error) {
	done := make(chan openResult, 1)
	if who == nil || who.UID == 0 || os.Geteuid() != 0 {
		go func() {
			f, err := openResolved(path)
			done <- openResult{f, err}
		}()
	} else {
		go openAsThread(path, who, done)
	}
	// The open has a deadline (a file system that does not answer): past it, it is left to
	// end on its own, and its file closed.
	t := time.NewTimer(targetfile.OpenTimeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.f, r.err
	case <-t.C:
	}
	targetfile.Abandon(path, fmt.Sprintf("no answer within %v", targetfile.OpenTimeout))
	go func() {
		if r := <-done; r.f != nil {
			r.f.Close()
		}
	}()
	return nil, &os.PathError{Op: "open", Path: path, Err: targetfile.ErrStalled}
}

type openResult struct {
	f   *os.File
	err error
}

// openAsThread opens path as who (asuser.Run: a locked OS thread switched to who's
// file-system identity).
func openAsThread(path string, who *proc.Creds, done chan<- openResult) {
	var r openResult
	err := asuser.Run(who, func() error {
		r.f, r.err = openResolved(path)
		return nil
	})
	if err != nil {
		r.err = fmt.Errorf("open %s: %w", path, err)
	}
	done <- r
}

// openResolved opens path read-only without blocking on a FIFO or taking a terminal, and
// without following /proc's magic links (/proc/self/fd/N would reach stax's own open
// files, which the kernel lets any identity of stax's threads open).
func openResolved(path string) (*os.File, error) {
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_MAGICLINKS})
	if errors.Is(err, unix.ENOSYS) { // before Linux 5.6
		fd, err = unix.Open(path, flags, 0)
		if err == nil && ownFile(fd) {
			unix.Close(fd)
			err = unix.ELOOP
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// ownFile reports whether fd is a file stax had open already, reached through a magic link.
func ownFile(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return true
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return true
	}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		var o unix.Stat_t
		if err != nil || n == fd || unix.Fstat(n, &o) != nil {
			continue
		}
		if o.Dev == st.Dev && o.Ino == st.Ino {
			return true
		}
	}
	return false
}

// checkOpened checks what an opened named file is: a regular file of at most max bytes,
// not in /proc (whose files of stax itself every identity of its threads may read).
func checkOpened(f *os.File, max int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		if !fi.IsDir() {
			targetfile.Refuse(f.Name(), "is not a regular file")
		}
		return errors.New("is not a regular file")
	}
	if fi.Size() > max {
		return fmt.Errorf("is over %d bytes", max)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var fs unix.Statfs_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstatfs(int(fd), &fs) }); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	if fs.Type == unix.PROC_SUPER_MAGIC {
		return errors.New("is in /proc, not a source file")
	}
	return nil
}
