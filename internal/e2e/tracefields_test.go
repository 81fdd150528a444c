package e2e

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// tracefsReadable says whether the format of tracepoint sys/name can be read (tracefs
// mounted, and readable: root).
func tracefsReadable(sys, name string) bool {
	for _, dir := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if _, err := os.ReadFile(dir + "/events/" + sys + "/" + name + "/format"); err == nil {
			return true
		}
	}
	return false
}

// A tracepoint's fields are kept with its samples: recording syscalls:sys_enter_write of
// a program that writes 200 times to /dev/null, 100 bytes and then a byte more each time,
// stax samples lists each of those writes, live and stored, with count the size written,
// fd the file's and a stack through the function that wrote.
func TestTracepointFieldsSamples(t *testing.T) {
	testutil.RequirePerf(t)
	if os.Geteuid() != 0 || !tracefsReadable("syscalls", "sys_enter_write") {
		t.Skip("tracefs is not readable here (root reads /sys/kernel/tracing): syscalls:sys_enter_write cannot be recorded")
	}
	const writes, first = 200, 100
	prog := buildEvents(t)
	e := newEnv(t)
	l := e.startRecordUntilReady(t.TempDir(), []string{"-e", "syscalls:sys_enter_write"}, prog, "writes", "200", "100", "wait")
	check := func(when string) {
		t.Helper()
		var res api.Samples
		e.mustJSON(&res, "samples", "--event", "syscalls:sys_enter_write", "-n", "0")
		if res.Event != "syscalls:sys_enter_write" || res.Cap != 100000 || res.Kept != len(res.Samples) || res.Dropped != 0 {
			t.Errorf("%s: event %q, %d kept of a cap of %d, %d listed, %d dropped", when, res.Event, res.Kept, res.Cap, len(res.Samples), res.Dropped)
		}
		var sizes []int
		var fd json.RawMessage
		for _, s := range res.Samples {
			if !slices.Contains(s.Stack, "write_dev_null") {
				continue
			}
			var count int
			for _, f := range s.Fields {
				switch f.Name {
				case "count":
					if err := json.Unmarshal(f.Value, &count); err != nil {
						t.Fatalf("%s: count %s: %v", when, f.Value, err)
					}
				case "fd":
					if fd == nil {
						fd = f.Value
					} else if string(fd) != string(f.Value) {
						t.Errorf("%s: writes to fd %s and %s", when, fd, f.Value)
					}
				}
			}
			sizes = append(sizes, count)
			if s.Func == "" || s.Pid == 0 || s.Tid == 0 || s.TimeNs == 0 {
				t.Errorf("%s: sample %+v lacks its func, thread or time", when, s)
			}
		}
		want := make([]int, writes)
		for i := range want {
			want[i] = first + i
		}
		slices.Sort(sizes)
		if !slices.Equal(sizes, want) {
			t.Errorf("%s: the writes under write_dev_null asked for %v bytes, want %d writes of %d to %d", when, sizes, writes, first, first+writes-1)
		}
		if len(res.Samples) > 0 {
			s := res.Samples[len(res.Samples)/2]
			t.Logf("%s: %d samples; one: %s %d/%d func %s stack %v fields %s", when, len(res.Samples), s.Comm, s.Pid, s.Tid, s.Func, s.Stack, mustMarshal(t, s.Fields))
		}
		// The text lists them as perf script does: name=value after the function.
		out, errOut, code := e.run("samples", "--event", "syscalls:sys_enter_write", "-n", "3")
		if code != 0 || strings.Count(out, " count=") != 3 || !strings.Contains(out, "events") {
			t.Errorf("%s: samples -n 3: exit %d\n%s%s", when, code, out, errOut)
		}
		// top and flame weigh functions by a field: the bytes the writes asked for.
		var top api.Top
		e.mustJSON(&top, "top", "--event", "syscalls:sys_enter_write", "--weight", "count", "--sort", "total", "-n", "100")
		var under uint64
		for _, r := range top.Rows {
			if r.Func == "write_dev_null" {
				under = r.Total
			}
		}
		if want := uint64(writes*first + writes*(writes-1)/2); top.Weight == nil || under != want || top.Weight.Sum < want || top.Weight.Samples < writes {
			t.Errorf("%s: top --weight count: write_dev_null weighs %d, want %d; weight %+v", when, under, want, top.Weight)
		}
		var fl api.Flame
		e.mustJSON(&fl, "flame", "--event", "syscalls:sys_enter_write", "--weight", "count", "-d", "0", "--threshold-pct", "0")
		if fl.Weight == nil || fl.Root == nil || fl.Root.Total != top.Weight.Sum {
			t.Errorf("%s: flame --weight count: root %+v, weight %+v; top's sum %d", when, fl.Root, fl.Weight, top.Weight.Sum)
		}
		// An event that keeps no fields is refused, naming what does.
		if _, errOut, code := e.run("samples", "--event", "cpu-clock"); code != 5 {
			t.Errorf("%s: samples --event cpu-clock: exit %d, %s; want 5", when, code, errOut)
		}
	}
	// The recorder reads its rings now and then: the 200 writes and the one of "ready".
	if out, errOut, code := e.run("wait", "--for-samples", "201", "--timeout-ms", "30000"); code != 0 {
		t.Fatalf("wait for the samples: exit %d\n%s%s", code, out, errOut)
	}
	check("live")
	l.finish(t)
	check("stored")
}

func mustMarshal(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
