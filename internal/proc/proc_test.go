package proc

import (
	"reflect"
	"sort"
	"testing"
)

// mk is a mapping with a path, range, file offset and start time.
func mk(path string, start, end, pgoff, t uint64) Mapping {
	return Mapping{Start: start, End: end, Pgoff: pgoff, Path: path, Time: t}
}

// summary is the comparable part of a mapping.
type summary struct {
	Path          string
	Start, End    uint64
	Pgoff         uint64
	Time, EndTime uint64
}

func summarize(ms []Mapping) []summary {
	out := make([]summary, len(ms))
	for i, m := range ms {
		out[i] = summary{m.Path, m.Start, m.End, m.Pgoff, m.Time, m.EndTime}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Start != out[j].Start {
			return out[i].Start < out[j].Start
		}
		return out[i].Time < out[j].Time
	})
	return out
}

type lookup struct {
	addr, t uint64
	want    string // path of the mapping Find returns, "" for none
	pgoff   uint64 // checked when want != ""
}

func checkFind(t *testing.T, tr *Tracker, pid int, lookups []lookup) {
	t.Helper()
	for _, l := range lookups {
		m := tr.Find(pid, l.addr, l.t)
		switch {
		case m == nil && l.want != "":
			t.Errorf("Find(%#x, t=%d) = nil, want %s", l.addr, l.t, l.want)
		case m != nil && l.want == "":
			t.Errorf("Find(%#x, t=%d) = %s, want none", l.addr, l.t, m.Path)
		case m != nil && (m.Path != l.want || m.Pgoff != l.pgoff):
			t.Errorf("Find(%#x, t=%d) = %s+%#x, want %s+%#x", l.addr, l.t, m.Path, m.Pgoff, l.want, l.pgoff)
		}
	}
}

func TestAddMapping(t *testing.T) {
	tests := []struct {
		name    string
		adds    []Mapping
		want    []summary
		lookups []lookup
		gens    map[uint64]uint32 // time -> generation
		// increasing lists times whose generations must strictly increase (where only the
		// order, not the count, of changes is defined).
		increasing []uint64
	}{
		{
			name: "disjoint",
			adds: []Mapping{mk("a", 0x1000, 0x2000, 0, 10), mk("b", 0x3000, 0x4000, 0, 20)},
			want: []summary{{"a", 0x1000, 0x2000, 0, 10, 0}, {"b", 0x3000, 0x4000, 0, 20, 0}},
			lookups: []lookup{
				{0x1000, 10, "a", 0}, {0x1fff, 100, "a", 0}, {0x2000, 100, "", 0}, {0x3500, 20, "b", 0},
				{0x500, 100, "", 0}, {0x4000, 100, "", 0},
				// Before a mapping appeared, Find falls back to the newest that ever held it.
				{0x3500, 5, "b", 0},
			},
			gens: map[uint64]uint32{0: 0, 100: 0},
		},
		{
			name: "newer splits older in three",
			adds: []Mapping{mk("a", 0x1000, 0x5000, 0, 10), mk("b", 0x2000, 0x3000, 0x100, 20)},
			want: []summary{
				{"a", 0x1000, 0x5000, 0, 10, 20},
				{"a", 0x1000, 0x2000, 0, 20, 0},
				{"b", 0x2000, 0x3000, 0x100, 20, 0},
				{"a", 0x3000, 0x5000, 0x2000, 20, 0},
			},
			lookups: []lookup{
				{0x1500, 15, "a", 0}, {0x1500, 25, "a", 0},
				{0x2500, 15, "a", 0}, {0x2500, 20, "b", 0x100}, {0x2500, 25, "b", 0x100},
				{0x4000, 15, "a", 0}, {0x4000, 25, "a", 0x2000},
			},
			gens: map[uint64]uint32{15: 0, 19: 0, 20: 1, 1000: 1},
		},
		{
			name: "newer covers the start of older",
			adds: []Mapping{mk("a", 0x1000, 0x3000, 0x10000, 10), mk("b", 0x0, 0x2000, 0, 20)},
			want: []summary{
				{"b", 0x0, 0x2000, 0, 20, 0},
				{"a", 0x1000, 0x3000, 0x10000, 10, 20},
				{"a", 0x2000, 0x3000, 0x11000, 20, 0},
			},
			lookups: []lookup{{0x1800, 15, "a", 0x10000}, {0x1800, 25, "b", 0}, {0x2800, 25, "a", 0x11000}},
		},
		{
			name:    "newer replaces older exactly",
			adds:    []Mapping{mk("a", 0x1000, 0x2000, 0, 10), mk("b", 0x1000, 0x2000, 0, 20)},
			want:    []summary{{"a", 0x1000, 0x2000, 0, 10, 20}, {"b", 0x1000, 0x2000, 0, 20, 0}},
			lookups: []lookup{{0x1000, 9, "b", 0}, {0x1000, 10, "a", 0}, {0x1000, 19, "a", 0}, {0x1000, 20, "b", 0}},
			gens:    map[uint64]uint32{19: 0, 20: 1},
		},
		{
			name: "three generations of one range",
			adds: []Mapping{mk("a", 0x1000, 0x2000, 0, 10), mk("b", 0x1000, 0x2000, 0, 20), mk("c", 0x1000, 0x2000, 0, 30)},
			want: []summary{
				{"a", 0x1000, 0x2000, 0, 10, 20},
				{"b", 0x1000, 0x2000, 0, 20, 30},
				{"c", 0x1000, 0x2000, 0, 30, 0},
			},
			lookups: []lookup{{0x1000, 15, "a", 0}, {0x1000, 25, "b", 0}, {0x1000, 35, "c", 0}},
			gens:    map[uint64]uint32{15: 0, 25: 1, 35: 2},
		},
		{
			name: "newer arrives first",
			adds: []Mapping{mk("b", 0x2000, 0x3000, 0, 20), mk("a", 0x1000, 0x5000, 0, 10)},
			want: []summary{{"a", 0x1000, 0x5000, 0, 10, 20}, {"b", 0x2000, 0x3000, 0, 20, 0}},
			lookups: []lookup{
				{0x2500, 15, "a", 0}, {0x2500, 25, "b", 0},
				// a ended (as a whole) when b appeared; outside b, Find falls back to it.
				{0x4000, 15, "a", 0}, {0x4000, 25, "a", 0},
			},
			gens: map[uint64]uint32{15: 0, 20: 1},
		},
		{
			name:       "newest arrives between",
			adds:       []Mapping{mk("a", 0x1000, 0x2000, 0, 10), mk("c", 0x1000, 0x2000, 0, 30), mk("b", 0x1000, 0x2000, 0, 20)},
			lookups:    []lookup{{0x1000, 15, "a", 0}, {0x1000, 25, "b", 0}, {0x1000, 35, "c", 0}},
			increasing: []uint64{15, 25, 35},
		},
		{
			name:    "large mapping far below the address",
			adds:    []Mapping{mk("big", 0x0, 0x100000, 0, 1), mk("s1", 0x100000, 0x101000, 0, 2), mk("s2", 0x102000, 0x103000, 0, 3)},
			lookups: []lookup{{0xfffff, 5, "big", 0}, {0x100800, 5, "s1", 0}, {0x101800, 5, "", 0}, {0x102800, 5, "s2", 0}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker()
			for _, m := range tc.adds {
				tr.AddMapping(1, m)
			}
			if tc.want != nil {
				if got := summarize(tr.Mappings(1)); !reflect.DeepEqual(got, tc.want) {
					t.Errorf("mappings:\n got %+v\nwant %+v", got, tc.want)
				}
			}
			checkFind(t, tr, 1, tc.lookups)
			for at, want := range tc.gens {
				if got := tr.Generation(1, at); got != want {
					t.Errorf("Generation(t=%d) = %d, want %d", at, got, want)
				}
			}
			for i := 1; i < len(tc.increasing); i++ {
				a, b := tc.increasing[i-1], tc.increasing[i]
				if ga, gb := tr.Generation(1, a), tr.Generation(1, b); ga >= gb {
					t.Errorf("Generation(t=%d) = %d, not below Generation(t=%d) = %d", a, ga, b, gb)
				}
			}
		})
	}
}

func TestExec(t *testing.T) {
	tr := NewTracker()
	tr.AddMapping(1, mk("/bin/sh", 0x400000, 0x500000, 0, 10))
	tr.AddMapping(1, mk("/lib/libc.so", 0x7f0000000000, 0x7f0000100000, 0, 11))
	tr.Exec(1, 50, "python3")
	tr.AddMapping(1, mk("/usr/bin/python3", 0x400000, 0x600000, 0, 60))
	// Recorded on another CPU before the exec, read after it.
	tr.AddMapping(1, mk("/lib/late.so", 0x7f0000200000, 0x7f0000201000, 0, 30))
	// Mapped at the exec's own timestamp: belongs to the new program.
	tr.AddMapping(1, mk("/lib/ld.so", 0x7f0000300000, 0x7f0000301000, 0, 50))

	want := []summary{
		{"/bin/sh", 0x400000, 0x500000, 0, 10, 50},
		{"/usr/bin/python3", 0x400000, 0x600000, 0, 60, 0},
		{"/lib/libc.so", 0x7f0000000000, 0x7f0000100000, 0, 11, 50},
		{"/lib/late.so", 0x7f0000200000, 0x7f0000201000, 0, 30, 50},
		{"/lib/ld.so", 0x7f0000300000, 0x7f0000301000, 0, 50, 0},
	}
	if got := summarize(tr.Mappings(1)); !reflect.DeepEqual(got, want) {
		t.Errorf("mappings:\n got %+v\nwant %+v", got, want)
	}
	checkFind(t, tr, 1, []lookup{
		{0x400100, 40, "/bin/sh", 0},
		{0x400100, 70, "/usr/bin/python3", 0},
		{0x7f0000000100, 40, "/lib/libc.so", 0},
		{0x7f0000200100, 40, "/lib/late.so", 0},
		{0x7f0000300100, 55, "/lib/ld.so", 0},
	})
	// While exec replaces the program (after its record at 50, before the new image is
	// mapped at 60), the old program's addresses are in no live mapping; Find still names
	// the newest mapping that ever held them.
	for _, l := range []struct {
		addr, t uint64
		want    string
	}{
		{0x7f0000000100, 40, "/lib/libc.so"}, {0x7f0000000100, 55, ""}, {0x400100, 55, ""},
		{0x400100, 40, "/bin/sh"}, {0x400100, 60, "/usr/bin/python3"}, {0x400100, 5, ""},
	} {
		m := tr.FindLive(1, l.addr, l.t)
		if got := ""; m != nil {
			got = m.Path
			if got != l.want {
				t.Errorf("FindLive(%#x, t=%d) = %s, want %q", l.addr, l.t, got, l.want)
			}
		} else if l.want != "" {
			t.Errorf("FindLive(%#x, t=%d) = nil, want %s", l.addr, l.t, l.want)
		}
	}
	if m := tr.Find(1, 0x7f0000000100, 55); m == nil || m.Path != "/lib/libc.so" {
		t.Errorf("Find after exec = %v, want the newest mapping that held the address", m)
	}
	if p := procOf(tr, 1); p.Comm != "python3" {
		t.Errorf("comm = %q, want python3", p.Comm)
	}
	if th, ok := tr.Thread(1); !ok || th.Name != "python3" {
		t.Errorf("thread = %+v, %v", th, ok)
	}
	for at, want := range map[uint64]uint32{49: 0, 50: 1, 59: 1, 60: 1} {
		if got := tr.Generation(1, at); got != want {
			t.Errorf("Generation(t=%d) = %d, want %d", at, got, want)
		}
	}
}

// TestExecTwice checks that a mapping arriving late is cut at the first exec after it.
func TestExecTwice(t *testing.T) {
	tr := NewTracker()
	tr.Exec(1, 100, "b")
	tr.Exec(1, 50, "a")
	tr.AddMapping(1, mk("x", 0x1000, 0x2000, 0, 10))
	tr.AddMapping(1, mk("y", 0x3000, 0x4000, 0, 70))
	tr.AddMapping(1, mk("z", 0x5000, 0x6000, 0, 120))
	got := map[string]uint64{}
	for _, m := range tr.Mappings(1) {
		got[m.Path] = m.EndTime
	}
	if want := map[string]uint64{"x": 50, "y": 100, "z": 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("end times = %v, want %v", got, want)
	}
	if g := tr.Generation(1, 1000); g != 2 {
		t.Errorf("Generation = %d, want 2", g)
	}
}

func procOf(tr *Tracker, pid int) Process {
	for _, p := range tr.Processes() {
		if p.Pid == pid {
			return p
		}
	}
	return Process{}
}

func TestFork(t *testing.T) {
	tr := NewTracker()
	tr.Comm(1, 1, "parent")
	tr.AddMapping(1, mk("/bin/p", 0x1000, 0x2000, 0, 10))
	tr.AddMapping(1, mk("/lib/old.so", 0x3000, 0x4000, 0, 10))
	tr.AddMapping(1, mk("/lib/new.so", 0x3000, 0x4000, 0, 20)) // old.so ends at 20
	tr.Fork(1, 1, 2, 1, 25)                                    // a thread
	tr.Fork(5, 1, 5, 1, 30)                                    // a process

	if tr.HasMappings(2) {
		t.Errorf("a new thread got an address space of its own")
	}
	if th, ok := tr.Thread(2); !ok || th.Pid != 1 || th.Name != "parent" || th.StartTime != 25 {
		t.Errorf("thread 2 = %+v, %v", th, ok)
	}
	want := []summary{{"/bin/p", 0x1000, 0x2000, 0, 30, 0}, {"/lib/new.so", 0x3000, 0x4000, 0, 30, 0}}
	if got := summarize(tr.Mappings(5)); !reflect.DeepEqual(got, want) {
		t.Errorf("child mappings:\n got %+v\nwant %+v", got, want)
	}
	p := procOf(tr, 5)
	if p.PPid != 1 || p.Comm != "parent" {
		t.Errorf("child = %+v", p)
	}
	checkFind(t, tr, 5, []lookup{{0x1800, 40, "/bin/p", 0}, {0x3800, 40, "/lib/new.so", 0}})

	// The child's later exec ends only the child's copies.
	tr.Exec(5, 40, "child")
	tr.AddMapping(5, mk("/bin/c", 0x1000, 0x2000, 0, 41))
	checkFind(t, tr, 5, []lookup{{0x1800, 35, "/bin/p", 0}, {0x1800, 45, "/bin/c", 0}})
	checkFind(t, tr, 1, []lookup{{0x1800, 45, "/bin/p", 0}})

	// A fork from an unknown parent creates the process without mappings.
	tr.Fork(9, 8, 9, 8, 50)
	if tr.HasMappings(9) || procOf(tr, 9).PPid != 8 {
		t.Errorf("orphan child = %+v", procOf(tr, 9))
	}
}

// TestForkParentMapsAfterFork: a mapping the parent made after the fork (read earlier from
// another CPU's ring) is not part of the child's address space.
func TestForkParentMapsAfterFork(t *testing.T) {
	tr := NewTracker()
	tr.AddMapping(1, mk("/bin/p", 0x1000, 0x2000, 0, 10))
	tr.AddMapping(1, mk("/lib/dl.so", 0x5000, 0x6000, 0, 100))
	tr.Fork(5, 1, 5, 1, 50)
	for _, m := range tr.Mappings(5) {
		if m.Path == "/lib/dl.so" {
			t.Errorf("child inherited %+v, mapped by the parent after the fork", m)
		}
	}
}

// TestForkChildMapsFirst: the child's own mapping may be read (from its CPU's ring) before
// the fork record; the child must still inherit the parent's address space.
func TestForkChildMapsFirst(t *testing.T) {
	tr := NewTracker()
	tr.AddMapping(1, mk("/bin/p", 0x1000, 0x2000, 0, 10))
	tr.AddMapping(1, mk("/lib/libc.so", 0x7000, 0x8000, 0, 10))
	tr.AddMapping(5, mk("/lib/plugin.so", 0x9000, 0xa000, 0, 60))
	tr.Fork(5, 1, 5, 1, 50)
	checkFind(t, tr, 5, []lookup{
		{0x1800, 70, "/bin/p", 0},
		{0x7800, 70, "/lib/libc.so", 0},
		{0x9800, 70, "/lib/plugin.so", 0},
	})
}

// TestFindNearTopOfAddressSpace: a mapping near 2^64 ([vsyscall]) is found even when a
// large mapping elsewhere makes Start+maxLen overflow.
func TestFindNearTopOfAddressSpace(t *testing.T) {
	tr := NewTracker()
	tr.AddMapping(1, mk("big", 0x10000000, 0x210000000, 0, 1))
	tr.AddMapping(1, mk("[vsyscall]", 0xffffffffff600000, 0xffffffffff601000, 0, 1))
	checkFind(t, tr, 1, []lookup{{0xffffffffff600100, 5, "[vsyscall]", 0}, {0x10000100, 5, "big", 0}})
}

func TestCommExitThreads(t *testing.T) {
	tr := NewTracker()
	tr.Comm(1, 1, "main")
	tr.Comm(1, 3, "worker")
	tr.Comm(7, 8, "first-thread") // the process's name is unknown: take the thread's
	tr.Exit(1, 3, 100)
	tr.Exit(1, 1, 200)
	want := []Thread{
		{Tid: 1, Pid: 1, Name: "main", ExitTime: 200},
		{Tid: 3, Pid: 1, Name: "worker", ExitTime: 100},
		{Tid: 8, Pid: 7, Name: "first-thread"},
	}
	if got := tr.Threads(); !reflect.DeepEqual(got, want) {
		t.Errorf("threads = %+v\nwant %+v", got, want)
	}
	if p := procOf(tr, 1); p.Comm != "main" || p.ExitTime != 200 {
		t.Errorf("process 1 = %+v", p)
	}
	if p := procOf(tr, 7); p.Comm != "first-thread" {
		t.Errorf("process 7 = %+v", p)
	}
	if _, ok := tr.Thread(99); ok {
		t.Errorf("unknown thread found")
	}
	if tr.Find(99, 0x1000, 0) != nil || tr.Generation(99, 5) != 0 || tr.Mappings(99) != nil || tr.HasMappings(99) {
		t.Errorf("unknown process has data")
	}
}

func TestCodeOf(t *testing.T) {
	tests := []struct {
		path string
		want Code
	}{
		{"", CodeJIT},
		{"//anon", CodeJIT},
		{"[vdso]", CodeFile},
		{"[anon:jit]", CodeJIT},
		{"[heap]", CodeJIT},
		{"/dev/zero (deleted)", CodeJIT},
		{"/SYSV00000000 (deleted)", CodeJIT},
		{"/memfd:jit-code (deleted)", CodeJIT},
		{"/memfd:doublemapper", CodeJIT},
		{"//weird", CodeJIT},
		{"/usr/lib/libc.so.6", CodeFile},
		{"/usr/sbin/daemon (deleted)", CodeDeleted},
		{"/tmp/perf-123.map", CodeFile},
		{"relative", CodeFile},
	}
	for _, tc := range tests {
		m := Mapping{Path: tc.path}
		if got := CodeOf(tc.path); got != tc.want {
			t.Errorf("CodeOf(%q) = %v, want %v", tc.path, got, tc.want)
		}
		if m.Anonymous() != (tc.want == CodeJIT) || m.Deleted() != (tc.want == CodeDeleted) {
			t.Errorf("%q: Anonymous %v, Deleted %v, want code %v", tc.path, m.Anonymous(), m.Deleted(), tc.want)
		}
	}
}

// TestConcurrent exercises the tracker's locking under the race detector.
func TestConcurrent(t *testing.T) {
	tr := NewTracker()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(0); i < 500; i++ {
			tr.AddMapping(1, mk("x", 0x1000*i, 0x1000*i+0x800, 0, i))
			tr.Comm(1, int(i%7)+1, "t")
		}
	}()
	for i := uint64(0); i < 500; i++ {
		tr.Find(1, 0x1000*i, i)
		tr.Generation(1, i)
		tr.Threads()
	}
	<-done
}

func BenchmarkFind(b *testing.B) {
	tr := NewTracker()
	for i := uint64(0); i < 500; i++ {
		tr.AddMapping(1, mk("lib", 0x7f0000000000+i*0x100000, 0x7f0000000000+i*0x100000+0x80000, 0, 1))
	}
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		i++
		if tr.Find(1, 0x7f0000000000+(i%500)*0x100000+0x100, 10) == nil {
			b.Fatal("not found")
		}
	}
}
