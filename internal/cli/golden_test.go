package cli

import (
	"bytes"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// loopCode is a function like the toy JIT's: push rbp; mov rbp,rsp; mov rax,0; mov rcx,N;
// loop: cmp rax,rcx; je done; add rax,1; jmp loop; done: pop rbp; ret.
func loopCode(n uint64) []byte {
	c := []byte{0x55, 0x48, 0x89, 0xe5, 0x48, 0xc7, 0xc0, 0, 0, 0, 0, 0x48, 0xb9}
	c = binary.LittleEndian.AppendUint64(c, n)
	return append(c, 0x48, 0x39, 0xc8, 0x74, 0x06, 0x48, 0x83, 0xc0, 0x01, 0xeb, 0xf5, 0x5d, 0xc3)
}

// fixtureRun is a small run with every kind of frame: two JIT functions with code bytes
// and line tables, native frames with files and lines, an inlined frame, kernel frames,
// an unnamed frame, and two named threads. Its stacks' locations have addresses, source
// lines and mappings (the program's image, its JIT code, the kernel). Everything in it is
// fixed, so the output of every command over it is too.
func fixtureRun(id string, finished bool) *store.Run {
	const base = 0x7f0000001000
	exit := 0
	frames := []agg.Frame{
		{Func: "main", Image: "/opt/app/bin/app", Kind: agg.KindUser, File: "app.c", Line: 40},
		{Func: "run_jit", Image: "/opt/app/bin/app", Kind: agg.KindUser, File: "app.c", Line: 21},
		{Func: "jitted_func1", Image: "[jit]", Kind: agg.KindJIT, File: "loops.toy", Line: 4},
		{Func: "jitted_func2", Image: "[jit]", Kind: agg.KindJIT, File: "loops.toy", Line: 12},
		{Func: "mix", Image: "/opt/app/bin/app", Kind: agg.KindUser, Inlined: true, File: "app.c", Line: 9},
		{Func: "asm_exc_page_fault", Image: "[kernel.kallsyms]", Kind: agg.KindKernel},
		{Func: "[unknown] 0x7f00000ff000", Image: "[unknown]", Kind: agg.KindUnknown},
	}
	mappings := []agg.Mapping{
		{Pid: 100, Start: 0x401000, Limit: 0x402000, Offset: 0x1000, File: "/opt/app/bin/app", BuildID: "00112233445566778899aabbccddeeff00112233"},
		{Pid: 100, File: "[jit]"},
		{File: "[kernel.kallsyms]"},
	}
	const app, jit, kernel = 1, 2, 3
	loc := func(addr uint64, mapping uint32, lines ...agg.Line) agg.Location {
		return agg.Location{Addr: addr, Mapping: mapping, Lines: lines}
	}
	locations := []agg.Location{
		loc(base+21, jit, agg.Line{Func: 2, Line: 5}),                                // 0: jitted_func1
		loc(base+26, jit, agg.Line{Func: 2, Line: 6}),                                // 1: jitted_func1
		loc(0x401107, app, agg.Line{Func: 1, Line: 25}),                              // 2: run_jit calls the JIT code
		loc(0x401207, app, agg.Line{Func: 0, Line: 44}),                              // 3: main calls run_jit
		loc(base+64+21, jit, agg.Line{Func: 3, Line: 13}),                            // 4: jitted_func2
		loc(base+64+30, jit, agg.Line{Func: 3, Line: 14}),                            // 5: jitted_func2
		loc(0x401234, app, agg.Line{Func: 4, Line: 10}, agg.Line{Func: 1, Line: 23}), // 6: mix inlined into run_jit
		loc(0xffffffff81001000, kernel, agg.Line{Func: 5}),                           // 7: a page fault
		loc(base+64+29, jit, agg.Line{Func: 3, Line: 14}),                            // 8: jitted_func2, interrupted
		loc(0x7f00000ff000, 0, agg.Line{Func: 6}),                                    // 9: unnamed
		loc(0x401217, app, agg.Line{Func: 0, Line: 45}),                              // 10: main calls into unnamed code
	}
	stacks := [][]uint32{
		{0, 2, 3},    // jitted_func1 <- run_jit <- main
		{1, 2, 3},    // the same, at another address
		{4, 2, 3},    // jitted_func2 <- run_jit <- main
		{5, 2, 3},    // the same, at another address
		{6, 3},       // mix (inlined into run_jit) <- main
		{7, 8, 2, 3}, // a page fault in jitted_func2
		{9, 10},
	}
	entries := []agg.Entry{
		{Tid: 101, Pid: 100, Stack: 0, Count: 300, Leaf: base + 21, LeafFunc: 2, Time: 1000},
		{Tid: 101, Pid: 100, Stack: 1, Count: 200, Leaf: base + 26, LeafFunc: 2, Time: 1001},
		{Tid: 102, Pid: 100, Stack: 2, Count: 700, Leaf: base + 64 + 21, LeafFunc: 3, Time: 1002},
		{Tid: 102, Pid: 100, Stack: 3, Count: 290, Leaf: base + 64 + 30, LeafFunc: 3, Time: 1003},
		{Tid: 101, Pid: 100, Stack: 4, Count: 40, Leaf: 0x401234, LeafFunc: 1, Time: 1004},
		{Tid: 102, Pid: 100, Stack: 5, Count: 10, Leaf: 0xffffffff81001000, LeafFunc: 3, Time: 1005},
		{Tid: 101, Pid: 100, Stack: 6, Count: 5, Leaf: 0x7f00000ff000, LeafFunc: -1, Time: 1006},
	}
	lines := func(addr uint64, decl int) []store.Line {
		return []store.Line{{Addr: addr, File: "loops.toy", Line: decl}, {Addr: addr + 21, File: "loops.toy", Line: decl + 1},
			{Addr: addr + 26, File: "loops.toy", Line: decl + 2}, {Addr: addr + 32, File: "loops.toy", Line: decl + 3}}
	}
	code1, code2 := loopCode(1<<22), loopCode(1<<23)
	return &store.Run{
		Meta: store.Meta{
			ID: id, Command: []string{"/opt/app/bin/app", "--jit"}, Pid: 100, Freq: 999, Event: "cpu-clock",
			Start: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), End: time.Date(2026, 11, 1, 12, 0, 2, 500e6, time.UTC),
			Finished: finished, ExitCode: &exit, Samples: 1545, Lost: 3, Unresolved: 1, RingPages: 256,
			LostByCPU: map[string]uint64{"0": 1, "1": 2}, LostByThread: map[string]uint64{"102": 2}, BadRecords: 1,
			Notes: []string{"no symbols for /opt/app/lib/libgone.so: open image: no such file or directory"},
		},
		Profile: agg.Profile{
			Frames: frames, Mappings: mappings, Locations: locations, Stacks: stacks, Entries: entries,
			Threads: []agg.ThreadInfo{{Tid: 101, Pid: 100, Name: "worker-a"}, {Tid: 102, Pid: 100, Name: "worker-b"}},
		},
		JIT: []store.JITSource{{Pid: 100, Path: "/tmp/jit-100.dump", Kind: "jitdump", Functions: 2, Records: 5}},
		Code: []store.Code{
			{Frame: 2, Pid: 100, Start: base, Size: uint64(len(code1)), Arch: 62, Bytes: code1, Lines: lines(base, 4)},
			{Frame: 3, Pid: 100, Start: base + 64, Size: uint64(len(code2)), Arch: 62, Bytes: code2, Lines: lines(base+64, 12)},
		},
	}
}

// TestGolden runs every query command, text and --json, over stored fixture runs and
// compares the output with testdata/golden (go test ./internal/cli -run TestGolden -update
// rewrites them).
func TestGolden(t *testing.T) {
	home := t.TempDir()
	t.Setenv("STAX_HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", "")
	for _, r := range []*store.Run{fixtureRun("20261101-120000-100", true), fixtureRun("20261101-115900-99", false)} {
		if err := store.Save(store.Path(r.Meta.ID), r); err != nil {
			t.Fatal(err)
		}
	}
	older := time.Date(2026, 11, 1, 11, 59, 0, 0, time.UTC)
	os.Chtimes(store.Path("20261101-115900-99"), older, older)
	cases := []struct {
		name string
		args []string
	}{
		{"top", []string{"top"}},
		{"top-total", []string{"top", "--sort", "total", "-n", "3"}},
		{"top-tid", []string{"top", "--tid", "102"}},
		{"flame", []string{"flame", "--threshold-pct", "0"}},
		{"flame-inverted", []string{"flame", "--inverted", "--threshold-pct", "0"}},
		{"flame-hide", []string{"flame", "--hide", "^run_jit$", "--threshold-pct", "0"}},
		{"flame-under", []string{"flame", "--under", "main", "--under", "run_jit", "--threshold-pct", "40"}},
		{"flame-callers-of", []string{"flame", "--callers-of", "^jitted_func", "--threshold-pct", "0"}},
		{"flame-callees-of", []string{"flame", "--callees-of", "^run_jit$", "--threshold-pct", "0"}},
		{"callers", []string{"callers", "run_jit"}},
		{"callers-regex", []string{"callers", "^jitted_func[12]$", "--tid", "102"}},
		{"callees", []string{"callees", "RUN_JIT"}},
		{"callees-focus", []string{"callees", "jitted_func2", "--focus", "run_jit", "--fold-recursion", "--collapse-image", "kernel.kallsyms"}},
		{"top-focus", []string{"top", "--focus", "jitted_func2"}},
		{"top-by-line", []string{"top", "--by", "line"}},
		{"top-by-address", []string{"top", "--by", "address", "-n", "6"}},
		{"top-by-image", []string{"top", "--by", "image"}},
		{"top-no-inline", []string{"top", "--no-inline"}},
		{"flame-by-line", []string{"flame", "--by", "line", "--threshold-pct", "0"}},
		{"flame-by-image-no-inline", []string{"flame", "--by", "image", "--no-inline", "--threshold-pct", "0"}},
		{"callers-by-line", []string{"callers", "run_jit", "--by", "line"}},
		{"top-ignore", []string{"top", "--ignore", "^jitted", "--hide", "run_jit"}},
		{"threads-focus", []string{"threads", "--focus", "jitted_func1"}},
		{"threads", []string{"threads"}},
		{"status", []string{"status"}},
		{"status-crashed", []string{"status", "--run", "20261101-115900-99"}},
		{"annotate", []string{"annotate", "jitted_func2"}},
		{"annotate-ambiguous", []string{"annotate", "jitted"}},
		{"annotate-focus", []string{"annotate", "jitted", "--focus", "jitted_func1"}},
		{"list", []string{"list"}},
		{"wait", []string{"wait", "--run", "20261101-120000-100", "--for-samples", "1000"}},
	}
	for _, c := range cases {
		for _, asJSON := range []bool{false, true} {
			name, args := c.name, c.args
			if asJSON {
				name, args = name+".json", append(append([]string(nil), args...), "--json")
			}
			t.Run(name, func(t *testing.T) {
				var out, errOut bytes.Buffer
				if code := Main(args, &out, &errOut); code != 0 {
					t.Fatalf("stax %v: exit %d: %s", args, code, errOut.String())
				}
				got := strings.ReplaceAll(out.String(), home, "$STAX_HOME")
				path := filepath.Join("testdata", "golden", name+".golden")
				if *update {
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if got != string(want) {
					t.Errorf("stax %v differs from %s (-update rewrites it):\n--- got\n%s\n--- want\n%s", args, path, got, want)
				}
			})
		}
	}
}

// TestCallersNoMatch: a function name nothing sampled has is not found (exit 5), as a
// mistyped name should be, not an empty answer.
func TestCallersNoMatch(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", "")
	r := fixtureRun("20261101-120000-100", true)
	if err := store.Save(store.Path(r.Meta.ID), r); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"callers", "no_such_function"}, {"callees", "no_such_function", "--json"}, {"callers", "main", "--focus", "jitted"}} {
		var out, errOut bytes.Buffer
		code := Main(args, &out, &errOut)
		if code != ExitNotFound || out.Len() != 0 || !strings.Contains(errOut.String(), "no sampled function matches") {
			t.Errorf("stax %v: exit %d, stdout %q, stderr %q; want exit 5, no sampled function matches", args, code, out.String(), errOut.String())
		}
	}
}

// TestUsageErrors checks the flag validation of the query commands in process.
func TestUsageErrors(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"top", "-n", "0"}, 2, "-n must be 1 or more"},
		{[]string{"top", "-n", "ten"}, 2, `-n, --n: "ten" is not a whole number`},
		{[]string{"flame", "--threshold-pct", "-1"}, 2, "between 0 and 100"},
		{[]string{"flame", "--threshold-pct", "NaN"}, 2, "between 0 and 100"},
		{[]string{"flame", "--callers-of", "a", "--callees-of", "b"}, 2, "the two sides of a sandwich: give one"},
		{[]string{"flame", "--under", "main", "--diff", "x"}, 2, "--diff compares whole trees"},
		{[]string{"top", "--focus", "a("}, 2, `--focus "a(" is not a regular expression (missing closing ))`},
		{[]string{"flame", "--hide", "*x"}, 2, `--hide "*x" is not a regular expression (missing argument to repetition operator)`},
		{[]string{"export", "-f", "pprof", "--collapse-image", ""}, 2, "--collapse-image needs an image"},
		{[]string{"callers"}, 2, "callers needs one FN: a function name (a substring, any case) or a regular expression; stax top lists the names"},
		{[]string{"callees", "a", "b"}, 2, `callees takes one FN, got 2 arguments ("a" "b")`},
		{[]string{"callers", "x", "--functions", "0"}, 2, "--functions must be 1 or more"},
		{[]string{"record", "-F", "1.5", "--", "true"}, 2, `"1.5" is not a whole number`},
		{[]string{"wait", "--for-seconds", "soon"}, 2, `"soon" is not a number`},
		{[]string{"gc", "--keep", "-1"}, 2, "--keep must be 0 or more"},
		{[]string{"rm", "../etc"}, 2, "is not a run id"},
		{[]string{"top"}, 5, "no runs yet"},
		{[]string{"annotate"}, 2, "annotate needs one TARGET: a function name (a substring; quote it if it has spaces) or 0xADDRESS; stax top lists the names"},
		{[]string{"annotate", "jitted", "func"}, 2, `annotate takes one TARGET, got 2 arguments ("jitted" "func")`},
		{[]string{"compare", "20261101-120000-100"}, 2, "compare needs two runs, BASE and CAND: run ids (stax list shows them) or files written by stax save"},
		{[]string{"save"}, 2, "save needs one PATH"},
		{[]string{"open"}, 2, "open needs one PATH: a file written by stax save"},
		{[]string{"rm"}, 2, "rm needs at least one run ID"},
		{[]string{"top", "20261101-120000-100"}, 2, `top takes no arguments, got "20261101-120000-100": name a run with --run ID`},
		{[]string{"list", "all"}, 2, `list takes no arguments, got "all" (stax list --help lists its options)`},
	} {
		var out, errOut bytes.Buffer
		code := Main(c.args, &out, &errOut)
		if code != c.code || !strings.Contains(errOut.String(), c.want) || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("stax %v: exit %d, stderr %q; want exit %d and one line with %q", c.args, code, errOut.String(), c.code, c.want)
		}
	}
	// A mistyped command gets one readable line: the parser's suggestion layout is not
	// escaped as if it came from a profiled program.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"flme"}, `stax: unknown command "flme" for "stax"; did you mean stax flame? (stax --help lists the commands)` + "\n"},
		{[]string{"stauts"}, `stax: unknown command "stauts" for "stax"; did you mean stax status? (stax --help lists the commands)` + "\n"},
		{[]string{"frobnicate"}, `stax: unknown command "frobnicate" for "stax" (stax --help lists the commands)` + "\n"},
	} {
		var out, errOut bytes.Buffer
		if code := Main(c.args, &out, &errOut); code != ExitUsage || errOut.String() != c.want {
			t.Errorf("stax %v: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut.String(), ExitUsage, c.want)
		}
	}
	var out, errOut bytes.Buffer
	if code := Main([]string{"--version"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "stax ") {
		t.Errorf("--version: exit %d, %q", code, out.String())
	}
}

// TestSymbolizeNotELF: an image that is not an ELF file is named as such, with its first
// bytes, not with the ELF parser's "bad magic number" and a list of byte values.
func TestSymbolizeNotELF(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	path := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(path, []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := Main([]string{"symbolize", "-e", path, "0x10"}, &out, &errOut)
	want := "stax: load image " + path + ": not an ELF file (it starts with \"root\")\n"
	if code != ExitError || errOut.String() != want {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, errOut.String(), want)
	}
}
