package export

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/testutil/browser"
)

// deepFixture is the fixture with one more stack, 80 frames deep under main: an SVG taller
// than a browser's window.
func deepFixture() []byte {
	r := fixture()
	p := &r.Profile
	p.Stacks = p.FrameStacks // built by hand: stacks of frames, located below
	stack := []uint32{}
	for i := range 80 {
		p.Frames = append(p.Frames, agg.Frame{Func: fmt.Sprintf("deep_%d", i), Image: "/opt/app/bin/app", Kind: agg.KindUser})
		stack = append([]uint32{uint32(len(p.Frames) - 1)}, stack...)
	}
	stack = append(stack, fMain)
	p.Stacks = append(p.Stacks, stack)
	p.Entries = append(p.Entries, agg.Entry{Tid: 101, Pid: 100, Stack: uint32(len(p.Stacks) - 1), Count: 100, Leaf: 0x401000, LeafFunc: int32(stack[0])})
	p.LocateFrameStacks()
	var buf bytes.Buffer
	if err := WriteSVG(&buf, r); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// The SVG opens on its root: however deep the stacks, the first screen shows the root,
// the title and a legend of the colours, whose swatches are the frames' colour families.
// A click zooms with the callers kept above.
func TestSVGOpensOnTheRoot(t *testing.T) {
	bctx := browser.Require(t)
	svg := deepFixture()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Write(svg)
	}))
	defer srv.Close()
	ctx := browser.Within(t, bctx, time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/run.svg")); err != nil {
		t.Fatal(err)
	}
	type box struct {
		Label string  `json:"label"`
		Fill  string  `json:"fill"`
		Top   float64 `json:"top"`
		Bot   float64 `json:"bottom"`
		W     float64 `json:"w"`
	}
	type svgPage struct {
		Screen float64 `json:"screen"`
		Height float64 `json:"height"`
		Root   box     `json:"root"`
		Legend []box   `json:"legend"`
		JIT    box     `json:"jit"`
	}
	page, err := chromedp.Run(ctx, chromedp.Evaluate[svgPage](`(() => {
		const boxOf = (g) => { const r = g.querySelector("rect"), b = r.getBoundingClientRect();
			return {label: g.querySelector("title").textContent.split("\n")[0], fill: r.getAttribute("fill"), top: b.top, bottom: b.bottom, w: b.width}; };
		const frames = Array.from(document.querySelectorAll("#frames > g"));
		const legend = Array.from(document.querySelectorAll("#legend rect")).map((r) => {
			const b = r.getBoundingClientRect();
			return {label: r.nextElementSibling.textContent, fill: r.getAttribute("fill"), top: b.top, bottom: b.bottom, w: b.width};
		});
		return {screen: window.innerHeight, height: document.documentElement.getBoundingClientRect().height,
			root: boxOf(frames.find((g) => g.querySelector("title").textContent.startsWith("all\n"))),
			legend, jit: boxOf(frames.find((g) => g.querySelector("title").textContent.startsWith("jitted_func1\n")))};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if page.Height <= page.Screen {
		t.Fatalf("the SVG (%.0f px) fits the window (%.0f px): the test says nothing", page.Height, page.Screen)
	}
	if page.Root.Top < 0 || page.Root.Bot > page.Screen || page.Root.W < 1000 {
		t.Errorf("the root is at %.0f-%.0f px (%.0f wide); the first screen is 0-%.0f px", page.Root.Top, page.Root.Bot, page.Root.W, page.Screen)
	}
	var labels []string
	fills := map[string]string{}
	for _, l := range page.Legend {
		labels = append(labels, l.Label)
		fills[l.Label] = l.Fill
		if l.Top < 0 || l.Bot > page.Screen || l.W < 5 {
			t.Errorf("legend %s at %.0f-%.0f px, %.0f wide: not on the first screen", l.Label, l.Top, l.Bot, l.W)
		}
	}
	if got := fmt.Sprint(labels); got != "[native inlined JIT Python kernel unknown search match]" {
		t.Errorf("legend %s", got)
	}
	// Each swatch is of its family, as the frames' colours are (see TestSVG).
	rgb := func(s string) (r, g, b int) {
		fmt.Sscanf(s, "rgb(%d,%d,%d)", &r, &g, &b)
		return
	}
	for _, c := range []struct {
		label string
		ok    func(r, g, b int) bool
	}{
		{"JIT", func(r, g, b int) bool { return g > 190 && r < 120 }},
		{"Python", func(r, g, b int) bool { return b >= 200 && g <= 150 && r < 100 }},
		{"kernel", func(r, g, b int) bool { return r >= 200 && b < 30 && g >= 110 && g < 190 }},
		{"native", func(r, g, b int) bool { return r >= 205 && b <= 55 }},
		{"inlined", func(r, g, b int) bool { return g > 160 && b > 160 && r < 120 }},
		{"unknown", func(r, g, b int) bool { return r == g && g == b }},
		{"search match", func(r, g, b int) bool { return r > 200 && g < 50 && b > 200 }},
	} {
		if r, g, b := rgb(fills[c.label]); !c.ok(r, g, b) {
			t.Errorf("the %s swatch is %s", c.label, fills[c.label])
		}
	}
	if jr, jg, jb := rgb(page.JIT.Fill); !(jg > 190 && jr < 120) {
		t.Errorf("jitted_func1 is drawn rgb(%d,%d,%d), not in the legend's JIT family", jr, jg, jb)
	}

	// Zoom into jitted_func1: it spans the graph, its callers stay above it, dimmed.
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(20+page.JIT.W/2, (page.JIT.Top+page.JIT.Bot)/2)); err != nil {
		t.Fatal(err)
	}
	zoomed, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => {
		const find = (name) => Array.from(document.querySelectorAll("#frames > g")).find((g) => g.querySelector("title").textContent.startsWith(name + "\n"));
		const j = find("jitted_func1"), m = find("main");
		const jb = j.querySelector("rect").getBoundingClientRect(), mb = m.querySelector("rect").getBoundingClientRect();
		return [jb.width, jb.top, mb.width, mb.top, m.classList.contains("parent") ? 1 : 0];
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(zoomed) != 5 || zoomed[0] < 1000 || zoomed[2] < 1000 || zoomed[3] >= zoomed[1] || zoomed[4] != 1 {
		t.Errorf("after a click on jitted_func1: its width %.0f at %.0f px, main's %.0f at %.0f px, main dimmed %v", zoomed[0], zoomed[1], zoomed[2], zoomed[3], zoomed[4] == 1)
	}
}
