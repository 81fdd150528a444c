package recorder

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/targetfile"
)

// maxITTChecked bounds the processes looked at for an ITT library without a collector.
const maxITTChecked = 4096

// ittHintState is what checkITTLibrary has looked at.
type ittHintState struct {
	mu      sync.Mutex
	checked map[int]bool
	done    bool // the run has its hint
}

// checkITTLibrary gives the run its ITT hint (store.Meta.ITTHint) when process pid, which
// mapped path, loaded a library that reports ITT tasks while no collector is named in its
// environment: those tasks are not recorded. A process that is gone, or exiting, is judged
// by the launched command's environment.
func (r *Recorder) checkITTLibrary(pid int, path string) {
	lib := spans.ITTLibrary(path)
	if lib == "" || pid <= 0 {
		return
	}
	s := &r.itt
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.checked[pid] || len(s.checked) >= maxITTChecked {
		return
	}
	if s.checked == nil {
		s.checked = map[int]bool{}
	}
	s.checked[pid] = true
	environ, ok := processEnviron(pid)
	if !ok {
		if r.meta.Attached || r.meta.SystemWide {
			return
		}
		environ = []byte(strings.Join(r.opts.Env, "\x00"))
	}
	if spans.ITTCollectorNamed(environ) {
		return
	}
	s.done = true
	r.mu.Lock()
	r.meta.ITTHint = spans.ITTHint(pid, lib, r.meta.Attached || r.meta.SystemWide)
	r.mu.Unlock()
}

// maxEnviron bounds what is read of a process's environment.
const maxEnviron = 4 << 20

// processEnviron reads process pid's environment; ok is false when it cannot be known. A
// process that has released its memory (exiting, or a zombie) reads as empty without an
// error, which would look like an environment naming no collector; one that releases it
// while being read reads as cut short. So the environment is read twice: a process whose
// memory is gone reads empty the second time, and one that lost it during either read
// reads differently.
func processEnviron(pid int) (environ []byte, ok bool) {
	path := "/proc/" + strconv.Itoa(pid) + "/environ"
	environ, err := targetfile.ReadPrefix(path, maxEnviron)
	if err != nil || len(environ) == 0 {
		return nil, false
	}
	again, err := targetfile.ReadPrefix(path, maxEnviron)
	return environ, err == nil && bytes.Equal(environ, again)
}
