package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/stax-profiler/stax/internal/collectorabi"
)

// collectorName is the JIT Profiling API collector shipped beside the stax binary.
const collectorName = collectorabi.LibName

// findCollector looks for the collector beside the stax executable, then in ../lib/stax.
func findCollector() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	dir := filepath.Dir(self)
	for _, p := range []string{filepath.Join(dir, collectorName), filepath.Join(dir, "..", "lib", "stax", collectorName)} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// withJITAPI points INTEL_JIT_PROFILER64 (JIT Profiling API) and INTEL_LIBITTNOTIFY64 (ITT
// API: tasks and markers) at stax's collector, each unless the user set it.
func withJITAPI(env []string, notef func(string, ...any)) []string {
	var jitSet, ittSet bool
	for _, kv := range env {
		jitSet = jitSet || strings.HasPrefix(kv, collectorabi.EnvJITProfiler64+"=")
		ittSet = ittSet || strings.HasPrefix(kv, collectorabi.EnvITT64+"=")
	}
	if jitSet && ittSet {
		return env
	}
	lib := findCollector()
	if lib == "" {
		return env
	}
	if !jitSet {
		env = append(env, collectorabi.EnvJITProfiler64+"="+lib)
	}
	if !ittSet {
		env = append(env, collectorabi.EnvITT64+"="+lib)
	}
	return append(env, collectorabi.EnvCollect+"=1")
}
