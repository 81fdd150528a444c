package cli

import (
	"fmt"
	"io"

	"github.com/stax-profiler/stax/internal/api"
)

// offCPUSystemWide says why `record -a` records no time off CPU.
const offCPUSystemWide = "not recorded with -a: it would take a stack at every context switch of every thread of the machine (thousands a second on a busy host), and the off-CPU tables are bounded per run, not per process over days; record -p PID for a process's time off CPU"

// statusBounds prints what a live recorder holds and has let go, and, for a system-wide
// run, why it has no time off CPU.
func statusBounds(w io.Writer, b *api.Bounds, systemWide, noOffCPU bool) {
	if systemWide && noOffCPU {
		fmt.Fprintf(w, "off-cpu:   %s\n", offCPUSystemWide)
	}
	if b == nil {
		return
	}
	fmt.Fprintf(w, "holds:     %s processes, %s threads, %s mappings, %s keys; JIT files watched for %s processes\n",
		commas(uint64(b.ProcessesHeld)), commas(uint64(b.ThreadsHeld)), commas(uint64(b.MappingsHeld)), commas(uint64(b.Keys)), commas(uint64(b.JITWatched)))
	if b.NotReleased != "" {
		fmt.Fprintf(w, "let go:    nothing: %s\n", b.NotReleased)
		return
	}
	fmt.Fprintf(w, "let go:    %s exited processes %.0f s after their exit (%s threads, %s mappings); %s keys folded into those of %s commands",
		commas(b.ProcessesReleased), b.ReleaseGraceSec, commas(b.ThreadsReleased), commas(b.MappingsPruned), commas(uint64(b.KeysFolded)), commas(uint64(b.CommandsFolded)))
	if b.ExitedKept > 0 {
		fmt.Fprintf(w, "; %s exited processes kept (JIT files still read, or stacks not yet named)", commas(b.ExitedKept))
	}
	fmt.Fprintln(w)
}
