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
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/testutil"
)

// perfSelfShares runs perf record and perf report on the same command and returns each
// symbol's self percentage.
func perfSelfShares(t *testing.T, args ...string) map[string]float64 {
	t.Helper()
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("perf is not installed")
	}
	data := filepath.Join(t.TempDir(), "perf.data")
	rec := exec.Command(perf, append([]string{"record", "-q", "-F", "999", "-g", "-o", data, "--"}, args...)...)
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, out)
	}
	rep := exec.Command(perf, "report", "-i", data, "--stdio", "--no-children", "--sort", "sym", "-q", "-g", "none")
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

// TestSharesAgreeWithPerf records the same program with stax and perf and compares the
// self share of each hot function.
func TestSharesAgreeWithPerf(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildRatio(t)
	if out, errOut, code := e.run("record", "-q", "--", prog, "200000000"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "50")
	perf := perfSelfShares(t, prog, "200000000")
	for _, fn := range []string{"work_a", "work_b", "inner"} {
		var stax float64
		for _, r := range top.Rows {
			if r.Func == fn {
				stax = r.SelfPct
			}
		}
		t.Logf("%-7s stax %5.1f%%  perf %5.1f%%", fn, stax, perf[fn])
		if d := stax - perf[fn]; d > 5 || d < -5 {
			t.Errorf("%s: stax %.1f%% vs perf %.1f%%: more than 5 points apart", fn, stax, perf[fn])
		}
	}
}

// TestAnnotateLinesAgreeWithPerfAnnotate records the same -O2 -g hot loop with stax and with
// perf, and compares the per-source-line shares of the function: stax annotate's hottest
// lines against perf annotate's line summary, within four standard errors.
func TestAnnotateLinesAgreeWithPerfAnnotate(t *testing.T) {
	testutil.RequirePerf(t)
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("perf is not installed")
	}
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/split.c")
	prog := testutil.CC(t, t.TempDir(), "hot", "gcc", "-O2", "-g", "-fno-omit-frame-pointer", src)
	if out, errOut, code := e.run("record", "-q", "--", prog, "go"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var res query.AnnotateResult
	e.mustJSON(&res, "annotate", "split_hot")
	stax := map[string]float64{}
	for _, l := range res.Annotation.HotLines {
		stax[filepath.Base(l.File)+":"+strconv.Itoa(l.Line)] = l.Percent
	}
	data := filepath.Join(t.TempDir(), "perf.data")
	if out, err := exec.Command(perf, "record", "-q", "-F", "999", "-o", data, "--", prog, "go").CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, out)
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
