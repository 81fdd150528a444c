package views

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

// Frame ids of viewsProfile.
const (
	fMain = iota
	fA
	fB
	fC
	fRec
	fX
	fY
)

// viewsProfile: 95 samples on threads 1 and 2, with a recursive stack.
//
//	tid 1: main>a>b 50, main>a>c 15, main>rec>rec>rec 10
//	tid 2: main>a>b 5, main>a 15
func viewsProfile() *agg.Profile {
	fr := func(n string) agg.Frame { return agg.Frame{Func: n, Image: "/bin/app", Kind: agg.KindUser} }
	return located(&agg.Profile{
		Frames: []agg.Frame{fr("main"), fr("a"), fr("b"), fr("c"), fr("rec"), fr("x"), fr("y")},
		Stacks: [][]uint32{
			{fB, fA, fMain},
			{fC, fA, fMain},
			{fRec, fRec, fRec, fMain},
			{fA, fMain},
			{},
		},
		Entries: []agg.Entry{
			{Tid: 1, Pid: 1, Stack: 0, Count: 50, LeafFunc: fB},
			{Tid: 1, Pid: 1, Stack: 1, Count: 15, LeafFunc: fC},
			{Tid: 1, Pid: 1, Stack: 2, Count: 10, LeafFunc: fRec},
			{Tid: 2, Pid: 1, Stack: 0, Count: 5, LeafFunc: fB},
			{Tid: 2, Pid: 1, Stack: 3, Count: 15, LeafFunc: fA},
		},
		Threads: []agg.ThreadInfo{{Tid: 1, Pid: 1, Name: "main"}, {Tid: 2, Pid: 1, Name: "worker"}, {Tid: 3, Pid: 1, Name: "idle"}},
	})
}

// located turns a profile built with frame-id stacks into one with locations.
func located(p *agg.Profile) *agg.Profile {
	p.LocateFrameStacks()
	return p
}

type topRow struct {
	Func        string
	Self, Total uint64
}

func TestTop(t *testing.T) {
	tests := []struct {
		name        string
		filter      Filter
		n           int
		byTotal     bool
		want        []topRow
		wantSamples uint64
	}{
		{
			name: "by self, ties by total",
			want: []topRow{{"b", 55, 55}, {"a", 15, 85}, {"c", 15, 15}, {"rec", 10, 10}, {"main", 0, 95}},
			// rec appears three times in one stack but counts once in total.
			wantSamples: 95,
		},
		{
			name:        "by total",
			byTotal:     true,
			want:        []topRow{{"main", 0, 95}, {"a", 15, 85}, {"b", 55, 55}, {"c", 15, 15}, {"rec", 10, 10}},
			wantSamples: 95,
		},
		{
			name:        "first n",
			n:           2,
			want:        []topRow{{"b", 55, 55}, {"a", 15, 85}},
			wantSamples: 95,
		},
		{
			name:        "n larger than rows",
			n:           100,
			want:        []topRow{{"b", 55, 55}, {"a", 15, 85}, {"c", 15, 15}, {"rec", 10, 10}, {"main", 0, 95}},
			wantSamples: 95,
		},
		{
			name:        "one thread",
			filter:      Filter{Tid: 2},
			want:        []topRow{{"a", 15, 20}, {"b", 5, 5}, {"main", 0, 20}},
			wantSamples: 20,
		},
		{
			name:        "thread without samples",
			filter:      Filter{Tid: 3},
			wantSamples: 0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows, samples := Top(viewsProfile(), tc.filter, tc.n, tc.byTotal)
			var got []topRow
			for _, r := range rows {
				got = append(got, topRow{r.Func, r.Self, r.Total})
				if want := pct(r.Self, samples); r.SelfPct != want {
					t.Errorf("%s: self %% = %v, want %v", r.Func, r.SelfPct, want)
				}
				if want := pct(r.Total, samples); r.TotalPct != want {
					t.Errorf("%s: total %% = %v, want %v", r.Func, r.TotalPct, want)
				}
				if r.Image != "/bin/app" || r.Kind != agg.KindUser {
					t.Errorf("%s: image %q kind %q", r.Func, r.Image, r.Kind)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("rows = %v\nwant   %v", got, tc.want)
			}
			if samples != tc.wantSamples {
				t.Errorf("samples = %d, want %d", samples, tc.wantSamples)
			}
		})
	}
}

func TestTopNameOrderOnTies(t *testing.T) {
	p := located(&agg.Profile{
		Frames:  []agg.Frame{{Func: "y"}, {Func: "x"}, {Func: "z"}},
		Stacks:  [][]uint32{{0}, {1}, {2}},
		Entries: []agg.Entry{{Tid: 1, Stack: 0, Count: 3}, {Tid: 1, Stack: 1, Count: 3}, {Tid: 1, Stack: 2, Count: 3}},
	})
	rows, _ := Top(p, Filter{}, 0, false)
	var got []string
	for _, r := range rows {
		got = append(got, r.Func)
	}
	if !reflect.DeepEqual(got, []string{"x", "y", "z"}) {
		t.Errorf("order = %v, want x y z", got)
	}
	if pct(1, 0) != 0 {
		t.Errorf("pct of nothing is not 0")
	}
}

// flameString renders a tree as "name:total/self(children...)".
func flameString(n *FlameNode) string {
	var sb strings.Builder
	var walk func(n *FlameNode)
	walk = func(n *FlameNode) {
		sb.WriteString(n.Func)
		sb.WriteString(":")
		sb.WriteString(itoa(n.Total))
		sb.WriteString("/")
		sb.WriteString(itoa(n.Self))
		if len(n.Children) > 0 {
			sb.WriteString("(")
			for i, c := range n.Children {
				if i > 0 {
					sb.WriteString(" ")
				}
				walk(c)
			}
			sb.WriteString(")")
		}
	}
	walk(n)
	return sb.String()
}

func itoa(v uint64) string {
	if v == 0 {
		return "0"
	}
	var b []byte
	for v > 0 {
		b = append([]byte{byte('0' + v%10)}, b...)
		v /= 10
	}
	return string(b)
}

func TestFlame(t *testing.T) {
	tests := []struct {
		name      string
		filter    Filter
		depth     int
		threshold float64
		want      string
		wantTotal uint64
	}{
		{
			name:      "whole tree",
			want:      "all:95/0(main:95/0(a:85/15(b:55/55 c:15/15) rec:10/0(rec:10/0(rec:10/10))))",
			wantTotal: 95,
		},
		{
			name:      "depth 1",
			depth:     1,
			want:      "all:95/0(main:95/0)",
			wantTotal: 95,
		},
		{
			name:      "depth 2",
			depth:     2,
			want:      "all:95/0(main:95/0(a:85/15 rec:10/0))",
			wantTotal: 95,
		},
		{
			name:      "threshold drops small nodes",
			threshold: 15.0,
			want:      "all:95/0(main:95/0(a:85/15(b:55/55 c:15/15)))",
			wantTotal: 95,
		},
		{
			name:      "threshold above everything",
			threshold: 100.1,
			want:      "all:95/0",
			wantTotal: 95,
		},
		{
			name:      "one thread",
			filter:    Filter{Tid: 2},
			want:      "all:20/0(main:20/0(a:20/15(b:5/5)))",
			wantTotal: 20,
		},
		{
			name:      "one thread, threshold relative to its samples",
			filter:    Filter{Tid: 2},
			threshold: 30,
			want:      "all:20/0(main:20/0(a:20/15))",
			wantTotal: 20,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, total := Flame(viewsProfile(), tc.filter, tc.depth, tc.threshold)
			if got := flameString(root); got != tc.want {
				t.Errorf("tree = %s\nwant   %s", got, tc.want)
			}
			if total != tc.wantTotal {
				t.Errorf("total = %d, want %d", total, tc.wantTotal)
			}
			if root.TotalPct != 100 && total > 0 {
				t.Errorf("root pct = %v", root.TotalPct)
			}
		})
	}
}

func TestInvertedFlame(t *testing.T) {
	root, total := InvertedFlame(viewsProfile(), Filter{}, 0, 0)
	want := "all:95/0(b:55/0(a:55/0(main:55/55)) a:15/0(main:15/15) c:15/0(a:15/0(main:15/15)) rec:10/0(rec:10/0(rec:10/0(main:10/10))))"
	if got := flameString(root); got != want || total != 95 {
		t.Errorf("inverted tree = %s (%d samples)\nwant            %s", got, total, want)
	}
	root, _ = InvertedFlame(viewsProfile(), Filter{Tid: 2}, 1, 30)
	if got, want := flameString(root), "all:20/0(a:15/0)"; got != want {
		t.Errorf("depth 1, threshold 30%%, tid 2: %s, want %s", got, want)
	}
}

func TestFlameEmptyStackCountsAtRoot(t *testing.T) {
	p := viewsProfile()
	p.Entries = append(p.Entries, agg.Entry{Tid: 1, Stack: 4, Count: 5})
	root, total := Flame(p, Filter{}, 0, 0)
	if total != 100 || root.Self != 5 {
		t.Errorf("total %d, root self %d; want 100 and 5", total, root.Self)
	}
	rows, samples := Top(p, Filter{}, 0, false)
	if samples != 100 || len(rows) != 5 {
		t.Errorf("top: %d samples, %d rows", samples, len(rows))
	}
}

func TestThreads(t *testing.T) {
	p := viewsProfile()
	// A thread with samples but no name.
	p.Entries = append(p.Entries, agg.Entry{Tid: 9, Pid: 4, Stack: 3, Count: 5})
	tests := []struct {
		name string
		n    int
		want []ThreadRow
	}{
		{
			name: "all",
			want: []ThreadRow{
				{Tid: 1, Pid: 1, Name: "main", Samples: 75, Pct: 75, TopFunc: "b"},
				{Tid: 2, Pid: 1, Name: "worker", Samples: 20, Pct: 20, TopFunc: "a"},
				{Tid: 9, Pid: 4, Samples: 5, Pct: 5, TopFunc: "a"},
				{Tid: 3, Pid: 1, Name: "idle"},
			},
		},
		{
			name: "first two",
			n:    2,
			want: []ThreadRow{
				{Tid: 1, Pid: 1, Name: "main", Samples: 75, Pct: 75, TopFunc: "b"},
				{Tid: 2, Pid: 1, Name: "worker", Samples: 20, Pct: 20, TopFunc: "a"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows, total := Threads(p, tc.n)
			if total != 100 {
				t.Errorf("total = %d, want 100", total)
			}
			if !reflect.DeepEqual(rows, tc.want) {
				t.Errorf("rows = %+v\nwant   %+v", rows, tc.want)
			}
		})
	}
}

func TestThreadsTopFuncTie(t *testing.T) {
	p := located(&agg.Profile{
		Frames:  []agg.Frame{{Func: "second"}, {Func: "first"}},
		Stacks:  [][]uint32{{1}, {0}},
		Entries: []agg.Entry{{Tid: 1, Stack: 0, Count: 4}, {Tid: 1, Stack: 1, Count: 4}},
	})
	rows, _ := Threads(p, 0)
	// Equal self counts: the lower frame id wins, whatever the map order.
	if len(rows) != 1 || rows[0].TopFunc != "second" {
		t.Errorf("rows = %+v", rows)
	}
}

func TestHasSymbol(t *testing.T) {
	fs := []agg.Frame{{Func: "main.Loop"}, {Func: "runtime.mallocgc"}}
	tests := []struct {
		s    string
		want bool
	}{
		{"loop", true},
		{"MALLOC", true},
		{"", true},
		{"free", false},
	}
	for _, tc := range tests {
		if got := HasSymbol(fs, tc.s); got != tc.want {
			t.Errorf("HasSymbol(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
	if HasSymbol(nil, "x") {
		t.Errorf("found a symbol in no frames")
	}
}
