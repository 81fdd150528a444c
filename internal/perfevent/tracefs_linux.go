package perfevent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// tracepoint is a tracepoint's id (perf_event_attr.config) and the fields of its raw data.
type tracepoint struct {
	id     uint64
	fields map[string]TraceField
	format []byte // the format file
}

// tracefsDirs are where tracefs is usually mounted.
var tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// readTracepoint reads the id and format of tracepoint sys/name from tracefs. Where tracefs
// is not mounted, it is mounted, for the reading alone, in a mount namespace of the reading
// thread's own (root only), so the machine's mounts are left as they are.
func readTracepoint(sys, name string) (tracepoint, error) {
	var firstErr error
	for _, dir := range tracefsDirs {
		tp, err := readTracepointAt(dir, sys, name)
		if err == nil {
			return tp, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	type result struct {
		tp  tracepoint
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The thread's mount namespace is its own from here: it is not handed back to
		// the runtime (no UnlockOSThread), so it ends with this goroutine.
		runtime.LockOSThread()
		tp, err := readTracepointPrivate(sys, name)
		done <- result{tp, err}
	}()
	res := <-done
	if res.err != nil {
		return tracepoint{}, fmt.Errorf("%w (and %w)", firstErr, res.err)
	}
	return res.tp, nil
}

func readTracepointPrivate(sys, name string) (tracepoint, error) {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return tracepoint{}, fmt.Errorf("mount tracefs: unshare mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return tracepoint{}, fmt.Errorf("mount tracefs: make mounts private: %w", err)
	}
	dir, err := os.MkdirTemp("", "stax-tracefs")
	if err != nil {
		return tracepoint{}, fmt.Errorf("mount tracefs: %w", err)
	}
	defer os.Remove(dir)
	if err := unix.Mount("nodev", dir, "tracefs", 0, ""); err != nil {
		return tracepoint{}, fmt.Errorf("mount tracefs: %w", err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	return readTracepointAt(dir, sys, name)
}

func readTracepointAt(dir, sys, name string) (tracepoint, error) {
	ev := filepath.Join(dir, "events", sys, name)
	idb, err := readSmall(filepath.Join(ev, "id"))
	if err != nil {
		return tracepoint{}, fmt.Errorf("read tracepoint %s:%s: %w", sys, name, err)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(idb)), 10, 64)
	if err != nil {
		return tracepoint{}, fmt.Errorf("read tracepoint %s:%s id: %w", sys, name, err)
	}
	fb, err := readSmall(filepath.Join(ev, "format"))
	if err != nil {
		return tracepoint{}, fmt.Errorf("read tracepoint %s:%s: %w", sys, name, err)
	}
	fields, err := ParseTraceFormat(fb)
	if err != nil {
		return tracepoint{}, fmt.Errorf("read tracepoint %s:%s: %w", sys, name, err)
	}
	return tracepoint{id: id, fields: fields, format: fb}, nil
}

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFormat+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFormat {
		return nil, errors.New(path + ": too large")
	}
	return b, nil
}
