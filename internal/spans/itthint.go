package spans

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/stax-profiler/stax/internal/collectorabi"
)

// ittLibraries are libraries that report ITT tasks when a collector is named.
var ittLibraries = []string{"libdnnl", "libmkl_core", "libtbb", "libopenvino", "libtorch_cpu", "libittnotify"}

// EnvITTCollector names the ITT collector library to 64-bit programs.
const EnvITTCollector = collectorabi.EnvITT64

// ITTLibrary returns the file name of path when it is a library that reports ITT tasks
// once a collector is named (libtbb.so.12, libdnnl.so.3, ...); "" otherwise.
func ITTLibrary(path string) string {
	base := filepath.Base(path)
	for _, lib := range ittLibraries {
		if strings.HasPrefix(base, lib+".") || strings.HasPrefix(base, lib+"-") {
			return base
		}
	}
	return ""
}

// ITTCollectorNamed reports whether environ (a process's NUL-separated environment)
// names an ITT collector.
func ITTCollectorNamed(environ []byte) bool {
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if bytes.HasPrefix(kv, []byte(EnvITTCollector+"=")) && len(kv) > len(EnvITTCollector+"=") {
			return true
		}
	}
	return false
}

// ITTHint is the one-line hint for process pid that loaded lib, an ITT library, while no
// collector was named for it. attached: stax attached to the process (-p), which then
// has to be started anew to be given one.
func ITTHint(pid int, lib string, attached bool) string {
	how := "record it without --no-jit-api (stax names its collector), or keep " + EnvITTCollector + " in its environment, to see them"
	if attached {
		how = "start it under stax record -- CMD to see them"
	}
	return fmt.Sprintf("pid %d loaded %s, which reports ITT tasks, but no collector was named for it (%s): its tasks are not recorded; %s",
		pid, lib, EnvITTCollector, how)
}
