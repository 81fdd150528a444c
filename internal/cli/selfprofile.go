package cli

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// selfProfile starts Go's own CPU profile of this stax process when STAX_CPUPROFILE names a
// file, and arranges a heap profile at exit when STAX_MEMPROFILE does: a switch for working
// on stax itself (`go tool pprof bin/stax FILE`). The returned function writes them.
func selfProfile(stderr *os.File) (stop func()) {
	cpu, mem := os.Getenv("STAX_CPUPROFILE"), os.Getenv("STAX_MEMPROFILE")
	if cpu == "" && mem == "" {
		return func() {}
	}
	var cpuFile *os.File
	if cpu != "" {
		f, err := os.Create(cpu)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "stax: STAX_CPUPROFILE: %v\n", err)
		} else {
			cpuFile = f
		}
	}
	return func() {
		if cpuFile != nil {
			pprof.StopCPUProfile()
			cpuFile.Close()
		}
		if mem != "" {
			f, err := os.Create(mem)
			if err == nil {
				runtime.GC()
				err = pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				fmt.Fprintf(stderr, "stax: STAX_MEMPROFILE: %v\n", err)
			}
		}
	}
}
