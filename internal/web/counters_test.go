package web

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil/browser"
)

// countersRun read task-clock, page-faults, cycles and instructions with each sample
// (stax record --counters).
func countersRun() *store.Run {
	run := countedRun("counters",
		countedWork{work: work{101, []string{"main", "spin"}, 300}, counters: []uint64{1_000_000, 0, 3_000_000, 6_000_000}},
		countedWork{work: work{101, []string{"main", "touch_pages"}, 100}, counters: []uint64{990_000, 57, 2_000_000, 700_000}},
		countedWork{work: work{102, []string{"main", "wait"}, 7}, counters: []uint64{10_000, 1, 0, 0}},
	)
	run.Meta.Freq, run.Meta.Event = 999, "cpu-clock"
	run.Meta.Counters = []store.Counter{{Name: "task-clock"}, {Name: "page-faults"}, {Name: "cycles"}, {Name: "instructions"}}
	return run
}

// The top table shows a column per counter read with each sample, with what the API
// counted in each function, and IPC where cycles and instructions were read; a run of
// one event has no event selector.
func TestTopCounterColumns(t *testing.T) {
	bctx := browser.Require(t)
	run := countersRun()
	top, err := query.AnswerTop(run, api.TopRequest{N: 100})
	if err != nil || len(top.Counters) != 4 {
		t.Fatalf("the API's top: %v, counters %q", err, top.Counters)
	}
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "")
	until(t, ctx, "the top table's rows", func() (bool, string) {
		got := topRow(ctx, "spin")
		return got != "", got
	})
	heads := eval[json.RawMessage](t, ctx, `[...document.querySelectorAll("#top thead th")].map((th) => th.innerText.trim())`)
	var got []string
	json.Unmarshal(heads, &got)
	if want := []string{"Self", "Total", "task-clock", "page-faults", "cycles", "instructions", "IPC", "Function", "Image"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the top table's heads: %q, want %q", got, want)
	}
	for _, r := range top.Rows {
		if r.Func == "main" {
			continue
		}
		cells := eval[json.RawMessage](t, ctx, fmt.Sprintf(`[...document.querySelectorAll("#top tbody tr")].filter((tr) => tr.querySelector('td[title=%q]')).map((tr) => [...tr.querySelectorAll("td.counter")].map((td) => td.innerText))[0] || []`, r.Func))
		var shown []string
		json.Unmarshal(cells, &shown)
		var want []string
		for _, v := range r.Counters {
			want = append(want, commas(v))
		}
		ipc := "-"
		if r.Counters[2] > 0 {
			ipc = fmt.Sprintf("%.2f", float64(r.Counters[3])/float64(r.Counters[2]))
		}
		want = append(want, ipc)
		if strings.Join(shown, " ") != strings.Join(want, " ") {
			t.Errorf("%s's counters shown %q, the API's %q", r.Func, shown, want)
		}
	}
	// spin's own: 300 samples of 1,000,000 ns task-clock, 6,000,000 instructions in
	// 3,000,000 cycles.
	if got := topRow(ctx, "spin"); !strings.Contains(got, "300,000,000 0 900,000,000 1,800,000,000 2.00 spin") {
		t.Errorf("spin's row: %q", got)
	}
	if !eval[bool](t, ctx, `document.querySelector("#event-label").hidden`) {
		t.Error("a run of one event shows an event selector")
	}
	// A window of the run drops the counters (the series keeps none): so do the columns.
	ctx2 := open(t, bctx, s, "&from=0.05&to=0.2")
	until(t, ctx2, "the window's table without counters", func() (bool, string) {
		n := eval[int](t, ctx2, `document.querySelectorAll("#top th.counter, #top td.counter").length`)
		return n == 0 && topRow(ctx2, "spin") != "", fmt.Sprint(n, " counter cells")
	})
	noErrors(t, ctx2)
}

// commas writes n with thousands separators, as the page does.
func commas(n uint64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Counters the kernel multiplexed are marked: top's and flame's answers carry the share of
// the time they counted, and the page says so above the flame graph; counters that
// counted all their time are not marked.
func TestCountersMultiplexedMarked(t *testing.T) {
	bctx := browser.Require(t)
	run := countersRun()
	for i := range run.Meta.Counters {
		run.Meta.Counters[i].Time = &store.CounterTime{EnabledNs: 10_000_000, RunningNs: 6_250_000, Pairs: 400}
	}
	top, err := query.AnswerTop(run, api.TopRequest{N: 100})
	if err != nil || top.CountersMultiplexed == nil || *top.CountersMultiplexed != 0.625 {
		t.Fatalf("top: %v, multiplexed %v", err, top.CountersMultiplexed)
	}
	fl, err := query.AnswerFlame(run, api.FlameRequest{})
	if err != nil || fl.CountersMultiplexed == nil || *fl.CountersMultiplexed != 0.625 {
		t.Fatalf("flame: %v, multiplexed %v", err, fl.CountersMultiplexed)
	}
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "")
	want := "counters multiplexed by the kernel: they counted 62.5% of the time, and the samples were taken only then (ratios such as IPC hold)"
	until(t, ctx, "the note on multiplexed counters", func() (bool, string) {
		got := text(ctx, "#flame-note")
		return strings.Contains(got, want), got
	})
	seen(t, ctx, "the note", "#flame-note")
	noErrors(t, ctx)

	plain := countersRun()
	for i := range plain.Meta.Counters {
		plain.Meta.Counters[i].Time = &store.CounterTime{EnabledNs: 10_000_000, RunningNs: 9_990_000, Pairs: 400}
	}
	if top, _ := query.AnswerTop(plain, api.TopRequest{N: 100}); top.CountersMultiplexed != nil {
		t.Errorf("counters that counted 99.9%% of the time marked multiplexed (%v)", *top.CountersMultiplexed)
	}
	ctx = open(t, bctx, serve(t, plain, ""), "")
	until(t, ctx, "the graph", func() (bool, string) { return eval[int](t, ctx, `window.staxFrames().length`) > 0, "no frame" })
	if got := text(ctx, "#flame-note"); strings.Contains(got, "multiplexed") {
		t.Errorf("the note of counters not multiplexed: %q", got)
	}
}
