package unwind

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/testutil"
)

// A program whose stacks run through JIT code without unwinding info.
type jitWorkload struct {
	name string
	// command returns the program to run ("" where it is not installed) and its arguments.
	command func() (string, []string)
}

var jitWorkloads = []jitWorkload{
	{"python3.12", func() (string, []string) {
		return testutil.PyenvPython("3.12"), []string{"-X", "perf", "jitdeep.py", "600"}
	}},
	{"node", func() (string, []string) {
		p, _ := exec.LookPath("node")
		return p, []string{"--perf-basic-prof", "jitdeep.js", "600"}
	}},
}

// liveView is a process's mappings, its images' tables from their files and its code
// from its memory: what the recorder's unwinder sees. Tables are kept per mapping, as the
// recorder's stack workers keep those of the images their last frames used.
type liveView struct {
	*Maps
	mem    *os.File
	tables map[uint64]*Table
}

func (v *liveView) Table(m Mapping) *Table {
	t, ok := v.tables[m.Start]
	if !ok {
		t = v.Maps.Table(m)
		v.tables[m.Start] = t
	}
	return t
}

func (v *liveView) ReadCode(m Mapping, addr uint64, b []byte) bool {
	n, _ := v.mem.ReadAt(b, int64(addr))
	return n == len(b)
}

// jitSamples samples w live and returns its samples and the view to unwind them in. The
// process stays, stopped, until the benchmark ends: the unwinder reads its code.
func jitSamples(b *testing.B, w jitWorkload, want int) ([]Sample, *liveView) {
	testutil.RequirePerf(b)
	prog, args := w.command()
	if prog == "" {
		b.Skipf("%s is not installed", w.name)
	}
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(prog, args...)
	cmd.Dir = b.TempDir() // node writes its logs where it runs
	cmd.Args[len(cmd.Args)-2] = filepath.Join(testdata, args[len(args)-2])
	startReady(b, cmd)
	pid := cmd.Process.Pid
	b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.Remove(filepath.Join(os.TempDir(), "perf-"+strconv.Itoa(pid)+".map")) // the perf map it wrote
	})
	got := sampleLive(b, pid, want)
	maps, err := ReadMaps(pid) // after the samples: JIT code mapped while sampling is in
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		b.Fatal(err)
	}
	mem, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "mem"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { mem.Close() })
	samples := make([]Sample, len(got))
	for i, c := range got {
		samples[i] = Sample{Pid: uint32(pid), Regs: c.Regs, Stack: c.Stack, FPChain: c.FPChain}
	}
	return samples, &liveView{Maps: &Maps{Mappings: maps, Loader: &FileLoader{}}, mem: mem, tables: map[uint64]*Table{}}
}

// BenchmarkJITSteps weighs the unwinder's steps through JIT frames without unwinding info
// (jitStep: CPython's trampolines by their code, other JIT frames by a checked frame
// pointer, loops by pc and CFA) against unwinding those frames as before them (by the
// frame pointer, unchecked), on 2,000 stacks sampled live from CPython 3.12 -X perf and
// node. Each iteration unwinds the samples both ways, in turns (which goes first
// alternates), so that the machine's drifts hit both alike. Per workload:
//
//	all   every sample: the steps make stacks longer, so compare per frame
//	same  the samples whose stacks the steps do not change: what the checks cost where
//	      they find nothing to do, per sample
//
// Metrics: ns/sample and ns/frame each way, and steps/plain of both. bench/jit-unwind.sh
// runs it in rounds and gives the verdicts.
func BenchmarkJITSteps(b *testing.B) {
	for _, w := range jitWorkloads {
		b.Run(w.name, func(b *testing.B) {
			samples, view := jitSamples(b, w, 2000)
			var steps, plain Unwinder
			plain.plainJIT = true
			var all, same []int
			stepFrames, plainFrames := 0, 0
			for i := range samples {
				a, _ := steps.Unwind(view, &samples[i], make([]uint64, 0, 1024))
				p, _ := plain.Unwind(view, &samples[i], make([]uint64, 0, 1024))
				stepFrames += len(a)
				plainFrames += len(p)
				all = append(all, i)
				if slices.Equal(a, p) {
					same = append(same, i)
				}
			}
			b.Logf("%s: %d samples, %d unchanged by the steps; %.1f frames a stack with them, %.1f without; JIT frames: %d by frame pointer, %d trampolines; stacks ended with the steps %s, without %s",
				w.name, len(samples), len(same), float64(stepFrames)/float64(len(samples)), float64(plainFrames)/float64(len(samples)),
				steps.JITFrames.FramePointer.Load(), steps.JITFrames.Trampoline.Load(), endCounts(&steps.Counts), endCounts(&plain.Counts))
			for _, set := range []struct {
				name string
				idx  []int
			}{{"all", all}, {"same", same}} {
				b.Run(set.name, func(b *testing.B) {
					if len(set.idx) == 0 {
						b.Skip("no sample is unchanged by the steps")
					}
					us := [2]*Unwinder{{}, {plainJIT: true}}
					var ns, frames [2]int64
					out := make([]uint64, 0, 1024)
					turn := 0
					for b.Loop() {
						for k := range 2 {
							mode := (turn + k) % 2
							u := us[mode]
							t0 := time.Now()
							for _, i := range set.idx {
								pcs, _ := u.Unwind(view, &samples[i], out)
								frames[mode] += int64(len(pcs))
							}
							ns[mode] += time.Since(t0).Nanoseconds()
						}
						turn++
					}
					n := float64(b.N) * float64(len(set.idx))
					perSample := [2]float64{float64(ns[0]) / n, float64(ns[1]) / n}
					perFrame := [2]float64{float64(ns[0]) / float64(frames[0]), float64(ns[1]) / float64(frames[1])}
					b.ReportMetric(perSample[0], "ns/sample-steps")
					b.ReportMetric(perSample[1], "ns/sample-plain")
					b.ReportMetric(perFrame[0], "ns/frame-steps")
					b.ReportMetric(perFrame[1], "ns/frame-plain")
					b.ReportMetric(perSample[0]/perSample[1], "steps/plain-sample")
					b.ReportMetric(perFrame[0]/perFrame[1], "steps/plain-frame")
				})
			}
		})
	}
}

// endCounts lists the non-zero counts of how stacks ended.
func endCounts(c *Counts) string {
	var parts []string
	for r := range c {
		if n := c[r].Load(); n > 0 {
			parts = append(parts, EndReason(r).String()+" "+strconv.FormatUint(n, 10))
		}
	}
	return strings.Join(parts, ", ")
}
