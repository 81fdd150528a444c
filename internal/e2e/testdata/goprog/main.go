// A Go program with a hot function, for Go symbol names.
//
// Usage: goprog DURATION: hotLoop runs until its thread has used DURATION of CPU time.
package main

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

var sink uint64

// mix is small enough for the compiler to inline into hotLoop.
func mix(i, s uint64) uint64 { return i ^ (s >> 3) }

//go:noinline
func hotLoop(n uint64) uint64 {
	var s uint64
	for i := uint64(0); i < n; i++ {
		s += mix(i, s)
	}
	return s
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

func main() {
	budget := 300 * time.Millisecond
	if len(os.Args) > 1 {
		d, err := time.ParseDuration(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "goprog:", err)
			os.Exit(2)
		}
		budget = d
	}
	runtime.LockOSThread()
	end := threadCPU() + budget
	for threadCPU() < end {
		sink += hotLoop(1 << 20)
	}
	fmt.Println("go done", sink%10)
}
