package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/testutil"
)

// buildProbes compiles testdata/probes.c.
func buildProbes(t *testing.T) string {
	t.Helper()
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/probes.c")
	return testutil.CC(t, t.TempDir(), "probes", "gcc", append(append([]string{}, cflags...), src)...)
}

// requireProbes skips the test where probes cannot be recorded: they take
// perf_event_open, root, and the kernel's PMU of their kind (kprobe or uprobe).
func requireProbes(t *testing.T, pmus ...string) {
	t.Helper()
	testutil.RequirePerf(t)
	testutil.RequireRoot(t)
	kp, up := perfevent.ProbePMUs()
	for _, pmu := range pmus {
		if pmu == "kprobe" && !kp || pmu == "uprobe" && !up {
			t.Skipf("this kernel has no %s PMU (/sys/bus/event_source/devices/%s: CONFIG_%s_EVENTS): %s events cannot be recorded", pmu, pmu, strings.ToUpper(pmu), pmu)
		}
	}
}

// requireKernelFunction skips the test where /proc/kallsyms names no function fn.
func requireKernelFunction(t *testing.T, fn string) {
	t.Helper()
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Skipf("/proc/kallsyms is not readable: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 3 && fields[2] == fn && strings.ContainsAny(fields[1], "tT") {
			return
		}
	}
	t.Skipf("this kernel has no function %s (/proc/kallsyms)", fn)
}

// recordBatches starts `stax record -q flags -- prog args...` of a probes.c workload: at
// each "batch" the program prints, it waits until the run has perBatch samples more than
// before it (the recorder has read the batch: its rings never hold more than one), then
// lets the program go on; it returns once the program has printed "ready".
func (e *staxEnv) recordBatches(t *testing.T, flags []string, perBatch int, prog string, args ...string) *liveRecording {
	t.Helper()
	l := &liveRecording{cmd: e.cmd(append(append(append([]string{"record", "-q"}, flags...), "--", prog), args...)...)}
	var err error
	if l.stdin, err = l.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := l.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	l.cmd.Stderr = &l.out
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.cmd.Process.Kill() })
	sc := bufio.NewScanner(stdout)
	for batches := 0; sc.Scan(); {
		fmt.Fprintln(&l.out, sc.Text())
		switch sc.Text() {
		case "batch":
			batches++
			if out, errOut, code := e.run("wait", "--for-samples", strconv.Itoa(batches*perBatch), "--timeout-ms", "60000"); code != 0 {
				t.Fatalf("wait for batch %d's samples: exit %d\n%s%s\n%s", batches, code, out, errOut, l.out.String())
			}
			if _, err := l.stdin.Write([]byte("\n")); err != nil {
				t.Fatal(err)
			}
		case "ready":
			go io.Copy(&l.out, stdout)
			return l
		}
	}
	l.cmd.Wait()
	t.Fatalf("%s %v never printed ready:\n%s", prog, args, l.out.String())
	return nil
}

// topRows is top's answer for event, sorted by sort, every row.
func (e *staxEnv) topRows(event, sort string) api.Top {
	var top api.Top
	e.mustJSON(&top, "top", "--event", event, "--sort", sort, "-n", "1000")
	return top
}

// A uprobe on each of two functions of a program: every call is a sample of its event,
// with the stack it was called from, live and stored; top leads with the function probed,
// and the other's calls are none of its samples. The program runs in batches, each let go
// once the recorder holds the one before, so no sample is lost to a full ring; the counts
// are exact unless the kernel says it lost some.
func TestUprobeEvent(t *testing.T) {
	requireProbes(t, "uprobe")
	const batches, hot, cold = 10, 500, 150
	prog := buildProbes(t)
	e := newEnv(t)
	hotEv, coldEv := "uprobe:"+prog+":hot_fn", "uprobe:"+prog+":cold_fn"
	l := e.recordBatches(t, []string{"-e", hotEv + "," + coldEv}, hot+cold, prog, "calls", strconv.Itoa(batches), strconv.Itoa(hot), strconv.Itoa(cold))
	check := func(when string) {
		t.Helper()
		var st api.Status
		e.mustJSON(&st, "status")
		hs, hc := eventOf(t, st, hotEv)
		cs, cc := eventOf(t, st, coldEv)
		t.Logf("%s: %s %d samples (count %d), %s %d samples (count %d), %d lost; calls %d and %d", when, hotEv, hs, hc, coldEv, cs, cc, st.Meta.Lost, batches*hot, batches*cold)
		if st.Meta.Lost == 0 && (hs != batches*hot || cs != batches*cold) || hs > batches*hot || cs > batches*cold || hs+cs+st.Meta.Lost < batches*(hot+cold) || hc != hs || cc != cs {
			t.Errorf("%s: %d and %d samples counting %d and %d, %d lost; want %d calls of hot_fn and %d of cold_fn", when, hs, cs, hc, cc, st.Meta.Lost, batches*hot, batches*cold)
		}
		top := e.topRows(hotEv, "self")
		if len(top.Rows) == 0 || top.Rows[0].Func != "hot_fn" || top.Rows[0].Self != hs || top.Event == nil || top.Event.Name != hotEv || top.Event.Period != 1 {
			t.Fatalf("%s: top --event %s: event %+v, rows %+v; want hot_fn first with its %d samples", when, hotEv, top.Event, top.Rows, hs)
		}
		for _, fn := range []string{"call_batch", "main"} {
			if _, total, ok := row(top, fn); !ok || total != hs {
				t.Errorf("%s: %s holds %d of hot_fn's %d samples: the stacks lack the callers", when, fn, total, hs)
			}
		}
		if _, _, ok := row(top, "cold_fn"); ok {
			t.Errorf("%s: cold_fn is in hot_fn's samples: %+v", when, top.Rows)
		}
		top = e.topRows(coldEv, "self")
		if len(top.Rows) == 0 || top.Rows[0].Func != "cold_fn" || top.Rows[0].Self != cs {
			t.Errorf("%s: top --event %s: rows %+v; want cold_fn first with its %d samples", when, coldEv, top.Rows, cs)
		}
		// The text names the event as it was given.
		if out, errOut, code := e.run("top", "--event", hotEv, "-n", "3"); code != 0 || !strings.Contains(out, "event "+hotEv+" (a sample every 1)") || !strings.Contains(out, "hot_fn") {
			t.Errorf("%s: top --event %s: exit %d\n%s%s", when, hotEv, code, out, errOut)
		}
		if out, errOut, code := e.run("status"); code != 0 || !strings.Contains(out, hotEv+" every 1 (") {
			t.Errorf("%s: status: exit %d\n%s%s", when, code, out, errOut)
		}
	}
	check("live")
	l.finish(t)
	check("stored")
	// The probes were the PMU's: none was written to tracefs.
	for _, dir := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if b, err := os.ReadFile(dir + "/uprobe_events"); err == nil && strings.Contains(string(b), prog) {
			t.Errorf("%s/uprobe_events lists the program's probes:\n%s", dir, b)
		}
	}
	// A pprof export has a value for each probe, under its name.
	file := filepath.Join(t.TempDir(), "run.pb.gz")
	if out, errOut, code := e.run("export", "-f", "pprof", "-o", file); code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.ParseData(b)
	if err != nil {
		t.Fatal(err)
	}
	i, err := p.SampleIndexByName(coldEv)
	if err != nil {
		t.Fatalf("the export has no value %s: %v", coldEv, err)
	}
	var sum int64
	for _, s := range p.Sample {
		sum += s.Value[i]
	}
	if sum != batches*cold {
		t.Errorf("the export's %s values add up to %d, want %d", coldEv, sum, batches*cold)
	}
}

// A kprobe on the kernel function the openat system call enters: each of the program's
// opens of /dev/null is a sample in the kernel, whose stack goes on into the program's
// function that opened it.
func TestKprobeEvent(t *testing.T) {
	requireProbes(t, "kprobe")
	const fn = "do_sys_openat2"
	requireKernelFunction(t, fn)
	const batches, opens = 5, 400
	prog := buildProbes(t)
	e := newEnv(t)
	ev := "kprobe:" + fn
	l := e.recordBatches(t, []string{"-e", ev}, opens, prog, "opens", strconv.Itoa(batches), strconv.Itoa(opens))
	l.finish(t)
	var st api.Status
	e.mustJSON(&st, "status")
	samples, _ := eventOf(t, st, ev)
	top := e.topRows(ev, "self")
	_, under, _ := row(top, "open_dev_null")
	t.Logf("%s: %d samples, %d under open_dev_null, %d lost; %d opens", ev, samples, under, st.Meta.Lost, batches*opens)
	if under > batches*opens || under+st.Meta.Lost < batches*opens || st.Meta.Lost == 0 && under != batches*opens {
		t.Errorf("%d samples under open_dev_null, %d lost; want its %d opens", under, st.Meta.Lost, batches*opens)
	}
	if len(top.Rows) == 0 || top.Rows[0].Func != fn || top.Rows[0].Image != "[kernel.kallsyms]" && !strings.Contains(top.Rows[0].Image, "kernel") {
		t.Errorf("top --event %s: %+v; want %s first, in the kernel", ev, top.Rows, fn)
	}
	if _, total, _ := row(top, "main"); total < under {
		t.Errorf("main holds %d samples, fewer than open_dev_null's %d", total, under)
	}
}

// Return probes: a uretprobe's samples are the function's returns, taken in its caller
// (where it returns to); a kretprobe's, the kernel function's, under the program's caller.
func TestReturnProbeEvents(t *testing.T) {
	t.Run("uretprobe", func(t *testing.T) {
		requireProbes(t, "uprobe")
		const batches, hot, cold = 4, 500, 100
		prog := buildProbes(t)
		e := newEnv(t)
		ev := "uretprobe:" + prog + ":hot_fn"
		l := e.recordBatches(t, []string{"-e", ev}, hot, prog, "calls", strconv.Itoa(batches), strconv.Itoa(hot), strconv.Itoa(cold))
		l.finish(t)
		var st api.Status
		e.mustJSON(&st, "status")
		samples, _ := eventOf(t, st, ev)
		top := e.topRows(ev, "self")
		self, _, _ := row(top, "call_batch")
		t.Logf("%s: %d samples, %d in call_batch, %d lost; %d calls", ev, samples, self, st.Meta.Lost, batches*hot)
		if st.Meta.Lost == 0 && (samples != batches*hot || self != samples) || samples > batches*hot || samples+st.Meta.Lost < batches*hot {
			t.Errorf("%d returns sampled, %d in call_batch, %d lost; want the %d returns of hot_fn, all to call_batch", samples, self, st.Meta.Lost, batches*hot)
		}
		if len(top.Rows) == 0 || top.Rows[0].Func != "call_batch" {
			t.Errorf("top --event %s: %+v; want call_batch, where hot_fn returns to, first", ev, top.Rows)
		}
	})
	t.Run("kretprobe", func(t *testing.T) {
		requireProbes(t, "kprobe")
		const fn = "do_sys_openat2"
		requireKernelFunction(t, fn)
		const batches, opens = 4, 300
		prog := buildProbes(t)
		e := newEnv(t)
		ev := "kretprobe:" + fn
		l := e.recordBatches(t, []string{"-e", ev}, opens, prog, "opens", strconv.Itoa(batches), strconv.Itoa(opens))
		l.finish(t)
		var st api.Status
		e.mustJSON(&st, "status")
		top := e.topRows(ev, "self")
		_, under, _ := row(top, "open_dev_null")
		t.Logf("%s: %d under open_dev_null, %d lost; %d opens", ev, under, st.Meta.Lost, batches*opens)
		if under > batches*opens || under+st.Meta.Lost < batches*opens || st.Meta.Lost == 0 && under != batches*opens {
			t.Errorf("%d returns under open_dev_null, %d lost; want its %d opens", under, st.Meta.Lost, batches*opens)
		}
	})
}

// What cannot be probed is refused before anything is recorded: one line that says what
// to do, exit status 2, and no run.
func TestProbeEventErrors(t *testing.T) {
	testutil.RequirePerf(t)
	prog := buildProbes(t)
	e := newEnv(t)
	kp, up := perfevent.ProbePMUs()
	root := os.Geteuid() == 0
	type refusal struct{ event, want string }
	cases := []refusal{
		{"kprobe:stax_no_such_function", "stax: event kprobe:stax_no_such_function: the kernel has no function stax_no_such_function (/proc/kallsyms lists those it has"},
		{"uprobe:" + prog + ":no_such_symbol", "stax: event uprobe:" + prog + ":no_such_symbol: " + prog + " has no symbol no_such_symbol (nm " + prog},
		{"uprobe:" + prog + ":fgets", "calls fgets from a library, which defines it: probe the library's file"},
		{"uprobe:" + prog + "-missing:hot_fn", "stax: event uprobe:" + prog + "-missing:hot_fn: no file " + prog + "-missing"},
		{"uprobe:stax-no-such-program:main", "stax-no-such-program is no program in $PATH: give the file's path"},
		{"uretprobe:" + prog + ":hot_fn+4", "a return probe is at a function's entry"},
		{"kprobe:do_sys_openat2,kprobe:do_sys_openat2", "is given twice"},
	}
	if !kp {
		// Any function, on a kernel without the kprobe PMU.
		cases = append(cases, refusal{"kretprobe:do_sys_openat2", "stax: event kretprobe:do_sys_openat2: this kernel has no kprobe PMU (/sys/bus/event_source/devices/kprobe"})
	}
	if up && !root {
		cases = append(cases, refusal{"uprobe:" + prog + ":hot_fn", "kprobes and uprobes take root or CAP_PERFMON"})
	}
	for _, c := range cases {
		out, errOut, code := e.run("record", "-e", c.event, "--", prog, "calls", "1", "1", "1")
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], "stax: ") || !strings.Contains(lines[0], c.want) || out != "" {
			t.Errorf("record -e %s: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.event, code, out, errOut, c.want)
		}
	}
	var list struct {
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
	}
	e.mustJSON(&list, "list")
	if len(list.Runs) != 0 {
		t.Errorf("the refused recordings left runs: %+v", list.Runs)
	}
	// list-events says which probes the kernel has.
	var ev struct {
		Probes []struct {
			Name      string `json:"name"`
			Syntax    string `json:"syntax"`
			Supported bool   `json:"supported"`
		} `json:"probes"`
	}
	e.mustJSON(&ev, "list-events")
	if len(ev.Probes) != 2 || ev.Probes[0].Name != "kprobe" || ev.Probes[0].Supported != kp || ev.Probes[1].Name != "uprobe" || ev.Probes[1].Supported != up ||
		!strings.Contains(ev.Probes[1].Syntax, "uprobe:PATH:SYMBOL") {
		t.Errorf("list-events: probes %+v; the kernel has kprobes %v, uprobes %v", ev.Probes, kp, up)
	}
}
