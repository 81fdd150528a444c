package export

import (
	"fmt"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

// A Python function's frame (kind python) is JIT code to the formats that mark it, and has
// a colour family of its own in the SVG, distinct from every other kind's.
func TestPythonFrames(t *testing.T) {
	f := agg.Frame{Func: "spin_b (/app.py)", Image: "[jit]", Kind: agg.KindPython, File: "/app.py"}
	if got := foldedName(&f); got != "spin_b (/app.py)_[j]" {
		t.Errorf("folded %q", got)
	}
	if got := displayName(&f); got != "spin_b (/app.py) [jit]" {
		t.Errorf("speedscope %q", got)
	}
	if got := imageName(&f); got != "[jit]" {
		t.Errorf("pprof image %q", got)
	}
	if got := firefoxCategory(f.Kind); got != firefoxCategory(agg.KindJIT) {
		t.Errorf("firefox category %d", got)
	}
	rgb := func(s string) (r, g, b int) {
		fmt.Sscanf(s, "rgb(%d,%d,%d)", &r, &g, &b)
		return
	}
	others := map[string]bool{}
	for _, l := range svgLegend {
		if l.kind != agg.KindPython {
			for _, v := range []float64{0, 0.5, 1} {
				others[svgFamily(l.kind, l.inlined, v, v)] = true
			}
		}
	}
	for _, name := range []string{"spin_a (/app.py)", "spin_b (/app.py)", "<module> (/app.py)"} {
		c := svgColor(agg.KindPython, false, name)
		if r, g, b := rgb(c); !(b >= 200 && g <= 150 && r < 100) || others[c] {
			t.Errorf("%s coloured %s", name, c)
		}
	}
}
