package perfevent

import (
	"errors"
	"strings"
	"testing"
)

func TestParseEvents(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []EventSpec
	}{
		{"page-faults", []EventSpec{{Name: "page-faults", Type: TypeSoftware, Config: SWPageFaults}}},
		{"cs,faults", []EventSpec{{Name: "context-switches", Type: TypeSoftware, Config: SWContextSwitches},
			{Name: "page-faults", Type: TypeSoftware, Config: SWPageFaults}}},
		{"cycles,instructions", []EventSpec{{Name: "cycles", Type: TypeHardware}, {Name: "instructions", Type: TypeHardware, Config: 1}}},
		{"L1-dcache-load-misses", []EventSpec{{Name: "L1-dcache-load-misses", Type: TypeHWCache, Config: 0x10000}}},
		{"LLC-load-misses", []EventSpec{{Name: "LLC-load-misses", Type: TypeHWCache, Config: 0x10002}}},
		{"dTLB-stores", []EventSpec{{Name: "dTLB-stores", Type: TypeHWCache, Config: 0x103}}},
		{"r003c", []EventSpec{{Name: "r003c", Type: TypeRaw, Config: 0x3c}}},
		{"sched:sched_switch", []EventSpec{{Name: "sched:sched_switch", Type: TypeTracepoint, Tracepoint: "sched:sched_switch"}}},
		{"cpu/event=0x3c,umask=0x01,edge/,task-clock", []EventSpec{
			{Name: "cpu/event=0x3c,umask=0x01,edge/", PMU: "cpu", Terms: []Term{{"event", 0x3c}, {"umask", 1}, {"edge", 1}}},
			{Name: "task-clock", Type: TypeSoftware, Config: SWTaskClock}}},
	} {
		got, err := ParseEvents(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%q: %+v, want %+v", tc.in, got, tc.want)
			continue
		}
		for i := range got {
			g, w := got[i], tc.want[i]
			if g.Name != w.Name || g.Type != w.Type || g.Config != w.Config || g.PMU != w.PMU || g.Tracepoint != w.Tracepoint || len(g.Terms) != len(w.Terms) {
				t.Errorf("%q: event %d is %+v, want %+v", tc.in, i, g, w)
				continue
			}
			for j := range g.Terms {
				if g.Terms[j] != w.Terms[j] {
					t.Errorf("%q: term %d is %+v, want %+v", tc.in, j, g.Terms[j], w.Terms[j])
				}
			}
		}
	}
	for _, bad := range []string{"", "bogus", "page-faults,", ",cs", "cs,cs", "cs,context-switches", "r", "rxyz", "r00000000000000000",
		"sched:", ":x", "sched:sched switch", "cpu/", "cpu//", "/event=1/", "cpu/event=zz/", "cpu/a/b/", "L1-dcache-load",
		"L1-dcache-loads-misses", strings.Repeat("x", 300), strings.Repeat("cs,", 20) + "cs", "page-faults\x00"} {
		if evs, err := ParseEvents(bad); err == nil || !errors.Is(err, ErrEventSyntax) {
			t.Errorf("%q: %+v, %v; want a syntax error", bad, evs, err)
		}
	}
}

func TestFormatApply(t *testing.T) {
	formats := map[string]FormatField{}
	for name, text := range map[string]string{"event": "config:0-7,32-35", "umask": "config:8-15", "edge": "config:18", "ldlat": "config1:0-15", "all": "config2:0-63"} {
		f, err := ParseFormat(text + "\n")
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		formats[name] = f
	}
	ev, err := ParseEvent("cpu/event=0x1d0,umask=0x81,edge,ldlat=3,all=0xffffffffffffffff/")
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.ApplyTerms(formats); err != nil {
		t.Fatal(err)
	}
	if want := uint64(0xd0 | 1<<32 | 0x81<<8 | 1<<18); ev.Config != want || ev.Config1 != 3 || ev.Config2 != ^uint64(0) {
		t.Errorf("config %#x %#x %#x, want %#x 3 all ones", ev.Config, ev.Config1, ev.Config2, want)
	}
	for _, bad := range []string{"cpu/umask=0x100/", "cpu/nope=1/", "cpu/edge=2/"} {
		ev, _ := ParseEvent(bad)
		if err := ev.ApplyTerms(formats); err == nil {
			t.Errorf("%s: %#x, want an error", bad, ev.Config)
		}
	}
	for _, bad := range []string{"", "config", "config:", "config3:0-1", "config:5-2", "config:0-64", "config:-1", "config:a"} {
		if f, err := ParseFormat(bad); err == nil {
			t.Errorf("%q: %+v, want an error", bad, f)
		}
	}
}

// FuzzParseEvents: a user's -e list never panics the parser, and what it accepts is
// bounded and names each event once.
func FuzzParseEvents(f *testing.F) {
	for _, s := range []string{"page-faults", "cpu-clock,page-faults,cs", "cpu/event=0x3c,umask=0x00/", "r1a8", "sched:sched_switch",
		"L1-dcache-load-misses", "cpu/event=0x3c,umask=0x00,/", "a/b=c/d/", ",,,", "cs,cs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		evs, err := ParseEvents(s)
		if err != nil {
			return
		}
		if len(evs) == 0 || len(evs) > MaxEvents {
			t.Fatalf("%q: %d events", s, len(evs))
		}
		seen := map[string]bool{}
		for _, ev := range evs {
			if ev.Name == "" || len(ev.Name) > maxEventName || seen[ev.Name] || len(ev.Terms) > maxEventTerms {
				t.Fatalf("%q: event %+v", s, ev)
			}
			seen[ev.Name] = true
		}
	})
}

// FuzzParseFormat: a sysfs format file never panics the parser, and a field it accepts
// places any value within its word's 64 bits.
func FuzzParseFormat(f *testing.F) {
	for _, s := range []string{"config:0-7", "config1:0-63", "config:0-7,21,32-35", "config2:63", "config:9-8", "config:0-7,"} {
		f.Add(s, uint64(0x1ff))
	}
	f.Fuzz(func(t *testing.T, s string, v uint64) {
		ff, err := ParseFormat(s)
		if err != nil {
			return
		}
		if ff.Word < 0 || ff.Word > 2 || len(ff.Ranges) == 0 || len(ff.Ranges) > 64 {
			t.Fatalf("%q: %+v", s, ff)
		}
		var w [3]uint64
		ff.Apply(&w, v)
	})
}

func TestParseProbes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Probe
	}{
		{"kprobe:do_sys_openat2", Probe{Func: "do_sys_openat2"}},
		{"kprobe:do_sys_openat2+0x10", Probe{Func: "do_sys_openat2", Offset: 16}},
		{"kprobe:vfs_read+12", Probe{Func: "vfs_read", Offset: 12}},
		{"kprobe:finish_task_switch.isra.0", Probe{Func: "finish_task_switch.isra.0"}},
		{"kretprobe:do_sys_openat2", Probe{Func: "do_sys_openat2", Return: true}},
		{"uprobe:/usr/bin/app:hot_fn", Probe{User: true, Path: "/usr/bin/app", Func: "hot_fn"}},
		{"uprobe:./app:hot_fn+4", Probe{User: true, Path: "./app", Func: "hot_fn", Offset: 4}},
		{"uprobe:app:_ZN3foo3barEv", Probe{User: true, Path: "app", Func: "_ZN3foo3barEv"}},
		{"uprobe:/lib/x86_64-linux-gnu/libc.so.6:malloc", Probe{User: true, Path: "/lib/x86_64-linux-gnu/libc.so.6", Func: "malloc"}},
		{"uprobe:/opt/a:b/app:main", Probe{User: true, Path: "/opt/a:b/app", Func: "main"}},
		{"uprobe:/usr/bin/app:0x1139", Probe{User: true, Path: "/usr/bin/app", Offset: 0x1139}},
		{"uprobe:/usr/bin/app:4409", Probe{User: true, Path: "/usr/bin/app", Offset: 4409}},
		{"uretprobe:/usr/bin/app:hot_fn", Probe{User: true, Return: true, Path: "/usr/bin/app", Func: "hot_fn"}},
	} {
		ev, err := ParseEvent(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if ev.Name != tc.in || ev.Probe == nil || ev.Tracepoint != "" || ev.PMU != "" {
			t.Errorf("%q: %+v, want a probe named as given", tc.in, ev)
			continue
		}
		if p := *ev.Probe; p.User != tc.want.User || p.Return != tc.want.Return || p.Func != tc.want.Func || p.Path != tc.want.Path || p.Offset != tc.want.Offset {
			t.Errorf("%q: %+v, want %+v", tc.in, p, tc.want)
		}
	}
	for _, tc := range []struct{ in, why string }{
		{"kprobe:", "kernel function's name"},
		{"kprobe:9lives", "kernel function's name"},
		{"kprobe:do_sys_openat2+", "not an offset"},
		{"kprobe:do_sys_openat2+x", "not an offset"},
		{"kprobe:mod:func", "kernel function's name"},
		{"kprobe:a-b", "kernel function's name"},
		{"kretprobe:do_sys_openat2+4", "a return probe is at a function's entry"},
		{"uprobe:app", "uprobe:PATH:SYMBOL"},
		{"uprobe::hot_fn", "the path is empty"},
		{"uprobe:./app:", "give the symbol"},
		{"uprobe:./app:0xzz", "not a file offset"},
		{"uprobe:./app:hot-fn", "not a symbol name"},
		{"uprobe:./app:hot_fn+", "not an offset"},
		{"uretprobe:./app:hot_fn+1", "a return probe is at a function's entry"},
		{"uprobe:/a b:f", "printable ASCII without spaces"},
		{"uprobe:/" + strings.Repeat("x", 1100) + ":f", "at most"},
		{"kprobe:" + strings.Repeat("x", 300), "at most"},
	} {
		ev, err := ParseEvent(tc.in)
		if err == nil || !errors.Is(err, ErrEventSyntax) || !strings.Contains(err.Error(), tc.why) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %+v, %v; want a one-line syntax error saying %q", tc.in, ev, err, tc.why)
		}
	}
}

// A uprobe's path has slashes, which are no PMU event's: commas around it split the list.
func TestParseEventsWithProbes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"uprobe:/usr/bin/app:hot_fn,cs", []string{"uprobe:/usr/bin/app:hot_fn", "context-switches"}},
		{"cs,uprobe:/a/b/c:f,uretprobe:/a/b/c:f", []string{"context-switches", "uprobe:/a/b/c:f", "uretprobe:/a/b/c:f"}},
		{"uprobe:/a/b:f,cpu/event=1,umask=2/,kprobe:vfs_read", []string{"uprobe:/a/b:f", "cpu/event=1,umask=2/", "kprobe:vfs_read"}},
		{"kprobe:vfs_read,kretprobe:vfs_read,kprobe:vfs_read+4", []string{"kprobe:vfs_read", "kretprobe:vfs_read", "kprobe:vfs_read+4"}},
	} {
		evs, err := ParseEvents(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		var names []string
		for _, ev := range evs {
			names = append(names, ev.Name)
		}
		if strings.Join(names, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%q: %q, want %q", tc.in, names, tc.want)
		}
	}
	for _, bad := range []string{"uprobe:/a/b:f,", "kprobe:vfs_read,kprobe:vfs_read", "uprobe:/a/b:f,uprobe:/a/b:f"} {
		if evs, err := ParseEvents(bad); err == nil || !errors.Is(err, ErrEventSyntax) {
			t.Errorf("%q: %+v, %v; want a syntax error", bad, evs, err)
		}
	}
}
