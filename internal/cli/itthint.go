package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ittLibraries are libraries that report ITT tasks when a collector is named.
var ittLibraries = []string{"libdnnl", "libmkl_core", "libtbb", "libopenvino", "libtorch_cpu", "libittnotify"}

// ittHint says, for a process stax attached to (its /proc maps and environ), that it loaded
// a library that reports ITT tasks while no collector is named for it, so its tasks are
// not recorded; "" otherwise.
func ittHint(pid int, maps, environ []byte) string {
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if bytes.HasPrefix(kv, []byte("INTEL_LIBITTNOTIFY64=")) && len(kv) > len("INTEL_LIBITTNOTIFY64=") {
			return ""
		}
	}
	for _, line := range strings.Split(string(maps), "\n") {
		i := strings.IndexByte(line, '/')
		if i < 0 {
			continue
		}
		base := filepath.Base(line[i:])
		for _, lib := range ittLibraries {
			if strings.HasPrefix(base, lib+".") || strings.HasPrefix(base, lib+"-") {
				return fmt.Sprintf("pid %d loaded %s, which reports ITT tasks, but no collector was named for it (INTEL_LIBITTNOTIFY64): its tasks are not recorded; start it under stax record -- CMD to see them", pid, base)
			}
		}
	}
	return ""
}

// noteITTHint prints ittHint for a process stax attached to.
func noteITTHint(pid int, notef func(string, ...any)) {
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return
	}
	environ, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if h := ittHint(pid, maps, environ); h != "" {
		notef("%s", h)
	}
}
