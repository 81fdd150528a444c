package jit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/spans"
)

// ErrStale says a JIT, spans or marker file was written before the process that now holds
// its pid started: it is an earlier process's, whose pid was reused, and is not read.
var ErrStale = errors.New("stale: written by an earlier process with this pid")

// staleSlack is how much earlier than its process's start a file may have been written and
// still be taken as its own: file times and process start times come from clocks that
// differ by a tick or two, more on a network file system whose server keeps the times.
const staleSlack = time.Second

// CheckWrittenSince returns ErrStale (wrapped, saying when) when a file last modified at
// mtime cannot have been written by a process that started at started: mtime is earlier.
// A file the process goes on writing has a later time; one it rewrites is read again.
func CheckWrittenSince(mtime, started time.Time) error {
	if started.IsZero() || !mtime.Before(started.Add(-staleSlack)) {
		return nil
	}
	return fmt.Errorf("%w (last written %s, %s before the process started)", ErrStale,
		mtime.Format("2006-01-02 15:04:05"), started.Sub(mtime).Round(time.Second/100))
}

// goneFor is how long ago the spans file of a pid that names no process must have been
// written for FindStaleSpans to list it.
const goneFor = time.Minute

// StaleSpansFile is a spans file (itt-PID.spans, stax-PID.spans) whose process is gone.
type StaleSpansFile struct {
	Path string
	Pid  int
	Size int64
	Why  string
}

// FindStaleSpans lists the spans files in dirs left by processes that are gone: their pid
// names no process (and they were last written over goneFor ago: a recorder may still be
// reading the file of a process that has just exited), or a process that started after the
// file was last written (the pid was reused). Pids are those of the caller's pid namespace.
// Only regular files are listed, never through a symbolic link.
func FindStaleSpans(dirs []string) ([]StaleSpansFile, error) {
	var out []StaleSpansFile
	var errs []error
	seen := map[string]bool{}
	for _, dir := range dirs {
		dir = filepath.Clean(dir)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		ents, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range ents {
			pid, ok := spans.IsITTName(e.Name())
			if !ok || !e.Type().IsRegular() {
				continue
			}
			path := filepath.Join(dir, e.Name())
			fi, err := os.Lstat(path)
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			f := StaleSpansFile{Path: path, Pid: pid, Size: fi.Size()}
			_, started, err := proc.Start(pid)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				if time.Since(fi.ModTime()) < goneFor {
					continue
				}
				f.Why = fmt.Sprintf("pid %d is gone", pid)
			case err != nil:
				continue
			case CheckWrittenSince(fi.ModTime(), started) != nil:
				f.Why = fmt.Sprintf("pid %d is a younger process, started %s after the file was last written", pid,
					started.Sub(fi.ModTime()).Round(time.Second))
			default:
				continue
			}
			out = append(out, f)
		}
	}
	return out, errors.Join(errs...)
}
