//go:build !linux

package targetfile

import (
	"os"
	"syscall"
)

// openNow opens path without a deadline, non-blocking, and checks it is a regular file
// (stax records on Linux only; this serves its queries elsewhere).
func openNow(path string, nofollow bool) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC
	if nofollow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: &notRegular{kind: "a " + st.Mode().Type().String(), dir: st.IsDir()}}
	}
	return f, nil
}
