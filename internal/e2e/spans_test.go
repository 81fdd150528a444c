package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// ittFrames is what ittframes.c printed: its own measurements and times.
type ittFrames struct {
	count             map[string]uint64
	total             map[string]uint64
	setupStart, setup uint64 // the marker file's setup span
	ready, goAt       uint64
}

func parseITTFrames(t *testing.T, out string) ittFrames {
	t.Helper()
	r := ittFrames{count: map[string]uint64{}, total: map[string]uint64{}}
	for _, line := range strings.Split(out, "\n") {
		var name string
		var n, v uint64
		switch {
		case strings.HasPrefix(line, "measured "):
			if _, err := fmt.Sscanf(line, "measured %s %d %d", &name, &n, &v); err == nil {
				r.count[name], r.total[name] = n, v
			}
		case strings.HasPrefix(line, "marker setup "):
			fmt.Sscanf(line, "marker setup %d %d", &r.setupStart, &r.setup)
		case strings.HasPrefix(line, "ready_ns "):
			fmt.Sscanf(line, "ready_ns %d", &r.ready)
		case strings.HasPrefix(line, "go_ns "):
			fmt.Sscanf(line, "go_ns %d", &r.goAt)
		}
	}
	if len(r.count) != 3 || r.ready == 0 || r.goAt == 0 || r.setup == 0 {
		t.Fatalf("ittframes printed no measurements:\n%s", out)
	}
	return r
}

func spanRow(res api.Spans, name string) (api.SpanStat, bool) {
	for _, s := range res.Rows {
		if s.Name == name {
			return s, true
		}
	}
	return api.SpanStat{}, false
}

// TestSpansFromITTMarkerFileAndMark records ittframes.c, which reports nested ITT tasks
// through stax's collector (loaded the way ittapi's static part loads it) and writes a
// marker file; stax mark adds a marker while the run is live. stax spans counts the tasks
// and times them as the program did, --span keeps only the samples inside a span, and the
// markers are in the run at the times they were made.
func TestSpansFromITTMarkerFileAndMark(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	dir := t.TempDir()
	e.env = append(e.env, "STAX_JIT_DIR="+dir)
	prog := testutil.CC(t, t.TempDir(), "ittframes", "gcc", append(append([]string{}, cflags...),
		filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/ittframes.c"), "-ldl", "-lpthread")...)
	const frames = 20
	l := e.startUntilReady(dir, prog, itoa(frames), "20")

	// While it records: the tasks reach the run (the collector writes a thread's tasks
	// every 50 ms), and a marker goes in.
	var live api.Spans
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		e.mustJSON(&live, "spans")
		if s, ok := spanRow(live, "frame"); ok && s.Count > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live run has no frame spans after 30 s: %+v", live.Rows)
		}
	}
	if !live.Live {
		t.Errorf("stax spans of the live run does not say live")
	}
	if out, errOut, code := e.run("mark", "checkpoint", "one"); code != 0 {
		t.Fatalf("stax mark: exit %d\n%s%s", code, out, errOut)
	}
	l.finish(t)
	got := parseITTFrames(t, l.out.String())

	var res api.Spans
	e.mustJSON(&res, "spans")
	for _, name := range []string{"frame", "physics", "render"} {
		s, ok := spanRow(res, name)
		if !ok {
			t.Errorf("no %s spans: %+v", name, res.Rows)
			continue
		}
		if s.Count != got.count[name] {
			t.Errorf("%s: %d spans, the program ran %d", name, s.Count, got.count[name])
		}
		t.Logf("%s: %d spans, %d ns in all; the program measured %d ns", name, s.Count, s.TotalNs, got.total[name])
		if d := math.Abs(float64(s.TotalNs)-float64(got.total[name])) / float64(got.total[name]); d > 0.05 {
			t.Errorf("%s: %d ns in all, the program measured %d (%.1f%% apart)", name, s.TotalNs, got.total[name], d*100)
		}
	}
	// physics and render take CPU in 1:2; each span's samples are its thread's inside it.
	phys, _ := spanRow(res, "physics")
	rend, _ := spanRow(res, "render")
	frame, _ := spanRow(res, "frame")
	if n := phys.Samples + rend.Samples; n < 300 || frame.Samples < n || frame.Samples > n+n/20+5 {
		t.Errorf("samples inside: frame %d, physics %d, render %d: want physics+render about frame's, and enough of them", frame.Samples, phys.Samples, rend.Samples)
	} else if share := float64(rend.Samples) / float64(n); math.Abs(share-2.0/3)*100 > shareTolerance(2.0/3, n) {
		t.Errorf("render holds %.1f%% of physics+render samples, want 66.7%% ± %.1f", share*100, shareTolerance(2.0/3, n))
	}

	// The marker file's spans and stax mark's marker, at their times.
	var st api.Status
	e.mustJSON(&st, "status")
	if setup, ok := spanRow(res, "setup"); !ok || setup.Count != 1 || setup.TotalNs != got.setup-got.setupStart {
		t.Errorf("the marker file's setup span: %+v, want one of %d ns", setup, got.setup-got.setupStart)
	}
	for _, name := range []string{"setup_done", "after_go", "checkpoint one"} {
		if m, ok := spanRow(res, name); !ok || m.Count != 1 || m.TotalNs != 0 {
			t.Errorf("marker %q: %+v, want one instant", name, m)
		}
	}
	run, err := store.Load(filepath.Join(e.home, "runs", st.Meta.ID+".stax"))
	if err != nil {
		t.Fatal(err)
	}
	var mark, afterGo spans.Span
	for s := range run.Spans.All() {
		switch s.Name {
		case "checkpoint one":
			mark = s
		case "after_go":
			afterGo = s
		}
	}
	if mark.Start < got.ready || mark.Start > got.goAt {
		t.Errorf("stax mark's marker at %d, want between the program's ready (%d) and go (%d)", mark.Start, got.ready, got.goAt)
	}
	if afterGo.Start != got.goAt {
		t.Errorf("after_go at %d, the program wrote %d", afterGo.Start, got.goAt)
	}
	srcs := map[string]api.SpanSource{}
	for _, s := range st.Meta.SpanSources {
		srcs[s.Kind] = s
	}
	if s := srcs[spans.KindITT]; s.Received != 3*frames || s.Dropped != 0 || s.Bad != 0 {
		t.Errorf("ITT source %+v, want %d received, none dropped", s, 3*frames)
	}
	if s := srcs[spans.KindMarkerFile]; s.Received != 3 || s.Bad != 0 {
		t.Errorf("marker file source %+v, want 3 received", s)
	}
	if s := srcs[spans.KindMark]; s.Received != 1 {
		t.Errorf("stax mark source %+v, want 1", s)
	}
	txt, _, _ := e.run("spans")
	t.Logf("\n%s", txt)

	// The timeline places the marker file's span and markers and stax mark's marker where
	// the program saw them (seconds from the run's start: compared with each other).
	var tl api.Timeline
	e.mustJSON(&tl, "timeline")
	// __itt_thread_set_name named the main thread.
	var named bool
	for _, th := range tl.Threads {
		named = named || th.Name == "frames-main"
	}
	if !named {
		t.Errorf("no thread named frames-main (__itt_thread_set_name): %+v", tl.Threads)
	}
	marks := map[string]float64{}
	for _, m := range tl.Markers {
		marks[m.Name] = m.AtSec
	}
	var setupAt float64 = -1
	for _, s := range tl.Spans {
		if s.Name == "setup" {
			setupAt = s.StartSec
		}
	}
	rel := func(ns uint64) float64 { return float64(ns-got.setupStart) / 1e9 }
	if at, ok := marks["after_go"]; !ok || setupAt < 0 || math.Abs(at-setupAt-rel(got.goAt)) > 0.010 {
		t.Errorf("timeline: after_go at %.4f s, setup from %.4f s; the program wrote them %.4f s apart", at, setupAt, rel(got.goAt))
	}
	if at, ok := marks["checkpoint one"]; !ok || at-setupAt < rel(got.ready)-0.010 || at-setupAt > rel(got.goAt)+0.010 {
		t.Errorf("timeline: stax mark's marker at %.4f s, want between the program's ready (%.4f) and go (%.4f) after setup at %.4f", at, setupAt+rel(got.ready), setupAt+rel(got.goAt), setupAt)
	}

	// A saved file, and the run imported from it, keep the spans.
	saved := filepath.Join(t.TempDir(), "run.stax")
	if out, errOut, code := e.run("save", saved); code != 0 {
		t.Fatalf("stax save: exit %d\n%s%s", code, out, errOut)
	}
	var fromFile api.Spans
	e.mustJSON(&fromFile, "spans", "--run", saved)
	if f, _ := spanRow(fromFile, "render"); f != rend || len(fromFile.Sources) != 3 {
		t.Errorf("spans of the saved file: render %+v (want %+v), %d sources", f, rend, len(fromFile.Sources))
	}

	// The stored run's spans are in its spans file, which a saved file does not need.
	spanFile := filepath.Join(e.home, "runs", st.Meta.ID+".spanlog")
	if info, err := os.Stat(spanFile); err != nil || info.Size() < 16+8*int64(run.Spans.Len()) {
		t.Fatalf("the run's spans file: %v (%d spans)", err, run.Spans.Len())
	}
	if err := os.Rename(spanFile, spanFile+".away"); err != nil {
		t.Fatal(err)
	}
	e.mustJSON(&fromFile, "spans", "--run", saved)
	if f, _ := spanRow(fromFile, "render"); f != rend {
		t.Errorf("spans of the saved file without the run's spans file: render %+v (want %+v)", f, rend)
	}
	if out, errOut, code := e.run("spans"); code == 0 || !strings.Contains(errOut, spanFile) {
		t.Errorf("stax spans without the run's spans file: exit %d, want an error naming it\n%s%s", code, out, errOut)
	}
	if out, errOut, code := e.run("export", "-f", "folded", "-o", filepath.Join(t.TempDir(), "f.txt")); code != 0 || !strings.Contains(errOut, "no spans") {
		t.Errorf("stax export without the run's spans file: exit %d, want a note that it holds no spans\n%s%s", code, out, errOut)
	}
	if out, errOut, code := e.run("timeline"); code != 0 || !strings.Contains(out, "no spans shown") || !strings.Contains(out, spanFile) {
		t.Errorf("stax timeline without the run's spans file: exit %d, want a note naming it\n%s%s", code, out, errOut)
	}
	if err := os.Rename(spanFile+".away", spanFile); err != nil {
		t.Fatal(err)
	}

	// stax top --span render names render's functions only.
	var top api.Top
	e.mustJSON(&top, "top", "--span", "render", "-n", "50")
	if self, _, ok := row(top, "render_work"); !ok || self < top.Samples*8/10 {
		t.Errorf("top --span render: render_work has %d of %d samples, want most", self, top.Samples)
	}
	for _, fn := range []string{"physics_work", "setup_work"} {
		if _, total, ok := row(top, fn); ok && total > 0 {
			t.Errorf("top --span render names %s (%d samples)", fn, total)
		}
	}
	if top.Window == nil || top.Window.Span != "render" {
		t.Errorf("top --span render does not say so: %+v", top.Window)
	}
	if out, errOut, code := e.run("top", "--span", "nothing"); code != 5 || !strings.Contains(errOut, "no span named") {
		t.Errorf("top --span nothing: exit %d, want 5 saying so\n%s%s", code, out, errOut)
	}
	var fl api.Flame
	e.mustJSON(&fl, "flame", "--span", "physics", "-d", "40", "--threshold-pct", "0")
	if !hasPath(fl.Root, []string{"main", "physics_work"}) || hasPath(fl.Root, []string{"main", "render_work"}) {
		t.Errorf("flame --span physics: want main -> physics_work and no render_work")
	}
}
