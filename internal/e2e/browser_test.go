package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/testutil/browser"
)

// speedscopeVersion is the speedscope web app the export is checked against.
const speedscopeVersion = "1.25.0"

// speedscopeApp fetches speedscope's static build from npm and returns its directory.
func speedscopeApp(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		testutil.Require(t, testutil.EnvBrowser, "npm not found: cannot fetch the speedscope app")
	}
	dir := t.TempDir()
	cmd := exec.Command("npm", "pack", "--silent", "speedscope@"+speedscopeVersion)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm pack speedscope: %v\n%s", err, out)
	}
	testutil.Run(t, dir, "tar", "xzf", "speedscope-"+speedscopeVersion+".tgz")
	return filepath.Join(dir, "package", "dist", "release")
}

// The speedscope export opens in the speedscope app and the SVG flame graph in Chromium,
// and both show the toy JIT's hottest function.
func TestExportsOpenInBrowser(t *testing.T) {
	testutil.RequirePerf(t)
	bctx := browser.Require(t)
	app := speedscopeApp(t)
	e := newEnv(t)
	toy := filepath.Join(t.TempDir(), "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")
	if out, errOut, code := e.run("record", "-q", "--", toy, "-cpu", "1s"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	files := t.TempDir()
	for _, f := range []string{"speedscope", "svg"} {
		if out, errOut, code := e.run("export", "-f", f, "-o", filepath.Join(files, "run."+f)); code != 0 {
			t.Fatalf("export %s: exit %d\n%s%s", f, code, out, errOut)
		}
	}
	if data, err := os.ReadFile(filepath.Join(files, "run.speedscope")); err != nil || !strings.Contains(string(data), "jitted_func2") {
		top, _, _ := e.run("top", "-n", "15")
		t.Fatalf("the speedscope export does not name jitted_func2 (err %v); top says:\n%s", err, top)
	}
	mux := http.NewServeMux()
	mux.Handle("/app/", http.StripPrefix("/app/", http.FileServer(http.Dir(app))))
	mux.Handle("/files/", http.StripPrefix("/files/", http.FileServer(http.Dir(files))))
	srv := httptest.NewServer(mux) // 127.0.0.1
	defer srv.Close()

	ctx := browser.Within(t, bctx, 2*time.Minute)
	page := srv.URL + "/app/index.html#profileURL=" + url.QueryEscape(srv.URL+"/files/run.speedscope")
	if err := chromedp.Do(ctx,
		chromedp.Navigate(page),
		// The sandwich view lists every function in a table (the flame chart is a canvas).
		chromedp.WaitVisible(`//*[text()="Sandwich"]`),
		chromedp.Click(`//*[text()="Sandwich"]`),
	); err != nil {
		t.Fatalf("speedscope never offered its sandwich view: %v\n%.2000s", err, pageText(ctx))
	}
	text := waitForText(ctx, "jitted_func2")
	if !strings.Contains(text, "jitted_func2") {
		t.Fatalf("speedscope's sandwich view never showed jitted_func2:\n%.2000s", text)
	}
	if strings.Contains(text, "Something went wrong") {
		t.Errorf("speedscope failed to load the profile:\n%.2000s", text)
	}
	if !strings.Contains(text, "jitted_func1") {
		t.Errorf("speedscope's sandwich view lacks jitted_func1:\n%.2000s", text)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/files/run.svg")); err != nil {
		t.Fatal(err)
	}
	width, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => {
			let w = 0;
			for (const el of document.querySelectorAll("text, title")) {
				if (el.textContent.includes("jitted_func2")) {
					const box = (el.tagName === "title" ? el.parentNode : el).getBoundingClientRect();
					w = Math.max(w, box.width);
				}
			}
			return w;
		})()`))
	if err != nil || width < 10 {
		t.Errorf("the SVG shows no box for jitted_func2 (widest %.1f px): %v", width, err)
	}
	// It opens on its root, with a legend of its colours.
	first, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
			const root = Array.from(document.querySelectorAll("#frames title")).find((t) => t.textContent.startsWith("all\n"));
			const b = root.parentNode.getBoundingClientRect();
			const out = b.top >= 0 && b.bottom <= window.innerHeight ? ["root on the first screen"] : ["root at " + b.top];
			for (const t of document.querySelectorAll("#legend text")) {
				if (t.getBoundingClientRect().bottom <= window.innerHeight) out.push(t.textContent);
			}
			return out;
		})()`))
	if got := strings.Join(first, ", "); err != nil || got != "root on the first screen, native, inlined, JIT, Python, kernel, unknown, search match" {
		t.Errorf("the SVG's first screen: %s (%v)", got, err)
	}
}

// pageText returns the text the page shows, or why it could not be read. It evaluates
// innerText rather than querying a node: a DOM query issued while a page re-renders can wait
// on node events that never come. Each read is bounded so one stuck call cannot spend the
// caller's whole budget.
func pageText(ctx context.Context) string {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	text, err := chromedp.Run(rctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return "(page text unreadable: " + err.Error() + ")"
	}
	return text
}

// waitForText polls the page until it shows want or ctx ends, and returns the last text
// read (or why none could be).
func waitForText(ctx context.Context, want string) string {
	last := ""
	for {
		text := pageText(ctx)
		if !strings.HasPrefix(text, "(page text unreadable") || last == "" {
			last = text
		}
		if strings.Contains(text, want) || ctx.Err() != nil {
			return last
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
