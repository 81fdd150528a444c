package e2e

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestTopByLineMatchesAnnotate: stax top --by line names the hottest line of a function
// built with -g, with the samples stax annotate gives that line: both count the same
// samples, by the address each landed at.
func TestTopByLineMatchesAnnotate(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/split.c")
	prog := testutil.CC(t, t.TempDir(), "hot", "gcc", "-O2", "-g", "-fno-omit-frame-pointer", src)
	if out, errOut, code := e.run("record", "-q", "--", prog, "500"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var top api.Top
	e.mustJSON(&top, "top", "--by", "line", "-n", "1000")
	if top.By != agg.ByLine {
		t.Fatalf("top --by line answered by %q", top.By)
	}
	var hot api.TopRow
	for _, r := range top.Rows {
		if r.Func == "split_hot" && r.Self > hot.Self {
			hot = r
		}
	}
	var res api.Annotate
	e.mustJSON(&res, "annotate", "split_hot")
	a := res.Annotation
	if len(a.HotLines) == 0 || a.Total < 200 {
		t.Fatalf("annotate split_hot: %d samples, hot lines %+v (about 500 expected from 0.5 s of CPU time)", a.Total, a.HotLines)
	}
	want := a.HotLines[0]
	t.Logf("top --by line: %s:%d %d samples; annotate: %s:%d %d samples", hot.File, hot.Line, hot.Self, want.File, want.Line, want.Samples)
	if filepath.Base(hot.File) != "split.c" || hot.File != want.File || hot.Line != want.Line || hot.Self != want.Samples {
		t.Errorf("top --by line's hottest line of split_hot is %s:%d (%d samples), annotate's %s:%d (%d samples)",
			hot.File, hot.Line, hot.Self, want.File, want.Line, want.Samples)
	}
	text, _, _ := e.run("top", "--by", "line")
	if want := fmt.Sprintf("split.c:%d  split_hot  [", want.Line); !strings.Contains(text, want) {
		t.Errorf("text top --by line lacks %q:\n%s", want, text)
	}
}

// TestNoInlineMatchesPerf records one run of a program whose hot helpers are inlined with
// stax and perf at once: with --no-inline, the function they are inlined into has the self
// share perf report --no-children gives it (within 2 points); with --inline (the default),
// the helper has a row of its own.
func TestNoInlineMatchesPerf(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/inline.cc")
	prog := testutil.CC(t, t.TempDir(), "inline", "g++", "-O2", "-g", "-fno-omit-frame-pointer", src)
	data := recordBoth(t, e, []string{"-g"}, prog, "2000")
	out, err := exec.Command("perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "sym", "-q", "-g", "none", "--comm", "inline").Output()
	if err != nil {
		t.Fatalf("perf report: %v", err)
	}
	line := regexp.MustCompile(`^\s*([0-9.]+)%\s+\[[.k]\]\s+(\S.*?)\s*$`)
	var perfCrunch float64
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if m := line.FindStringSubmatch(sc.Text()); m != nil && strings.HasPrefix(m[2], "num::crunch") {
			v, _ := strconv.ParseFloat(m[1], 64)
			perfCrunch += v
		}
	}
	staxSelf := func(args ...string) (api.Top, map[string]float64) {
		var top api.Top
		e.mustJSON(&top, append([]string{"top", "-n", "1000", "--comm", "inline", "--short"}, args...)...)
		self := map[string]float64{}
		for _, r := range top.Rows {
			self[r.Func] += r.SelfPct
		}
		return top, self
	}
	top, noInline := staxSelf("--no-inline")
	if top.Samples < 1000 || perfCrunch < 50 {
		t.Fatalf("too few samples to judge: stax %d, perf gives num::crunch %.1f%% (about 2,000 expected from 2 s of CPU time)\n%s", top.Samples, perfCrunch, out)
	}
	t.Logf("num::crunch self: stax --no-inline %.2f%%, perf report %.2f%%", noInline["num::crunch"], perfCrunch)
	if math.Abs(noInline["num::crunch"]-perfCrunch) > 2 {
		t.Errorf("num::crunch: stax top --no-inline %.2f%%, perf report --no-children %.2f%%: more than 2 points apart", noInline["num::crunch"], perfCrunch)
	}
	for _, inlined := range []string{"step", "mixbits"} {
		if _, ok := noInline[inlined]; ok {
			t.Errorf("top --no-inline has a row for %s, which is inlined", inlined)
		}
	}
	_, inline := staxSelf("--inline")
	if inline["step"]+inline["mixbits"] < 20 || inline["num::crunch"] >= noInline["num::crunch"] {
		t.Errorf("top --inline: step %.1f%%, mixbits %.1f%%, num::crunch %.1f%%; want the inlined helpers to hold most of crunch's %.1f%%",
			inline["step"], inline["mixbits"], inline["num::crunch"], noInline["num::crunch"])
	}
}

// callSiteLines returns the lines of callers.c where path_a and path_b call hot_leaf.
func callSiteLines(t *testing.T, src string) (a, b int) {
	t.Helper()
	text, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(text), "\n") {
		switch {
		case strings.HasPrefix(l, "void path_a(") && strings.Contains(l, "hot_leaf("):
			a = i + 1
		case strings.HasPrefix(l, "void path_b(") && strings.Contains(l, "hot_leaf("):
			b = i + 1
		}
	}
	if a == 0 || b == 0 {
		t.Fatalf("%s: no line where path_a or path_b calls hot_leaf", src)
	}
	return a, b
}

// TestPprofExportKeepsCallSites: hot_leaf is called from path_a (one part of the work) and
// path_b (three parts). The pprof export of a run of it has the lines of the two calls, so
// go tool pprof -lines -top lists them with the 1:3 split and -traces shows them under
// hot_leaf; the program's image is the first mapping, with its build-id, so -list shows
// hot_leaf's source with its samples and -disasm its instructions with theirs; stax
// callers --by line gives the same lines.
func TestPprofExportKeepsCallSites(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/callers.c")
	dir := t.TempDir()
	prog := testutil.CC(t, dir, "callers", "gcc", append(cflags, src)...)
	lineA, lineB := callSiteLines(t, src)
	if out, errOut, code := e.run("record", "-q", "--", prog, "500"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	file := filepath.Join(dir, "run.pb.gz")
	if out, errOut, code := e.run("export", "-f", "pprof", "-o", file); code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, out, errOut)
	}
	pprof := func(args ...string) string {
		out, err := exec.Command("go", append([]string{"tool", "pprof"}, append(args, file)...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go tool pprof %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	top := pprof("-lines", "-top", "-nodecount", "1000")
	if !strings.Contains(top, "File: callers\n") || !regexp.MustCompile(`Build ID: [0-9a-f]{40}`).MatchString(top) {
		t.Errorf("pprof -top does not name the program's image and build-id first:\n%.600s", top)
	}
	// flat, flat%, sum%, cum, cum%, then the function and its file:line.
	cum := func(fn string, line int) float64 {
		re := regexp.MustCompile(`(?m)^\s*\S+\s+\S+%\s+\S+%\s+\S+\s+([\d.]+)%\s+` + fn + ` \S*callers\.c:` + strconv.Itoa(line) + `\s*$`)
		m := re.FindStringSubmatch(top)
		if m == nil {
			t.Fatalf("pprof -lines -top lists no %s at callers.c:%d (its call of hot_leaf):\n%s", fn, line, top)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	a, b := cum("path_a", lineA), cum("path_b", lineB)
	var c api.Callers
	e.mustJSON(&c, "callers", "^hot_leaf$", "--by", "line")
	if len(c.Functions) != 1 || len(c.Functions[0].Rows) < 2 {
		t.Fatalf("callers of hot_leaf by line: %+v", c.Functions)
	}
	rows := c.Functions[0].Rows
	if rows[0].Func != "path_b" || rows[0].Line != lineB || rows[1].Func != "path_a" || rows[1].Line != lineA {
		t.Errorf("callers of hot_leaf by line: %+v; want path_b at callers.c:%d, then path_a at callers.c:%d", rows, lineB, lineA)
	}
	checkSplit(t, "callers by line", rows[1].Total, rows[0].Total)
	n := float64(c.Samples)
	checkSplit(t, "pprof call sites", uint64(a*n/100), uint64(b*n/100))

	traces := pprof("-traces", "-lines")
	for _, want := range []string{fmt.Sprintf("path_a %s:%d", src, lineA), fmt.Sprintf("path_b %s:%d", src, lineB)} {
		if !regexp.MustCompile(`hot_leaf \S+callers\.c:\d+\n\s+` + regexp.QuoteMeta(want) + "\n").MatchString(traces) {
			t.Errorf("pprof -traces -lines shows no %s under hot_leaf:\n%.3000s", want, traces)
		}
	}

	// -list: hot_leaf's source, its loop's lines with samples.
	list := pprof("-list", "^hot_leaf$")
	loop := regexp.MustCompile(`(?m)^\s+(\d[\d.]*\w*)\s+\S+\s+\d+:\s+sink \+= i;`)
	if !strings.Contains(list, "ROUTINE ======================== hot_leaf in "+src) || !loop.MatchString(list) {
		t.Errorf("pprof -list hot_leaf shows no source line of hot_leaf with samples:\n%s", list)
	}
	// -disasm: hot_leaf's instructions, read from the binary, with samples.
	disasm := pprof("-disasm", "hot_leaf")
	insts := regexp.MustCompile(`(?m)^\s+[\d.]+\w*s\s+\S+\s+[0-9a-f]+: \S`).FindAllString(disasm, -1)
	if !strings.Contains(disasm, "ROUTINE ======================== hot_leaf") || len(insts) == 0 {
		t.Errorf("pprof -disasm hot_leaf shows no instruction with samples:\n%s", disasm)
	}
}
