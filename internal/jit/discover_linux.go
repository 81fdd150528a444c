package jit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/stax-profiler/stax/internal/collectorabi"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/targetfile"
)

// Candidate is a file through which a process may announce JIT code.
type Candidate struct {
	// Path opens the file from the profiler's mount namespace:
	// /proc/<pid>/root/<path as the process sees it>, so that files of
	// processes in containers are found.
	Path string
	// Inner is the path as the process sees it.
	Inner string
	Kind  SourceKind
}

// Discover lists the JIT files of process pid that exist now:
// /tmp/jit-<pid>.dump and /tmp/perf-<pid>.map under the process's root,
// and any file the process holds open whose base name is
// jit-<pid>.dump (perf's convention, wherever the JIT put it). Marker files
// (marker-<pid>.txt, samply's convention) are found the same way, in /tmp,
// in the process's current directory and among its open files, with or
// without a thread id (marker-<pid>-<tid>.txt), and the spans files of stax's
// ITT collector (itt-<pid>.spans) and of stax's Go package (stax-<pid>.spans) in /tmp,
// in the process's STAX_JIT_DIR and among its open files. nsPid is the
// process's pid inside its own pid namespace (the one its files are named
// after); pass pid when it is not in a child namespace.
func Discover(pid, nsPid int) ([]Candidate, error) {
	return DiscoverIn(pid, nsPid, EnvJITDir(pid))
}

// DiscoverIn is Discover with the process's STAX_JIT_DIR already read (EnvJITDir): a
// watcher that scans a process many times a second reads its environment less often.
func DiscoverIn(pid, nsPid int, jitDir string) ([]Candidate, error) {
	proc := "/proc/" + strconv.Itoa(pid)
	root := proc + "/root"
	if _, err := os.Stat(proc); err != nil {
		return nil, fmt.Errorf("discover jit files of pid %d: %w", pid, err)
	}
	var out []Candidate
	seen := make(map[string]bool)
	add := func(inner string, kind SourceKind) {
		inner = filepath.Clean(inner)
		if seen[inner] {
			return
		}
		p := root + inner
		if !targetfile.Candidate(p) { // a FIFO or device there is counted
			return
		}
		seen[inner] = true
		out = append(out, Candidate{Path: p, Inner: inner, Kind: kind})
	}
	ns := strconv.Itoa(nsPid)
	add("/tmp/jit-"+ns+".dump", SourceJitdump)
	add("/tmp/perf-"+ns+".map", SourcePerfMap)
	add("/tmp/marker-"+ns+".txt", SourceMarkers)
	add(collectorabi.DefaultDir+"/"+collectorabi.ITTSpansName(nsPid), SourceITTSpans)
	add(collectorabi.DefaultDir+"/"+collectorabi.GoSpansName(nsPid), SourceITTSpans)
	if dir := jitDir; dir != "" {
		add(filepath.Join(dir, "jit-"+ns+".dump"), SourceJitdump)
		add(filepath.Join(dir, collectorabi.ITTSpansName(nsPid)), SourceITTSpans)
		add(filepath.Join(dir, collectorabi.GoSpansName(nsPid)), SourceITTSpans)
	}
	if cwd, err := os.Readlink(proc + "/cwd"); err == nil && filepath.IsAbs(cwd) {
		add(filepath.Join(cwd, "marker-"+ns+".txt"), SourceMarkers)
	}
	fds, err := os.ReadDir(proc + "/fd")
	if err != nil {
		// Not being allowed to list descriptors still leaves the /tmp files.
		return out, nil
	}
	for _, d := range fds {
		target, err := os.Readlink(proc + "/fd/" + d.Name())
		if err != nil || !filepath.IsAbs(target) {
			continue
		}
		if p, ok := IsJitdumpName(target); ok && p == nsPid {
			add(target, SourceJitdump)
		}
		if p, _, ok := spans.IsMarkerName(target); ok && p == nsPid {
			add(target, SourceMarkers)
		}
		if p, ok := spans.IsITTName(target); ok && p == nsPid {
			add(target, SourceITTSpans)
		}
	}
	return out, nil
}

// maxEnviron bounds what is read of a process's environment.
const maxEnviron = 1 << 20

// EnvJITDir is the STAX_JIT_DIR of process pid's environment (as it was at its exec), where
// stax's collector and Go package write their files; empty when it is unset, not absolute or
// cannot be read.
func EnvJITDir(pid int) string {
	dir, _ := ReadEnvJITDir(pid)
	return dir
}

// ReadEnvJITDir is EnvJITDir, and whether the environment could be read: a process caught
// in its exec (its new image's environment not yet in place) shows none, and is asked again.
func ReadEnvJITDir(pid int) (dir string, ok bool) {
	b, err := targetfile.ReadPrefix("/proc/"+strconv.Itoa(pid)+"/environ", maxEnviron)
	if err != nil {
		return "", false
	}
	if len(b) == 0 {
		return "", false
	}
	for len(b) > 0 {
		kv := b
		if i := bytes.IndexByte(b, 0); i >= 0 {
			kv, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if v, ok := bytes.CutPrefix(kv, []byte(collectorabi.EnvDir+"=")); ok && filepath.IsAbs(string(v)) {
			return filepath.Clean(string(v)), true
		}
	}
	return "", true
}
