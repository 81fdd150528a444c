package collectorabi

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// collectorDir is the collector's source directory.
const collectorDir = "../../collector"

// The collector's C headers (stax_itt.h, stax_abi.h) define what this package does: a
// program compiled against them prints every constant, which must be this package's.
func TestCollectorHeadersMatchGo(t *testing.T) {
	cc := strings.Fields(os.Getenv("CC"))
	if len(cc) == 0 {
		cc = []string{"cc"}
	}
	if _, err := exec.LookPath(cc[0]); err != nil {
		if os.Getenv("STAX_REQUIRE_CC") == "1" {
			t.Fatalf("no C compiler: %v", err)
		}
		t.Skipf("no C compiler (%v): the collector's headers cannot be compared", err)
	}
	prog := filepath.Join(t.TempDir(), "ittlayout")
	args := append(cc[1:], "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-o", prog, filepath.Join(collectorDir, "testdata", "ittlayout.c"))
	if out, err := exec.Command(cc[0], args...).CombinedOutput(); err != nil {
		t.Fatalf("compile ittlayout.c: %v\n%s", err, out)
	}
	out, err := exec.Command(prog).Output()
	if err != nil {
		t.Fatalf("run ittlayout: %v", err)
	}
	ints, strs := map[string]uint64{}, map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) != 3 {
			t.Fatalf("unexpected line %q", line)
		}
		switch f[0] {
		case "int":
			v, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			ints[f[1]] = v
		case "str":
			v, ok := strings.CutPrefix(f[2], "[")
			if v, ok = strings.CutSuffix(v, "]"); !ok {
				t.Fatalf("unexpected line %q", line)
			}
			strs[f[1]] = v
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	wantInts := map[string]uint64{
		"ITT_FILE_MAGIC_LEN":     uint64(len(SpansMagicV2)),
		"ITT_FILE_MAGIC_VERSION": uint64(SpansMagicV2[7]),
		"ITT_HEADER":             HeaderV2Size,
		"ITT_HDR_PID":            HdrPid,
		"ITT_HDR_SIZE":           HdrSize,
		"ITT_HDR_START":          HdrStart,
		"ITT_HDR_DROPPED":        HdrDropped,
		"ITT_HDR_FAILED":         HdrFailedWrites,
		"ITT_HDR_ERRNO":          HdrErrno,
		"ITT_NAME":               RecName,
		"ITT_TASK":               RecTask,
		"ITT_MARK":               RecMark,
		"ITT_DROP":               RecDrop,
		"ITT_NOTE":               RecNote,
		"ITT_TASK_UNFINISHED":    TaskUnfinished,
		"ITT_MAX_NAME":           MaxName,
		"ITT_MAX_DEPTH":          MaxDepth,
	}
	wantStrs := map[string]string{
		"ITT_FILE_MAGIC_TEXT": SpansMagicV2[:7],
		"ENV_JIT_PROFILER64":  EnvJITProfiler64,
		"ENV_ITT64":           EnvITT64,
		"ENV_COLLECT":         EnvCollect,
		"ENV_DIR":             EnvDir,
		"ENV_ITT_MAX_MB":      EnvITTMaxMB,
		"DEFAULT_DIR":         DefaultDir,
		"ITT_SPANS_PREFIX":    ITTSpansPrefix,
		"SPANS_SUFFIX":        SpansSuffix,
	}
	for k, want := range wantInts {
		if got, ok := ints[k]; !ok || got != want {
			t.Errorf("%s: C %d (printed: %v), Go %d", k, got, ok, want)
		}
		delete(ints, k)
	}
	for k, want := range wantStrs {
		if got, ok := strs[k]; !ok || got != want {
			t.Errorf("%s: C %q (printed: %v), Go %q", k, got, ok, want)
		}
		delete(strs, k)
	}
	if len(ints)+len(strs) > 0 {
		t.Errorf("C constants this test does not compare: %v %v", ints, strs)
	}
	if SpansMagicV1[:7] != SpansMagicV2[:7] || SpansMagicV1[7] != 1 {
		t.Errorf("version 1 magic %q does not go with %q", SpansMagicV1, SpansMagicV2)
	}
}

// collector/build.sh builds the library named LibName: build.conf, which it reads, says so.
func TestBuildConfNamesLib(t *testing.T) {
	f, err := os.Open(filepath.Join(collectorDir, "build.conf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("build.conf: unexpected line %q", line)
		}
		vars[k] = strings.Trim(v, `"`)
	}
	if vars["LIB"] != LibName {
		t.Errorf("build.conf: LIB=%q, Go's LibName %q", vars["LIB"], LibName)
	}
	for _, s := range strings.Fields(vars["SOURCES"]) {
		if _, err := os.Stat(filepath.Join(collectorDir, s)); err != nil {
			t.Errorf("build.conf: source %s: %v", s, err)
		}
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{ITTSpansName(42), "itt-42.spans"},
		{GoSpansName(42), "stax-42.spans"},
		{AttachName(42), "stax-42.recording"},
		{AttachPath(42), "/tmp/stax-42.recording"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}
