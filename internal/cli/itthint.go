package cli

import (
	"strconv"
	"strings"

	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/targetfile"
)

// ittHint says, for a process stax attached to (its /proc maps and environ), that it loaded
// a library that reports ITT tasks while no collector is named for it, so its tasks are
// not recorded; "" otherwise.
func ittHint(pid int, maps, environ []byte) string {
	if spans.ITTCollectorNamed(environ) {
		return ""
	}
	for _, line := range strings.Split(string(maps), "\n") {
		i := strings.IndexByte(line, '/')
		if i < 0 {
			continue
		}
		if lib := spans.ITTLibrary(line[i:]); lib != "" {
			return spans.ITTHint(pid, lib, true)
		}
	}
	return ""
}

// noteITTHint prints ittHint for a process stax attached to.
func noteITTHint(pid int, notef func(string, ...any)) {
	maps, err := targetfile.ReadPrefix("/proc/"+strconv.Itoa(pid)+"/maps", 64<<20)
	if err != nil {
		return
	}
	environ, _ := targetfile.ReadPrefix("/proc/"+strconv.Itoa(pid)+"/environ", 1<<20)
	if h := ittHint(pid, maps, environ); h != "" {
		notef("%s", h)
	}
}
