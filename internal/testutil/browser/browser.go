// Package browser starts headless Chromium for tests that check what a page shows.
package browser

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/stax-profiler/stax/internal/testutil"
)

// Require returns a browser context (a fresh headless Chromium, gone when the test ends).
// Without Chromium the test is skipped, or fails where STAX_REQUIRE_BROWSER=1 (CI). Bound
// each step with Within, not this context: a deadline on it would stop the browser.
func Require(t testing.TB) context.Context {
	t.Helper()
	if testing.Short() {
		testutil.Require(t, testutil.EnvBrowser, "the test drives a browser") // skips: unit tests only
	}
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		testutil.Require(t, testutil.EnvBrowser, "no Chromium found (apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // tests run as root in CI
		// Software WebGL: pages that draw with it (speedscope) work without a GPU.
		chromedp.Flag("use-angle", "swiftshader"),
		chromedp.Flag("enable-unsafe-swiftshader", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 800),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithListener(pageErrors(t)))
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// pageErrors logs the page's uncaught exceptions and console errors to the test, so that
// a page that draws nothing says why.
func pageErrors(t testing.TB) func(ev any) {
	return func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg = d.Exception.Description
			}
			t.Logf("page exception at %s:%d: %s", d.URL, d.LineNumber+1, msg)
		case *runtime.EventConsoleAPICalled:
			if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeWarning {
				return
			}
			var parts []string
			for _, a := range ev.Args {
				if a.Description != "" {
					parts = append(parts, a.Description)
				} else {
					parts = append(parts, string(a.Value))
				}
			}
			t.Logf("page console %s: %s", ev.Type, strings.Join(parts, " "))
		}
	}
}

// Within derives a context for browser steps that must finish within d.
func Within(t testing.TB, ctx context.Context, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(ctx, d)
	t.Cleanup(cancel)
	return ctx
}

// ColorScheme makes the page's prefers-color-scheme media feature "light" or "dark" ("":
// the browser's own again).
func ColorScheme(ctx context.Context, scheme string) error {
	p := emulation.SetEmulatedMediaParams{}
	if scheme != "" {
		p.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}
	}
	return chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, p)
		return err
	}))
}
