// gospans runs ROUNDS rounds of two phases, phaseA for MS milliseconds and phaseB for
// twice that, each in a span of stax's Go package inside a span "round", with a marker
// "halfway" after half of the rounds. It prints what it measured itself:
// "measured NAME COUNT TOTAL_NS" for each span name.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/stax-profiler/stax/pkg/stax"
)

var sink uint64

//go:noinline
func phaseAWork(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
		for i := 0; i < 1000; i++ {
			sink = sink*6364136223846793005 + 1
		}
	}
}

//go:noinline
func phaseBWork(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
		for i := 0; i < 1000; i++ {
			sink = sink*2862933555777941757 + 3
		}
	}
}

type tally struct {
	count int
	total time.Duration
}

func main() {
	rounds, _ := strconv.Atoi(os.Args[1])
	ms, _ := strconv.Atoi(os.Args[2])
	d := time.Duration(ms) * time.Millisecond
	if !stax.Recording() {
		fmt.Println("not recorded")
	}
	got := map[string]*tally{"round": {}, "phaseA": {}, "phaseB": {}}
	timed := func(name string, f func()) {
		s := stax.Begin(name)
		t0 := time.Now()
		f()
		took := time.Since(t0)
		s.End()
		got[name].count++
		got[name].total += took
	}
	for r := 0; r < rounds; r++ {
		if r == rounds/2 {
			stax.Mark("halfway")
		}
		timed("round", func() {
			timed("phaseA", func() { phaseAWork(d) })
			timed("phaseB", func() { phaseBWork(2 * d) })
		})
	}
	for _, name := range []string{"round", "phaseA", "phaseB"} {
		fmt.Printf("measured %s %d %d\n", name, got[name].count, got[name].total.Nanoseconds())
	}
}
