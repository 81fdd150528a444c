package web

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil/browser"
	"github.com/stax-profiler/stax/internal/testutil/synthrun"
)

// TestBigRunDrill measures the page on a big run: 60 s at 4999 Hz (about 300,000 samples,
// 166,000 distinct stacks; synthrun.Tree). It reports the time to the first flame graph,
// the time from a click on each frame with 1% of the samples or more to its subtree on
// screen (the server asked, when the pruned graph lacks it), a drill from such a frame down
// to a leaf of the run's tree, and the page's JavaScript heap. The figures are printed,
// not asserted (a loaded machine says nothing of a user's); what is drawn is checked.
// bench/web-drill.sh runs it (STAX_WEB_BENCH=1).
func TestBigRunDrill(t *testing.T) {
	if os.Getenv("STAX_WEB_BENCH") == "" {
		t.Skip("a measurement (it builds a 300,000-sample run): bench/web-drill.sh runs it, with STAX_WEB_BENCH=1")
	}
	bctx := browser.Require(t)
	t0 := time.Now()
	p := synthrun.Tree(60, 4999)
	run := &store.Run{Meta: store.Meta{ID: "big-tree", Samples: p.TotalSamples(), Finished: true, StartNs: 1e9, Freq: 4999}, Profile: *p}
	t.Logf("the run: %d samples, %d distinct stacks, %d functions (built in %.1f s)", p.TotalSamples(), len(p.Stacks), len(p.Frames), time.Since(t0).Seconds())
	s := serve(t, run, "")
	ctx := browser.Within(t, bctx, 10*time.Minute)
	// Chromium is running (browser.Require started it): an empty page first, so that its
	// start is not counted.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	self0, browser0 := cpuMs()
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL())); err != nil {
		t.Fatal(err)
	}
	if _, err := browser.WaitFrames(ctx, func(browser.Frame) bool { return true }); err != nil {
		t.Fatalf("the page drew no flame graph: %v", err)
	}
	self1, browser1 := cpuMs()
	idle(t, ctx)
	first := eval[float64](t, ctx, `window.staxPerf.firstFlameMs`)
	firstBytes := eval[float64](t, ctx, `window.staxPerf.lastBytes.flame`)

	type drawn struct {
		Func     string  `json:"func"`
		Total    float64 `json:"total"`
		Depth    int     `json:"depth"`
		Ancestor bool    `json:"ancestor"`
		X        float64 `json:"x"`
		W        float64 `json:"w"`
	}
	frames := func() []drawn {
		var fs []drawn
		json.Unmarshal(eval[json.RawMessage](t, ctx, `window.staxFrames()`), &fs)
		return fs
	}
	rootTotal := eval[float64](t, ctx, `state.flame.root.total`)
	var targets []drawn
	for _, f := range frames() {
		if f.Depth > 0 && !f.Ancestor && f.Total*100 >= rootTotal {
			targets = append(targets, f)
		}
	}
	if len(targets) == 0 {
		t.Fatal("no frame has 1% of the samples")
	}

	// zoom clicks the frame drawn at depth d whose left edge is at x, and waits until what
	// the click asked for is on screen: ms from the click to it, whether the server was
	// asked for the subtree, and the frames drawn under it.
	type zoomed struct {
		ms      float64
		fetched bool
		under   int
	}
	zoom := func(f drawn) zoomed {
		before := eval[int](t, ctx, `(window.staxPerf.subtrees || []).length`)
		renders := eval[int](t, ctx, `window.staxPerf.flameRenderMs.length`)
		eval[bool](t, ctx, fmt.Sprintf(`(() => {
			const f = window.staxFrames().find((f) => f.depth === %d && Math.abs(f.x - %f) < 0.01 && f.func === %q);
			const c = document.querySelector("#flame canvas");
			window.staxClickAt = performance.now();
			return c.dispatchEvent(new MouseEvent("click", {clientX: f.x + Math.min(f.w / 2, 2), clientY: f.y + f.h / 2, bubbles: true}));
		})()`, f.Depth, f.X, f.Func))
		until(t, ctx, "the zoom drawn", func() (bool, string) {
			return eval[int](t, ctx, `window.staxPerf.flameRenderMs.length`) > renders && eval[bool](t, ctx, `window.staxIdle()`), "drawing"
		})
		z := zoomed{}
		if eval[int](t, ctx, `(window.staxPerf.subtrees || []).length`) > before {
			z.fetched = true
			z.ms = eval[float64](t, ctx, `window.staxPerf.subtrees[window.staxPerf.subtrees.length - 1].at - window.staxClickAt`)
		} else {
			z.ms = eval[float64](t, ctx, `window.staxPerf.flameRenderMs[window.staxPerf.flameRenderMs.length - 1]`)
		}
		for _, g := range frames() {
			if !g.Ancestor && g.Depth > f.Depth {
				z.under++
			}
		}
		return z
	}
	reset := func() {
		renders := eval[int](t, ctx, `window.staxPerf.flameRenderMs.length`)
		eval[bool](t, ctx, `(resetZoom(), true)`)
		until(t, ctx, "the zoom reset", func() (bool, string) {
			return eval[int](t, ctx, `window.staxPerf.flameRenderMs.length`) > renders && eval[bool](t, ctx, `window.staxIdle()`), "drawing"
		})
	}

	var times []float64
	var paths [][]string
	fetched := 0
	var zSelf, zBrowser float64
	for _, f := range targets {
		reset()
		a, b := cpuMs()
		z := zoom(f)
		c, d := cpuMs()
		zSelf, zBrowser = zSelf+c-a, zBrowser+d-b
		paths = append(paths, eval[[]string](t, ctx, `new URLSearchParams(location.search).getAll("zoom")`))
		if z.under == 0 {
			t.Errorf("zoomed into %s (%.0f samples): nothing drawn under it", f.Func, f.Total)
		}
		if z.fetched {
			fetched++
		}
		times = append(times, z.ms)
	}
	slices.Sort(times)

	// Drill: from the widest target, into the widest frame under the zoom, to a leaf.
	reset()
	f := targets[0]
	var steps []string
	var path []string
	for range 64 {
		z := zoom(f)
		path = eval[[]string](t, ctx, `new URLSearchParams(location.search).getAll("zoom")`)
		steps = append(steps, fmt.Sprintf("%.0f", z.ms))
		var next *drawn
		for _, g := range frames() {
			if !g.Ancestor && g.Depth == f.Depth+1 && (next == nil || g.W > next.W) {
				g := g
				next = &g
			}
		}
		if next == nil {
			break
		}
		f = *next
	}
	// The server's whole subtree there, unpruned: the drill ended on a leaf.
	res, err := query.AnswerFlame(run, api.FlameRequest{Under: path})
	if err != nil {
		t.Fatal(err)
	}
	leaf := res.Root
	for _, name := range path {
		for _, c := range leaf.Children {
			if c.Func == name {
				leaf = c
				break
			}
		}
	}
	if leaf.Func != path[len(path)-1] || len(leaf.Children) != 0 {
		t.Errorf("the drill ended on %s (%d levels), which has %d callees in the run", leaf.Func, len(path), len(leaf.Children))
	}

	heap := func() float64 {
		var used float64
		if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			u, err := cdp.Call(ctx, tg, runtime.GetHeapUsage, cdp.Empty{})
			used = u.UsedSize
			return err
		})); err != nil {
			t.Fatal(err)
		}
		return used / (1 << 20)
	}
	live := heap()
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, heapprofiler.CollectGarbage, cdp.Empty{})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	afterGC := heap()
	// The server's side, each query alone: the first graph's, and each zoom's subtree as
	// the page asked it (pruned at a pixel of the frame), to its JSON; wall and CPU
	// time (the process's, user and system: on a loaded machine the wall time is mostly
	// waiting for a CPU).
	width := eval[float64](t, ctx, `document.querySelector("#flame canvas").getBoundingClientRect().width`)
	serverTime := func(r api.FlameRequest) (wall, cpu float64) {
		var a, b syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &a)
		t0 := time.Now()
		res, err := query.AnswerFlame(run, r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatal(err)
		}
		wall = float64(time.Since(t0).Microseconds()) / 1000
		syscall.Getrusage(syscall.RUSAGE_SELF, &b)
		cpuOf := func(u syscall.Rusage) float64 {
			return float64(u.Utime.Sec+u.Stime.Sec)*1000 + float64(u.Utime.Usec+u.Stime.Usec)/1000
		}
		return wall, cpuOf(b) - cpuOf(a)
	}
	firstWall, firstCPU := serverTime(api.FlameRequest{ThresholdPct: 0.1})
	var zWall, zCPU []float64
	for _, p := range paths {
		w, c := serverTime(api.FlameRequest{ThresholdPct: min(0.1, 100/width), Under: p})
		zWall, zCPU = append(zWall, w), append(zCPU, c)
	}
	slices.Sort(zWall)
	slices.Sort(zCPU)
	var load [3]float64
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Sscan(string(b), &load[0], &load[1], &load[2])
	}
	n := float64(len(targets))
	fmt.Printf("CPU time: navigation to the first flame graph on screen: server %.0f ms, Chromium %.0f ms; a zoom, click to subtree on screen, mean of %d: server %.0f ms, Chromium %.0f ms\n",
		self1-self0, browser1-browser0, len(targets), zSelf/n, zBrowser/n)
	fmt.Printf("server, each query alone: first graph %.0f ms (%.0f ms CPU); a zoom's subtree median %.0f ms (%.0f ms CPU), max %.0f ms (%.0f ms CPU); load average %.1f on %d CPUs\n",
		firstWall, firstCPU, zWall[len(zWall)/2], zCPU[len(zCPU)/2], zWall[len(zWall)-1], zCPU[len(zCPU)-1], load[0], goruntime.NumCPU())
	fmt.Printf("big run (60 s at 4999 Hz: %d samples, %d distinct stacks): first flame graph on screen at %.0f ms from navigation (%d KB); "+
		"zoom into each of the %d frames with >= 1%% of the samples, click to its subtree on screen: median %.0f ms, max %.0f ms (%d asked the server); "+
		"drill to a leaf, %d levels: %s ms; JS heap %.1f MB (%.1f MB after a GC)\n",
		p.TotalSamples(), len(p.Stacks), first, int(firstBytes)/1024, len(targets), times[len(times)/2], times[len(times)-1], fetched,
		len(path), strings.Join(steps, ", "), live, afterGC)
	noErrors(t, ctx)
}

// cpuMs is the CPU time, user and system, of this process (the server answers in it) and
// of its descendants (Chromium's processes), in milliseconds: on a loaded machine the wall
// time of a step is mostly waiting for a CPU, its CPU time is what it costs.
func cpuMs() (self, browser float64) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	self = float64(ru.Utime.Sec+ru.Stime.Sec)*1000 + float64(ru.Utime.Usec+ru.Stime.Usec)/1000
	type proc struct {
		ppid int
		ms   float64
	}
	procs := map[int]proc{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b)[i+1:]) // state ppid ... utime (12th) stime (13th)
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		procs[pid] = proc{ppid, (ut + st) * 10} // USER_HZ: 100
	}
	me := os.Getpid()
	for pid, p := range procs {
		for a, n := p.ppid, 0; a > 1 && n < 64; a, n = procs[a].ppid, n+1 {
			if a == me {
				browser += p.ms
				break
			}
		}
		_ = pid
	}
	return self, browser
}
