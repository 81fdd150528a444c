package e2e

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// optCode is one optimised code object as node --print-opt-code printed it.
type optCode struct {
	name  string
	start uint64
	code  []byte
}

var optInst = regexp.MustCompile(`^0x([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s`)

// parseOptCode reads the code objects node --print-opt-code printed: each one's name,
// then "Instructions (size = N)" and one line per instruction (address, offset, bytes in
// hex, text) up to a blank line. An object whose bytes do not add up to its size, or do not
// follow one another, is left out.
func parseOptCode(t *testing.T, out []byte) []optCode {
	var objs []optCode
	var cur *optCode
	size := -1
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "--- Optimized code ---":
			cur, size = &optCode{}, -1
		case cur == nil:
		case strings.HasPrefix(line, "name = "):
			cur.name = strings.TrimPrefix(line, "name = ")
		case strings.HasPrefix(line, "Instructions (size = "):
			size, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(line, "Instructions (size = "), ")"))
		case size >= 0 && line == "":
			if len(cur.code) == size && size > 0 {
				objs = append(objs, *cur)
			} else {
				t.Logf("print-opt-code: %s at %#x: %d bytes read of %d: left out", cur.name, cur.start, len(cur.code), size)
			}
			cur, size = nil, -1
		case size >= 0:
			m := optInst.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			addr, _ := strconv.ParseUint(m[1], 16, 64)
			b, err := hex.DecodeString(m[2])
			if err != nil {
				continue
			}
			if len(cur.code) == 0 {
				cur.start = addr
			} else if addr != cur.start+uint64(len(cur.code)) {
				size = -2 // not contiguous: the object is left out
				continue
			}
			cur.code = append(cur.code, b...)
		}
	}
	return objs
}

// node --perf-basic-prof runs the churn workload: spinA and spinB compiled afresh every
// round, optimised, then freed, so their new code objects, a throw-away function's code
// and each other's are written at addresses earlier objects held, often with a perf map
// line identical to an earlier one. stax reads perf map code from the process's memory.
// Every code version of spinA and spinB that annotate shows is byte for byte the code
// node --print-opt-code printed for an object of that function at that address (in the
// order the objects came), except where annotate marks bytes as not captured; a version
// whose bytes were not captured says so.
func TestNodePerfMapAnnotateChurn(t *testing.T) {
	testutil.RequirePerf(t)
	node := testutil.RequireTool(t, "node")
	e := newEnv(t)
	work := t.TempDir()
	src, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/churn.js"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(work, "churn.js"), src, 0o644)
	// 12 rounds of 2 x 60 ms of CPU time: about 1.5 s of node.
	rec := e.cmd("record", "-q", "--", node, "--expose-gc", "--perf-basic-prof", "--print-opt-code", "churn.js", "12", "60")
	rec.Dir = work
	var out, errOut bytes.Buffer
	rec.Stdout, rec.Stderr = &out, &errOut
	if err := rec.Run(); err != nil {
		t.Fatalf("record node: %v\n%s", err, errOut.String())
	}
	defer removeJITFiles(t, e)
	if !strings.Contains(out.String(), "rounds 12 ") {
		t.Fatalf("the workload did not finish: %s", errOut.String())
	}
	printed := parseOptCode(t, out.Bytes())
	if len(printed) < 8 {
		t.Fatalf("node --print-opt-code printed %d code objects", len(printed))
	}

	var checked, matched, notCaptured, partial int
	for _, fn := range []string{"spinA", "spinB"} {
		var objs []optCode // this function's, in the order printed
		for _, o := range printed {
			if o.name == fn {
				objs = append(objs, o)
			}
		}
		target := "JS:*" + fn
		text, errText, code := e.run("annotate", "--json", target)
		if code != 0 {
			// No version could be shown: annotate must say why.
			if !strings.Contains(errText, "not captured") && !strings.Contains(errText, "cannot be read") {
				t.Errorf("annotate %s: exit %d without saying the code was not captured: %s", target, code, errText)
			}
			t.Logf("%s: no version shown: %s", fn, strings.TrimSpace(errText))
			continue
		}
		var first api.Annotate
		mustUnmarshal(t, text, &first)
		last := map[uint64]int{} // per address, the index in objs the last version matched
		for _, v := range first.Versions {
			checked++
			text, errText, code := e.run("annotate", "--json", target, "--version", strconv.Itoa(v.Index))
			if code != 0 {
				if v.Error == "" || !strings.Contains(errText, "not captured") && !strings.Contains(errText, "cannot be read") {
					t.Errorf("%s version %d: exit %d: %s (listed error %q)", fn, v.Index, code, errText, v.Error)
				}
				notCaptured++
				continue
			}
			var res api.Annotate
			mustUnmarshal(t, text, &res)
			a := res.Annotation
			if res.Warning != "" {
				t.Errorf("%s version %d at %#x: shown with a warning, not as code not captured: %s", fn, v.Index, v.Start, res.Warning)
			}
			gapped := func(addr uint64) bool {
				for _, g := range a.Gaps {
					if addr >= g.Start && addr < g.End {
						return true
					}
				}
				return false
			}
			// The shown bytes, address by address.
			shown := map[uint64]byte{}
			for _, in := range a.Insts {
				if gapped(in.Addr) {
					continue
				}
				for i, b := range in.Bytes {
					shown[in.Addr+uint64(i)] = b
				}
			}
			if len(a.Gaps) > 0 {
				partial++
			}
			// The printed object it is: at its address, after the one the previous version
			// at that address was.
			found := -1
			for i, o := range objs {
				if o.start != v.Start || uint64(len(o.code)) != v.Size || i < last[v.Start] {
					continue
				}
				same := true
				for off, b := range o.code {
					if got, ok := shown[o.start+uint64(off)]; ok && got != b {
						same = false
						break
					}
				}
				if same {
					found = i
					break
				}
			}
			if found < 0 {
				plain, _, _ := e.run("annotate", target, "--version", strconv.Itoa(v.Index))
				t.Errorf("%s version %d at %#x (%d bytes, %d samples): its bytes are not those node printed for any later %s object there (%s)\n%s",
					fn, v.Index, v.Start, v.Size, v.Samples, fn, compareAll(printed, v.Start, shown), plain)
				continue
			}
			last[v.Start] = found + 1
			matched++
		}
	}
	t.Logf("%d code objects printed; %d versions checked: %d byte-identical (%d of them with gaps), %d not captured",
		len(printed), checked, matched, partial, notCaptured)
	if checked < 4 {
		t.Errorf("only %d versions of spinA and spinB were sampled", checked)
	}
	if matched == 0 {
		t.Errorf("no version of spinA or spinB was shown: all %d not captured", checked)
	}
}

func mustUnmarshal(t *testing.T, text string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(text), v); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, text)
	}
}

// compareAll says, for each printed object at start, how many of the shown bytes differ
// from its own: what a version whose bytes match none of its function's objects shows.
func compareAll(printed []optCode, start uint64, shown map[uint64]byte) string {
	var out []string
	for i, o := range printed {
		if o.start != start {
			continue
		}
		diff, first := 0, -1
		for off, b := range o.code {
			if got, ok := shown[o.start+uint64(off)]; ok && got != b {
				diff++
				if first < 0 {
					first = off
				}
			}
		}
		out = append(out, fmt.Sprintf("object %d %s, %d bytes: %d differ, the first at +%#x", i, o.name, len(o.code), diff, first))
	}
	return strings.Join(out, "; ")
}
