package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil/browser"
)

// sampleRows are the samples panel's rows as shown: each row's cells' text, joined by |.
func sampleRows(t *testing.T, ctx context.Context) []string {
	t.Helper()
	var rows []string
	b := eval[json.RawMessage](t, ctx, `[...document.querySelectorAll("#samples-table tbody tr.sample")].map((tr) => [...tr.cells].map((td) => td.innerText.replace(/^[▸▾]/, "").trim()).join("|"))`)
	json.Unmarshal(b, &rows)
	return rows
}

// samplesSay waits until the panel's count line says want ("all 60", "30 of 60").
func samplesSay(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	until(t, ctx, "the samples panel's "+want, func() (bool, string) {
		got := text(ctx, "#samples-count")
		return got == want && eval[bool](t, ctx, `window.staxIdle()`), got + " / " + text(ctx, "#samples-panel")
	})
}

// inked counts the pixels of a screenshot of the element sel that differ from its
// background: text drawn on screen.
func inked(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	scrollTo(t, ctx, sel)
	buf, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("screenshot of %s: %v", sel, err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	bg := img.At(b.Max.X-1, b.Max.Y-1)
	br, bgG, bb, _ := bg.RGBA()
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if d := math.Abs(float64(r)-float64(br)) + math.Abs(float64(g)-float64(bgG)) + math.Abs(float64(bl)-float64(bb)); d > 3*0x4000 {
				n++
			}
		}
	}
	return n
}

// The samples panel lists a tracepoint's samples with their fields, newest first, as the
// API keeps them: time, thread, function and a column per field (numbers with thousands
// separators, a pointer in hex, strings and lists as they are, an integer beyond 2^53
// exactly). It follows the window, the thread and the event; a row's ▸ shows its stack and
// a click highlights its function in the flame graph. An event that keeps no fields says
// so; a run without tracepoints has no panel.
func TestSamplesPanel(t *testing.T) {
	bctx := browser.Require(t)
	run := writesRun(t)
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "&event="+writeEvent)
	samplesSay(t, ctx, "all 60")
	seen(t, ctx, "the samples panel", "#samples-table tbody tr.sample")
	heads := eval[string](t, ctx, `[...document.querySelectorAll("#samples-table thead th")].map((th) => th.innerText.trim()).join("|")`)
	if heads != "Time (s)|Thread|Function|__syscall_nr|fd|buf|count" {
		t.Errorf("the panel's heads: %q", heads)
	}
	rows := sampleRows(t, ctx)
	if len(rows) != 60 {
		t.Fatalf("%d rows, want 60: %q", len(rows), rows)
	}
	// Newest first: beta's last write at 0.159 s, ..., alpha's first at 0.100 s.
	if want := "0.159000|beta 102|small_writes|1|4|0x1000|1,000"; rows[0] != want {
		t.Errorf("the first row: %q, want %q", rows[0], want)
	}
	if want := fmt.Sprintf("0.100000|alpha 101|big_writes|1|3|0x%x|3,000", bigBuf); rows[59] != want {
		t.Errorf("the last row: %q, want %q", rows[59], want)
	}
	if got := text(ctx, "#samples-h"); got != "Samples of "+writeEvent {
		t.Errorf("the panel's heading: %q", got)
	}
	if got := text(ctx, "#samples-title"); !strings.Contains(got, "the run keeps 60 with their fields (the newest 100,000 at most)") {
		t.Errorf("the panel's line: %q", got)
	}
	// On screen, in both themes: text inked on the rows, readable on the panel.
	for _, scheme := range []string{"light", "dark"} {
		if err := browser.ColorScheme(ctx, scheme); err != nil {
			t.Fatal(err)
		}
		if n := inked(t, ctx, "#samples-table tbody tr.sample"); n < 100 {
			t.Errorf("%s: the first row has %d pixels of ink", scheme, n)
		}
		fg := eval[[]int](t, ctx, `getComputedStyle(document.querySelector("#samples-table tbody td")).color.match(/\d+/g).map(Number)`)
		bgOf := func(sel string) []int {
			return eval[[]int](t, ctx, fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).backgroundColor.match(/\d+/g).map(Number)`, sel))
		}
		bg, panel := bgOf("#samples-panel"), bgOf("#flame-panel")
		if !near(bg, panel) || contrast(fg, bg) < 4.5 || (scheme == "dark") != (bg[0]+bg[1]+bg[2] < 3*80) {
			t.Errorf("%s: the rows' text rgb%v on rgb%v (the other panels' rgb%v)", scheme, fg, bg, panel)
		}
	}
	if err := browser.ColorScheme(ctx, ""); err != nil {
		t.Fatal(err)
	}

	// ▸ shows the stack under the row; a click on the row highlights its function.
	eval[bool](t, ctx, `(() => { document.querySelector("#samples-table tbody tr.sample .tw").click(); return true; })()`)
	until(t, ctx, "the first row's stack", func() (bool, string) {
		got := text(ctx, "#samples-table tr.stack-row")
		return strings.ReplaceAll(got, "\n", " ") == "small_writes ← main", got
	})
	eval[bool](t, ctx, `(() => { document.querySelectorAll("#samples-table tbody tr.sample")[1].cells[1].click(); return true; })()`)
	until(t, ctx, "small_writes highlighted in the graph", func() (bool, string) {
		var marked []string
		for _, f := range graph(t, ctx) {
			if f.Match {
				marked = append(marked, f.Func)
			}
		}
		got := strings.Join(marked, " ")
		return got == "small_writes" && eval[string](t, ctx, `document.querySelector("#search").value`) == "^small_writes$", got
	})
	if !eval[bool](t, ctx, `document.querySelectorAll("#samples-table tbody tr.sample")[1].classList.contains("chosen")`) {
		t.Error("the row clicked is not marked")
	}

	// The thread selector: beta's writes alone.
	choose(t, ctx, "#thread", "t:102")
	samplesSay(t, ctx, "all 30")
	for _, r := range sampleRows(t, ctx) {
		if !strings.Contains(r, "|beta 102|small_writes|") {
			t.Fatalf("thread beta's rows: %q", r)
		}
	}
	choose(t, ctx, "#thread", "")
	samplesSay(t, ctx, "all 60")
	noErrors(t, ctx)

	// A window of the run, from a link: alpha's writes from 0.11 s (20 of them); then the
	// whole run again.
	ctx = open(t, bctx, s, "&event="+writeEvent+"&from=0.11&to=0.13")
	samplesSay(t, ctx, "all 20")
	rows = sampleRows(t, ctx)
	if !strings.HasPrefix(rows[0], "0.129000|alpha 101|big_writes|") || !strings.HasPrefix(rows[19], "0.110000|alpha 101|big_writes|") {
		t.Errorf("the window's rows: first %q, last %q", rows[0], rows[len(rows)-1])
	}
	eval[bool](t, ctx, `(() => { document.querySelector("#clear-selection").click(); return true; })()`)
	samplesSay(t, ctx, "all 60")
	// A window with no write says so.
	ctx = browser.Within(t, bctx, 2*time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL()+"&event="+writeEvent+"&from=0&to=0.05")); err != nil {
		t.Fatal(err)
	}
	idle(t, ctx)
	until(t, ctx, "the empty window's line", func() (bool, string) {
		got := text(ctx, "#samples-table tbody")
		return strings.Contains(got, "no samples of "+writeEvent+" in this view"), got
	})
	noErrors(t, ctx)

	// The made-up tracepoint: a string, a list, an integer beyond 2^53 and a pointer.
	ctx = open(t, bctx, s, "&event=test:mixed")
	samplesSay(t, ctx, "all 3")
	rows = sampleRows(t, ctx)
	if want := fmt.Sprintf("0.162000|alpha 101|mixed|kworker|[1, 22, 333]|1,152,921,504,606,846,983|0x%x", mixedPtr); rows[0] != want {
		t.Errorf("the mixed row: %q, want %q", rows[0], want)
	}

	// cpu-clock keeps no fields: the panel says so, and names the events that do.
	choose(t, ctx, "#event", "cpu-clock")
	until(t, ctx, "the panel of cpu-clock", func() (bool, string) {
		got := text(ctx, "#samples-panel")
		return strings.Contains(got, "event cpu-clock keeps no fields") && strings.Contains(got, writeEvent+", test:mixed") && !strings.Contains(got, "kworker"), got
	})
	seen(t, ctx, "the panel's reason", "#samples-table tbody td")
	noErrors(t, ctx)

	// A run of the tracepoint alone, of more samples than the panel lists: the newest 200
	// of the 250 writes (of 0 to 249 bytes), and the line says so.
	var format []byte
	for _, tr := range run.Traces {
		if tr.Event == 1 {
			format = tr.Format
		}
	}
	many := tracedRun(t, "many", []store.Event{{Name: writeEvent, Period: 1, Samples: 250, Count: 250}}, map[uint32][]byte{0: format},
		tracedWork{work: work{101, []string{"main", "writes"}, 250}, raw: func(i int) []byte { return writeData(3, 0x1000, uint64(i)) }})
	ctx = open(t, bctx, serve(t, many, ""), "")
	samplesSay(t, ctx, "200 of 250")
	rows = sampleRows(t, ctx)
	if len(rows) != 200 || !strings.HasSuffix(rows[0], "|249") || !strings.HasSuffix(rows[199], "|50") {
		t.Errorf("%d rows, from %q to %q", len(rows), rows[0], rows[len(rows)-1])
	}
	if got := text(ctx, "#samples-title"); !strings.Contains(got, "200 of 250 samples in this view, the newest 200 listed newest first") {
		t.Errorf("the line of a run of more samples than listed: %q", got)
	}
	noErrors(t, ctx)

	// A run without tracepoints has no samples panel.
	ctx = open(t, bctx, serve(t, callersRun(), ""), "")
	if !eval[bool](t, ctx, `document.querySelector("#samples-panel").hidden && document.querySelector("#samples-panel").getBoundingClientRect().height === 0`) {
		t.Error("a run without tracepoints shows a samples panel")
	}
	noErrors(t, ctx)
}

// "weigh by" offers the tracepoint's numeric fields: weighed by count, each frame is as
// wide as the bytes written under it (big_writes three times small_writes, as wide by
// samples), the top table and the call tree count bytes, the heading says what the graph
// weighs, and the URL keeps it (weight=, the API's). A window weighs its writes alone.
func TestWeighByField(t *testing.T) {
	bctx := browser.Require(t)
	run := writesRun(t)
	fl, err := query.AnswerFlame(run, api.FlameRequest{View: api.View{Event: writeEvent}, Weight: "count", Depth: 0})
	if err != nil || fl.Weight == nil || fl.Weight.Sum != 120_000 {
		t.Fatalf("the API's weighed flame: %v, %+v", err, fl.Weight)
	}
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "&event="+writeEvent)
	widths := func() map[string]float64 {
		w := map[string]float64{}
		for _, f := range graph(t, ctx) {
			w[f.Func] = f.Drawn
		}
		return w
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 3 }
	until(t, ctx, "the graph weighed by samples", func() (bool, string) {
		w := widths()
		return w["big_writes"] > 100 && near(w["big_writes"], w["small_writes"]), fmt.Sprint(w)
	})
	if eval[bool](t, ctx, `document.querySelector("#weigh-label").hidden`) {
		t.Fatal("a tracepoint's run offers no weigh by")
	}
	opts := eval[string](t, ctx, `[...document.querySelectorAll("#weigh option")].map((o) => o.value).join(" ")`)
	if opts != " field:__syscall_nr field:fd field:buf field:count" {
		t.Errorf("weigh by offers %q", opts)
	}
	if got := eval[string](t, ctx, `document.querySelector("#weigh optgroup").label`); got != writeEvent+": sum of the field" {
		t.Errorf("the fields' group: %q", got)
	}
	if !eval[bool](t, ctx, `document.querySelector("#flame-weight").hidden`) {
		t.Error("weighed by samples, the heading says it weighs something else")
	}

	choose(t, ctx, "#weigh", "field:count")
	until(t, ctx, "the graph weighed by count", func() (bool, string) {
		w := widths()
		return w["big_writes"] > 100 && near(w["big_writes"], 3*w["small_writes"]) && near(w["big_writes"]+w["small_writes"], w["main"]), fmt.Sprint(w)
	})
	idle(t, ctx)
	seen(t, ctx, "the weight's tag", "#flame-weight")
	if got := text(ctx, "#flame-weight"); got != "weighed by count" {
		t.Errorf("the flame graph's heading says %q", got)
	}
	if got := text(ctx, "#flame-note"); !strings.Contains(got, "weighed by count of "+writeEvent) || !strings.Contains(got, "120,000 over 60 samples") {
		t.Errorf("the note above the graph: %q", got)
	}
	if got := pageURL(t, ctx).Query().Get("weight"); got != "count" {
		t.Errorf("the URL says weight=%q", got)
	}
	if got := topRow(ctx, "big_writes"); !strings.HasPrefix(got, "75.00% 90,000") {
		t.Errorf("big_writes's row of the top table: %q", got)
	}
	if got := text(ctx, "#top-weight"); got != "weighed by count" {
		t.Errorf("the top table's heading says %q", got)
	}
	if got := text(ctx, "#calltree-unit"); !strings.HasPrefix(got, "count") {
		t.Errorf("the call tree's unit: %q", got)
	}
	if got := callTree(t, ctx); !strings.Contains(got, "120,000") {
		t.Errorf("the call tree: %q", got)
	}
	noErrors(t, ctx)

	// A link weighed by count, in a window of alpha's writes: big_writes alone.
	ctx = open(t, bctx, s, "&event="+writeEvent+"&weight=count&from=0.1&to=0.12")
	until(t, ctx, "the window's graph weighed by count", func() (bool, string) {
		w := widths()
		return w["big_writes"] > 100 && w["small_writes"] == 0 && near(w["big_writes"], w["main"]), fmt.Sprint(w)
	})
	if got := text(ctx, "#flame-note"); !strings.Contains(got, "60,000 over 20 samples") {
		t.Errorf("the window's note: %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector("#weigh").value`); got != "field:count" {
		t.Errorf("the link's weigh by shows %q", got)
	}
	// The whole run, by samples again: as wide, and the URL no longer weighs.
	eval[bool](t, ctx, `(() => { document.querySelector("#clear-selection").click(); return true; })()`)
	idle(t, ctx)
	choose(t, ctx, "#weigh", "")
	until(t, ctx, "the graph weighed by samples again", func() (bool, string) {
		w := widths()
		return near(w["big_writes"], w["small_writes"]) && w["small_writes"] > 100, fmt.Sprint(w)
	})
	if u := pageURL(t, ctx); u.Query().Has("weight") {
		t.Errorf("weighed by samples, the URL still weighs: %s", u)
	}
	// Another event, without the field: weigh by drops it.
	ctx = open(t, bctx, s, "&event="+writeEvent+"&weight=count")
	choose(t, ctx, "#event", "cpu-clock")
	until(t, ctx, "cpu-clock's graph", func() (bool, string) {
		w := widths()
		return w["spin"] > 0 && !pageURL(t, ctx).Query().Has("weight"), fmt.Sprint(w, pageURL(t, ctx))
	})
	if !eval[bool](t, ctx, `document.querySelector("#weigh-label").hidden && document.querySelector("#flame-weight").hidden`) {
		t.Error("cpu-clock's graph offers or says a weight")
	}
	noErrors(t, ctx)
}
