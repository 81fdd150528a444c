package e2e

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestSpansFromGoPackage records a Go program that times two phases (1:2) in spans of
// stax's Go package: stax spans counts and times them as the program did, and --span
// keeps only the samples inside a phase.
func TestSpansFromGoPackage(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	dir := t.TempDir()
	e.env = append(e.env, "STAX_JIT_DIR="+dir)
	prog := filepath.Join(t.TempDir(), "gospans")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", prog, "./internal/e2e/testdata/gospans")
	const rounds = 30
	out, errOut, code := e.run("record", "-q", "--", prog, itoa(rounds), "10")
	if code != 0 {
		t.Fatalf("stax record: exit %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(out, "not recorded") {
		t.Fatalf("the program was not told it is recorded:\n%s", out)
	}
	measured := map[string][2]uint64{}
	for _, line := range strings.Split(out, "\n") {
		var name string
		var n, ns uint64
		if _, err := fmt.Sscanf(line, "measured %s %d %d", &name, &n, &ns); err == nil {
			measured[name] = [2]uint64{n, ns}
		}
	}
	if len(measured) != 3 {
		t.Fatalf("the program printed no measurements:\n%s", out)
	}

	var res api.Spans
	e.mustJSON(&res, "spans")
	for _, name := range []string{"round", "phaseA", "phaseB"} {
		s, ok := spanRow(res, name)
		if !ok {
			t.Errorf("no %s spans: %+v", name, res.Rows)
			continue
		}
		want := measured[name]
		t.Logf("%s: %d spans, %d ns in all; the program measured %d in %d ns", name, s.Count, s.TotalNs, want[0], want[1])
		if s.Count != want[0] {
			t.Errorf("%s: %d spans, the program ran %d", name, s.Count, want[0])
		}
		if d := math.Abs(float64(s.TotalNs)-float64(want[1])) / float64(want[1]); d > 0.05 {
			t.Errorf("%s: %d ns in all, the program measured %d (%.1f%% apart)", name, s.TotalNs, want[1], d*100)
		}
	}
	if m, ok := spanRow(res, "halfway"); !ok || m.Count != 1 || m.TotalNs != 0 {
		t.Errorf("marker halfway: %+v, want one instant", m)
	}
	var src *api.SpanSource
	for i := range res.Sources {
		if res.Sources[i].Kind == spans.KindGo {
			src = &res.Sources[i]
		}
	}
	if src == nil || src.Received != 3*rounds+1 || src.Dropped != 0 || src.Bad != 0 {
		t.Errorf("Go package source %+v, want %d received, none dropped or bad", src, 3*rounds+1)
	}

	var top api.Top
	e.mustJSON(&top, "top", "--span", "phaseB", "-n", "50")
	if self, _, ok := row(top, "main.phaseBWork"); !ok || self < top.Samples*7/10 || top.Samples < 20 {
		t.Errorf("top --span phaseB: main.phaseBWork has %d of %d samples, want most", self, top.Samples)
	}
	if _, total, ok := row(top, "main.phaseAWork"); ok && total > 0 {
		t.Errorf("top --span phaseB names main.phaseAWork (%d samples)", total)
	}

	// The other views take --span with the same meaning.
	var cl api.Callers
	e.mustJSON(&cl, "callers", "main.phaseBWork", "--span", "phaseB")
	if cl.Window == nil || cl.Window.Span != "phaseB" || cl.Samples != top.Samples {
		t.Errorf("callers --span phaseB: window %+v, %d samples; top --span phaseB has %d", cl.Window, cl.Samples, top.Samples)
	}
	for _, args := range [][]string{
		{"callers", "main.phaseAWork", "--span", "phaseB"},
		{"callees", "main.phaseAWork", "--span", "phaseB"},
		{"annotate", "main.phaseAWork", "--span", "phaseB"},
		{"export", "-f", "folded", "-o", "-", "--span", "nothing"},
		{"annotate", "main.phaseBWork", "--span", "nothing"},
	} {
		if out, errOut, code := e.run(args...); code != 5 {
			t.Errorf("stax %s: exit %d, want 5 (not found)\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	var an struct {
		Annotation struct{ Total uint64 } `json:"annotation"`
		Window     *api.Window            `json:"window"`
	}
	e.mustJSON(&an, "annotate", "main.phaseBWork", "--span", "phaseB")
	bSelf, _, _ := row(top, "main.phaseBWork")
	if an.Window == nil || an.Window.Span != "phaseB" || an.Annotation.Total != bSelf {
		t.Errorf("annotate --span phaseB: window %+v, %d samples; top --span phaseB gives main.phaseBWork %d", an.Window, an.Annotation.Total, bSelf)
	}
	folded, errOut, code := e.run("export", "-f", "folded", "-o", "-", "--span", "phaseA")
	if code != 0 || !strings.Contains(folded, "main.phaseAWork") || strings.Contains(folded, "main.phaseBWork") {
		t.Errorf("export --span phaseA: exit %d, want phaseAWork's stacks alone:\n%.2000s%s", code, folded, errOut)
	}

	// The timeline draws the spans in lanes: the phases below their round, on its thread.
	var tl api.Timeline
	e.mustJSON(&tl, "timeline")
	lanes := map[string]map[int]int{}
	var roundTid uint32
	for _, sp := range tl.Spans {
		if lanes[sp.Name] == nil {
			lanes[sp.Name] = map[int]int{}
		}
		lanes[sp.Name][sp.Lane]++
		if sp.Name == "round" {
			roundTid = sp.Tid
		}
	}
	if lanes["round"][0] != rounds || lanes["phaseA"][1] != rounds || lanes["phaseB"][1] != rounds {
		t.Errorf("timeline lanes: %v, want %d rounds in lane 0 and as many of each phase in lane 1", lanes, rounds)
	}
	if len(tl.Markers) != 1 || tl.Markers[0].Name != "halfway" || tl.Markers[0].Tid == 0 {
		t.Errorf("timeline markers: %+v, want halfway on a thread", tl.Markers)
	}
	text, _, _ := e.run("timeline")
	if !strings.Contains(text, "A round · B phaseA · C phaseB") || !strings.Contains(text, "halfway") || roundTid == 0 {
		t.Errorf("timeline text has no spans legend or markers:\n%s", text)
	}
	t.Logf("\n%s", text)

	// --from mark:halfway starts the window at the marker.
	var half api.Timeline
	e.mustJSON(&half, "timeline", "--from", "mark:halfway")
	if len(half.Markers) != 1 || half.Markers[0].AtSec != half.StartSec || half.Window == nil || half.Window.FromSec != tl.Markers[0].AtSec {
		t.Errorf("timeline --from mark:halfway: window %+v from %.6f s, markers %+v; halfway was at %.6f s", half.Window, half.StartSec, half.Markers, tl.Markers[0].AtSec)
	}
	var nb int
	for _, sp := range half.Spans {
		if sp.Name == "phaseB" {
			nb++
		}
	}
	if nb != rounds-rounds/2 {
		t.Errorf("timeline --from mark:halfway holds %d phaseB spans, want %d", nb, rounds-rounds/2)
	}
	if out, errOut, code := e.run("top", "--from", "mark:nothing"); code != 5 || !strings.Contains(errOut, "no marker or span named") {
		t.Errorf("top --from mark:nothing: exit %d, want 5 saying so\n%s%s", code, out, errOut)
	}
}

// TestSpansFromGoPackageAttached attaches stax to a Go program already running its phases:
// the package sees that it is recorded (the file stax creates in /tmp) and its spans reach
// the run; once stax is done the file is gone.
func TestSpansFromGoPackageAttached(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := filepath.Join(t.TempDir(), "gospans")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", prog, "./internal/e2e/testdata/gospans")
	cmd := exec.Command(prog, "150", "10") // about 4.5 s of rounds
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STAX_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "STAX_JIT_DIR="+t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "not recorded" {
		t.Fatalf("gospans started with %q, want it not recorded yet", sc.Text())
	}
	pid := cmd.Process.Pid
	if out, errOut, code := e.run("record", "-q", "-p", itoa(pid), "-l", "1.5"); code != 0 {
		t.Fatalf("stax record -p: exit %d\n%s%s", code, out, errOut)
	}
	flag := fmt.Sprintf("/tmp/stax-%d.recording", pid)
	if _, err := os.Stat(flag); err == nil {
		t.Errorf("%s is left after the recording", flag)
	}
	var res api.Spans
	e.mustJSON(&res, "spans")
	a, _ := spanRow(res, "phaseA")
	b, _ := spanRow(res, "phaseB")
	var src *api.SpanSource
	for i := range res.Sources {
		if res.Sources[i].Kind == spans.KindGo {
			src = &res.Sources[i]
		}
	}
	t.Logf("phaseA %+v, phaseB %+v, source %+v", a, b, src)
	if a.Count == 0 || b.Count == 0 || src == nil || src.Pid != pid {
		t.Errorf("the attached run has phaseA %+v and phaseB %+v from %+v: want both, from pid %d's Go package", a, b, src, pid)
	}
	for sc.Scan() {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("gospans after the recording: %v", err)
	}
}
