package ittcollector

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/jit/jitformat"
)

// Built once for all tests.
var (
	libPath    string
	ittjitPath string
	stressPath string
	floodPath  string
	buildErr   error
)

func TestMain(m *testing.M) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		fmt.Println("skipping: the collector tests need linux/amd64")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "ittcollector-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildErr = buildAll(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildAll(dir string) error {
	var err error
	if _, err = exec.LookPath("cc"); err != nil && os.Getenv("CC") == "" {
		return fmt.Errorf("no C compiler: %w", err)
	}
	if libPath, err = Build(dir); err != nil {
		return err
	}
	if ittjitPath, err = BuildTestJIT(dir); err != nil {
		return err
	}
	if stressPath, err = buildTestProgram(dir, "ittstress"); err != nil {
		return err
	}
	// -rdynamic: ittflood's write() must take the collector's calls
	floodPath, err = buildTestProgram(dir, "ittflood", "-rdynamic")
	return err
}

func needBuild(t testing.TB) {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("build: %v", buildErr)
	}
}

// runProg runs a test program with a clean JIT environment plus env.
func runProg(t testing.TB, timeout time.Duration, env []string, bin string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "STAX_JIT_") && !strings.HasPrefix(e, "INTEL_JIT_PROFILER") && !strings.HasPrefix(e, "INTEL_LIBITTNOTIFY") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v: timed out after %v (deadlock?)\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), args, timeout, tail(stdout.String()), stderr.String())
	}
	if err != nil {
		t.Fatalf("%s %v: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), args, err, tail(stdout.String()), stderr.String())
	}
	return stdout.String(), stderr.String()
}

func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

func collectEnv(dir string) []string {
	return append(Env(libPath), EnvDir+"="+dir)
}

// outLine is one "word key=value ..." line of a test program.
type outLine struct {
	kind string
	kv   map[string]string
}

func parseOutput(t testing.TB, out string) []outLine {
	t.Helper()
	var lines []outLine
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		l := outLine{kind: f[0], kv: map[string]string{}}
		for _, w := range f[1:] {
			k, v, ok := strings.Cut(w, "=")
			if !ok {
				k, v = "", w
			}
			l.kv[k] = v
		}
		if l.kind == "load" && !strings.Contains(sc.Text(), " name=") {
			t.Fatalf("bad line %q", sc.Text())
		}
		lines = append(lines, l)
	}
	return lines
}

func hexU64(t testing.TB, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		t.Fatalf("bad hex %q", s)
	}
	return v
}

func decU64(t testing.TB, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	return v
}

func findKind(lines []outLine, kind string) []outLine {
	var r []outLine
	for _, l := range lines {
		if l.kind == kind {
			r = append(r, l)
		}
	}
	return r
}

func checkHeader(t testing.TB, h dumpHeader, pid int) {
	t.Helper()
	if h.Magic != jitformat.Magic || h.Version != jitformat.Version || h.TotalSize != jitformat.HeaderSize+jitformat.StaxLostSize ||
		h.ElfMach != hostMachine(t) || h.Pad != 0 || h.Flags != 0 || h.LostFunctions != 0 || h.FailedWrites != 0 {
		t.Errorf("header %+v", h)
	}
	if int(h.Pid) != pid {
		t.Errorf("header pid %d, want %d", h.Pid, pid)
	}
	if h.Timestamp == 0 {
		t.Errorf("header timestamp 0")
	}
}

// checkPairs checks that every CODE_LOAD is followed by its record 100 and
// every DEBUG_INFO by the CODE_LOAD it describes, and that timestamps never
// go back.
func checkPairs(t testing.TB, h dumpHeader, recs []record) {
	t.Helper()
	last := h.Timestamp
	seen := map[uint64]bool{}
	for i, r := range recs {
		if r.TS < last {
			t.Errorf("record %d at %d: timestamp %d before %d", r.ID, r.Off, r.TS, last)
		}
		last = r.TS
		switch r.ID {
		case recDebugInfo:
			if i+1 >= len(recs) || recs[i+1].Load == nil || recs[i+1].Load.Addr != r.Debug.Addr {
				t.Errorf("debug info at %d not followed by its code load", r.Off)
			}
		case recCodeLoad:
			l := r.Load
			if i+1 >= len(recs) || recs[i+1].Method == nil || recs[i+1].Method.Addr != l.Addr ||
				recs[i+1].Method.Size != l.Size || recs[i+1].Method.Pad != 0 || recs[i+1].Method.ID == 0 {
				t.Errorf("code load %q at %d not followed by its method id record", l.Name, r.Off)
			}
			if l.VMA != l.Addr || l.Tid == 0 || l.Name == "" {
				t.Errorf("code load %+v", *l)
			}
			if seen[l.Index] {
				t.Errorf("code index %d used twice", l.Index)
			}
			seen[l.Index] = true
		case recMethodID:
			if i == 0 || recs[i-1].ID != recCodeLoad {
				t.Errorf("method id record at %d without a code load before it", r.Off)
			}
		}
	}
}

type wantLoad struct {
	name  string
	id    uint32
	addr  uint64
	code  []byte
	lines [][2]uint32 // offset, line
	file  string
}

func TestJITDump(t *testing.T) {
	needBuild(t)
	dir := t.TempDir()
	out, stderr := runProg(t, time.Minute, collectEnv(dir), ittjitPath, "100000", "fork")
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
	lines := parseOutput(t, out)
	if len(lines) == 0 || lines[0].kind != "initialize" || lines[0].kv[""] != "1" {
		t.Fatalf("Initialize did not report sampling on:\n%s", out)
	}
	for _, want := range []string{"run alpha", "run beta", "run gamma", "run delta", "run epsilon", "run zeta", "run child"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("output lacks %q", want)
		}
	}
	loads := findKind(lines, "load")
	byName := map[string][]outLine{}
	for _, l := range loads {
		byName[l.kv["name"]] = append(byName[l.kv["name"]], l)
	}
	code := func(l outLine) []byte {
		b, err := hex.DecodeString(l.kv["code"])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	wl := func(name string, l outLine, lines [][2]uint32) wantLoad {
		return wantLoad{name: name, id: uint32(decU64(t, l.kv["id"])), addr: hexU64(t, l.kv["addr"]),
			code: code(l), lines: lines, file: "ittjit.js"}
	}
	if len(byName["gamma"]) != 1 || len(byName[""]) != 1 {
		t.Fatalf("unexpected loads in output:\n%s", out)
	}
	want := []wantLoad{
		wl("alpha", byName["alpha"][0], [][2]uint32{{0, 10}, {4, 11}, {14, 12}, {19, 13}}),
		wl("beta", byName["beta"][0], [][2]uint32{{0, 20}, {4, 21}, {19, 22}, {34, 23}}),
		wl("gamma", byName["gamma"][0], [][2]uint32{{0, 30}, {4, 31}, {19, 32}}),
		wl("gamma", byName[""][0], [][2]uint32{{0, 33}, {15, 34}}), // name and file from region 1
		wl("delta", byName["delta"][0], [][2]uint32{{0, 40}, {4, 41}, {19, 42}, {34, 43}, {49, 44}, {64, 45}}),
		wl("epsilon", byName["epsilon"][0], nil),
		wl("zeta", byName["zeta"][0], nil),
	}
	prologue := []byte{0x55, 0x48, 0x89, 0xe5}
	for _, w := range want {
		if w.name != "gamma" || w.addr == want[2].addr {
			if !bytes.HasPrefix(w.code, prologue) {
				t.Errorf("%s: code %x does not start with the frame-pointer prologue", w.name, w.code)
			}
		}
	}

	h, recs, err := readDump(filepath.Join(dir, fmt.Sprintf("jit-%d.dump", h0pid(t, out))))
	if err != nil {
		t.Fatal(err)
	}
	checkHeader(t, h, h0pid(t, out))
	checkPairs(t, h, recs)
	wantIDs := []uint32{2, 0, 100, 2, 0, 100, 2, 0, 100, 2, 0, 100, 2, 0, 100, 101, 101, 0, 100, 102, 0, 100, 3}
	if got := recordIDs(recs); !slices.Equal(got, wantIDs) {
		t.Fatalf("record ids %v, want %v", got, wantIDs)
	}

	var gotLoads []record
	for i, r := range recs {
		if r.ID == recCodeLoad {
			gotLoads = append(gotLoads, r)
			w := want[len(gotLoads)-1]
			l := r.Load
			if l.Name != w.name || l.Addr != w.addr || l.Size != uint64(len(w.code)) || !bytes.Equal(l.Code, w.code) {
				t.Errorf("code load %q addr %#x size %d code %x, want %q %#x %d %x", l.Name, l.Addr, l.Size, l.Code, w.name, w.addr, len(w.code), w.code)
			}
			if int(l.Pid) != h0pid(t, out) {
				t.Errorf("%s: pid %d", l.Name, l.Pid)
			}
			if m := recs[i+1].Method; m.ID != w.id {
				t.Errorf("%s: method id %d, want %d", w.name, m.ID, w.id)
			}
			if w.lines != nil {
				d := recs[i-1].Debug
				if d == nil {
					t.Fatalf("%s: no debug info before the load", w.name)
				}
				var wantEntries []debugEntry
				for _, e := range w.lines {
					wantEntries = append(wantEntries, debugEntry{Addr: w.addr + uint64(e[0]), Line: e[1], File: w.file})
				}
				if d.Addr != w.addr || !slices.Equal(d.Entries, wantEntries) {
					t.Errorf("%s: debug info %+v, want %+v", w.name, d, wantEntries)
				}
			}
		}
	}
	if len(gotLoads) != len(want) {
		t.Fatalf("%d code loads, want %d", len(gotLoads), len(want))
	}
	if gotLoads[0].Load.Index >= gotLoads[1].Load.Index {
		t.Errorf("code indexes do not grow")
	}

	// inline tree of delta
	delta := want[4]
	var inl []inlineRange
	for _, r := range recs {
		if r.Inline != nil {
			inl = append(inl, *r.Inline)
		}
	}
	outInl := findKind(lines, "inline")
	if len(outInl) != 2 || len(inl) != 2 {
		t.Fatalf("inline records %+v, output %+v", inl, outInl)
	}
	for i, o := range outInl {
		w := inlineRange{ID: uint32(decU64(t, o.kv["id"])), Parent: uint32(decU64(t, o.kv["parent"])),
			Start: hexU64(t, o.kv["addr"]), Size: decU64(t, o.kv["size"]), Name: o.kv["name"], Source: "ittjit.js"}
		if inl[i] != w {
			t.Errorf("inline record %+v, want %+v", inl[i], w)
		}
	}
	if inl[0].Parent != delta.id || inl[1].Parent != inl[0].ID ||
		inl[0].Start < delta.addr || inl[0].Start+inl[0].Size > delta.addr+uint64(len(delta.code)) ||
		inl[1].Start < inl[0].Start || inl[1].Start+inl[1].Size > inl[0].Start+inl[0].Size {
		t.Errorf("inline tree does not nest: delta %#x+%d, %+v", delta.addr, len(delta.code), inl)
	}

	// gamma: two regions with one method id
	var gammaIDs []uint32
	for _, r := range recs {
		if r.Method != nil && (r.Method.Addr == want[2].addr || r.Method.Addr == want[3].addr) {
			gammaIDs = append(gammaIDs, r.Method.ID)
		}
	}
	if len(gammaIDs) != 2 || gammaIDs[0] != gammaIDs[1] {
		t.Errorf("gamma method id records %v", gammaIDs)
	}

	// epsilon unloaded before zeta is loaded at the same address
	eps, zeta := want[5], want[6]
	if eps.addr != zeta.addr {
		t.Fatalf("zeta at %#x, epsilon at %#x", zeta.addr, eps.addr)
	}
	u := recs[19]
	if u.Unload == nil || u.Unload.Addr != eps.addr || u.Unload.Size != uint64(len(eps.code)) || recs[20].Load.Name != "zeta" {
		t.Errorf("unload %+v before %q", u.Unload, recs[20].Load.Name)
	}

	// the forked child writes its own file: inherited regions, then its own
	forks := findKind(lines, "fork")
	if len(forks) != 1 {
		t.Fatalf("no fork line")
	}
	cpid := int(decU64(t, forks[0].kv["pid"]))
	ch, crecs, err := readDump(filepath.Join(dir, fmt.Sprintf("jit-%d.dump", cpid)))
	if err != nil {
		t.Fatal(err)
	}
	checkHeader(t, ch, cpid)
	checkPairs(t, ch, crecs)
	var names []string
	for _, r := range crecs {
		if r.Load != nil {
			names = append(names, r.Load.Name)
			if int(r.Load.Pid) != cpid {
				t.Errorf("child load %q with pid %d", r.Load.Name, r.Load.Pid)
			}
			for _, w := range want {
				if w.addr == r.Load.Addr && w.name == r.Load.Name && !bytes.Equal(w.code, r.Load.Code) {
					t.Errorf("child: %s code differs", w.name)
				}
			}
		}
	}
	if len(names) == 0 || names[len(names)-1] != "child" {
		t.Fatalf("child loads %v", names)
	}
	inherited := slices.Clone(names[:len(names)-1])
	sort.Strings(inherited)
	if w := []string{"alpha", "beta", "delta", "gamma", "gamma", "zeta"}; !slices.Equal(inherited, w) {
		t.Errorf("child re-announced %v, want %v", inherited, w)
	}
	if crecs[len(crecs)-1].ID != recClose {
		t.Errorf("child file does not end with CLOSE")
	}
}

var pidRe = regexp.MustCompile(`(?m)^pid=(\d+)$`)

// h0pid returns the pid a test program printed on a "pid=P" line.
func h0pid(t testing.TB, out string) int {
	t.Helper()
	if m := pidRe.FindStringSubmatch(out); m != nil {
		return int(decU64(t, m[1]))
	}
	t.Fatalf("no pid in output")
	return 0
}

func TestDisabled(t *testing.T) {
	needBuild(t)
	for _, env := range [][]string{
		{EnvProfiler64 + "=" + libPath},
		{EnvProfiler64 + "=" + libPath, EnvCollect + "=0"},
		{EnvProfiler64 + "=" + libPath, EnvCollect + "=true"},
		{EnvProfiler64 + "=" + libPath, EnvCollect + "="},
		{},
	} {
		dir := t.TempDir()
		out, _ := runProg(t, time.Minute, append(env, EnvDir+"="+dir), ittjitPath, "1000", "fork")
		if !strings.HasPrefix(out, "initialize 0\n") || !strings.Contains(out, "run zeta") {
			t.Errorf("env %v: output\n%s", env, out)
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != 0 {
			t.Errorf("env %v: files created: %v", env, ents)
		}
	}
}

func TestUnwritableDir(t *testing.T) {
	needBuild(t)
	dir := filepath.Join(t.TempDir(), "missing")
	out, stderr := runProg(t, time.Minute, collectEnv(dir), ittjitPath, "1000")
	if !strings.Contains(out, "run zeta") || !strings.Contains(out, "shutdown") {
		t.Errorf("output\n%s", out)
	}
	if n := strings.Count(stderr, "cannot write"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, stderr)
	}
}

func TestHostile(t *testing.T) {
	needBuild(t)
	dir := t.TempDir()
	out, stderr := runProg(t, time.Minute, collectEnv(dir), stressPath, "hostile")
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
	pid := h0pid(t, out)
	lines := parseOutput(t, out)
	vmread := strings.Contains(out, "vmread=1")
	if !vmread {
		t.Log("process_vm_readv unavailable: oversized loads not sent")
	}
	var base, guard uint64
	for _, l := range lines {
		if l.kind == "addrs" {
			base, guard = hexU64(t, l.kv["base"]), hexU64(t, l.kv["guard"])
		}
	}
	if base == 0 {
		t.Fatalf("no base in output:\n%s", out)
	}
	h, recs, err := readDump(filepath.Join(dir, fmt.Sprintf("jit-%d.dump", pid)))
	if err != nil {
		t.Fatal(err)
	}
	checkHeader(t, h, pid)
	checkPairs(t, h, recs)

	page := func(off, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(off + i)
		}
		return b
	}
	type exp struct {
		id    uint32
		name  string
		addr  uint64
		code  []byte
		debug []debugEntry
	}
	wantLoads := []exp{
		{1001, "method_1001", base, page(0, 16), []debugEntry{{base, 7, 0, "h.js"}, {base + 8, 8, 0, "h.js"}}},
		{1002, "\xff\xfe\x80bad\xc3", base + 16, page(16, 16), nil},
		{1003, "mod!Cls::run [32-bit]", base + 32, page(32, 16), nil},
		{1004, "pkg.Cls.go", base + 48, page(48, 16), nil},
		{1005, "K::m", base + 64, page(64, 16), nil},
		{1006, strings.Repeat("x", 64<<10), base + 80, page(80, 16), nil},
		{1007, "lines_null", base + 96, page(96, 16), nil},
	}
	if vmread {
		wantLoads = append(wantLoads, exp{1008, "huge_lines", base + 112, page(112, 16),
			[]debugEntry{{base + 112, 1, 0, "h.js"}, {base + 120, 2, 0, "h.js"}}})
	}
	ab := bytes.Repeat([]byte{0xab}, 16)
	upd := page(96, 16)
	copy(upd[4:], []byte{0xcd, 0xcd, 0xcd, 0xcd})
	wantLoads = append(wantLoads,
		exp{1010, "update_new", base + 128, page(128, 16), nil},
		exp{1005, "K::m", base + 64, ab, nil},
		exp{1007, "lines_null", base + 96, upd, nil},
	)
	wantLoads = append(wantLoads,
		exp{1012, "split", base + 160, page(160, 16), nil},
		exp{1012, "split", base + 192, page(192, 16), nil},
		exp{1004, "pkg.Cls.go", base + 48, page(48, 16), []debugEntry{{base + 52, 9, 0, "h2.js"}}},
		exp{1013, "old", base + 224, page(224, 16), nil},
		exp{1014, "new", base + 224, page(224, 16), nil},
	)
	var huge []byte
	if vmread {
		huge = make([]byte, 16<<20)
		pg := os.Getpagesize()
		for i := 0; i < pg-16; i++ {
			huge[i] = 0xc3
		}
		// the last 16 bytes of the page hold the huge_lines line table
		copy(huge[pg-16:], []byte{0, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 2, 0, 0, 0})
		wantLoads = append(wantLoads, exp{1009, "huge_code", guard, huge, nil})
	}

	var ids []uint32
	li := 0
	for i, r := range recs {
		ids = append(ids, r.ID)
		if r.Load == nil {
			continue
		}
		if li >= len(wantLoads) {
			t.Fatalf("extra load %q", r.Load.Name)
		}
		w := wantLoads[li]
		li++
		l := r.Load
		if l.Name != w.name || l.Addr != w.addr || !bytes.Equal(l.Code, w.code) || recs[i+1].Method.ID != w.id {
			t.Errorf("load %d: %q %#x %d bytes id %d, want %q %#x %d bytes id %d", li, trunc(l.Name), l.Addr, len(l.Code), recs[i+1].Method.ID,
				trunc(w.name), w.addr, len(w.code), w.id)
		}
		var d *debugInfo
		if i > 0 {
			d = recs[i-1].Debug
		}
		if (d == nil) != (w.debug == nil) || (d != nil && !slices.Equal(d.Entries, w.debug)) {
			t.Errorf("%s: debug info %+v, want %+v", trunc(w.name), d, w.debug)
		}
	}
	if li != len(wantLoads) {
		t.Errorf("%d loads, want %d", li, len(wantLoads))
	}
	wantIDs := []uint32{2, 0, 100, 0, 100, 0, 100, 0, 100, 0, 100, 0, 100, 0, 100}
	if vmread {
		wantIDs = append(wantIDs, 2, 0, 100)
	}
	wantIDs = append(wantIDs, 0, 100, 102, 0, 100, 102, 0, 100, 101, 102)
	wantIDs = append(wantIDs, 0, 100, 0, 100, 102, 2, 0, 100, 102, 102, 0, 100, 0, 100, 102)
	if vmread {
		wantIDs = append(wantIDs, 0, 100)
	}
	wantIDs = append(wantIDs, 3)
	if !slices.Equal(ids, wantIDs) {
		t.Fatalf("record ids %v\nwant %v", ids, wantIDs)
	}
	var unloads []unloadRange
	var inl *inlineRange
	for _, r := range recs {
		if r.Unload != nil {
			unloads = append(unloads, *r.Unload)
		}
		if r.Inline != nil {
			inl = r.Inline
		}
	}
	if w := []unloadRange{{base + 64, 16}, {base + 96, 16}, {base, 16}, {base + 48, 16},
		{base + 160, 16}, {base + 192, 16}, {base + 224, 16}}; !slices.Equal(unloads, w) {
		t.Errorf("unloads %+v, want %+v", unloads, w)
	}
	if w := (inlineRange{ID: 2001, Parent: 1005, Start: base + 68, Size: 4, Name: "method_2001"}); inl == nil || *inl != w {
		t.Errorf("inline %+v, want %+v", inl, w)
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%s...(%d bytes)", s[:40], len(s))
	}
	return s
}

func TestStress(t *testing.T) {
	needBuild(t)
	per := "12500"
	if testing.Short() {
		per = "1000"
	}
	dir := t.TempDir()
	start := time.Now()
	out, stderr := runProg(t, 3*time.Minute, collectEnv(dir), stressPath, "stress", "8", per)
	t.Logf("8 threads x %s loads in %v", per, time.Since(start))
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
	pid := h0pid(t, out)
	var expect outLine
	for _, l := range parseOutput(t, out) {
		if l.kind == "expect" {
			expect = l
		}
	}
	if expect.kv == nil {
		t.Fatalf("no expectations in output:\n%s", tail(out))
	}
	h, recs, err := readDump(filepath.Join(dir, fmt.Sprintf("jit-%d.dump", pid)))
	if err != nil {
		t.Fatal(err)
	}
	checkHeader(t, h, pid)
	checkPairs(t, h, recs)
	count := map[uint32]int{}
	for _, r := range recs {
		count[r.ID]++
	}
	for _, c := range []struct {
		key string
		id  uint32
	}{{"loads", recCodeLoad}, {"unloads", recUnload}, {"inlines", recInline}} {
		if want := int(decU64(t, expect.kv[c.key])); count[c.id] != want {
			t.Errorf("%d records %d, want %d", count[c.id], c.id, want)
		}
	}
	if count[recMethodID] != count[recCodeLoad] || count[recClose] != 1 || recs[len(recs)-1].ID != recClose {
		t.Errorf("record counts %v", count)
	}

	// children forked while other threads were reporting
	forks := findKind(parseOutput(t, out), "fork")
	if len(forks) == 0 {
		t.Errorf("no forks")
	}
	for _, f := range forks {
		cpid := int(decU64(t, f.kv["pid"]))
		ch, crecs, err := readDump(filepath.Join(dir, fmt.Sprintf("jit-%d.dump", cpid)))
		if err != nil {
			t.Errorf("child %d: %v", cpid, err)
			continue
		}
		checkHeader(t, ch, cpid)
		checkPairs(t, ch, crecs)
		if n := len(crecs); n < 2 || crecs[n-2].Load == nil || crecs[n-2].Load.Name != "forkchild" {
			t.Errorf("child %d: last load is not its own", cpid)
		}
	}
}

func benchResult(t testing.TB, calls int) (mean, p50, p99 float64) {
	t.Helper()
	dir := t.TempDir()
	out, _ := runProg(t, 5*time.Minute, collectEnv(dir), stressPath, "bench", strconv.Itoa(calls))
	var b outLine
	for _, l := range parseOutput(t, out) {
		if l.kind == "bench" {
			b = l
		}
	}
	if b.kv == nil {
		t.Fatalf("no bench line:\n%s", out)
	}
	f := func(k string) float64 {
		v, err := strconv.ParseFloat(b.kv[k], 64)
		if err != nil {
			t.Fatalf("bad %s in %v", k, b.kv)
		}
		return v
	}
	h, recs, err := readDump(filepath.Join(dir, fmt.Sprintf("jit-%d.dump", h0pid(t, out))))
	if err != nil {
		t.Fatal(err)
	}
	checkPairs(t, h, recs)
	loads := 0
	for _, r := range recs {
		if r.Load != nil {
			loads++
			if len(r.Load.Code) != 1024 || len(recs) < 2 {
				t.Fatalf("load of %d bytes", len(r.Load.Code))
			}
		}
		if r.Debug != nil && len(r.Debug.Entries) != 100 {
			t.Fatalf("debug info with %d entries", len(r.Debug.Entries))
		}
	}
	if loads != calls+1 {
		t.Errorf("%d loads, want %d", loads, calls+1)
	}
	return f("mean_ns"), f("p50_ns"), f("p99_ns")
}

// TestNotifyEventSpeed times NotifyEvent for 1 KiB of code with 100 line
// entries. The median must stay under 20µs; the mean also counts stalls of
// the file system the dump is written to.
// BenchmarkNotifyEvent times NotifyEvent for a 1 KiB method with 100 line entries, inside
// a C program (the target is 20µs a call). It reports the median and p99 too, because disk
// write stalls make the mean noisy.
func BenchmarkNotifyEvent(b *testing.B) {
	needBuild(b)
	mean, p50, p99 := benchResult(b, max(b.N, 1000))
	b.ReportMetric(mean, "ns/op")
	b.ReportMetric(p50, "p50-ns")
	b.ReportMetric(p99, "p99-ns")
}

func TestExports(t *testing.T) {
	needBuild(t)
	f, err := elf.Open(libPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	var defined []string
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && elf.ST_BIND(s.Info) != elf.STB_LOCAL {
			defined = append(defined, s.Name)
		}
	}
	sort.Strings(defined)
	if w := []string{"Initialize", "NotifyEvent", "__itt_api_init"}; !slices.Equal(defined, w) {
		t.Errorf("exported %v, want %v", defined, w)
	}
	for _, s := range syms {
		if strings.Contains(s.Library, "libgo") || strings.HasPrefix(s.Name, "runtime.") {
			t.Errorf("Go runtime symbol %s", s.Name)
		}
	}
}

func TestFind(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	lib := filepath.Join(root, "lib", "stax")
	for _, d := range []string{bin, lib} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := findIn(bin); err == nil || !strings.Contains(err.Error(), LibName) {
		t.Errorf("missing library: err %v", err)
	}
	if err := os.WriteFile(filepath.Join(lib, LibName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := findIn(bin); err != nil || p != filepath.Join(lib, LibName) {
		t.Errorf("lib/stax: %q, %v", p, err)
	}
	if err := os.WriteFile(filepath.Join(bin, LibName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := findIn(bin); err != nil || p != filepath.Join(bin, LibName) {
		t.Errorf("beside the executable: %q, %v", p, err)
	}
	if _, err := Find(); err != nil && !strings.Contains(err.Error(), LibName) {
		t.Errorf("Find: %v", err)
	}
}

func TestEnv(t *testing.T) {
	got := Env("/x/" + LibName)
	if w := []string{"INTEL_JIT_PROFILER64=/x/" + LibName, "INTEL_LIBITTNOTIFY64=/x/" + LibName, "STAX_JIT_COLLECT=1"}; !slices.Equal(got, w) {
		t.Errorf("Env = %v", got)
	}
}
