package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

// TestOffCPUCommands runs the off-CPU views over a stored run with off-CPU time: worker-b
// waits 700 ms on a lock and 300 ms in a sleep under run_jit, and is runnable 50 ms.
func TestOffCPUCommands(t *testing.T) {
	home := t.TempDir()
	t.Setenv("STAX_HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", "")
	r := fixtureRun("20261101-120000-100", true)
	frames := []agg.Frame{
		{Func: "__lll_lock_wait", Image: "libc.so.6", Kind: agg.KindUser},
		{Func: "clock_nanosleep", Image: "libc.so.6", Kind: agg.KindUser},
		{Func: "run_jit", Image: "/opt/app/bin/app", Kind: agg.KindUser},
		{Func: "main", Image: "/opt/app/bin/app", Kind: agg.KindUser},
		{Func: agg.FuncRunnable, Image: agg.ImageSched, Kind: agg.KindUnknown},
	}
	loc := func(f uint32) agg.Location { return agg.Location{Lines: []agg.Line{{Func: f}}} }
	off := &agg.Profile{Frames: frames, Locations: []agg.Location{loc(0), loc(1), loc(2), loc(3), loc(4)},
		Stacks: [][]uint32{{0, 2, 3}, {1, 2, 3}, {4, 2, 3}},
		Entries: []agg.Entry{{Tid: 102, Pid: 100, Stack: 0, Count: 700e6, LeafFunc: -1}, {Tid: 102, Pid: 100, Stack: 1, Count: 300e6, LeafFunc: -1},
			{Tid: 102, Pid: 100, Stack: 2, Count: 50e6, LeafFunc: -1}},
		Threads: r.Profile.Threads}
	off.ExpandStacks()
	r.OffCPU = off
	r.OffCPUIntervals = []agg.Interval{{Tid: 102, Stack: 0, Start: 1e6, End: 701e6, Waker: 103}}
	r.Meta.OffCPU = &store.OffCPUMeta{Switches: 40, Intervals: 20, NoStack: 1}
	if err := store.Save(store.Path(r.Meta.ID), r); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		// Off-CPU totals say what they hold: runnable time is off CPU, and said apart. By
		// default top --off-cpu sorts by total (by self, the kernel's leaf is first).
		{[]string{"top", "--off-cpu"}, []string{"off CPU 1,050.0 ms, of which runnable 50.0 ms · sort: total", "lock         __lll_lock_wait", "sleep        clock_nanosleep", "runnable     [runnable]", "lock         run_jit"}},
		{[]string{"top", "--off-cpu", "--sort", "self"}, []string{"off CPU 1,050.0 ms, of which runnable 50.0 ms · sort: self"}},
		{[]string{"flame", "--off-cpu"}, []string{"off CPU 1,050.0 ms, of which runnable 50.0 ms", "1,050.0 ms    run_jit  [/opt/app/bin/app]  lock", "700.0 ms      __lll_lock_wait  [libc.so.6]  lock, self 700.0 ms"}},
		{[]string{"threads"}, []string{"· off CPU 1,050.0 ms, of which runnable 50.0 ms", "ON-CPU ms   RUNNABLE BLOCKED ms", "102      100      1,000   64.72%     1001.0       50.0     1000.0  lock         worker-b"}},
		{[]string{"status"}, []string{"off-cpu:   40 switches, 20 times off CPU counted (1 without a stack), 0 lost"}},
		{[]string{"top", "--off-cpu", "--json"}, []string{`"off_cpu": true`, `"reason": "lock"`, `"samples": 1050000000`, `"off_cpu_ns": 1050000000`, `"runnable_ns": 50000000`, `"blocked_ns": 1000000000`}},
		{[]string{"threads", "--json"}, []string{`"off_cpu_ms": 1000`, `"runnable_ms": 50`, `"off_cpu_ns": 1050000000`, `"runnable_ns": 50000000`}},
		// --wall adds the samples (1 ms each at 1000 Hz) to the time off CPU.
		{[]string{"top", "--wall", "--tid", "102", "--sort", "total"}, []string{"on and off CPU (wall clock) 2,051.0 ms: on CPU 1,001.0 ms, off CPU 1,050.0 ms, of which runnable 50.0 ms", "lock         run_jit"}},
		{[]string{"top", "--runnable"}, []string{"runnable 50.0 ms (waiting for a CPU) · sort: total", "runnable     [runnable]"}},
		// Callers and callees weigh the time too, in milliseconds.
		{[]string{"callees", "run_jit", "--off-cpu"}, []string{"off CPU 1,050.0 ms, of which runnable 50.0 ms · callees of \"run_jit\"", "total 1,050.0 ms (100.00%)", "TOTAL ms", "66.67%      700.0      700.0  __lll_lock_wait  [libc.so.6]"}},
		{[]string{"callers", "__lll_lock_wait", "--off-cpu"}, []string{"total 700.0 ms (66.67%)", "100.00%      700.0      700.0  run_jit  [/opt/app/bin/app]"}},
		{[]string{"callers", "run_jit", "--off-cpu", "--json"}, []string{`"off_cpu": true`, `"samples": 1050000000`, `"total": 1050000000`, `"off_cpu_ns": 1050000000`}},
		// Exports: the off-CPU profile in nanoseconds.
		{[]string{"export", "--format", "folded", "--off-cpu", "-o", "-"}, []string{"main;run_jit;__lll_lock_wait 700000000", "main;run_jit;clock_nanosleep 300000000"}},
		{[]string{"export", "--format", "speedscope", "--off-cpu", "-o", "-"}, []string{`"unit":"nanoseconds"`, `"endValue":1050000000`}},
		// The Firefox Profiler's: a marker for the interval, with its reason and waker.
		{[]string{"export", "--format", "firefox", "-o", "-"}, []string{`"name":"OffCPU"`, `{"reason":"lock","type":"OffCPU","waker":103}`, `"endTime":[700.999]`, `"Blocked"`}},
	} {
		var out, errOut bytes.Buffer
		if code := Main(c.args, &out, &errOut); code != 0 {
			t.Fatalf("stax %v: exit %d: %s", c.args, code, errOut.String())
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("stax %v lacks %q:\n%s", c.args, w, out.String())
			}
		}
	}
	// pprof: off_cpu and wall values beside the samples, the blocked stacks labelled.
	pb := filepath.Join(t.TempDir(), "run.pb.gz")
	if code := Main([]string{"export", "--format", "pprof", "-o", pb}, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("export pprof: exit %d", code)
	}
	f, err := os.Open(pb)
	if err != nil {
		t.Fatal(err)
	}
	prof, err := profile.Parse(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, st := range prof.SampleType {
		types = append(types, st.Type)
	}
	if strings.Join(types, ",") != "samples,cpu,off_cpu,wall" {
		t.Fatalf("pprof sample types %v, want samples,cpu,off_cpu,wall", types)
	}
	var sums [4]int64
	reasons := map[string]int64{}
	for _, smp := range prof.Sample {
		for i, v := range smp.Value {
			sums[i] += v
		}
		if r := smp.Label["reason"]; len(r) == 1 {
			reasons[r[0]] += smp.Value[2]
		}
	}
	if sums[2] != 1050e6 || sums[3] != sums[1]+sums[2] || reasons["lock"] != 700e6 {
		t.Errorf("pprof sums %v (reasons %v): want off_cpu 1050000000, wall = cpu + off_cpu, lock 700000000", sums, reasons)
	}

	// A run without off-CPU time says so, in one line that says what to do.
	r = fixtureRun("20261101-120000-101", true)
	if err := store.Save(store.Path(r.Meta.ID), r); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := Main([]string{"top", "--off-cpu", "--run", r.Meta.ID}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "no off-CPU time") {
		t.Errorf("top --off-cpu of a run without it: exit %d, %q", code, errOut.String())
	}
}

// TestCompareOffCPU: compare --off-cpu compares the runs' time off CPU, function by
// function, and --fail-total-pct gates its growth.
func TestCompareOffCPU(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", "")
	save := func(id string, lockNs uint64) {
		r := fixtureRun(id, true)
		frames := []agg.Frame{{Func: "__lll_lock_wait", Image: "libc.so.6", Kind: agg.KindUser}, {Func: "clock_nanosleep", Image: "libc.so.6", Kind: agg.KindUser}}
		off := &agg.Profile{Frames: frames, Locations: []agg.Location{{Lines: []agg.Line{{Func: 0}}}, {Lines: []agg.Line{{Func: 1}}}},
			Stacks:  [][]uint32{{0}, {1}},
			Entries: []agg.Entry{{Tid: 102, Pid: 100, Stack: 0, Count: lockNs, LeafFunc: -1}, {Tid: 102, Pid: 100, Stack: 1, Count: 300e6, LeafFunc: -1}},
			Threads: r.Profile.Threads}
		off.ExpandStacks()
		r.OffCPU = off
		if err := store.Save(store.Path(r.Meta.ID), r); err != nil {
			t.Fatal(err)
		}
	}
	save("20261101-120000-200", 100e6)
	save("20261101-120000-201", 300e6)
	var out, errOut bytes.Buffer
	code := Main([]string{"compare", "--off-cpu", "--fail-total-pct", "10", "20261101-120000-200", "20261101-120000-201"}, &out, &errOut)
	if code != ExitRegression {
		t.Errorf("compare --off-cpu: exit %d, want %d: %s", code, ExitRegression, errOut.String())
	}
	for _, w := range []string{"base 20261101-120000-200: 400.0 ms off CPU · cand 20261101-120000-201: 600.0 ms off CPU (+50.00%)", "+25.00%", "__lll_lock_wait"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("compare --off-cpu lacks %q:\n%s", w, out.String())
		}
	}
}
