//go:build !linux

package query

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/stax-profiler/stax/internal/proc"
)

// openAs opens path read-only with stax's own identity: stax records on Linux only.
func openAs(path string, who *proc.Creds) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
}

// checkOpened checks that an opened named file is a regular file of at most max bytes.
func checkOpened(f *os.File, max int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("is not a regular file")
	}
	if fi.Size() > max {
		return fmt.Errorf("is over %d bytes", max)
	}
	return nil
}
