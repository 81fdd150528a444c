package recorder

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/launch"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestMain lets this test binary be the gate and the recorded program.
func TestMain(m *testing.M) {
	launch.RunGateIfRequested()
	if d, err := time.ParseDuration(os.Getenv("STAX_TEST_BURN")); err == nil {
		burnCPU(d)
		// STAX_TEST_HOLD: then wait until that file exists, so a test decides when the
		// recorded program ends.
		for hold := os.Getenv("STAX_TEST_HOLD"); hold != ""; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(hold); err == nil {
				break
			}
		}
		os.Exit(0)
	}
	if p := os.Getenv("STAX_TEST_NICE_OUT"); p != "" {
		// Threads burning for a second of wall time, then the nice level it ran at.
		end := time.Now().Add(time.Second)
		done := make(chan struct{})
		for range 4 * runtime.NumCPU() {
			go func() {
				runtime.LockOSThread()
				var x uint64
				for time.Now().Before(end) {
					for i := range 100_000 {
						x += uint64(i) ^ x>>3
					}
				}
				if x == 1 {
					os.Exit(4) // keeps the loop
				}
				done <- struct{}{}
			}()
		}
		for range 4 * runtime.NumCPU() {
			<-done
		}
		raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
		if err != nil || os.WriteFile(p, []byte(strconv.Itoa(20-raw)), 0o644) != nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	if n, err := strconv.Atoi(os.Getenv("STAX_TEST_PINGPONG")); err == nil {
		pingPong(n)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// pingPong hands a byte back and forth between two threads through two pipes, rounds
// times: each round switches both out, in pingOnce and pongOnce.
func pingPong(rounds int) {
	var ab, ba [2]int
	if unix.Pipe(ab[:]) != nil || unix.Pipe(ba[:]) != nil {
		os.Exit(3)
	}
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		for range rounds {
			pongOnce(ab[0], ba[1])
		}
		close(done)
	}()
	runtime.LockOSThread()
	for range rounds {
		pingOnce(ab[1], ba[0])
	}
	<-done
}

//go:noinline
func pingOnce(out, in int) {
	b := []byte{'x'}
	if n, _ := unix.Write(out, b); n != 1 {
		os.Exit(2)
	}
	if n, _ := unix.Read(in, b); n != 1 {
		os.Exit(2)
	}
}

//go:noinline
func pongOnce(in, out int) {
	b := []byte{0}
	if n, _ := unix.Read(in, b); n != 1 {
		os.Exit(2)
	}
	if n, _ := unix.Write(out, b); n != 1 {
		os.Exit(2)
	}
}

var sink uint64

// burnCPU spends d of its thread's CPU time in a function the profile must name.
//
//go:noinline
func burnCPU(d time.Duration) {
	runtime.LockOSThread()
	cpu := func() time.Duration {
		var ts unix.Timespec
		unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
		return time.Duration(ts.Nano())
	}
	for end := cpu() + d; cpu() < end; {
		for i := 0; i < 1<<16; i++ {
			sink += uint64(i)
		}
	}
}

// TestRecordLaunchedProgram records this test binary burning 300 ms of CPU time: samples
// are counted, named, waited for and stored.
func TestRecordLaunchedProgram(t *testing.T) {
	testutil.RequirePerf(t)
	t.Setenv("STAX_HOME", t.TempDir())
	env := append(os.Environ(), "STAX_TEST_BURN=300ms")
	r, err := Start(Options{Argv: []string{os.Args[0]}, Freq: 999, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	exit := make(chan int, 1)
	go func() { exit <- r.Loop() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if w := r.Wait(ctx, api.WaitCondition{Samples: 100, Symbol: "burnCPU"}); w.Outcome != api.WaitMet {
		t.Fatalf("wait for 100 samples and burnCPU: %+v", w)
	}
	if code := <-exit; code != 0 {
		t.Errorf("exit status %d", code)
	}
	<-r.Done()
	run, err := store.Load(r.StorePath())
	if err != nil {
		t.Fatal(err)
	}
	if !run.Meta.Finished || run.Meta.Samples < 150 || run.Meta.ExitCode == nil || *run.Meta.ExitCode != 0 {
		t.Errorf("stored run: %+v", run.Meta)
	}
	found := false
	for _, f := range run.Profile.Frames {
		if strings.HasSuffix(f.Func, "recorder.burnCPU") {
			found = true
		}
	}
	if !found {
		t.Errorf("burnCPU is not among the %d frames", len(run.Profile.Frames))
	}
	if st := api.StatusOf(run); st.State != api.StateStored || st.Threads == 0 {
		t.Errorf("status: %+v", st)
	}
}

// TestStopEndsRecordingWhileCommandRunsOn stops a recording of a command that keeps
// running: the run is saved finished, and Loop returns the command's status later.
func TestStopEndsRecordingWhileCommandRunsOn(t *testing.T) {
	testutil.RequirePerf(t)
	t.Setenv("STAX_HOME", t.TempDir())
	hold := filepath.Join(t.TempDir(), "hold")
	env := append(os.Environ(), "STAX_TEST_BURN=200ms", "STAX_TEST_HOLD="+hold)
	r, err := Start(Options{Argv: []string{os.Args[0]}, Freq: 999, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	exit := make(chan int, 1)
	go func() { exit <- r.Loop() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if w := r.Wait(ctx, api.WaitCondition{Samples: 50}); w.Outcome != api.WaitMet {
		t.Fatalf("wait: %+v", w)
	}
	r.Stop()
	<-r.Done()
	if !r.CommandRunsOn() {
		t.Error("CommandRunsOn is false while the command still runs")
	}
	meta, err := store.ReadMeta(r.StorePath())
	if err != nil || !meta.Finished {
		t.Errorf("after stop: %+v, %v", meta, err)
	}
	select {
	case code := <-exit:
		t.Fatalf("Loop returned %d before the command ended", code)
	default:
	}
	os.WriteFile(hold, nil, 0o600) // now the command may end
	if code := <-exit; code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// TestRecorderRaisesItsPriorityWhenBehind: rings so small that the recorder is behind at
// once: as root its threads then run priorityBoost nice levels above where it started, and
// the command it launched keeps the level it was started with.
func TestRecorderRaisesItsPriorityWhenBehind(t *testing.T) {
	testutil.RequirePerf(t)
	t.Setenv("STAX_HOME", t.TempDir())
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := 20 - raw
	out := filepath.Join(t.TempDir(), "nice")
	r, err := Start(Options{Argv: []string{os.Args[0]}, Freq: 999, CallGraph: "dwarf", StackSize: 8 << 10, RingPages: 4,
		Env: append(os.Environ(), "STAX_TEST_NICE_OUT="+out)})
	if err != nil {
		t.Fatal(err)
	}
	if code := r.Loop(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	<-r.Done()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := strconv.Atoi(string(b)); got != start {
		t.Errorf("the command ran at nice %d, want %d, where stax started", got, start)
	}
	run, err := store.Load(r.StorePath())
	if err != nil {
		t.Fatal(err)
	}
	if run.Meta.OverloadSamples == 0 {
		t.Fatalf("the recorder was never behind: %+v", run.Meta)
	}
	want := max(start-priorityBoost, -20)
	if os.Geteuid() != 0 {
		t.Logf("not root: the recorder ran at %v", run.Meta.RecorderNice)
		return
	}
	if run.Meta.RecorderNice == nil || *run.Meta.RecorderNice != want {
		t.Fatalf("the recorder ran at nice %v, want %d", run.Meta.RecorderNice, want)
	}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		if raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid); err == nil && 20-raw != want {
			t.Errorf("thread %d runs at nice %d, want %d", tid, 20-raw, want)
		}
	}
}

// TestFailedStartLeavesNothing makes each step of Start after the run's id is claimed fail
// in turn: the start returns the error, the store holds no file of the run (no empty run
// file listed as damaged), and a launched command is not left behind, held at its gate or
// running; an attached process runs on.
func TestFailedStartLeavesNothing(t *testing.T) {
	testutil.RequirePerf(t)
	injected := errors.New("injected failure")
	for _, tc := range []struct{ name, step string }{{"launch", "enable"}, {"launch", "release"}, {"attach", "enable"}} {
		t.Run(tc.name+"-"+tc.step, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("STAX_HOME", home)
			startFault = func(step string) error {
				if step == tc.step {
					return injected
				}
				return nil
			}
			defer func() { startFault = nil }()
			opts := Options{Freq: 999, OffCPU: true}
			var target *exec.Cmd
			if tc.name == "launch" {
				opts.Argv = []string{os.Args[0]}
				opts.Env = append(os.Environ(), "STAX_TEST_BURN=30s")
			} else {
				target = exec.Command("sleep", "60")
				if err := target.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() {
					target.Process.Kill()
					target.Wait()
				}()
				opts.Pid = target.Process.Pid
			}
			r, err := Start(opts)
			if !errors.Is(err, injected) {
				if err == nil {
					r.Stop()
					r.Loop()
				}
				t.Fatalf("Start: %v; want the injected failure at %s", err, tc.step)
			}
			ents, _ := os.ReadDir(filepath.Join(home, "runs"))
			for _, e := range ents {
				t.Errorf("the failed start left %s in the store", e.Name())
			}
			kids := children(t)
			if target != nil {
				if len(kids) != 1 || kids[0] != target.Process.Pid {
					t.Errorf("children after a failed attach: %v; want the attached process %d alone, running on", kids, target.Process.Pid)
				}
				if err := syscall.Kill(target.Process.Pid, 0); err != nil {
					t.Errorf("the attached process is gone: %v", err)
				}
			} else if len(kids) != 0 {
				t.Errorf("the failed start left the launched command behind: children %v", kids)
			}
		})
	}
}

// children are the test process's child processes, zombies included.
func children(t *testing.T) []int {
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}
