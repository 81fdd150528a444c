package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/testutil/browser"
)

// The web page over a recording of syscalls:sys_enter_write of a program whose big_writes
// writes 3,000 bytes 100 times and small_writes 1,000 bytes 100 times: the samples panel
// lists the 200 writes with their count and fd, and weighed by count the flame graph draws
// big_writes three times as wide as small_writes (by samples, as wide).
func TestWebTracepointFields(t *testing.T) {
	testutil.RequirePerf(t)
	if os.Geteuid() != 0 || !tracefsReadable("syscalls", "sys_enter_write") {
		t.Skip("tracefs is not readable here (root reads /sys/kernel/tracing): syscalls:sys_enter_write cannot be recorded")
	}
	bctx := browser.Require(t)
	const writes = 100
	prog := buildEvents(t)
	e := newEnv(t)
	if out, errOut, code := e.run("record", "-q", "-e", "syscalls:sys_enter_write", "--", prog, "bigsmall", fmt.Sprint(writes)); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	url := e.startWeb()
	ctx := browser.Within(t, bctx, 3*time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	eval := func(js string) string {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return s
	}
	until := func(what string, cond func() (bool, string)) {
		t.Helper()
		last := ""
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			ok, seen := cond()
			if ok {
				return
			}
			last = seen
		}
		t.Fatalf("%s: never; last saw %s\n%.3000s", what, last, pageText(ctx))
	}
	// The writes of the two functions, each as (function under which it wrote, count, fd).
	type row struct{ Under, Count, Fd string }
	rows := func() []row {
		var out []row
		js := `JSON.stringify([...document.querySelectorAll("#samples-table tbody tr.sample")].map((tr) => {
			const stack = tr.cells[2].title, cell = (f) => (tr.querySelector('td[data-field="' + f + '"]') || {}).innerText || "";
			return { Under: /big_writes/.test(stack) ? "big_writes" : /small_writes/.test(stack) ? "small_writes" : stack, Count: cell("count"), Fd: cell("fd") };
		}))`
		json.Unmarshal([]byte(eval(js)), &out)
		return out
	}
	until("the samples panel's writes", func() (bool, string) {
		n := map[string]int{}
		for _, r := range rows() {
			n[r.Under+" "+r.Count]++
		}
		return n["big_writes 3,000"] == writes && n["small_writes 1,000"] == writes, fmt.Sprint(n, " ", eval(`document.querySelector("#samples-title").innerText`))
	})
	fds := map[string]bool{}
	for _, r := range rows() {
		if r.Under == "big_writes" || r.Under == "small_writes" {
			fds[r.Fd] = true
		}
	}
	if len(fds) != 1 {
		t.Errorf("the writes went to fds %v, want the one /dev/null", fds)
	}
	t.Logf("samples panel: %s", eval(`document.querySelector("#samples-title").innerText`))

	widths := func() map[string]float64 {
		frames, err := browser.Frames(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w := map[string]float64{}
		for _, f := range frames {
			if !f.Ancestor {
				w[f.Func] = max(w[f.Func], f.Drawn)
			}
		}
		return w
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 3 }
	until("the graph by samples", func() (bool, string) {
		w := widths()
		return w["small_writes"] > 50 && near(w["big_writes"], w["small_writes"]), fmt.Sprint(w)
	})
	eval(`(() => { const s = document.querySelector("#weigh"); s.value = "field:count"; s.dispatchEvent(new Event("change")); return s.value; })()`)
	until("the graph weighed by count", func() (bool, string) {
		w := widths()
		return w["small_writes"] > 50 && near(w["big_writes"], 3*w["small_writes"]), fmt.Sprint(w, " ", eval(`document.querySelector("#flame-note").innerText`))
	})
	if got := eval(`document.querySelector("#flame-weight").innerText`); got != "weighed by count" {
		t.Errorf("the flame graph's heading says %q", got)
	}
	shot(ctx, t, "web-tracepoint")
	if errs := eval(`JSON.stringify(window.staxErrors)`); errs != "[]" {
		t.Errorf("the page met errors: %s", errs)
	}
}
