package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/server"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil/browser"
	"github.com/stax-profiler/stax/internal/testutil/synthrun"
)

func serve(t testing.TB, run *store.Run, addr string) *Server {
	t.Helper()
	s, err := Listen(HandlerSource{server.Handler(server.Stored(run), false), true}, Options{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(s.Close)
	return s
}

func smallRun() *store.Run {
	return &store.Run{Meta: store.Meta{ID: "small", Samples: 2000, Finished: true, StartNs: 1e9}, Profile: *synthrun.Profile(2000, 50)}
}

func TestGuard(t *testing.T) {
	s := serve(t, smallRun(), "")
	base, token, _ := strings.Cut(s.URL(), "/?token=")
	do := func(method, path, host string, header bool) (int, http.Header) {
		req, _ := http.NewRequest(method, base+path, nil)
		if host != "" {
			req.Host = host
		}
		if header {
			req.Header.Set("X-Stax-Token", token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	port := base[strings.LastIndex(base, ":")+1:]
	for _, c := range []struct {
		name, method, path, host string
		header                   bool
		want                     int
	}{
		{"page", "GET", "/?token=" + token, "", false, 200},
		{"token in a header", "GET", "/api/flame", "", true, 200},
		{"asset", "GET", "/app.js?token=" + token, "", false, 200},
		{"no token", "GET", "/api/flame", "", false, 403},
		{"asset without token", "GET", "/app.js", "", false, 403},
		{"short token", "GET", "/api/flame?token=" + token[:8], "", false, 403},
		{"foreign host", "GET", "/api/flame", "evil.example:" + port, true, 403},
		{"localhost", "GET", "/api/flame", "localhost:" + port, true, 200},
		{"ipv6 loopback", "GET", "/api/flame", "[::1]:" + port, true, 200},
		{"wrong port", "GET", "/api/flame", "127.0.0.1:1", true, 403},
		{"post", "POST", "/api/status", "", true, 405},
		{"no such view", "GET", "/api/run", "", true, 404},
		{"annotate without a match", "GET", "/api/annotate?target=no_such_function", "", true, 404},
		{"annotate without a target", "GET", "/api/annotate", "", true, 400},
		{"a window past the run (it matches nothing)", "GET", "/api/flame?from=99999", "", true, 404},
		{"an empty window", "GET", "/api/flame?from=2&to=1", "", true, 400},
	} {
		code, h := do(c.method, c.path, c.host, c.header)
		if code != c.want {
			t.Errorf("%s: %d, want %d", c.name, code, c.want)
		}
		if h.Get("Content-Security-Policy") == "" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: missing security headers: %v", c.name, h)
		}
	}
}

func TestNonLoopbackAllowsOnlyAddressesAndHostname(t *testing.T) {
	s := &Server{port: "8080", loopback: false, hostname: "build-box"}
	for host, want := range map[string]bool{
		"10.1.2.3:8080": true, "build-box:8080": true, "localhost:8080": true,
		"evil.example:8080": false, "10.1.2.3:9090": false, "build-box.evil.example:8080": false,
	} {
		if got := s.hostAllowed(host); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
	s.loopback = true
	if s.hostAllowed("10.1.2.3:8080") || s.hostAllowed("build-box:8080") {
		t.Error("a loopback server accepted a non-loopback Host")
	}
}

// big is the 1,000,000-sample run over 50,000 distinct stacks the page is measured on.
func big(tb testing.TB) *store.Run {
	return &store.Run{Meta: store.Meta{ID: "big", Samples: 1_000_000, Finished: true, StartNs: 1e9}, Profile: *synthrun.Profile(1_000_000, 50_000)}
}

// The page on a 1,000,000-sample run with 50,000 distinct stacks: time to first paint, to
// the first flame graph, each flame graph render, and the bytes of each view. Reported,
// not asserted: a loaded test machine says nothing about a user's.
func TestLargeRunInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	bctx := browser.Require(t)
	s := serve(t, big(t), "")
	ctx := browser.Within(t, bctx, 3*time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL())); err != nil {
		t.Fatal(err)
	}
	if _, err := browser.WaitFrames(ctx, func(browser.Frame) bool { return true }); err != nil {
		t.Fatalf("the page drew no flame graph: %v", err)
	}
	idle(t, ctx)
	frames, err := browser.Frames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Zoom into the first frame below the root and back out: two more renders.
	below := frames[1]
	if err := browser.ClickFrame(ctx, func(f browser.Frame) bool { return f.Func == below.Func && f.X == below.X && f.W == below.W }); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`#reset-zoom`)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`window.staxPerf.flameRenderMs.length`)); n >= 3 {
			break
		}
	}
	type figures struct {
		FCP      float64            `json:"fcp"`
		First    float64            `json:"first"`
		Renders  []float64          `json:"renders"`
		Frames   int                `json:"frames"`
		Bytes    map[string]float64 `json:"bytes"`
		Navigate float64            `json:"navigate"`
	}
	f, err := chromedp.Run(ctx, chromedp.Evaluate[figures](`(() => {
		const p = performance.getEntriesByName("first-contentful-paint")[0];
		return {fcp: p ? p.startTime : -1, first: window.staxPerf.firstFlameMs, renders: window.staxPerf.flameRenderMs,
			frames: window.staxFrames().length, bytes: window.staxPerf.lastBytes,
			navigate: performance.getEntriesByType("navigation")[0].duration};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1,000,000 samples, 50,000 stacks: first contentful paint %.0f ms; flame graph on screen at %.0f ms; renders %v ms (%d frames); bytes per view %v",
		f.FCP, f.First, f.Renders, f.Frames, f.Bytes)
	if len(f.Renders) < 3 || f.Frames == 0 {
		t.Errorf("expected three renders of a non-empty graph: %+v", f)
	}

	// Changes of the thread, the mode and the transforms, each timed from the change to
	// its flame graph on screen (the server's answer included).
	idle(t, ctx)
	type change struct {
		What     string  `json:"what"`
		Ms       float64 `json:"ms"`
		AnswerMs float64 `json:"answerMs"`
		DrawnMs  float64 `json:"drawnMs"`
	}
	steps := []struct{ name, js string }{
		{"thread", `(() => { const s = document.querySelector("#thread"); s.value = "t:101"; s.dispatchEvent(new Event("change")); })()`},
		{"inverted", `document.querySelector("#inverted").click()`},
		{"inverted off", `document.querySelector("#inverted").click()`},
		{"hide", `document.querySelector('#frame-info button[data-act="hide"]').click()`},
		{"fold", `document.querySelector('#frame-info button[data-act="fold"]').click()`},
		{"remove hide", `document.querySelector('#transforms button[aria-label="remove hide"]').click()`},
		{"remove fold", `document.querySelector('#transforms button[aria-label="remove fold recursion"]').click()`},
		{"all threads", `(() => { const s = document.querySelector("#thread"); s.value = ""; s.dispatchEvent(new Event("change")); })()`},
	}
	for _, st := range steps {
		if st.name == "hide" || st.name == "fold" {
			// The frame's line offers its transforms: select the widest frame below main.
			if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowDown)); err != nil {
				t.Fatal(err)
			}
		}
		n := eval[int](t, ctx, `window.staxPerf.changes.length`)
		eval[any](t, ctx, st.js)
		until(t, ctx, st.name+" drawn", func() (bool, string) {
			return eval[int](t, ctx, `window.staxPerf.changes.length`) > n, "not yet"
		})
		idle(t, ctx)
		if st.name == "thread" {
			eval[bool](t, ctx, `(document.querySelector("#flame canvas").focus(), true)`)
		}
	}
	var changes []change
	json.Unmarshal(eval[json.RawMessage](t, ctx, `window.staxPerf.changes`), &changes)
	var parts []string
	worst := 0.0
	for _, c := range changes {
		parts = append(parts, fmt.Sprintf("%s %.0f (answers %.0f, drawn %.0f)", c.What, c.Ms, c.AnswerMs, c.DrawnMs))
		worst = max(worst, c.Ms)
	}
	// The last four go back to views seen before: the server keeps a stored run's answers.
	t.Logf("changes of thread, mode and transforms, to the flame graph on screen (ms): %s; slowest %.0f ms (target 300 ms)", strings.Join(parts, ", "), worst)
	noErrors(t, ctx)
}

// BenchmarkFlameView1M is the server's side of the page's flame graph on the 1M run: the
// query, pruned at the page's threshold, and its JSON (bytes/op reported as answer-bytes).
func BenchmarkFlameView1M(b *testing.B) {
	s := serve(b, big(b), "")
	src := s.src
	var n int
	for b.Loop() {
		body, code := src.Get(context.Background(), "/v1/flame", api.FlameRequest{ThresholdPct: 0.1}.Encode())
		if code != 200 {
			b.Fatalf("%d %s", code, body)
		}
		n = len(body)
	}
	b.ReportMetric(float64(n), "answer-bytes")
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// counting counts the queries a source answers.
type counting struct {
	Source
	n atomic.Int32
}

func (c *counting) Get(ctx context.Context, path string, q url.Values) ([]byte, int) {
	if path != "/v1/status" {
		c.n.Add(1)
	}
	return c.Source.Get(ctx, path, q)
}

// A stored run's answers are kept: a view asked again is not computed again, and the page's
// first graph and timeline are asked as the server starts. A live run's are always asked.
func TestStoredAnswersAreKept(t *testing.T) {
	for _, stored := range []bool{true, false} {
		c := &counting{Source: HandlerSource{Handler: server.Handler(server.Stored(smallRun()), false)}}
		var src Source = c
		if stored {
			src = storedCounting{c}
		}
		s, err := Listen(src, Options{})
		if err != nil {
			t.Fatal(err)
		}
		go s.Serve()
		if stored {
			// The page's first questions are asked as the server starts (warm), once.
			<-s.warmed
			if got := c.n.Load(); got != 2 {
				t.Errorf("stored: %d queries asked as the server started, want 2 (the first flame graph and timeline)", got)
			}
		} else if s.warmed != nil {
			t.Error("a live run's server asks before the page")
		}
		c.n.Store(0)
		base, token, _ := strings.Cut(s.URL(), "/?token=")
		for _, path := range []string{"/api/flame?tid=1", "/api/top?n=5", "/api/flame?tid=1", "/api/top?n=5", "/api/flame?tid=2", "/api/flame?threshold_pct=0.1", "/api/timeline?threads=16&buckets=200"} {
			resp, err := http.Get(base + path + "&token=" + token)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		s.Close()
		want := int32(7)
		if stored {
			want = 3 // the first graph and timeline were asked as it started
		}
		if got := c.n.Load(); got != want {
			t.Errorf("stored %v: %d queries for 7 requests of 5 views, want %d", stored, got, want)
		}
	}
}

type storedCounting struct{ *counting }

func (storedCounting) fixed() bool { return true }

// BenchmarkFlameViewHide1M is BenchmarkFlameView1M of one thread with one function
// hidden, as the page's frame menu asks it: each time another function, so that no
// answer or view computed before serves it.
func BenchmarkFlameViewHide1M(b *testing.B) {
	s := serve(b, big(b), "")
	src := s.src
	i := 0
	for b.Loop() {
		i++
		body, code := src.Get(context.Background(), "/v1/flame", api.FlameRequest{ThresholdPct: 0.1, View: api.View{Tid: 101, Transform: api.Transform{Hide: fmt.Sprintf("^func_%d$", i)}}}.Encode())
		if code != 200 {
			b.Fatalf("%d %s", code, body)
		}
	}
}

// blockingSource answers once released, counting its asks; an ask whose context ends
// first fails.
type blockingSource struct {
	n       atomic.Int32
	release chan struct{}
}

func (b *blockingSource) fixed() bool { return true }

func (b *blockingSource) Get(ctx context.Context, path string, q url.Values) ([]byte, int) {
	b.n.Add(1)
	select {
	case <-b.release:
		return []byte(`"answer"`), http.StatusOK
	case <-ctx.Done():
		return []byte(`{"error":"gone"}`), http.StatusServiceUnavailable
	}
}

// Of a stored run, asks of one question while it is being answered wait for that answer:
// it is computed once. An ask that gives up leaves the question to those still waiting.
func TestStoredQuestionAskedOnce(t *testing.T) {
	src := &blockingSource{release: make(chan struct{})}
	s, err := Listen(src, Options{View: url.Values{"tid": {"1"}}}) // a view: nothing warmed
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gone, cancel := context.WithCancel(context.Background())
	first := make(chan int, 1)
	go func() { _, code := s.get(gone, "/v1/top", url.Values{"n": {"5"}}); first <- code }()
	for src.n.Load() == 0 {
		time.Sleep(time.Millisecond) // polling the first ask's arrival, not synchronising on time
	}
	var wg sync.WaitGroup
	bodies := make([]string, 3)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, _ := s.get(context.Background(), "/v1/top", url.Values{"n": {"5"}})
			bodies[i] = string(b)
		}()
	}
	cancel() // the first ask gives up: one of the others asks again
	if code := <-first; code == http.StatusOK {
		t.Errorf("the ask that gave up got %d", code)
	}
	for src.n.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(src.release)
	wg.Wait()
	for i, b := range bodies {
		if b != `"answer"` {
			t.Errorf("ask %d got %s", i, b)
		}
	}
	if n := src.n.Load(); n != 2 {
		t.Errorf("the source was asked %d times, want 2 (the ask that gave up, then one for the three waiting)", n)
	}
}
