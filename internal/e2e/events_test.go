package e2e

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/testutil"
)

// buildEvents compiles testdata/events.c.
func buildEvents(t *testing.T) string {
	t.Helper()
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/events.c")
	return testutil.CC(t, t.TempDir(), "events", "gcc", append(append([]string{}, cflags...), "-pthread", src)...)
}

// perfStat counts event over one execution of args with perf stat.
func perfStat(t *testing.T, event string, args ...string) uint64 {
	t.Helper()
	perf := testutil.RequireTool(t, "perf")
	c := exec.Command(perf, append([]string{"stat", "-x", ",", "-e", event, "--"}, args...)...)
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Run(); err != nil {
		t.Fatalf("perf stat: %v\n%s", err, errb.String())
	}
	for _, line := range strings.Split(errb.String(), "\n") {
		f := strings.Split(line, ",")
		if len(f) >= 3 && f[2] == event {
			n, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				t.Fatalf("perf stat: %q is not a count: %s", f[0], line)
			}
			return n
		}
	}
	t.Fatalf("perf stat printed no count of %s:\n%s", event, errb.String())
	return 0
}

// eventOf is the status's event named name.
func eventOf(t *testing.T, st api.Status, name string) (samples, count uint64) {
	t.Helper()
	for _, e := range st.Events {
		if e.Name == name {
			return e.Samples, e.Count
		}
	}
	t.Fatalf("status lists no event %s: %+v", name, st.Events)
	return 0, 0
}

// topShare is fn's total samples in top's answer, and its share of them.
func topShare(t *testing.T, top api.Top, fn string) (uint64, float64) {
	t.Helper()
	_, total, _ := row(top, fn)
	if top.Samples == 0 {
		t.Fatalf("top has no samples: %+v", top)
	}
	return total, float64(total) / float64(top.Samples)
}

// Page faults, sampled (stax record -e page-faults): the samples land where the pages are
// touched, and the faults they stand for (the sum of their periods, in frequency mode and
// with a fixed period) are what perf stat counts. Touching fresh pages faults once a page
// whatever the machine's speed or load, so two executions fault alike: perf stat counts
// another one.
func TestPageFaultsEvent(t *testing.T) {
	testutil.RequirePerf(t)
	prog := buildEvents(t)
	const pages = "200000"
	want := perfStat(t, "page-faults", prog, "faults", pages, "100")
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"frequency", nil},
		{"period", []string{"-c", "1000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			out, errOut, code := e.run(append(append([]string{"record", "-q", "-e", "page-faults"}, tc.flags...), "--", prog, "faults", pages, "100")...)
			if code != 0 {
				t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
			}
			var st api.Status
			e.mustJSON(&st, "status")
			samples, count := eventOf(t, st, "page-faults")
			if len(st.Events) != 1 || st.Meta.Samples != samples {
				t.Errorf("status: events %+v, %d samples in all", st.Events, st.Meta.Samples)
			}
			if tc.flags != nil && count != 1000*samples {
				t.Errorf("-c 1000: %d samples count %d page faults, not %d", samples, count, 1000*samples)
			}
			diff := math.Abs(float64(count)-float64(want)) / float64(want)
			t.Logf("%d samples count %d page faults (lost %d); perf stat counts %d: %.2f%% apart", samples, count, st.Meta.Lost, want, diff*100)
			if diff > 0.05 {
				t.Errorf("stax counts %d page faults, perf stat %d: %.1f%% apart, more than 5%% (%d samples lost)", count, want, diff*100, st.Meta.Lost)
			}
			var top api.Top
			e.mustJSON(&top, "top", "-n", "100", "--sort", "total")
			n, share := topShare(t, top, "touch_pages")
			t.Logf("touch_pages: %d of %d page-fault samples (%.1f%%)", n, top.Samples, share*100)
			if share < 0.95 {
				t.Errorf("touch_pages has %.1f%% of the page-fault samples, want 95%% or more: %+v", share*100, top.Rows)
			}
			if top.Event == nil || top.Event.Name != "page-faults" {
				t.Errorf("top's event: %+v", top.Event)
			}
		})
	}
}

// Context switches, sampled: the stacks name the function that switches.
func TestContextSwitchesEvent(t *testing.T) {
	testutil.RequirePerf(t)
	prog := buildEvents(t)
	e := newEnv(t)
	out, errOut, code := e.run("record", "-q", "-e", "context-switches", "--", prog, "yield", "100000")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var st api.Status
	e.mustJSON(&st, "status")
	samples, count := eventOf(t, st, "context-switches")
	var top api.Top
	e.mustJSON(&top, "top", "-n", "100", "--sort", "total")
	n, share := topShare(t, top, "yield_loop")
	t.Logf("%d samples count %d context switches; yield_loop under %d (%.1f%%)", samples, count, n, share*100)
	// Two threads yield to each other on one CPU: half of the switches are yield_loop's
	// (other tasks on that CPU take some turns in between).
	if share < 0.25 {
		t.Errorf("yield_loop is under %.1f%% of the context-switch samples, want a quarter or more: %+v", share*100, top.Rows)
	}
	// A program of 100,000 yields switches at least 100,000 times.
	if count < 100000 {
		t.Errorf("the samples count %d context switches, fewer than the program's 100,000 yields", count)
	}
}

// Two events in one run: each view counts the event asked for (the first by default), live
// and stored alike.
func TestTwoEventsLeaders(t *testing.T) {
	testutil.RequirePerf(t)
	prog := buildEvents(t)
	e := newEnv(t)
	l := e.startRecordUntilReady(t.TempDir(), []string{"-e", "cpu-clock,page-faults"}, prog, "faults", "200000", "1000", "wait")
	leaders := func(when string) {
		t.Helper()
		for _, tc := range []struct{ event, leader string }{{"page-faults", "touch_pages"}, {"cpu-clock", "spin"}, {"", "spin"}} {
			var top api.Top
			args := []string{"top", "-n", "5"}
			if tc.event != "" {
				args = append(args, "--event", tc.event)
			}
			e.mustJSON(&top, args...)
			if len(top.Rows) == 0 || top.Rows[0].Func != tc.leader {
				t.Errorf("%s: top --event %q leads with %+v, want %s", when, tc.event, top.Rows, tc.leader)
				continue
			}
			wantName := tc.event
			if wantName == "" {
				wantName = "cpu-clock"
			}
			if top.Event == nil || top.Event.Name != wantName || top.Event.Of != 2 {
				t.Errorf("%s: top --event %q says its event is %+v", when, tc.event, top.Event)
			}
			t.Logf("%s: --event %q: %s leads with %d of %d samples", when, tc.event, top.Rows[0].Func, top.Rows[0].Self, top.Samples)
		}
		var fl api.Flame
		e.mustJSON(&fl, "flame", "--event", "page-faults", "-d", "30", "--threshold-pct", "0")
		// spin faults now and then too (a page of the stack, of the vDSO): a few samples,
		// where the CPU's samples are half the run.
		touch, spin := pathTotal(fl.Root, []string{"main", "touch_pages"}), pathTotal(fl.Root, []string{"main", "spin"})
		t.Logf("%s: flame --event page-faults: main -> touch_pages %d, main -> spin %d", when, touch, spin)
		if touch == 0 || spin > max(2, touch/100) {
			t.Errorf("%s: flame --event page-faults: main -> touch_pages %d samples, main -> spin %d: want touch_pages's and at most 1%% of them under spin", when, touch, spin)
		}
		if _, errOut, code := e.run("top", "--event", "cycles"); code != 5 || !strings.Contains(errOut, "cpu-clock, page-faults") {
			t.Errorf("%s: top --event cycles: exit %d, %q; want 5 naming the run's events", when, code, errOut)
		}
	}
	leaders("live")
	l.finish(t)
	leaders("stored")
	var st api.Status
	e.mustJSON(&st, "status")
	cs, _ := eventOf(t, st, "cpu-clock")
	ps, pc := eventOf(t, st, "page-faults")
	if cs+ps != st.Meta.Samples || cs < 500 || pc < 150000 {
		t.Errorf("status: cpu-clock %d samples, page-faults %d samples counting %d, %d in all", cs, ps, pc, st.Meta.Samples)
	}
}

// A hardware event on a machine without hardware counters: one line and exit 2, never an
// empty profile. Where the machine has them, the event records.
func TestHardwareEventWithoutPMU(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildEvents(t)
	if ok, known := perfevent.HardwareCounters(); ok || !known {
		out, errOut, code := e.run("record", "-q", "-e", "cycles", "--", prog, "faults", "1000", "300")
		if code != 0 {
			t.Fatalf("record -e cycles on a machine with hardware counters: exit %d\n%s%s", code, out, errOut)
		}
		var st api.Status
		e.mustJSON(&st, "status")
		if s, _ := eventOf(t, st, "cycles"); s == 0 {
			t.Errorf("-e cycles recorded no samples")
		}
		return
	}
	// --counters with hardware counters: a note, and the profile without them.
	out, errOut, code := e.run("record", "--counters", "cycles,instructions", "--", prog, "faults", "1000", "300")
	if code != 0 || !strings.Contains(errOut, "stax: this machine exposes no hardware counters: --counters cycles,instructions left out") {
		t.Errorf("record --counters cycles,instructions: exit %d\n%s%s", code, out, errOut)
	}
	var st api.Status
	e.mustJSON(&st, "status")
	if st.Meta.Samples < 100 || len(st.Meta.Counters) != 0 {
		t.Errorf("record --counters cycles,instructions: %d samples, counters %+v; want a cpu-clock profile without counters", st.Meta.Samples, st.Meta.Counters)
	}
	e = newEnv(t)
	for _, ev := range []string{"cycles", "cpu-clock,instructions", "r003c", "L1-dcache-load-misses"} {
		out, errOut, code := e.run("record", "-e", ev, "--", prog, "faults", "1000", "300")
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], "stax: this machine exposes no hardware counters: ") || out != "" {
			t.Errorf("record -e %s: exit %d, stdout %q, stderr %q; want exit 2 and one line", ev, code, out, errOut)
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
}

// Counters read with each sample (--counters): what each thread's counters counted
// between its samples, summed over the program's rows, is what perf stat counts for it.
// One execution for both: stax records perf stat, which counts the program alone.
func TestCountersWithSamples(t *testing.T) {
	testutil.RequirePerf(t)
	perf := testutil.RequireTool(t, "perf")
	prog := buildEvents(t)
	e := newEnv(t)
	stat := filepath.Join(t.TempDir(), "stat.csv")
	counters := []string{"task-clock", "page-faults", "context-switches"}
	list := strings.Join(counters, ",")
	out, errOut, code := e.run("record", "-q", "--counters", list, "--", perf, "stat", "-x", ",", "-o", stat, "-e", list, "--", prog, "faults", "200000", "500")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	want := map[string]float64{}
	b, err := os.ReadFile(stat)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ",")
		if len(f) >= 3 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				if f[2] == "task-clock" {
					v *= 1e6 // msec
				}
				want[f[2]] = v
			}
		}
	}
	var th api.Threads
	e.mustJSON(&th, "threads")
	pid := uint32(0)
	for _, r := range th.Rows {
		if r.Name == "events" {
			pid = r.Pid
		}
	}
	if pid == 0 {
		t.Fatalf("the program is not among the run's threads: %+v", th.Rows)
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "100000", "--pid", strconv.Itoa(int(pid)))
	if !slices.Equal(top.Counters, counters) {
		t.Fatalf("top's counters: %v, want %v", top.Counters, counters)
	}
	got := make([]float64, len(counters))
	for _, r := range top.Rows {
		for i, v := range r.Counters {
			got[i] += float64(v)
		}
	}
	for i, name := range counters {
		w, ok := want[name]
		if !ok {
			t.Fatalf("perf stat counted no %s:\n%s", name, b)
		}
		// The counts after a thread's last sample are no sample's: at most a period of
		// cpu-clock (1 ms) of its time, and what it did in it.
		tol := math.Max(0.05*w, 5)
		t.Logf("%s: stax %.0f over %d samples, perf stat %.0f (%.2f%% apart)", name, got[i], top.Samples, w, 100*math.Abs(got[i]-w)/math.Max(w, 1))
		if math.Abs(got[i]-w) > tol {
			t.Errorf("%s: the samples' counters sum to %.0f, perf stat counts %.0f: more than %.0f apart", name, got[i], w, tol)
		}
	}
	if _, _, ok := row(top, "touch_pages"); !ok {
		t.Errorf("touch_pages is not in top: %+v", top.Rows)
	}
	for _, r := range top.Rows {
		if r.Func == "spin" && r.Counters[1] > uint64(0.05*want["page-faults"]) {
			t.Errorf("spin counted %d page faults of %.0f", r.Counters[1], want["page-faults"])
		}
	}
	checkFlameCounters(t, e, pid, top)
	checkAnnotateCounters(t, e, top, "touch_pages")
	checkWindowCounters(t, e, pid, top)
	checkNotMultiplexed(t, e, top)
}

// checkNotMultiplexed checks the times the counters were enabled and counting: software
// counters are never multiplexed, so they counted all the time they were enabled (less a
// thread's runs on another CPU between two samples on one), and no view says otherwise.
func checkNotMultiplexed(t *testing.T, e *staxEnv, top api.Top) {
	t.Helper()
	var st api.Status
	e.mustJSON(&st, "status")
	for _, c := range st.Meta.Counters {
		tm := c.Time
		if tm == nil || tm.Pairs == 0 || tm.EnabledNs == 0 {
			t.Errorf("%s: no times measured: %+v", c.Name, tm)
			continue
		}
		t.Logf("%s: counted %.4f%% of %d ns enabled, over %d pairs of samples", c.Name, 100*tm.Share(), tm.EnabledNs, tm.Pairs)
		if tm.Multiplexed() {
			t.Errorf("%s: software counters said to be multiplexed: counted %d of %d ns", c.Name, tm.RunningNs, tm.EnabledNs)
		}
	}
	if top.CountersMultiplexed != nil {
		t.Errorf("top says the counters were multiplexed (%.3f)", *top.CountersMultiplexed)
	}
	if out, _, _ := e.run("status"); strings.Contains(out, "multiplexed") {
		t.Errorf("status says the counters were multiplexed:\n%s", out)
	}
}

// checkWindowCounters checks that two windows that split the run count, together, what
// the whole run counted: each sample keeps its counters.
func checkWindowCounters(t *testing.T, e *staxEnv, pid uint32, whole api.Top) {
	t.Helper()
	sum := func(top api.Top) []uint64 {
		var s []uint64
		for _, r := range top.Rows {
			s = agg.SumCounters(s, r.Counters)
		}
		return s
	}
	// Split where half the program's samples are: it starts when perf stat has, late on a
	// loaded machine.
	var tl api.Timeline
	e.mustJSON(&tl, "timeline", "--pid", strconv.Itoa(int(pid)), "--bucket", "10")
	split, seen := tl.StartSec, uint64(0)
	for i, n := range tl.Total {
		if seen += n; 2*seen >= whole.Samples {
			split = tl.StartSec + float64(i+1)*tl.BucketSec
			break
		}
	}
	at := strconv.FormatFloat(split, 'f', 6, 64)
	var first, second api.Top
	e.mustJSON(&first, "top", "-n", "100000", "--pid", strconv.Itoa(int(pid)), "--to", at)
	e.mustJSON(&second, "top", "-n", "100000", "--pid", strconv.Itoa(int(pid)), "--from", at)
	a, b, w := sum(first), sum(second), sum(whole)
	if first.Samples+second.Samples != whole.Samples || first.Samples == 0 || second.Samples == 0 {
		t.Fatalf("the windows hold %d and %d samples, the run %d", first.Samples, second.Samples, whole.Samples)
	}
	if !slices.Equal(first.Counters, whole.Counters) || !slices.Equal(agg.SumCounters(slices.Clone(a), b), w) {
		t.Errorf("the windows counted %v (%v) and %v (%v), the run %v", a, first.Counters, b, second.Counters, w)
	}
	t.Logf("windows: %v over %d samples, %v over %d", a, first.Samples, b, second.Samples)
}

// checkFlameCounters checks the call tree's counters against top's rows (the same
// samples): the root's are the rows' sums, and touch_pages, under which the pages are
// faulted in (its own code and the kernel's below it), has nearly all the page faults.
func checkFlameCounters(t *testing.T, e *staxEnv, pid uint32, top api.Top) {
	t.Helper()
	var fl api.Flame
	e.mustJSON(&fl, "flame", "-d", "0", "--threshold-pct", "0", "--pid", strconv.Itoa(int(pid)))
	if !slices.Equal(fl.Counters, top.Counters) {
		t.Fatalf("flame's counters: %v, top's %v", fl.Counters, top.Counters)
	}
	sums := make([]uint64, len(top.Counters))
	for _, r := range top.Rows {
		for i, v := range r.Counters {
			sums[i] += v
		}
	}
	if !slices.Equal(fl.Root.Counters, sums) {
		t.Errorf("the tree's root counted %v, top's rows %v", fl.Root.Counters, sums)
	}
	var under []uint64 // what the touch_pages nodes counted, wherever they are
	var walk func(n *api.FlameNode)
	walk = func(n *api.FlameNode) {
		if n.Func == "touch_pages" {
			under = agg.SumCounters(under, n.Counters)
			return
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(fl.Root)
	if len(under) != len(sums) || float64(under[1]) < 0.95*float64(sums[1]) {
		t.Errorf("touch_pages counted %v under it, of %v in all (page faults: at least 95%% expected)", under, sums)
	}
	t.Logf("flame: the root counted %v, touch_pages %v under it", fl.Root.Counters, under)
}

// checkAnnotateCounters checks that annotating fn shares what its self samples counted
// (top's row) among its instructions and source lines.
func checkAnnotateCounters(t *testing.T, e *staxEnv, top api.Top, fn string) {
	t.Helper()
	var self []uint64
	for _, r := range top.Rows {
		if r.Func == fn {
			self = r.Counters
		}
	}
	var an api.Annotate
	e.mustJSON(&an, "annotate", fn)
	a := an.Annotation
	if a == nil || !slices.Equal(a.Counters, top.Counters) {
		t.Fatalf("annotate %s: counters %v, want %v", fn, a, top.Counters)
	}
	if !slices.Equal(a.CounterTotals, self) {
		t.Errorf("annotate %s counted %v, top's row %v", fn, a.CounterTotals, self)
	}
	var insts, lines []uint64
	hot := 0
	for _, in := range a.Insts {
		insts = agg.SumCounters(insts, in.Counters)
		if (in.Samples > 0) != (len(in.Counters) > 0) {
			t.Errorf("%#x: %d samples, counters %v", in.Addr, in.Samples, in.Counters)
		}
		if in.Samples > 0 {
			hot++
		}
	}
	for _, b := range a.SourceBlocks {
		lines = agg.SumCounters(lines, b.Counters)
	}
	if !slices.Equal(insts, self) || (len(a.SourceBlocks) > 0 && !slices.Equal(lines, self)) {
		t.Errorf("annotate %s: instructions counted %v, source lines %v, the function %v", fn, insts, lines, self)
	}
	out, _, code := e.run("annotate", fn)
	if code != 0 || !strings.Contains(out, "PAGE-FAULTS") {
		t.Errorf("annotate %s: exit %d, no counters' columns:\n%s", fn, code, out)
	}
	t.Logf("annotate %s: %v over %d instructions with samples", fn, a.CounterTotals, hot)
}

// A run of two events with counters exported to pprof: one file with a value per event and
// per counter (go tool pprof -sample_index=page-faults), the page faults, sampled and
// counted, under the function that touches the pages, and the values adding up to what
// status counts.
func TestExportPprofEventsAndCounters(t *testing.T) {
	testutil.RequirePerf(t)
	prog := buildEvents(t)
	e := newEnv(t)
	out, errOut, code := e.run("record", "-q", "-e", "cpu-clock,page-faults", "--counters", "task-clock,page-faults", "--", prog, "faults", "200000", "300")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
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
	var types []string
	for _, st := range p.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	t.Logf("sample types %v", types)
	if len(types) < 2 || types[0] != "samples/count" || types[1] != "cpu/nanoseconds" || p.DefaultSampleType != "cpu" {
		t.Fatalf("sample types %v, default %q: want samples and cpu first, cpu the default", types, p.DefaultSampleType)
	}
	index := map[string]int{}
	for _, name := range []string{"page-faults", "task-clock", "page-faults-counter"} {
		i, err := p.SampleIndexByName(name)
		if err != nil {
			t.Fatal(err)
		}
		index[name] = i
	}
	if types[index["page-faults"]] != "page-faults/count" || types[index["task-clock"]] != "task-clock/nanoseconds" ||
		types[index["page-faults-counter"]] != "page-faults-counter/count" {
		t.Errorf("sample types %v", types)
	}
	// Each value under the functions whose stacks hold touch_pages, and spin.
	in := func(s *profile.Sample, fn string) bool {
		for _, l := range s.Location {
			for _, ln := range l.Line {
				if ln.Function.Name == fn {
					return true
				}
			}
		}
		return false
	}
	total, touch, spin := map[string]int64{}, map[string]int64{}, map[string]int64{}
	for _, s := range p.Sample {
		for name, i := range index {
			total[name] += s.Value[i]
			if in(s, "touch_pages") {
				touch[name] += s.Value[i]
			}
			if in(s, "spin") {
				spin[name] += s.Value[i]
			}
		}
		if ev := s.Label["event"]; len(ev) == 1 && ev[0] == "page-faults" && (s.Value[1] != 0 || s.Value[index["task-clock"]] != 0) {
			t.Errorf("a page-faults sample has CPU time or counters: %v", s.Value)
		}
	}
	for _, name := range []string{"page-faults", "page-faults-counter"} {
		t.Logf("%s: %d in all, %d under touch_pages (%.1f%%), %d under spin", name, total[name], touch[name],
			100*float64(touch[name])/math.Max(float64(total[name]), 1), spin[name])
		if total[name] < 150000 || float64(touch[name]) < 0.9*float64(total[name]) || float64(spin[name]) > 0.02*float64(total[name]) {
			t.Errorf("%s: %d in all, %d under touch_pages, %d under spin: want 90%% or more under touch_pages, 2%% or less under spin",
				name, total[name], touch[name], spin[name])
		}
	}
	var st api.Status
	e.mustJSON(&st, "status")
	_, count := eventOf(t, st, "page-faults")
	// Each sample is worth the mean period, rounded: the sum is the count within half a
	// fault a sample.
	if d := math.Abs(float64(total["page-faults"]) - float64(count)); d > 0.01*float64(count) {
		t.Errorf("pprof's page-faults add up to %d, status counts %d", total["page-faults"], count)
	}
	if total["task-clock"] == 0 || spin["task-clock"] < touch["task-clock"]/10 {
		t.Errorf("task-clock: %d in all, %d under touch_pages, %d under spin", total["task-clock"], touch["task-clock"], spin["task-clock"])
	}
}
