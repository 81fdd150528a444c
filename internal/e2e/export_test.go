package e2e

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// pprofFlat reads `go tool pprof -top` output: flat percent by function name.
func pprofFlat(t *testing.T, text string) map[string]float64 {
	t.Helper()
	row := regexp.MustCompile(`^\s*[\d.]+\w*\s+([\d.]+)%\s+[\d.]+%\s+[\d.]+\w*\s+[\d.]+%\s+(.+?)\s*$`)
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		out[m[2]] += v
	}
	return out
}

// The toy JIT's run exported to pprof: go tool pprof names the JIT functions and gives them
// the shares stax top gives; the folded, speedscope and SVG exports hold the same samples.
func TestExportMatchesTop(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	toy := filepath.Join(t.TempDir(), "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")
	if out, errOut, code := e.run("record", "-q", "--", toy, "-cpu", "1s"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "1000")
	dir := t.TempDir()
	file := filepath.Join(dir, "run.pb.gz")
	if out, errOut, code := e.run("export", "--format", "pprof", "-o", file); code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, out, errOut)
	}
	goTool := func(args ...string) string {
		out, err := exec.Command("go", append([]string{"tool", "pprof"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go tool pprof %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	// top counts samples; pprof's default, cpu, weighs each by its thread's time on CPU
	// from the switch records (docs/export.md), which moves shares by a fraction of a point.
	flat := pprofFlat(t, goTool("-top", "-sample_index=samples", "-nodecount", "1000", file))
	for _, fn := range []string{"jitted_func1", "jitted_func2"} {
		var want float64
		for _, r := range top.Rows {
			if r.Func == fn {
				want = r.SelfPct
			}
		}
		if want < 10 {
			t.Fatalf("stax top gives %s %.2f%%: the recording is too thin\n%+v", fn, want, top.Rows)
		}
		if got, ok := flat[fn]; !ok || got < want-0.02 || got > want+0.02 {
			t.Errorf("%s: pprof flat %.2f%% (listed: %v), stax top self %.2f%%", fn, got, ok, want)
		}
	}
	if traces := goTool("-traces", file); !strings.Contains(traces, "jitted_func2") || !strings.Contains(traces, "main.main") {
		t.Errorf("pprof -traces lacks the JIT function under main.main:\n%.2000s", traces)
	}

	// folded: the counts sum to the run's samples.
	folded, _, code := e.run("export", "-f", "folded", "-o", "-")
	var sum uint64
	for _, line := range strings.Split(strings.TrimSpace(folded), "\n") {
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseUint(line[i+1:], 10, 64)
		if code != 0 || i < 0 || err != nil {
			t.Fatalf("folded line %q (exit %d)", line, code)
		}
		sum += n
	}
	if sum != top.Samples || !strings.Contains(folded, "jitted_func2_[j]") {
		t.Errorf("folded: %d samples (want %d), JIT frames marked: %v", sum, top.Samples, strings.Contains(folded, "jitted_func2_[j]"))
	}
	// svg: well-formed, and names the hottest function.
	svgFile := filepath.Join(dir, "run.svg")
	if out, errOut, code := e.run("export", "-f", "svg", "-o", svgFile); code != 0 {
		t.Fatalf("export svg: exit %d\n%s%s", code, out, errOut)
	}
	svg, _ := os.ReadFile(svgFile)
	if err := xml.Unmarshal(svg, new(struct{})); err != nil || !strings.Contains(string(svg), "jitted_func2") {
		t.Errorf("svg: %v, names jitted_func2: %v", err, strings.Contains(string(svg), "jitted_func2"))
	}
}

// Inline frames reach pprof as lines of one location: -lines shows them marked inline.
func TestExportPprofInlineLines(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/inline.cc")
	dir := t.TempDir()
	prog := testutil.CC(t, dir, "inline", "g++", "-O2", "-g", "-fno-omit-frame-pointer", src)
	if out, errOut, code := e.run("record", "-q", "--", prog, "300"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	file := filepath.Join(dir, "run.pb.gz")
	if out, errOut, code := e.run("export", "-f", "pprof", "-o", file); code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, out, errOut)
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", "-lines", file).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`step \S*inline\.cc\S* \(inline\)`).Match(out) || !strings.Contains(string(out), "num::crunch") {
		t.Errorf("pprof -lines shows no inline frame of step within num::crunch:\n%s", out)
	}
}

// The pprof export of a real run with off-CPU time: its mappings do not overlap, the
// program's executable comes first (pprof titles the profile after it) though it was
// started through a link of another name, as python3 leads to python3.11, and the frames an
// off-CPU stack begins with ([sched]: runnable, the thread woken) have no mapping.
func TestExportPprofMappings(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	dir := t.TempDir()
	prog := buildOffCPU(t, dir)
	app := filepath.Join(dir, "app")
	if err := os.Symlink(prog, app); err != nil {
		t.Fatal(err)
	}
	for _, flags := range [][]string{nil, {"--no-off-cpu"}} {
		args := append(append([]string{"record", "-q"}, flags...), "--", app, "pingpong", "20000")
		if out, errOut, code := e.run(args...); code != 0 {
			t.Fatalf("record %v: exit %d\n%s%s", flags, code, out, errOut)
		}
		file := filepath.Join(dir, "run.pb.gz")
		if out, errOut, code := e.run("export", "-f", "pprof", "-o", file); code != 0 {
			t.Fatalf("export: exit %d\n%s%s", code, out, errOut)
		}
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.Parse(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Mapping) == 0 || filepath.Base(p.Mapping[0].File) != "offcpu" {
			t.Errorf("record %v: first mapping %+v, want the program's (offcpu)", flags, p.Mapping[0])
		}
		for i, a := range p.Mapping {
			if strings.Contains(a.File, "[sched]") {
				t.Errorf("record %v: mapping %s %#x-%#x", flags, a.File, a.Start, a.Limit)
			}
			for _, b := range p.Mapping[i+1:] {
				if a.Start < b.Limit && b.Start < a.Limit {
					t.Errorf("record %v: mappings overlap: %s %#x-%#x and %s %#x-%#x", flags, a.File, a.Start, a.Limit, b.File, b.Start, b.Limit)
				}
			}
		}
		markers := 0
		for _, l := range p.Location {
			if len(l.Line) > 0 && strings.HasPrefix(l.Line[len(l.Line)-1].Function.Name, "[") {
				markers++
				if l.Mapping != nil || l.Address != 0 {
					t.Errorf("record %v: off-CPU frame %s at %#x in mapping %+v", flags, l.Line[0].Function.Name, l.Address, l.Mapping)
				}
			}
		}
		t.Logf("record %v: %d mappings, first %s; %d locations of off-CPU frames", flags, len(p.Mapping), p.Mapping[0].File, markers)
		if flags == nil && markers == 0 {
			t.Errorf("the off-CPU run has no [runnable] or [woke ...] frame in its pprof export")
		}
	}
}
