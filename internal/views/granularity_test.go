package views

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

// sitesProfile is a run of an inlined hot helper and call sites on different lines:
//
//	main (app.c) calls work at line 20 (30 samples) and at line 21 (10 samples);
//	work (app.c) spins at lines 5 (25) and 6 (10), with helper (util.h) inlined into it at
//	line 7 and spinning at line 3 (5).
//
// Stacks: work@5 <- main@20 (25), work@6 <- main@21 (10), helper@3 in work@7 <- main@20 (5).
func sitesProfile() *agg.Profile {
	fr := func(name, file string, inlined bool) agg.Frame {
		return agg.Frame{Func: name, Image: "app", Kind: agg.KindUser, File: file, Inlined: inlined}
	}
	p := &agg.Profile{
		Frames:   []agg.Frame{fr("main", "app.c", false), fr("work", "app.c", false), fr("helper", "util.h", true), {Func: "memcpy", Image: "libc.so.6", Kind: agg.KindUser}},
		Mappings: []agg.Mapping{{Pid: 1, Start: 0x1000, Limit: 0x2000, File: "/bin/app"}},
		Locations: []agg.Location{
			{Addr: 0x1105, Mapping: 1, Lines: []agg.Line{{Func: 1, Line: 5}}},                     // 0 work@5
			{Addr: 0x1109, Mapping: 1, Lines: []agg.Line{{Func: 1, Line: 6}}},                     // 1 work@6
			{Addr: 0x1110, Mapping: 1, Lines: []agg.Line{{Func: 2, Line: 3}, {Func: 1, Line: 7}}}, // 2 helper in work
			{Addr: 0x1204, Mapping: 1, Lines: []agg.Line{{Func: 0, Line: 20}}},                    // 3 main@20
			{Addr: 0x1208, Mapping: 1, Lines: []agg.Line{{Func: 0, Line: 21}}},                    // 4 main@21
			{Addr: 0x7000, Lines: []agg.Line{{Func: 3}}},                                          // 5 memcpy
		},
		Stacks: [][]uint32{{0, 3}, {1, 4}, {2, 3}, {5, 5, 0, 3}},
		Entries: []agg.Entry{
			{Tid: 1, Pid: 1, Stack: 0, Count: 25, LeafFunc: 1},
			{Tid: 1, Pid: 1, Stack: 1, Count: 10, LeafFunc: 1},
			{Tid: 1, Pid: 1, Stack: 2, Count: 5, LeafFunc: 1},
			{Tid: 1, Pid: 1, Stack: 3, Count: 2, LeafFunc: 3},
		},
	}
	p.ExpandStacks()
	return p
}

func topRows(p *agg.Profile) []string {
	rows, _ := Top(p, Filter{}, 0, false)
	var out []string
	for _, r := range rows {
		s := fmt.Sprintf("%s %d/%d", r.Func, r.Self, r.Total)
		if r.Line != 0 {
			s = fmt.Sprintf("%s:%d %d/%d", r.Func, r.Line, r.Self, r.Total)
		}
		if r.Addr != 0 {
			s = fmt.Sprintf("%#x %s", r.Addr, s)
		}
		out = append(out, s)
	}
	return out
}

func TestAt(t *testing.T) {
	for _, c := range []struct {
		g    agg.Granularity
		want []string
	}{
		{agg.Granularity{}, []string{"work 35/42", "helper 5/5", "memcpy 2/2", "main 0/42"}},
		{agg.Granularity{NoInline: true}, []string{"work 40/42", "memcpy 2/2", "main 0/42"}},
		{agg.Granularity{By: agg.ByLine}, []string{"work:5 25/27", "work:6 10/10", "helper:3 5/5", "memcpy 2/2", "main:20 0/32", "main:21 0/10", "work:7 0/5"}},
		{agg.Granularity{By: agg.ByLine, NoInline: true}, []string{"work:5 25/27", "work:6 10/10", "work:7 5/5", "memcpy 2/2", "main:20 0/32", "main:21 0/10"}},
		{agg.Granularity{By: agg.ByAddress}, []string{"0x1105 work:5 25/27", "0x1109 work:6 10/10", "0x1110 helper:3 5/5", "0x7000 memcpy 2/2",
			"0x1204 main:20 0/32", "0x1208 main:21 0/10"}},
		{agg.Granularity{By: agg.ByAddress, NoInline: true}, []string{"0x1105 work:5 25/27", "0x1109 work:6 10/10", "0x1110 work:7 5/5", "0x7000 memcpy 2/2",
			"0x1204 main:20 0/32", "0x1208 main:21 0/10"}},
		{agg.Granularity{By: agg.ByImage}, []string{"app 40/42", "libc.so.6 2/2"}},
	} {
		t.Run(fmt.Sprintf("%+v", c.g), func(t *testing.T) {
			p := sitesProfile()
			q := At(p, c.g)
			if got := topRows(q); !reflect.DeepEqual(got, c.want) {
				t.Errorf("top = %q\nwant  %q", got, c.want)
			}
			if q.TotalSamples() != p.TotalSamples() {
				t.Errorf("%d samples, want %d", q.TotalSamples(), p.TotalSamples())
			}
			if c.g.IsZero() != (q == p) {
				t.Errorf("At returned p itself: %v", q == p)
			}
		})
	}
}

// TestAtFlame: a flame graph by line has a node per call site, and one by image merges an
// image's consecutive frames (memcpy calling itself).
func TestAtFlame(t *testing.T) {
	var walk func(n *FlameNode, prefix string, out *[]string)
	walk = func(n *FlameNode, prefix string, out *[]string) {
		for _, c := range n.Children {
			name := prefix + c.Func
			if c.Place != nil && c.Line != 0 {
				name += fmt.Sprintf(":%d", c.Line)
			}
			*out = append(*out, fmt.Sprintf("%s %d", name, c.Total))
			walk(c, name+";", out)
		}
	}
	for _, c := range []struct {
		by   string
		want []string
	}{
		{agg.ByLine, []string{"main:20 32", "main:20;work:5 27", "main:20;work:5;memcpy 2", "main:20;work:5;memcpy;memcpy 2",
			"main:20;work:7 5", "main:20;work:7;helper:3 5", "main:21 10", "main:21;work:6 10"}},
		{agg.ByImage, []string{"app 42", "app;libc.so.6 2"}},
	} {
		root, _ := Flame(At(sitesProfile(), agg.Granularity{By: c.by}), Filter{}, 0, 0)
		var got []string
		walk(root, "", &got)
		sort.Strings(got)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("by %s: flame %q\nwant %q", c.by, got, c.want)
		}
	}
}

// TestTransformKeepsLocations: hiding a function inlined into another leaves a location
// with the other's line alone; the stacks' functions follow.
func TestTransformKeepsLocations(t *testing.T) {
	p := sitesProfile()
	q := Transformed(p, &Transform{Hide: regexp.MustCompile("^helper$")})
	if got, want := topRows(At(q, agg.Granularity{By: agg.ByLine})), []string{"work:5 25/27", "work:6 10/10", "work:7 5/5", "memcpy 2/2", "main:20 0/32", "main:21 0/10"}; !reflect.DeepEqual(got, want) {
		t.Errorf("top by line after hiding helper = %q\nwant %q", got, want)
	}
	if len(q.Locations) != len(p.Locations)+1 || len(p.Locations[2].Lines) != 2 {
		t.Errorf("%d locations (want one more than %d), and the original's lines %v", len(q.Locations), len(p.Locations), p.Locations[2].Lines)
	}
	expanded := *q
	expanded.FrameStacks = nil // FuncStacks then expands the locations
	for sid := range q.Stacks {
		if got, want := q.FrameStacks[sid], expanded.FuncStacks()[sid]; !reflect.DeepEqual(got, want) {
			t.Errorf("stack %d: frames %v, its locations' %v", sid, got, want)
		}
	}
}

func TestShortName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"main", "main"},
		{"ns::Class<T>::method(int)", "ns::Class::method"},
		{"ns::Class<std::vector<int, std::allocator<int> > >::method(int) const", "ns::Class::method"},
		{"void ns::f<int>(int)", "ns::f"},
		{"std::vector<int, std::allocator<int> > ns::make<int>(unsigned long)", "ns::make"},
		{"bool operator< <int>(X<int> const&, X<int> const&)", "operator<"},
		{"ns::X::operator<<(std::ostream&)", "ns::X::operator<<"},
		{"ns::X::operator()(int) const", "ns::X::operator()"},
		{"ns::X::operator new(unsigned long)", "ns::X::operator new"},
		{"ns::X::operator unsigned long() const", "ns::X::operator unsigned long"},
		{"(anonymous namespace)::helper(int)", "(anonymous namespace)::helper"},
		{"f()::{lambda(int)#1}::operator()(int) const", "f::{lambda(int)#1}::operator()"},
		{"work(int) [clone .cold]", "work"},
		{"core::ptr::drop_in_place<alloc::vec::Vec<u8>>", "core::ptr::drop_in_place"},
		{"f<(3>2)>(int)", "f"},
	} {
		if got := ShortName(c.in); got != c.want {
			t.Errorf("ShortName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestAtShort: functions whose short names are the same count as one.
func TestAtShort(t *testing.T) {
	fr := func(name string) agg.Frame { return agg.Frame{Func: name, Image: "app", Kind: agg.KindUser} }
	p := located(&agg.Profile{
		Frames:  []agg.Frame{fr("main"), fr("ns::f<int>(int)"), fr("ns::f<double>(double)")},
		Stacks:  [][]uint32{{1, 0}, {2, 0}},
		Entries: []agg.Entry{{Tid: 1, Stack: 0, Count: 3}, {Tid: 1, Stack: 1, Count: 4}},
	})
	if got, want := topRows(At(p, agg.Granularity{Short: true})), []string{"ns::f 7/7", "main 0/7"}; !reflect.DeepEqual(got, want) {
		t.Errorf("top --short = %q, want %q", got, want)
	}
}

// TestAtKeeping: the callers of a function by line are the lines that call it, the
// function itself one row.
func TestAtKeeping(t *testing.T) {
	p := AtKeeping(sitesProfile(), agg.Granularity{By: agg.ByLine}, func(f agg.Frame) bool { return f.Func == "work" })
	fs, _ := Callers(p, Filter{}, func(f agg.Frame) bool { return f.Func == "work" }, 0, 0, false)
	if len(fs) != 1 {
		t.Fatalf("%d functions match work, want 1", len(fs))
	}
	var got []string
	for _, r := range fs[0].Rows {
		got = append(got, fmt.Sprintf("%s:%d %d", r.Func, r.Line, r.Total))
	}
	if want := []string{"main:20 32", "main:21 10"}; !reflect.DeepEqual(got, want) {
		t.Errorf("callers of work by line: %q, want %q", got, want)
	}
}
