package views

import (
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

func funcsNamed(p *agg.Profile, names ...string) []bool {
	m := make([]bool, len(p.Frames))
	for id, f := range p.Frames {
		for _, n := range names {
			m[id] = m[id] || f.Func == n
		}
	}
	return m
}

func TestFlameWithUnder(t *testing.T) {
	p := viewsProfile()
	for _, c := range []struct {
		name  string
		shape FlameShape
		want  string
	}{
		// The path and the subtree; the root still counts the whole view.
		{"under main>a", FlameShape{Under: []string{"main", "a"}}, "all:95/0(main:85/0(a:85/15(b:55/55 c:15/15)))"},
		// The threshold is a share of a's 85 samples: c has 17.6% of them.
		{"threshold of the subtree", FlameShape{Under: []string{"main", "a"}, ThresholdPct: 18}, "all:95/0(main:85/0(a:85/15(b:55/55)))"},
		// Depth counts below the subtree's root.
		{"depth below it", FlameShape{Under: []string{"main", "rec"}, Depth: 1}, "all:95/0(main:10/0(rec:10/0(rec:10/0)))"},
		{"inverted, from the leaf", FlameShape{Under: []string{"b"}, Inverted: true}, "all:95/0(b:55/0(a:55/0(main:55/55)))"},
		{"no such path", FlameShape{Under: []string{"main", "zz"}}, "all:95/0"},
		// A sandwich: callees merged over every stack through a, callers of a up to the roots.
		{"callees of a", FlameShape{CalleesOf: funcsNamed(p, "a")}, "all:85/0(a:85/15(b:55/55 c:15/15))"},
		{"callers of b", FlameShape{CallersOf: funcsNamed(p, "b")}, "all:55/0(b:55/0(a:55/0(main:55/55)))"},
		// Recursion: cut at the outermost appearance.
		{"callees of rec", FlameShape{CalleesOf: funcsNamed(p, "rec")}, "all:10/0(rec:10/0(rec:10/0(rec:10/10)))"},
		{"callers of rec", FlameShape{CallersOf: funcsNamed(p, "rec")}, "all:10/0(rec:10/0(main:10/10))"},
		{"callers of a, under a>main", FlameShape{CallersOf: funcsNamed(p, "a"), Under: []string{"a", "main"}}, "all:85/0(a:85/0(main:85/85))"},
	} {
		root, _ := FlameWith(p, Filter{}, c.shape)
		if got := flameString(root); got != c.want {
			t.Errorf("%s: %s\nwant %s", c.name, got, c.want)
		}
	}
}
