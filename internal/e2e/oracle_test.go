package e2e

import (
	"bufio"
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// recordBoth records one run of a command with stax and perf at once: stax records perf
// record, which runs the command, so both tools sample the same execution and only the
// sampling itself can set them apart. It returns perf's data file.
func recordBoth(t *testing.T, e *staxEnv, perfFlags []string, args ...string) string {
	t.Helper()
	perf := testutil.RequireTool(t, "perf")
	data := filepath.Join(t.TempDir(), "perf.data")
	cmd := append([]string{"record", "-q", "--", perf, "record", "-q", "-F", "999", "-o", data}, perfFlags...)
	cmd = append(append(cmd, "--"), args...)
	if out, errOut, code := e.run(cmd...); code != 0 {
		t.Fatalf("stax record -- perf record: exit %d\n%s%s", code, out, errOut)
	}
	return data
}

// perfSelfShares runs perf report on a data file and returns each symbol's self percentage.
func perfSelfShares(t *testing.T, data string) map[string]float64 {
	t.Helper()
	rep := exec.Command("perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "sym", "-q", "-g", "none")
	out, err := rep.Output()
	if err != nil {
		t.Fatalf("perf report: %v", err)
	}
	line := regexp.MustCompile(`^\s*([0-9.]+)%\s+\[[.k]\]\s+(\S.*?)\s*$`)
	shares := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if m := line.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			shares[m[2]] += v
		}
	}
	return shares
}

// TestSharesAgreeWithPerf records one run of a program with stax and perf at once and
// compares the self share of each hot function among the three.
func TestSharesAgreeWithPerf(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildRatio(t)
	data := recordBoth(t, e, []string{"-g"}, prog, "300")
	var top api.Top
	e.mustJSON(&top, "top", "-n", "50")
	perf := perfSelfShares(t, data)
	fns := []string{"work_a", "work_b", "inner"}
	staxPct := map[string]float64{}
	var staxSum, perfSum float64
	for _, fn := range fns {
		for _, r := range top.Rows {
			if r.Func == fn {
				staxPct[fn] = r.SelfPct
			}
		}
		staxSum += staxPct[fn]
		perfSum += perf[fn]
	}
	if staxSum == 0 || perfSum == 0 {
		t.Fatalf("no samples in %v: stax %v, perf %v", fns, top.Rows, perf)
	}
	n := float64(top.Samples) * staxSum / 100
	for _, fn := range fns {
		s, p := staxPct[fn]*100/staxSum, perf[fn]*100/perfSum
		q := (s + p) / 200
		tol := math.Max(1, 5*100*math.Sqrt(2*q*(1-q)/n))
		t.Logf("%-7s stax %5.1f%%  perf %5.1f%%  (tolerance %.1f)", fn, s, p, tol)
		if math.Abs(s-p) > tol {
			t.Errorf("%s: stax %.1f%% vs perf %.1f%%: more than %.1f points apart", fn, s, p, tol)
		}
	}
}

// TestAnnotateLinesAgreeWithPerfAnnotate records one run of an -O2 -g hot loop with stax and
// perf at once, and compares the per-source-line shares of the function: stax annotate's hottest
// lines against perf annotate's line summary, within four standard errors.
func TestAnnotateLinesAgreeWithPerfAnnotate(t *testing.T) {
	testutil.RequirePerf(t)
	perf := testutil.RequireTool(t, "perf")
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/split.c")
	prog := testutil.CC(t, t.TempDir(), "hot", "gcc", "-O2", "-g", "-fno-omit-frame-pointer", src)
	data := recordBoth(t, e, nil, prog, "go")
	var res api.Annotate
	e.mustJSON(&res, "annotate", "split_hot")
	stax := map[string]float64{}
	for _, l := range res.Annotation.HotLines {
		stax[filepath.Base(l.File)+":"+strconv.Itoa(l.Line)] = l.Percent
	}
	out, err := exec.Command(perf, "annotate", "-i", data, "--stdio", "-l", "-s", "split_hot").Output()
	if err != nil {
		t.Fatalf("perf annotate: %v", err)
	}
	perfLines := map[string]float64{}
	summary := regexp.MustCompile(`^\s+([0-9.]+)\s+(\S+:\d+)\s*$`)
	samples := regexp.MustCompile(`\((\d+) samples`)
	var perfN float64
	for _, line := range strings.Split(string(out), "\n") {
		if m := summary.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			perfLines[m[2]] = v
		}
		if m := samples.FindStringSubmatch(line); m != nil && perfN == 0 {
			perfN, _ = strconv.ParseFloat(m[1], 64)
		}
	}
	if len(perfLines) == 0 || perfN == 0 {
		t.Fatalf("no line summary from perf annotate:\n%s", out)
	}
	staxN := float64(res.Annotation.Total)
	for line, p := range perfLines {
		s := stax[line]
		q := (p + s) / 200
		se := 100 * math.Sqrt(q*(1-q)/staxN+q*(1-q)/perfN)
		t.Logf("%-12s stax %5.1f%%  perf %5.1f%%  (4 standard errors: %.1f)", line, s, p, 4*se)
		if math.Abs(s-p) > math.Max(4*se, 2) {
			t.Errorf("%s: stax %.1f%% vs perf annotate %.1f%%", line, s, p)
		}
	}
}
