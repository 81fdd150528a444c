package recorder

import (
	"fmt"
	"strings"

	"github.com/stax-profiler/stax/internal/store"
)

// jitRuntimeHint names, for process pid whose JIT code no source names, what makes its
// runtime name that code, where its stacks show a runtime that needs a step of its own:
// "" for others. A JVM writes a perf map when asked (jcmd, JDK 17+) or at exit; oneDNN
// writes one when ONEDNN_JIT_PROFILE asks it (2: a perf map), or names its kernels to the
// JIT Profiling API collector stax gives the programs it launches.
func jitRuntimeHint(run *store.Run, pid uint32) string {
	p := &run.Profile
	var jvm, dnnl string
	var buf []uint32
	for _, e := range p.Entries {
		if e.Pid != pid {
			continue
		}
		buf = p.AppendFrames(buf[:0], e.Stack)
		for _, fid := range buf {
			img := p.Frames[fid].Image
			switch {
			case jvm == "" && img == "libjvm.so":
				jvm = img
			case dnnl == "" && isOneDNN(img):
				dnnl = img
			}
		}
		if jvm != "" || dnnl != "" {
			break
		}
	}
	switch {
	case jvm != "":
		return fmt.Sprintf("it is a JVM (%s) with no perf map yet: `jcmd %d Compiler.perfmap` writes one (JDK 17+), which stax reads as it records; "+
			"one started with -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit writes it at exit", jvm, pid)
	case dnnl != "":
		return fmt.Sprintf("its JIT kernels are oneDNN's (%s), which names them in a perf map when started with ONEDNN_JIT_PROFILE=2, "+
			"or to the collector stax gives a command it launches (without --no-jit-api)", dnnl)
	}
	return ""
}

// isOneDNN says whether image is oneDNN's library (libdnnl.so.N, or its older names).
func isOneDNN(image string) bool {
	for _, lib := range []string{"libdnnl.so", "libmkldnn.so", "libonednn.so"} {
		if strings.HasPrefix(image, lib) {
			return true
		}
	}
	return false
}
