package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/stax-profiler/stax/internal/symbol/debugfile"
	"github.com/stax-profiler/stax/internal/targetfile"
)

// OpenImage opens the file to read the image mapped at m in process pid from (its symbols,
// its call-frame information), as that process sees it:
//
//  1. the path in the process's mount namespace, /proc/PID/root/PATH: a container's own
//     file, not the host's at the same path;
//  2. the path on the host (the process may be gone);
//  3. the mapped file itself, /proc/PID/map_files/START-END (root only), then
//     /proc/PID/exe for the main program: while the process lives these reach a file
//     deleted or replaced since it was mapped (a daemon whose package was upgraded).
//
// A candidate whose build-id differs from the mapping's (its MMAP2 record's), or without
// one, whose inode differs, is passed over: a new build at the old path is not the code
// that runs. The caller closes the file; paths under /proc/PID stop working when the
// process exits, so read what is needed through the open file.
func OpenImage(pid int, m *Mapping) (*os.File, error) {
	path := strings.TrimSuffix(m.Path, " (deleted)")
	if path == "" || path[0] != '/' {
		return nil, fmt.Errorf("open image %q: not a file path", m.Path)
	}
	proc := "/proc/" + strconv.Itoa(pid)
	var firstErr, mismatch error
	try := func(p string) *os.File {
		f, err := openRegular(p)
		if err != nil {
			if firstErr == nil && !errors.Is(err, os.ErrNotExist) {
				firstErr = fmt.Errorf("open image %s: %w", path, err)
			}
			return nil
		}
		if why := differs(f, m); why != "" {
			f.Close()
			if mismatch == nil {
				mismatch = fmt.Errorf("open image %s: %s %s (replaced since it was mapped; stax reads the mapped file through /proc/%d while the process lives, as root)", path, p, why, pid)
			}
			return nil
		}
		return f
	}
	if pid > 0 {
		if f := try(proc + "/root" + path); f != nil {
			return f, nil
		}
	}
	if f := try(path); f != nil {
		return f, nil
	}
	if pid > 0 {
		if p := mapFile(proc, m); p != "" {
			if f := try(p); f != nil {
				return f, nil
			}
		}
		if exe, err := os.Readlink(proc + "/exe"); err == nil && strings.TrimSuffix(exe, " (deleted)") == path {
			if f := try(proc + "/exe"); f != nil {
				return f, nil
			}
		}
	}
	switch {
	case mismatch != nil:
		return nil, mismatch
	case firstErr != nil:
		return nil, firstErr
	}
	return nil, fmt.Errorf("open image %s: %w", path, os.ErrNotExist)
}

// openRegular opens p for reading if it is a regular file (never blocking on a FIFO a
// process put at a mapped file's path, nor on a file system that does not answer).
func openRegular(p string) (*os.File, error) { return targetfile.Open(p) }

// differs says how f is not the file mapped at m, or "" when it is (as far as m tells).
func differs(f *os.File, m *Mapping) string {
	if len(m.BuildID) > 0 {
		id, err := debugfile.BuildID(f)
		if err != nil {
			return fmt.Sprintf("has no build-id, not the mapped %x", m.BuildID)
		}
		if !bytes.Equal(id, m.BuildID) {
			return fmt.Sprintf("has build-id %x, not the mapped %x", id, m.BuildID)
		}
		return ""
	}
	if m.Ino != 0 {
		st, err := f.Stat()
		if err != nil {
			return "cannot be stat'ed"
		}
		if s, ok := st.Sys().(*syscall.Stat_t); ok && uint64(s.Ino) != m.Ino {
			return fmt.Sprintf("is inode %d, not the mapped %d", s.Ino, m.Ino)
		}
	}
	return ""
}

// mapFile returns the /proc/PID/map_files entry of the mapping holding m.Start: the one
// named after m's range, else the one whose range holds it (the process may have split
// or merged the mapping since its record).
func mapFile(proc string, m *Mapping) string {
	dir := proc + "/map_files/"
	exact := dir + strconv.FormatUint(m.Start, 16) + "-" + strconv.FormatUint(m.End, 16)
	if _, err := os.Lstat(exact); err == nil {
		return exact
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range ents {
		lo, hi, ok := strings.Cut(e.Name(), "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && start <= m.Start && m.Start < end {
			return dir + e.Name()
		}
	}
	return ""
}
