package views_test

import (
	"fmt"
	"regexp"
	"sync"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/testutil/synthrun"
	"github.com/stax-profiler/stax/internal/views"
)

var (
	synthOnce sync.Once
	synth     *agg.Profile
)

// synth1M is synthrun's run of 1,000,000 samples over 50,000 distinct stacks.
func synth1M(tb testing.TB) *agg.Profile {
	synthOnce.Do(func() { synth = synthrun.Profile(1_000_000, 50_000) })
	if n := synth.TotalSamples(); n != 1_000_000 {
		tb.Fatalf("profile holds %d samples", n)
	}
	return synth
}

// BenchmarkViews1M times callers, callees, the inverted flame and every stack transform
// (alone, and followed by top) over a 1,000,000-sample run with 50,000 distinct stacks.
// Target: each under 150 ms. The run's stacks are random paths, so its whole tree (Flame,
// InvertedFlame: no depth or threshold) has about a million nodes; stax flame's defaults
// (InvertedFlamePruned) keep a few.
func BenchmarkViews1M(b *testing.B) {
	p := synth1M(b)
	b.Logf("profile: %d frames, %d stacks, %d entries", len(p.Frames), len(p.Stacks), len(p.Entries))
	top, _ := views.Top(p, views.Filter{}, 1, false)
	hot := top[0].Func
	one := func(f agg.Frame) bool { return f.Func == hot }
	many := regexp.MustCompile("^func_1") // about a third of the functions
	for _, c := range []struct {
		name    string
		match   func(agg.Frame) bool
		callees bool
	}{
		{"Callers", one, false},
		{"Callees", one, true},
		{"CallersOfMany", func(f agg.Frame) bool { return many.MatchString(f.Func) }, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if fs, n := views.Callers(p, views.Filter{}, c.match, 10, 20, c.callees); len(fs) == 0 || n != 1_000_000 {
					b.Fatalf("%d functions, %d samples", len(fs), n)
				}
			}
		})
	}
	b.Run("Flame", func(b *testing.B) { // the tree the right way up, to compare
		b.ReportAllocs()
		for b.Loop() {
			if root, n := views.Flame(p, views.Filter{}, 0, 0); n != 1_000_000 || len(root.Children) == 0 {
				b.Fatalf("%d samples", n)
			}
		}
	})
	b.Run("InvertedFlame", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if root, n := views.InvertedFlame(p, views.Filter{}, 0, 0); n != 1_000_000 || len(root.Children) == 0 {
				b.Fatalf("%d samples", n)
			}
		}
	})
	b.Run("InvertedFlamePruned", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if root, n := views.InvertedFlame(p, views.Filter{}, 12, 1); n != 1_000_000 || len(root.Children) == 0 {
				b.Fatalf("%d samples", n)
			}
		}
	})
	hotRE := regexp.MustCompile("^" + regexp.QuoteMeta(hot) + "$")
	for _, c := range []struct {
		name string
		t    views.Transform
	}{
		{"Focus", views.Transform{Focus: hotRE}},
		{"Ignore", views.Transform{Ignore: hotRE}},
		{"Hide", views.Transform{Hide: many}},
		{"FoldRecursion", views.Transform{FoldRecursion: true}},
		{"CollapseImage", views.Transform{CollapseImages: []string{"app"}}},
		{"All", views.Transform{Ignore: regexp.MustCompile("^func_2999$"), Focus: many, Hide: regexp.MustCompile("^func_2"),
			FoldRecursion: true}},
	} {
		b.Run("Transform"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if q := views.Transformed(p, &c.t); len(q.Stacks) == 0 {
					b.Fatal("no stacks left")
				}
			}
		})
		b.Run("Transform"+c.name+"ThenTop", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if rows, _ := views.Top(views.Transformed(p, &c.t), views.Filter{}, 50, false); len(rows) == 0 {
					b.Fatal("no rows")
				}
			}
		})
	}
}

// TestFlamePrunedIsTheWholeTreeCut checks that a pruned tree (built visiting only what it
// keeps) is the whole tree with the nodes under the threshold, and their subtrees, cut.
func TestFlamePrunedIsTheWholeTreeCut(t *testing.T) {
	p := synthrun.Profile(20_000, 2_000)
	var cut func(n *views.FlameNode, pct float64, depth, max int) string
	cut = func(n *views.FlameNode, pct float64, depth, max int) string {
		s := fmt.Sprintf("%s:%d/%d(", n.Func, n.Total, n.Self)
		for _, c := range n.Children {
			if c.TotalPct >= pct && (max == 0 || depth < max) {
				s += cut(c, pct, depth+1, max) + " "
			}
		}
		return s + ")"
	}
	for _, inverted := range []bool{false, true} {
		build := views.Flame
		if inverted {
			build = views.InvertedFlame
		}
		whole, _ := build(p, views.Filter{}, 0, 0)
		for _, pct := range []float64{0.05, 0.5, 3} {
			pruned, _ := build(p, views.Filter{}, 0, pct)
			if got, want := cut(pruned, 0, 0, 0), cut(whole, pct, 0, 0); got != want {
				t.Errorf("inverted %v, threshold %v%%: the pruned tree differs from the whole tree cut:\n%.300s\n%.300s", inverted, pct, got, want)
			}
		}
	}
}

// TestTransformedThreadIsTransformOfTheThread checks that a transform of one thread's samples
// gives that thread the same tree as the transform of the whole run, and holds no other.
func TestTransformedThreadIsTransformOfTheThread(t *testing.T) {
	p := synthrun.Profile(20_000, 2_000)
	tids := map[uint32]bool{}
	for _, e := range p.Entries {
		tids[e.Tid] = true
	}
	tr := views.Transform{Hide: regexp.MustCompile("^func_1"), FoldRecursion: true}
	whole := views.Transformed(p, &tr)
	for tid := range tids {
		one := views.TransformedThread(p, &tr, tid)
		for _, e := range one.Entries {
			if e.Tid != tid {
				t.Fatalf("the view of thread %d holds a sample of thread %d", tid, e.Tid)
			}
		}
		got, n := views.Flame(one, views.Filter{}, 0, 0)
		want, m := views.Flame(whole, views.Filter{Tid: tid}, 0, 0)
		if a, b := fmt.Sprint(flat(got)), fmt.Sprint(flat(want)); n != m || a != b {
			t.Errorf("thread %d: %d samples in its own view, %d in the run's:\n%.300s\n%.300s", tid, n, m, a, b)
		}
	}
}

func flat(n *views.FlameNode) []string {
	out := []string{fmt.Sprintf("%s:%d/%d", n.Func, n.Total, n.Self)}
	for _, c := range n.Children {
		out = append(out, "(")
		out = append(out, flat(c)...)
		out = append(out, ")")
	}
	return out
}

// BenchmarkTimelineBigRun times the timeline the web page asks for (200 buckets, 16
// threads, the phases) over synthrun.Tree's 60 s at 4999 Hz: about 300,000 samples over
// 166,000 distinct stacks, the run of bench/web-drill.sh.
func BenchmarkTimelineBigRun(b *testing.B) {
	p := synthrun.Tree(60, 4999)
	const from, to = uint64(1e9), uint64(61e9)
	b.ReportAllocs()
	for b.Loop() {
		tl, err := views.MakeTimeline(p, views.Filter{}, from, to, (to-from)/200, 16)
		if err != nil || len(tl.Phases) == 0 {
			b.Fatalf("timeline: %v, %d phases", err, len(tl.Phases))
		}
	}
}
