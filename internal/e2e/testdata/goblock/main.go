// Command goblock blocks goroutines in the Go runtime for the stax off-CPU tests: one
// goroutine waits on a channel receive, another sleeps in a loop (time.Sleep), and main
// runs main.spin for a budget of its thread's CPU time between the sleeps. It runs for
// ROUNDS rounds of SLEEP each and then prints its own CPU time ("cpu NS") and wall time
// ("wall NS").
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

//go:noinline
func spin(budget time.Duration) uint64 {
	start := cpuTime()
	var x uint64 = 1
	for cpuTime()-start < budget {
		for i := 0; i < 100000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:noinline
func receive(ch <-chan int) int { return <-ch }

//go:noinline
func sleeper(rounds int, d time.Duration, done chan<- struct{}) {
	for i := 0; i < rounds; i++ {
		time.Sleep(d)
	}
	close(done)
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: goblock ROUNDS SLEEP")
		os.Exit(2)
	}
	rounds, _ := strconv.Atoi(os.Args[1])
	d, err := time.ParseDuration(os.Args[2])
	if err != nil || rounds <= 0 {
		fmt.Fprintln(os.Stderr, "goblock: bad arguments")
		os.Exit(2)
	}
	start := time.Now()
	ch := make(chan int)
	got := make(chan int)
	go func() { got <- receive(ch) }()
	done := make(chan struct{})
	go sleeper(rounds, d, done)
	var sum uint64
	for i := 0; i < rounds; i++ {
		sum += spin(d / 10)
		time.Sleep(d)
	}
	<-done
	ch <- 1
	<-got
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Printf("cpu %d\nwall %d\nsum %d\n", ru.Utime.Nano()+ru.Stime.Nano(), time.Since(start).Nanoseconds(), sum&1)
}
