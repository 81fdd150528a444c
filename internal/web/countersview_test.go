package web

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil/browser"
)

// faultsRun read task-clock, page-faults, cycles and instructions with each sample: spin
// counts most samples and no page fault; touch_pages, called from main and from alloc,
// counts the page faults, at two instructions of its code (its first, and 4 bytes on).
// Weighed by page-faults, touch_pages under main is twice as wide as alloc; weighed by
// samples, as wide.
func faultsRun() *store.Run {
	run := countedRun("faults",
		countedWork{work: work{101, []string{"main", "spin"}, 300}, counters: []uint64{1_000_000, 0, 3_000_000, 6_000_000}},
		countedWork{work: work{101, []string{"main", "touch_pages"}, 100}, counters: []uint64{1_000_000, 50, 2_000_000, 700_000}},
		countedWork{work: work{101, []string{"main", "alloc"}, 50}, counters: []uint64{1_000_000, 10, 1_000_000, 1_000_000}},
		countedWork{work: work{101, []string{"main", "alloc", "touch_pages"}, 50}, counters: []uint64{1_000_000, 40, 4_000_000, 1_000_000}, off: 4},
	)
	run.Meta.Freq, run.Meta.Event = 999, "cpu-clock"
	run.Meta.Counters = []store.Counter{{Name: "task-clock"}, {Name: "page-faults"}, {Name: "cycles"}, {Name: "instructions"}}
	// touch_pages's code (made up by countedRun at 0x200): add $1,%rax twice, then ret.
	for i, f := range run.Profile.Frames {
		if f.Func == "touch_pages" {
			code := []byte{0x48, 0x83, 0xc0, 0x01, 0x48, 0x83, 0xc0, 0x01, 0xc3}
			run.Code = append(run.Code, store.Code{Frame: uint32(i), Pid: 100, Start: 0x200, Size: uint64(len(code)), Arch: int(elf.EM_X86_64), Bytes: code})
		}
	}
	return run
}

// counterWords is what the page says a node counted: each counter under it, and in
// itself where not zero, then the IPC of both.
func counterWords(names []string, under, self []uint64) []string {
	var out []string
	for j, name := range names {
		s := fmt.Sprintf("%s %s", name, commas(under[j]))
		if j < len(self) && self[j] > 0 {
			s += fmt.Sprintf(" (self %s)", commas(self[j]))
		}
		out = append(out, s)
	}
	ipc := fmt.Sprintf("IPC %.2f", float64(under[3])/float64(under[2]))
	if len(self) == 4 && self[2] > 0 {
		ipc += fmt.Sprintf(" (self %.2f)", float64(self[3])/float64(self[2]))
	}
	return append(out, ipc)
}

// A frame's tooltip and the selection's line below the graph say what each counter
// counted under the frame and in it, with IPC, as the API counts them; the call tree
// has a column per counter. "weigh by" a counter draws each frame as wide as what the
// counter counted under it, sorts the top table by it, and is kept in the URL.
func TestFlameCounters(t *testing.T) {
	bctx := browser.Require(t)
	run := faultsRun()
	fl, err := query.AnswerFlame(run, api.FlameRequest{Depth: 100, ThresholdPct: 0.1})
	if err != nil || len(fl.Counters) != 4 {
		t.Fatalf("the API's flame: %v, counters %q", err, fl.Counters)
	}
	var alloc *api.FlameNode
	for _, c := range fl.Root.Children[0].Children {
		if c.Func == "alloc" {
			alloc = c
		}
	}
	if alloc == nil || alloc.Counters[1] != 2500 || alloc.SelfCounters[1] != 500 {
		t.Fatalf("the API's alloc: %+v", alloc)
	}
	want := counterWords(fl.Counters, alloc.Counters, alloc.SelfCounters)

	s := serve(t, run, "")
	ctx := open(t, bctx, s, "")
	if !eval[bool](t, ctx, `!document.querySelector("#weigh-label").hidden`) {
		t.Error("a run with counters offers no weigh by")
	}
	// The tooltip of alloc, hovered.
	frameJS := func(fn, ev string) string {
		return fmt.Sprintf(`(() => { const f = window.staxFrames().find((f) => f.func === %q && f.depth === 2); if (!f) return false; document.querySelector("#flame canvas").dispatchEvent(new MouseEvent(%q, { bubbles: true, clientX: f.x + f.w / 2, clientY: f.y + f.h / 2 })); return true; })()`, fn, ev)
	}
	if !eval[bool](t, ctx, frameJS("alloc", "mousemove")) {
		t.Fatal("no alloc frame drawn")
	}
	tip := text(ctx, "#tooltip")
	for _, w := range want {
		if !strings.Contains(tip, w) {
			t.Errorf("alloc's tooltip lacks %q:\n%s", w, tip)
		}
	}
	// Selected (clicked), the line below the graph says the same.
	eval[bool](t, ctx, frameJS("alloc", "click"))
	until(t, ctx, "alloc's line below the graph", func() (bool, string) {
		got := text(ctx, "#frame-info")
		for _, w := range want {
			if !strings.Contains(got, w) {
				return false, got
			}
		}
		return true, got
	})
	// The call tree: a column per counter, what each counted under the frame.
	heads := eval[string](t, ctx, `[...document.querySelectorAll("#calltree thead th")].map((th) => th.innerText.trim()).join("|")`)
	if heads != "Total|Self|task-clock|page-faults|cycles|instructions|Function" {
		t.Errorf("the call tree's heads: %q", heads)
	}
	cells := eval[string](t, ctx, `[...document.querySelectorAll("#calltree tbody tr.ct-row")].filter((tr) => tr.innerText.includes("alloc")).map((tr) => [...tr.querySelectorAll("td.counter")].map((td) => td.innerText).join(" "))[0] || ""`)
	var wantCells []string
	for _, v := range alloc.Counters {
		wantCells = append(wantCells, commas(v))
	}
	if cells != strings.Join(wantCells, " ") {
		t.Errorf("alloc's row of the call tree: %q, the API's %q", cells, wantCells)
	}
	noErrors(t, ctx)

	// Weighed by samples (depth 0 is the root, 1 main), touch_pages under main and alloc are as wide (100 samples each);
	// by page-faults, touch_pages is twice as wide (5,000 against 2,500), and spin, which
	// counted none, is not drawn.
	widths := func() map[string]float64 {
		frames, err := browser.Frames(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w := map[string]float64{}
		for _, f := range frames {
			if f.Depth <= 2 && !f.Ancestor && f.Drawn > 0 {
				w[fmt.Sprint(f.Depth, f.Func)] = f.Drawn
			}
		}
		return w
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 3 }
	eval[bool](t, ctx, `(() => { document.querySelector("#reset-zoom").click(); return true; })()`)
	until(t, ctx, "the graph weighed by samples", func() (bool, string) {
		w := widths()
		return w["2spin"] > 0 && near(w["2touch_pages"], w["2alloc"]) && near(w["2spin"], 3*w["2alloc"]), fmt.Sprint(w)
	})
	choose(t, ctx, "#weigh", "page-faults")
	until(t, ctx, "the graph weighed by page-faults", func() (bool, string) {
		w := widths()
		return w["2spin"] == 0 && w["2alloc"] > 100 && near(w["2touch_pages"], 2*w["2alloc"]) && near(w["2touch_pages"]+w["2alloc"], w["1main"]), fmt.Sprint(w)
	})
	if got := pageURL(t, ctx).Query().Get("weigh"); got != "page-faults" {
		t.Errorf("the URL says weigh=%q", got)
	}
	if got := text(ctx, "#flame-note"); !strings.Contains(got, "weighed by page-faults") || !strings.Contains(got, "samples' tree") {
		t.Errorf("the note above the graph: %q", got)
	}
	// The top table is sorted by page-faults: touch_pages (7,000 in its own samples) leads.
	lead := func() string {
		return eval[string](t, ctx, `(document.querySelector("#top tbody tr td[title]") || {}).title || ""`)
	}
	until(t, ctx, "the top table sorted by page-faults", func() (bool, string) {
		got := lead() + " " + text(ctx, "#top th.sorted")
		return got == "touch_pages page-faults", got
	})
	if got := topRow(ctx, "touch_pages"); !strings.Contains(got, " 7,000 ") {
		t.Errorf("touch_pages's row: %q", got)
	}
	noErrors(t, ctx)

	// A link opens weighed by the counter; sorted by Self, the page weighs samples again.
	ctx = open(t, bctx, s, "&"+url.Values{"weigh": {"page-faults"}}.Encode())
	until(t, ctx, "the link's graph weighed by page-faults", func() (bool, string) {
		w := widths()
		return w["2spin"] == 0 && near(w["2touch_pages"], 2*w["2alloc"]), fmt.Sprint(w)
	})
	if got := eval[string](t, ctx, `document.querySelector("#weigh").value`); got != "page-faults" {
		t.Errorf("the link's page: weigh by shows %q", got)
	}
	until(t, ctx, "the link's top table sorted by page-faults", func() (bool, string) { got := lead(); return got == "touch_pages", got })
	eval[bool](t, ctx, `(() => { document.querySelector('#top th[data-sort="self"]').click(); return true; })()`)
	until(t, ctx, "the top table by self samples", func() (bool, string) {
		got := lead() + " " + fmt.Sprint(widths()["2spin"] > 0)
		return got == "spin true", got
	})
	if u := pageURL(t, ctx); u.Query().Has("weigh") {
		t.Errorf("sorted by samples, the URL still weighs a counter: %s", u)
	}
	noErrors(t, ctx)

	// A run without counters offers no weigh by.
	ctx = open(t, bctx, serve(t, callersRun(), ""), "")
	if !eval[bool](t, ctx, `document.querySelector("#weigh-label").hidden`) {
		t.Error("a run without counters offers weigh by")
	}
}

// The code view has a column per counter (and IPC) on each instruction with samples,
// with what the API counted in them, and the code's totals in its header.
func TestCodeCounterColumns(t *testing.T) {
	bctx := browser.Require(t)
	run := faultsRun()
	a, err := query.AnswerAnnotate(run, api.AnnotateRequest{Target: "touch_pages"})
	if err != nil {
		t.Fatal(err)
	}
	an := a.Annotation
	hot := 0
	for _, in := range an.Insts {
		if in.Samples > 0 {
			hot++
		}
	}
	if len(an.Counters) != 4 || hot != 2 {
		t.Fatalf("the API's annotation of touch_pages: counters %q, %d instructions with samples", an.Counters, hot)
	}
	s := serve(t, run, "")
	ctx := open(t, bctx, s, "&code=touch_pages")
	until(t, ctx, "touch_pages's code", func() (bool, string) {
		got := text(ctx, "#annotate")
		return strings.Contains(got, "0x204:"), got
	})
	// The header: each counter's total in the code, and the IPC.
	var head []string
	for j, name := range an.Counters {
		head = append(head, fmt.Sprintf("%s %s", name, commas(an.CounterTotals[j])))
	}
	head = append(head, fmt.Sprintf("IPC %.2f", float64(an.CounterTotals[3])/float64(an.CounterTotals[2])))
	if got := text(ctx, "#func-counters"); got != strings.Join(head, " · ") {
		t.Errorf("the code's header says %q, want %q", got, strings.Join(head, " · "))
	}
	// The columns' heads, then each instruction's row: its samples, then its counters.
	lines := strings.Split(text(ctx, "#annotate"), "\n")
	var heads, rows []string
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "Percent") {
			heads = strings.Fields(l)
		}
		if strings.Contains(l, "0x20") && strings.Contains(l, "│") {
			rows = append(rows, strings.Join(strings.Fields(strings.Split(l, "│")[0]), " "))
		}
	}
	if got := strings.Join(heads, " "); !strings.HasPrefix(got, "Percent Samples Heat task-clock page-faults cycles instructions IPC │") {
		t.Errorf("the code's heads: %q", got)
	}
	var want []string
	for _, in := range an.Insts {
		if in.Samples == 0 {
			want = append(want, "")
			continue
		}
		w := []string{fmt.Sprintf("%.2f", in.Percent), commas(in.Samples)}
		// The heat bar, between the samples and the counters.
		for _, v := range in.Counters {
			w = append(w, commas(v))
		}
		w = append(w, fmt.Sprintf("%.2f", float64(in.Counters[3])/float64(in.Counters[2])))
		want = append(want, strings.Join(w, " "))
	}
	if len(rows) != len(want) {
		t.Fatalf("the code view's instruction rows %q, want %d", rows, len(want))
	}
	for i := range rows {
		got := strings.Fields(rows[i])
		if want[i] == "" {
			if len(got) != 0 {
				t.Errorf("instruction %d without samples shows %q", i, rows[i])
			}
			continue
		}
		// Leave out the heat bar (the third field).
		if len(got) > 2 {
			got = append(got[:2:2], got[3:]...)
		}
		if strings.Join(got, " ") != want[i] {
			t.Errorf("instruction %d shows %q, the API's %q", i, rows[i], want[i])
		}
	}
	cols := eval[json.RawMessage](t, ctx, `[...document.querySelectorAll("#annotate .hot .counter")].map((e) => e.dataset.counter)`)
	var named []string
	json.Unmarshal(cols, &named)
	if len(named) != 2*5 {
		t.Errorf("the counters' cells of the instructions with samples: %q", named)
	}
	noErrors(t, ctx)
}
