//go:build linux

package targetfile

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// kind names a file type, for messages.
func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFREG:
		return "a regular file"
	}
	return "of an unknown type"
}

func notRegularMode(mode uint32) error {
	return &notRegular{kind: kind(mode), dir: mode&unix.S_IFMT == unix.S_IFDIR}
}

// openNow opens path without a deadline: O_PATH, fstat, reopen, fstat.
func openNow(path string, nofollow bool) (*os.File, error) {
	pflags := unix.O_PATH | unix.O_CLOEXEC
	if nofollow {
		pflags |= unix.O_NOFOLLOW
	}
	pfd, err := unix.Open(path, pflags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(pfd)
	var pst unix.Stat_t
	if err := unix.Fstat(pfd, &pst); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if nofollow && pst.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil, &os.PathError{Op: "open", Path: path, Err: unix.ELOOP}
	}
	if pst.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, &os.PathError{Op: "open", Path: path, Err: notRegularMode(pst.Mode)}
	}
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), flags, 0)
	if errors.Is(err, unix.ENOENT) { // no /proc: open the path itself, non-blocking
		if nofollow {
			flags |= unix.O_NOFOLLOW
		}
		fd, err = unix.Open(path, flags, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: notRegularMode(st.Mode)}
	}
	if st.Dev != pst.Dev || st.Ino != pst.Ino {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: errors.New("replaced while it was opened")}
	}
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
		unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
	return os.NewFile(uintptr(fd), path), nil
}
