package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/server"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil/browser"
)

// twoEventsRun sampled cpu-clock and page-faults (stax record -e cpu-clock,page-faults):
// the CPU time goes to spin, the faults to touch_pages.
func twoEventsRun() *store.Run {
	run := countedRun("events",
		countedWork{work: work{101, []string{"main", "spin"}, 300}, event: 0},
		countedWork{work: work{101, []string{"main", "touch_pages"}, 20}, event: 0},
		countedWork{work: work{101, []string{"main", "touch_pages"}, 200}, event: 1},
		countedWork{work: work{101, []string{"main", "spin"}, 5}, event: 1},
	)
	run.Meta.Freq, run.Meta.Event = 999, "cpu-clock"
	run.Meta.Events = []store.Event{
		{Name: "cpu-clock", Freq: 999, Samples: 320, Count: 320 * 1_001_001},
		{Name: "page-faults", Freq: 999, Samples: 205, Count: 205 * 239},
	}
	return run
}

// The event selector: a run of two events offers both with their samples; choosing the
// second has every panel count its samples (the top table's leader becomes the function
// that faults), each heading names it, and the URL keeps it, so the link opens on it.
func TestEventSelector(t *testing.T) {
	bctx := browser.Require(t)
	run := twoEventsRun()
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "")
	lead := func() string {
		return eval[string](t, ctx, `(document.querySelector("#top tbody tr td[title]") || {}).title || ""`)
	}
	if eval[bool](t, ctx, `document.querySelector("#event-label").hidden`) {
		t.Fatal("a run of two events shows no event selector")
	}
	if got := text(ctx, "#event"); !strings.Contains(got, "cpu-clock (320 samples)") || !strings.Contains(got, "page-faults (205 samples)") {
		t.Errorf("the event selector offers %q", got)
	}
	until(t, ctx, "the top table led by spin", func() (bool, string) { got := lead(); return got == "spin", got })
	if got := text(ctx, "#flame-event"); !strings.Contains(got, "event cpu-clock") {
		t.Errorf("the flame graph's heading names %q, want the first event", got)
	}

	choose(t, ctx, "#event", "page-faults")
	until(t, ctx, "the page-faults graph and top table", func() (bool, string) {
		got := rootChildren(t, ctx) + " / " + lead()
		return got == "main=205 / touch_pages", got
	})
	idle(t, ctx)
	// Each panel's heading names the event its answer counted.
	for _, sel := range []string{"#flame-event", "#top-event", "#timeline-event", "#calltree-event", "#stackchart-event"} {
		until(t, ctx, sel+" names page-faults", func() (bool, string) {
			got := text(ctx, sel)
			return strings.Contains(got, "event page-faults (999 Hz: a sample per 239 on average)"), got
		})
	}
	if got := topRow(ctx, "touch_pages"); !strings.HasPrefix(got, "97.56% 200") {
		t.Errorf("touch_pages's row: %q, want 200 of 205 samples", got)
	}
	// The stack chart draws the event's samples.
	until(t, ctx, "the stack chart of page-faults", func() (bool, string) {
		got := text(ctx, "#stackchart-title")
		return strings.Contains(got, "205 samples"), got
	})
	// The callers panel asks for the event too.
	eval[bool](t, ctx, `(() => { const f = window.staxFrames().find((f) => f.func === "touch_pages"); document.querySelector("#flame canvas").dispatchEvent(new MouseEvent("click", { bubbles: true, clientX: f.x + f.w / 2, clientY: f.y + f.h / 2 })); return true; })()`)
	until(t, ctx, "the callers of touch_pages in page-faults", func() (bool, string) {
		got := text(ctx, "#calls-panel")
		return strings.Contains(got, "event page-faults") && strings.Contains(got, "200 samples"), got
	})
	u := pageURL(t, ctx)
	if got := u.Query().Get("event"); got != "page-faults" {
		t.Errorf("the URL says event=%q (%s)", got, u)
	}
	noErrors(t, ctx)

	// The link opens on the event.
	q := url.Values{"event": {"page-faults"}}
	ctx = open(t, bctx, s, "&"+q.Encode())
	if got := eval[string](t, ctx, `document.querySelector("#event").value`); got != "page-faults" {
		t.Errorf("the link's page: the selector shows %q", got)
	}
	until(t, ctx, "the link's top table led by touch_pages", func() (bool, string) { got := lead(); return got == "touch_pages", got })
	// Back to the first event: it is the default, and the URL no longer names one.
	choose(t, ctx, "#event", "cpu-clock")
	until(t, ctx, "the cpu-clock top table", func() (bool, string) { got := lead(); return got == "spin", got })
	if u := pageURL(t, ctx); u.Query().Has("event") {
		t.Errorf("the first event chosen, the URL still names one: %s", u)
	}
	noErrors(t, ctx)
}

// A diff counts the base's samples of the event the page asks for, as the run's: two
// windows of a run of two events, the same window each side, change nothing.
func TestDiffCountsTheEvent(t *testing.T) {
	run := twoEventsRun()
	s, err := Listen(HandlerSource{server.Handler(server.Stored(run), false), true}, Options{Base: &Base{Run: run, Same: true}})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(s.Close)
	base, token, _ := strings.Cut(s.URL(), "/?token=")
	for _, event := range []string{"cpu-clock", "page-faults"} {
		resp, err := http.Get(base + "/api/changes?token=" + token + "&event=" + event)
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Samples     uint64   `json:"samples"`
			BaseSamples uint64   `json:"base_samples"`
			Rows        []Change `json:"rows"`
		}
		err = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %v", event, resp.StatusCode, err)
		}
		if c.Samples != c.BaseSamples || len(c.Rows) == 0 {
			t.Errorf("%s: %d samples against the base's %d (%d rows)", event, c.Samples, c.BaseSamples, len(c.Rows))
		}
		for _, r := range c.Rows {
			if r.DeltaPct != 0 {
				t.Errorf("%s: %s changed %.2f points against itself", event, r.Func, r.DeltaPct)
			}
		}
	}
}
