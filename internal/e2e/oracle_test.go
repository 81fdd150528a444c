package e2e

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
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
