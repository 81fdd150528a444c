package e2e

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/testutil/browser"
)

// startWeb runs `stax web args...` and returns the URL it printed; it stops with the test.
func (e *staxEnv) startWeb(args ...string) string {
	e.t.Helper()
	cmd := e.cmd(append([]string{"web"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		cmd.Wait()
		e.t.Fatalf("stax web printed no URL:\n%s", stderr.String())
	}
	return sc.Text()
}

// frameWidths returns the widest drawn flame graph frame of each function, in pixels
// measured on the canvas.
func frameWidths(ctx context.Context, t *testing.T) map[string]float64 {
	t.Helper()
	frames, err := browser.Frames(ctx)
	if err != nil {
		t.Fatalf("read the flame graph: %v", err)
	}
	w := map[string]float64{}
	for _, f := range frames {
		w[f.Func] = max(w[f.Func], f.Drawn)
	}
	return w
}

// isJIT accepts a JIT frame.
func isJIT(f browser.Frame) bool { return f.Kind == "jit" }

// named accepts frames of the function fn.
func named(fn string) func(browser.Frame) bool {
	return func(f browser.Frame) bool { return f.Func == fn && !f.Ancestor }
}

// waitJIT waits until the flame graph has drawn a JIT frame.
func waitJIT(ctx context.Context, t *testing.T, navigate string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(navigate)); err != nil {
		t.Fatal(err)
	}
	if _, err := browser.WaitFrames(ctx, isJIT); err != nil {
		t.Fatalf("the page drew no JIT frame: %v\n%.2000s", err, pageText(ctx))
	}
}

// shot saves a screenshot of the page to $STAX_SCREENSHOTS/name.png when that is set
// (make screenshots uses it to refresh the ones in docs/).
func shot(ctx context.Context, t *testing.T, name string) {
	dir := os.Getenv("STAX_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Error(err)
	}
}

// The page over a recording of the toy JIT: the flame graph draws jitted_func2 wider than
// jitted_func1 in proportion to their samples, a click zooms, search highlights matches,
// and the code view shows the loop's instructions with their samples.
func TestWebShowsToyJIT(t *testing.T) {
	testutil.RequirePerf(t)
	bctx := browser.Require(t)
	e := newEnv(t)
	toy := filepath.Join(t.TempDir(), "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")
	if out, errOut, code := e.run("record", "-q", "--", toy, "-cpu", "1s"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var top struct {
		Samples uint64
		Rows    []struct {
			Func  string
			Total uint64
		}
	}
	e.mustJSON(&top, "top", "--json", "-n", "50")
	samples := map[string]uint64{}
	for _, r := range top.Rows {
		samples[r.Func] = r.Total
	}
	f1, f2 := samples["jitted_func1"], samples["jitted_func2"]
	if f1 < 50 || f2 < 50 {
		t.Fatalf("too few JIT samples to compare (func1 %d, func2 %d of %d)", f1, f2, top.Samples)
	}
	url := e.startWeb()
	// About 10 s on an idle 2-CPU machine; 135 s and past a 2-minute budget once, beside
	// the web package's own browser tests and a busy loop on each core.
	ctx := browser.Within(t, bctx, 5*time.Minute)
	start := time.Now()
	waitJIT(ctx, t, url)
	t.Logf("the page drew the JIT frames in %v", time.Since(start).Round(time.Millisecond))
	shot(ctx, t, "web-overview")

	// Widths are in proportion to samples: measured ratio against the ratio of counts.
	w := frameWidths(ctx, t)
	if w["jitted_func1"] == 0 || w["jitted_func2"] == 0 {
		t.Fatalf("frames of the JIT'd functions missing: %v", w)
	}
	want := float64(f2) / float64(f1)
	got := w["jitted_func2"] / w["jitted_func1"]
	t.Logf("jitted_func2:jitted_func1 drawn %.3f, samples %d:%d = %.3f", got, f2, f1, want)
	if math.Abs(got-want)/want > 0.03 {
		t.Errorf("drawn width ratio %.3f, samples say %.3f", got, want)
	}
	if want < 1.4 || want > 3 {
		t.Errorf("samples ratio %.2f is not about 2:1 (the toy JIT's func2 loops twice as long)", want)
	}

	// A click on jitted_func1 zooms: it then spans the graph.
	full, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector("#flame").getBoundingClientRect().width`))
	if err != nil {
		t.Fatal(err)
	}
	if err := browser.ClickFrame(ctx, named("jitted_func1")); err != nil {
		t.Fatal(err)
	}
	if w := frameWidths(ctx, t); w["jitted_func1"] < 0.98*full || w["jitted_func2"] != 0 {
		t.Errorf("after clicking jitted_func1 it spans %.0f of %.0f px and jitted_func2 %.0f px: no zoom", w["jitted_func1"], full, w["jitted_func2"])
	}
	shot(ctx, t, "web-zoomed")
	if err := chromedp.Do(ctx, chromedp.Click(`#reset-zoom`)); err != nil {
		t.Fatal(err)
	}

	// Search highlights the frames that match, and only those.
	if err := chromedp.Do(ctx, chromedp.SendKeys(`#search`, "func2")); err != nil {
		t.Fatal(err)
	}
	frames, err := browser.Frames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var matched []string
	for _, f := range frames {
		if f.Match {
			matched = append(matched, f.Func)
			if !highlighted(ctx, t, f) {
				t.Errorf("the match %s is not drawn in the highlight colour", f.Func)
			}
		}
	}
	if len(matched) == 0 {
		t.Errorf("searching func2 highlighted nothing")
	}
	for _, m := range matched {
		if !strings.Contains(m, "func2") {
			t.Errorf("searching func2 highlighted %q", m)
		}
	}
	shot(ctx, t, "web-search")

	// The code view: the loop's instructions with their samples, as stax annotate prints them.
	// The click waits for the page to settle: a refresh that ends between finding the row
	// and clicking it can move the table (the callers panel above it comes and goes).
	idleWeb(ctx, t)
	if err := chromedp.Do(ctx, chromedp.Click(`#top tbody td[title="jitted_func2"]`)); err != nil {
		t.Fatal(err)
	}
	t.Logf("the page settled for the code view after %v", time.Since(start).Round(time.Millisecond))
	code, err := waitForCode(ctx, "jitted_func2")
	if err != nil {
		t.Fatalf("the code view of jitted_func2: %v\n%.3000s", err, pageText(bctx))
	}
	annotated, _, _ := e.run("annotate", "jitted_func2")
	hottest := ""
	for _, line := range strings.Split(annotated, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && strings.Contains(line, "0x") && hottest == "" {
			if _, err := strconv.ParseFloat(f[0], 64); err == nil {
				hottest = line
			}
		}
	}
	if hottest == "" {
		t.Fatalf("stax annotate shows no instruction with samples:\n%s", annotated)
	}
	pre := pageSelectorText(bctx, "#annotate")
	if !strings.Contains(pre, strings.TrimSpace(hottest)) {
		t.Errorf("the code view lacks the hottest instruction %q; it shows:\n%s\n(hot rows: %s)", hottest, pre, code)
	}
	if !strings.Contains(pre, "loops.toy") {
		t.Errorf("the code view shows no source lines:\n%s", pre)
	}
	shot(ctx, t, "web-code")
}

// highlighted reports whether the frame's pixels (one below its top) have the search
// highlight's colour.
func highlighted(ctx context.Context, t *testing.T, f browser.Frame) bool {
	t.Helper()
	rgb, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](fmt.Sprintf(`(() => {
		const c = document.querySelector("#flame canvas"), b = c.getBoundingClientRect(), dpr = c.width / b.width;
		return Array.from(c.getContext("2d").getImageData(Math.round((%f - b.left) * dpr), Math.round((%f - b.top + 1) * dpr), 1, 1).data);
	})()`, f.X+f.W/2, f.Y)))
	if err != nil || len(rgb) < 4 {
		t.Fatalf("read the canvas: %v", err)
	}
	near := func(a, b int) bool { return a-b <= 3 && b-a <= 3 }
	return near(rgb[0], 0xd4) && near(rgb[1], 0x00) && near(rgb[2], 0x9a)
}

// pageSelectorText returns the text of the first element matching sel.
func pageSelectorText(ctx context.Context, sel string) string {
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel)))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return text
}

// waitForCode waits until the code view shows fn's instructions with their samples and
// returns those rows; it fails at once when the view shows an error, and within a minute
// when it shows another function or nothing.
func waitForCode(ctx context.Context, fn string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	type codeView struct {
		Title, Class, Hot string
	}
	var v codeView
	for {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[codeView](`({
			title: document.querySelector("#func-title").textContent,
			class: document.querySelector("#annotate").className,
			hot: Array.from(document.querySelectorAll("#annotate .hot"), (e) => e.textContent).join("\n"),
		})`))
		if err == nil {
			v = got
		}
		switch {
		case v.Title == fn && v.Class == "error":
			return "", fmt.Errorf("it shows an error")
		case v.Title == fn && strings.Contains(v.Hot, "0x"):
			return v.Hot, nil
		case ctx.Err() != nil:
			return "", fmt.Errorf("after a minute it shows %q (class %q) with hot rows %q", v.Title, v.Class, v.Hot)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitForSelectorText polls until the elements matching sel show want, or ctx ends.
func waitForSelectorText(ctx context.Context, sel, want string) string {
	for {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`Array.from(document.querySelectorAll(%q), e => e.textContent).join("\n")`, sel)))
		if strings.Contains(text, want) || ctx.Err() != nil {
			return text
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// While a run records, the page's sample count grows without a reload, and a zoom the
// user chose survives the updates.
func TestWebFollowsALiveRun(t *testing.T) {
	testutil.RequirePerf(t)
	bctx := browser.Require(t)
	e := newEnv(t)
	toy := filepath.Join(t.TempDir(), "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")
	// The toy JIT runs until SIGTERM (stax passes it on), or a minute of CPU at most.
	cmd := e.cmd("record", "--web", "--", toy, "-cpu", "60s")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SIGTERM ends the recording (the toy JIT exits on it); then the page serves the
		// stored run until a signal ends that too.
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		for deadline := time.After(30 * time.Second); ; {
			select {
			case <-done:
				return
			case <-time.After(time.Second):
				cmd.Process.Signal(os.Interrupt)
			case <-deadline:
				cmd.Process.Kill()
				<-done
				return
			}
		}
	})
	url := ""
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "http://127.0.0.1:") {
			url = sc.Text()
			break
		}
	}
	if url == "" {
		t.Fatal("stax record --web printed no URL")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if _, errOut, code := e.run("wait", "--for-samples", "200", "--timeout-ms", "60000"); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, errOut)
	}
	ctx := browser.Within(t, bctx, 2*time.Minute)
	waitJIT(ctx, t, url)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.loadedOnce = true`)); err != nil {
		t.Fatal(err)
	}
	if err := browser.ClickFrame(ctx, named("jitted_func2")); err != nil {
		t.Fatal(err)
	}
	first := readCount(ctx, t)
	deadline := time.Now().Add(90 * time.Second)
	var now uint64
	for now = readCount(ctx, t); now <= first+100 && time.Now().Before(deadline); now = readCount(ctx, t) {
		time.Sleep(200 * time.Millisecond)
	}
	if now <= first+100 {
		t.Fatalf("the sample count stayed at %d (from %d)", now, first)
	}
	// Wait for the views to follow the count (an update after the one that raised it).
	updates, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`window.staxPerf.updates`))
	for time.Now().Before(deadline) {
		if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`window.staxPerf.updates`)); n > updates {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	still, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.loadedOnce === true`))
	if err != nil || !still {
		t.Errorf("the page reloaded (err %v)", err)
	}
	full, _ := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector("#flame").getBoundingClientRect().width`))
	if w := frameWidths(ctx, t); w["jitted_func2"] < 0.98*full || w["jitted_func1"] != 0 {
		t.Errorf("the zoom on jitted_func2 was lost by the update: %v (graph %.0f px)", w, full)
	}
	bytes, _ := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`window.staxPerf.updateBytes`))
	t.Logf("samples on the page %d → %d; bytes per live update: %v", first, now, bytes)
}

// readCount reads the sample count the page's status strip shows.
func readCount(ctx context.Context, t *testing.T) uint64 {
	t.Helper()
	text := strings.ReplaceAll(pageSelectorText(ctx, "#samples"), ",", "")
	var n uint64
	fmt.Sscan(text, &n)
	return n
}

// Dragging over the timeline of the two-phase program makes the flame graph and top show
// only the function of the phase selected.
func TestWebTimelineSelectsAPhase(t *testing.T) {
	testutil.RequirePerf(t)
	bctx := browser.Require(t)
	e := newEnv(t)
	prog := buildPhases(t)
	if out, errOut, code := e.run("record", "-q", "-F", "499", "--", prog, "1000", "1"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var tl struct {
		StartSec  float64 `json:"start_sec"`
		BucketSec float64 `json:"bucket_sec"`
		Phases    []struct {
			Func  string
			First int `json:"first_bucket"`
			Last  int `json:"last_bucket"`
		}
	}
	e.mustJSON(&tl, "timeline", "--json")
	var a, b [2]float64
	for _, p := range tl.Phases {
		span := [2]float64{tl.StartSec + float64(p.First)*tl.BucketSec, tl.StartSec + float64(p.Last+1)*tl.BucketSec}
		switch p.Func {
		case "phase_a":
			a = span
		case "phase_b":
			b = span
		}
	}
	if a[1] <= a[0] || b[1] <= b[0] {
		t.Fatalf("the timeline has no phase_a and phase_b phases: %+v", tl.Phases)
	}
	url := e.startWeb()
	ctx := browser.Within(t, bctx, 2*time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(`#timeline svg`)); err != nil {
		t.Fatalf("the page drew no timeline: %v\n%.2000s", err, pageText(ctx))
	}
	if _, err := browser.WaitFrames(ctx, func(browser.Frame) bool { return true }); err != nil {
		t.Fatalf("the page drew no flame graph: %v\n%.2000s", err, pageText(ctx))
	}
	for _, c := range []struct {
		want, not string
		span      [2]float64
	}{{"phase_a", "phase_b", a}, {"phase_b", "phase_a", b}} {
		// Drag across the middle of the phase, in the timeline's own pixel scale.
		from := c.span[0] + 0.2*(c.span[1]-c.span[0])
		to := c.span[0] + 0.8*(c.span[1]-c.span[0])
		drag(ctx, t, from, to)
		ok := false
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			w := frameWidths(ctx, t)
			topText := pageSelectorText(ctx, "#top tbody")
			if w[c.want] > 0 && w[c.not] == 0 && strings.Contains(topText, c.want) && !strings.Contains(topText, c.not) {
				ok = true
				break
			}
		}
		if !ok {
			t.Errorf("after selecting %.2fs–%.2fs (%s) the flame graph shows %v and top %q", from, to, c.want, frameWidths(ctx, t), pageSelectorText(ctx, "#top tbody"))
		}
		if c.want == "phase_a" {
			shot(ctx, t, "web-window")
		}
	}
}

// drag presses the mouse at second from of the timeline and releases it at second to.
func drag(ctx context.Context, t *testing.T, from, to float64) {
	t.Helper()
	pos, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](fmt.Sprintf(`(() => {
		const g = window.staxTimeline, r = document.querySelector("#timeline").getBoundingClientRect();
		const x = (s) => r.left + g.x0 + (s - g.start) / g.span * g.w;
		return [x(%g), x(%g), r.top + 20];
	})()`, from, to)))
	if err != nil || len(pos) != 3 {
		t.Fatalf("timeline geometry: %v", err)
	}
	if err := chromedp.Do(ctx,
		chromedp.MouseEvent(chromedp.MousePressed, pos[0], pos[2], chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseMoved, (pos[0]+pos[1])/2, pos[2], chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseMoved, pos[1], pos[2], chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseReleased, pos[1], pos[2], chromedp.ButtonLeft),
	); err != nil {
		t.Fatal(err)
	}
}

// Without the token, with a wrong one, or under a foreign Host name, the server answers
// 403; it takes no writes; and another user of the machine, who cannot see the token, is
// refused like anyone else.
func TestWebRefusesWithoutToken(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	if out, errOut, code := e.run("record", "-q", "--", "sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	url := e.startWeb()
	base, token, ok := strings.Cut(url, "/?token=")
	if !ok {
		t.Fatalf("URL %q carries no token", url)
	}
	get := func(method, u, host string) int {
		req, err := http.NewRequest(method, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	port := base[strings.LastIndex(base, ":")+1:]
	for _, c := range []struct {
		name, method, url, host string
		want                    int
	}{
		{"the page with its token", "GET", url, "", 200},
		{"the API with its token", "GET", base + "/api/top?token=" + token, "", 200},
		{"localhost with the token", "GET", base + "/api/status?token=" + token, "localhost:" + port, 200},
		{"no token", "GET", base + "/", "", 403},
		{"the API without a token", "GET", base + "/api/flame", "", 403},
		{"a wrong token", "GET", base + "/api/status?token=" + strings.Repeat("0", len(token)), "", 403},
		{"a rebinding Host", "GET", base + "/api/status?token=" + token, "attacker.example:" + port, 403},
		{"another port in Host", "GET", base + "/api/status?token=" + token, "127.0.0.1:1", 403},
		{"a write", "POST", base + "/api/status?token=" + token, "", 405},
		{"a file outside the run", "GET", base + "/../../etc/passwd?token=" + token, "", 404},
	} {
		if got := get(c.method, c.url, c.host); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}

	// Another user reaches the port but not the run: the token is only on our terminal.
	testutil.RequireRoot(t) // to fetch as another user
	for _, tool := range []string{"setpriv", "curl"} {
		testutil.RequireTool(t, tool)
	}
	for _, u := range []string{base + "/", base + "/api/status", base + "/api/top"} {
		out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
			"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", u).CombinedOutput()
		if got := strings.TrimSpace(string(out)); got != "403" {
			t.Errorf("user nobody fetching %s: %q (%v), want 403", u, got, err)
		}
	}
}

// drawnTree lists the frames the page laid out below the root (not the dimmed callers
// of a zoom), as "depth func total", sorted, and the graph's width; it checks that each
// frame wide enough to measure was painted as wide as its share.
func drawnTree(ctx context.Context, t *testing.T) ([]string, float64) {
	t.Helper()
	frames, err := browser.Frames(ctx)
	if err != nil {
		t.Fatalf("read the flame graph: %v", err)
	}
	var out []string
	width := 0.0
	for _, f := range frames {
		if f.Depth == 0 {
			width = f.W
		}
		if f.Ancestor || f.Depth == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%d %s %.0f", f.Depth, f.Func, f.Total))
		if f.W >= 4 && math.Abs(f.Drawn-f.W) > 2 {
			t.Errorf("%s (depth %d) is %.1f px wide by its samples, painted %.1f px", f.Func, f.Depth, f.W, f.Drawn)
		}
	}
	sort.Strings(out)
	return out, width
}

// flameTree lists the nodes of a flame graph below n as drawnTree does, those the page
// draws: at least half a pixel wide in a graph width px wide.
func flameTree(n *api.FlameNode, px float64) []string {
	var out []string
	var walk func(n *api.FlameNode, depth int)
	walk = func(n *api.FlameNode, depth int) {
		for _, c := range n.Children {
			if float64(c.Total)*px/float64(max(n.Total, 1)) >= 0.5 {
				out = append(out, fmt.Sprintf("%d %s %d", depth+1, c.Func, c.Total))
				walk(c, depth+1)
			}
		}
	}
	walk(n, 0)
	sort.Strings(out)
	return out
}

// minus is what a has and b lacks (as multisets).
func minus(a, b []string) []string {
	n := map[string]int{}
	for _, s := range b {
		n[s]++
	}
	var out []string
	for _, s := range a {
		if n[s] > 0 {
			n[s]--
		} else {
			out = append(out, s)
		}
	}
	return out
}

// idleWeb waits until every panel of the page shows its view.
func idleWeb(ctx context.Context, t *testing.T) {
	t.Helper()
	for ctx.Err() == nil {
		if idle, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.staxIdle && window.staxIdle()`)); idle {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the page never settled:\n%.2000s", pageText(ctx))
}

// A link with a window, a thread, transforms and the inverted mode draws the graph stax
// flame prints with the same flags: every frame, with its samples.
func TestWebLinkDrawsWhatFlameSays(t *testing.T) {
	testutil.RequirePerf(t)
	bctx := browser.Require(t)
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/callers.c")
	prog := testutil.CC(t, t.TempDir(), "callers", "gcc", append(cflags, src)...)
	if out, errOut, code := e.run("record", "-q", "--", prog, "500"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var th api.Threads
	e.mustJSON(&th, "threads")
	if len(th.Rows) == 0 {
		t.Fatal("the run has no threads")
	}
	tid := strconv.Itoa(int(th.Rows[0].Tid))
	url := e.startWeb()
	ctx := browser.Within(t, bctx, 3*time.Minute)
	for _, c := range []struct {
		link  string
		flags []string
	}{
		{"hide=%5Epath_a%24&fold_recursion=1&sel=_start&sel=__libc_start_main&sel=__libc_start_call_main&sel=main&sel=path_b", []string{"--hide", "^path_a$", "--fold-recursion"}},
		{"focus=hot_leaf&inverted=1", []string{"--focus", "hot_leaf", "--inverted"}},
		{"ignore=%5Epath_b%24&from=0.1&to=1.5&tid=" + tid, []string{"--ignore", "^path_b$", "--from", "0.1", "--to", "1.5", "--tid", tid}},
		{"collapse_image=callers&inverted=1", []string{"--collapse-image", "callers", "--inverted"}},
	} {
		var fl api.Flame
		e.mustJSON(&fl, append([]string{"flame", "--threshold-pct", "0.1", "-d", "0"}, c.flags...)...)
		if err := chromedp.Do(ctx, chromedp.Navigate(url+"&"+c.link)); err != nil {
			t.Fatal(err)
		}
		if _, err := browser.WaitFrames(ctx, func(browser.Frame) bool { return true }); err != nil {
			t.Fatalf("%s: no flame graph: %v\n%.2000s", c.link, err, pageText(ctx))
		}
		idleWeb(ctx, t)
		got, px := drawnTree(ctx, t)
		want := flameTree(fl.Root, px)
		if len(want) < 2 {
			t.Fatalf("stax flame %v drew almost nothing: %v", c.flags, want)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("the page at ...&%s differs from stax flame %s: frames drawn only by the page %q, only by stax flame %q",
				c.link, strings.Join(c.flags, " "), minus(got, want), minus(want, got))
		}
		if strings.Contains(c.link, "hide") && os.Getenv("STAX_SCREENSHOTS") != "" {
			shot(ctx, t, "web-transforms")
			if err := browser.ColorScheme(ctx, "dark"); err != nil {
				t.Fatal(err)
			}
			waitForSelectorText(ctx, "#calls-panel", "Callers and callees of")
			shot(ctx, t, "web-dark")
			if err := browser.ColorScheme(ctx, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// stax web --diff BASE: two runs of the phases program, phase_b's work doubled in the
// second. The page colours phase_b as grown (by the same change stax flame --diff
// computes), phase_a and phase_c as shrunk, and lists phase_b first among the changes.
func TestWebDiffColoursGrowth(t *testing.T) {
	testutil.RequirePerf(t)
	bctx := browser.Require(t)
	e := newEnv(t)
	prog := buildPhases(t)
	base, cand := filepath.Join(t.TempDir(), "base.stax"), filepath.Join(t.TempDir(), "cand.stax")
	for _, r := range []struct {
		file string
		args []string
	}{{base, []string{"300", "1", "300", "300"}}, {cand, []string{"300", "1", "600", "300"}}} {
		if out, errOut, code := e.run(append([]string{"record", "-q", "--", prog}, r.args...)...); code != 0 {
			t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
		}
		if out, errOut, code := e.run("save", r.file); code != 0 {
			t.Fatalf("save: exit %d\n%s%s", code, out, errOut)
		}
	}
	var cli api.Flame
	e.mustJSON(&cli, "flame", "--run", cand, "--diff", base, "--threshold-pct", "0.1", "-d", "0")
	var cliChange func(n *api.FlameNode) (float64, bool)
	cliChange = func(n *api.FlameNode) (float64, bool) {
		if n.Func == "phase_b" && n.BasePct != nil {
			return n.TotalPct - *n.BasePct, true
		}
		for _, c := range n.Children {
			if d, ok := cliChange(c); ok {
				return d, true
			}
		}
		return 0, false
	}
	want, ok := cliChange(cli.Root)
	if !ok {
		t.Fatalf("stax flame --diff has no phase_b:\n%+v", cli.Root)
	}
	url := e.startWeb("--run", cand, "--diff", base)
	ctx := browser.Within(t, bctx, 2*time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	if _, err := browser.WaitFrames(ctx, func(f browser.Frame) bool { return f.Change != nil }); err != nil {
		t.Fatalf("no frame coloured by change: %v\n%.2000s", err, pageText(ctx))
	}
	idleWeb(ctx, t)
	frames, err := browser.Frames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	change := map[string]float64{}
	var b browser.Frame
	for _, f := range frames {
		if f.Change != nil && (f.Func == "phase_a" || f.Func == "phase_b" || f.Func == "phase_c") {
			change[f.Func] = *f.Change
			if f.Func == "phase_b" {
				b = f
			}
		}
	}
	// Shares: 1/3 each in the base; phase_b 1/2, the others 1/4 in the candidate.
	t.Logf("changes drawn: %v; stax flame --diff: phase_b %+.2f", change, want)
	if math.Abs(change["phase_b"]-want) > 1e-6 {
		t.Errorf("phase_b changed %+.3f points on the page, %+.3f in stax flame --diff", change["phase_b"], want)
	}
	if change["phase_b"] < 10 || change["phase_a"] > -4 || change["phase_c"] > -4 {
		t.Errorf("changes %v: want phase_b about +16.7 points, phase_a and phase_c about -8.3", change)
	}
	rgb, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](fmt.Sprintf(`(() => {
		const c = document.querySelector("#flame canvas"), r = c.getBoundingClientRect(), dpr = c.width / r.width;
		const px = Array.from(c.getContext("2d").getImageData(Math.round((%f - r.left) * dpr), Math.round((%f - r.top + 1) * dpr), 1, 1).data);
		const grow = getComputedStyle(document.documentElement).getPropertyValue("--grow").trim();
		return px.slice(0, 3).concat([1, 3, 5].map((i) => parseInt(grow.slice(i, i + 2), 16)));
	})()`, b.X+b.W/2, b.Y)))
	if err != nil || len(rgb) != 6 {
		t.Fatalf("read the canvas: %v", err)
	}
	for i := range 3 {
		if d := rgb[i] - rgb[i+3]; d > 3 || d < -3 {
			t.Errorf("phase_b, which grew most, is drawn rgb%v, not the growth colour rgb%v", rgb[:3], rgb[3:])
			break
		}
	}
	table := waitForSelectorText(ctx, "#changes tbody", "phase_b")
	if first, _, _ := strings.Cut(strings.TrimSpace(table), "\n"); !strings.Contains(first, "phase_b") || !strings.Contains(first, "▲") {
		t.Errorf("the table of changes starts with %q, not phase_b grown:\n%s", first, table)
	}
	shot(ctx, t, "web-diff")
}
