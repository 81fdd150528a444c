package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/symbol/debugfile"
	"github.com/stax-profiler/stax/internal/testutil"
)

// buildSplit builds split.c with -g, writes its debug info to debugOut and strips the
// program of all symbols, returning the program and its build-id.
func buildSplit(t *testing.T, dir, debugOut string, debuglink bool) (string, []byte) {
	t.Helper()
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/split.c")
	prog := testutil.CC(t, dir, "split", "gcc", "-g", "-O1", "-fno-omit-frame-pointer", "-fno-inline", src)
	testutil.Run(t, "", "objcopy", "--only-keep-debug", prog, debugOut)
	testutil.Run(t, "", "strip", "--strip-all", prog)
	if debuglink {
		testutil.Run(t, filepath.Dir(debugOut), "objcopy", "--add-gnu-debuglink="+debugOut, prog)
	}
	id, err := debugfile.ReadBuildID(prog)
	if err != nil {
		t.Fatal(err)
	}
	return prog, id
}

func checkSplitNamed(t *testing.T, e *staxEnv, how string) {
	t.Helper()
	var top api.Top
	e.mustJSON(&top, "top", "-n", "10")
	if self, _, ok := row(top, "split_hot"); !ok || self < 50 {
		t.Fatalf("%s: split_hot not named from the debug file: %+v", how, top.Rows)
	}
	var res api.Annotate
	e.mustJSON(&res, "annotate", "split_hot")
	if len(res.Annotation.HotLines) == 0 || !strings.HasSuffix(res.Annotation.HotLines[0].File, "split.c") {
		t.Errorf("%s: no source lines from the debug file: %+v", how, res.Annotation.HotLines)
	}
}

func TestSeparateDebugFileByDebuglink(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	dir := t.TempDir()
	prog, _ := buildSplit(t, dir, filepath.Join(dir, "split.debug"), true)
	if out, errOut, code := e.run("record", "-q", "--", prog, "go"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	checkSplitNamed(t, e, "debuglink")
}

func TestSeparateDebugFileByBuildID(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	dir := t.TempDir()
	root := t.TempDir()
	tmpDebug := filepath.Join(dir, "split.debug")
	prog, id := buildSplit(t, dir, tmpDebug, false)
	hex := fmt.Sprintf("%x", id)
	dst := filepath.Join(root, "usr/lib/debug/.build-id", hex[:2], hex[2:]+".debug")
	os.MkdirAll(filepath.Dir(dst), 0o755)
	if err := os.Rename(tmpDebug, dst); err != nil {
		t.Fatal(err)
	}
	c := e.cmd("record", "-q", "--", prog, "go")
	c.Env = append(c.Env, "STAX_DEBUG_ROOT="+root)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	// annotate reads lines through the same root.
	t.Setenv("STAX_DEBUG_ROOT", root)
	e2 := *e
	checkSplitNamed(t, &e2, "build-id root")
}

// debuginfodServer starts elfutils' debuginfod on a free port serving dir, and returns
// its URL and a function counting the debuginfo requests it has answered.
func debuginfodServer(t *testing.T, dir string) (string, func() int) {
	t.Helper()
	bin := testutil.RequireTool(t, "debuginfod")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	db := filepath.Join(t.TempDir(), "db.sqlite")
	cmd := exec.Command(bin, "-F", "-p", strconv.Itoa(port), "-d", db, "-t", "1", "-g", "0", dir)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	// A proxy in front counts the debug files the server handed out: a run asking about
	// images it has no file for (libc, when sampled) is fine; fetching a file again is not.
	target, _ := neturl.Parse(url)
	var served atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		if r.StatusCode == http.StatusOK && strings.HasSuffix(r.Request.URL.Path, "/debuginfo") {
			served.Add(1)
		}
		return nil
	}
	front := httptest.NewServer(proxy) // 127.0.0.1
	t.Cleanup(front.Close)
	count := func() int { return int(served.Load()) }
	// Ready once it has scanned the directory.
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url + "/metrics")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if regexp.MustCompile(`(?m)^thread_work_total\{role="traverse"\} [1-9]`).Match(body) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("debuginfod did not start:\n%s", logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return front.URL, count
}

func TestDebuginfodFetchesAndCaches(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	served := t.TempDir()
	prog, _ := buildSplit(t, t.TempDir(), filepath.Join(served, "split.debug"), false)
	url, requests := debuginfodServer(t, served)
	cache := t.TempDir()
	env := []string{"DEBUGINFOD_URLS=" + url, "DEBUGINFOD_CACHE_PATH=" + cache}
	record := func() string {
		c := e.cmd("record", "--", prog, "go")
		c.Env = append(c.Env, env...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("record: %v\n%s", err, out)
		}
		return string(out)
	}
	var got int
	for i := 0; i < 100; i++ { // the server's scan may finish after it starts answering
		record()
		var top api.Top
		e.mustJSON(&top, "top", "-n", "5")
		if _, _, ok := row(top, "split_hot"); ok {
			got = requests()
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if got == 0 {
		t.Fatalf("split_hot was never named through debuginfod")
	}
	for _, k := range []string{"DEBUGINFOD_URLS", "DEBUGINFOD_CACHE_PATH"} {
		t.Setenv(k, map[string]string{"DEBUGINFOD_URLS": url, "DEBUGINFOD_CACHE_PATH": cache}[k])
	}
	checkSplitNamed(t, e, "debuginfod")
	before := requests()
	record()
	if after := requests(); after != before {
		t.Errorf("second run asked the server again: %d requests before, %d after", before, after)
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "5")
	if _, _, ok := row(top, "split_hot"); !ok {
		t.Errorf("second run (from the cache) does not name split_hot")
	}
}

func TestLibcInternalsNamed(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireFile(t, "/usr/lib/debug/.build-id", "libc6-dbg")
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/qsort.c")
	prog := testutil.CC(t, t.TempDir(), "qsort", "gcc", "-O1", "-fno-omit-frame-pointer", src)
	if out, errOut, code := e.run("record", "-q", "--", prog, "300"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "40", "--sort", "total")
	found := false
	for _, r := range top.Rows {
		if strings.HasPrefix(r.Func, "msort_with_tmp") && r.Image == "libc.so.6" {
			found = true
		}
	}
	if !found {
		t.Errorf("libc's msort_with_tmp is not named: %+v", top.Rows)
	}
}

// TestInlineFramesMatchAddr2line compares, for every sampled address of an -O2 -g C++
// function, stax's inline chain with addr2line -i -f.
func TestInlineFramesMatchAddr2line(t *testing.T) {
	testutil.RequirePerf(t)
	addr2line := testutil.RequireTool(t, "addr2line")
	e := newEnv(t)
	src := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/inline.cc")
	prog := testutil.CC(t, t.TempDir(), "inline", "g++", "-O2", "-g", "-fno-omit-frame-pointer", src)
	if out, errOut, code := e.run("record", "-q", "--", prog, "400"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	run, err := store.Load(latestRun(t, e))
	if err != nil {
		t.Fatal(err)
	}
	p := &run.Profile
	var code *store.Code
	for i, c := range run.Code {
		if p.Frames[c.Frame].Func == "num::crunch(unsigned long)" {
			code = &run.Code[i]
		}
	}
	if code == nil {
		t.Fatalf("num::crunch has no code record")
	}
	type sampled struct {
		vaddr uint64
		chain []string
	}
	seen := map[uint64]bool{}
	var addrs []sampled
	inlinedSamples := 0
	for _, en := range p.Entries {
		if en.LeafFunc < 0 || p.Frames[en.LeafFunc].Func != "num::crunch(unsigned long)" || seen[en.Leaf] {
			continue
		}
		seen[en.Leaf] = true
		var chain []string
		for _, id := range p.AppendFrames(nil, en.Stack) {
			f := p.Frames[id]
			chain = append(chain, f.Func)
			if !f.Inlined {
				break
			}
		}
		if len(chain) > 1 {
			inlinedSamples++
		}
		addrs = append(addrs, sampled{en.Leaf - code.Start + code.Vaddr, chain})
	}
	if inlinedSamples == 0 {
		t.Fatalf("no sampled address of num::crunch has inline frames")
	}
	var in bytes.Buffer
	for _, a := range addrs {
		fmt.Fprintf(&in, "%#x\n", a.vaddr)
	}
	cmd := exec.Command(addr2line, "-i", "-f", "-C", "-a", "-e", prog)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	// addr2line -a prints the address, then function/location pairs, innermost first.
	var want [][]string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "0x") {
			want = append(want, nil)
			continue
		}
		if len(want) > 0 && !strings.Contains(line, ":") || strings.HasPrefix(line, "num::") || !strings.Contains(line, "/") {
			want[len(want)-1] = append(want[len(want)-1], line)
			sc.Scan() // the file:line that follows
		}
	}
	if len(want) != len(addrs) {
		t.Fatalf("addr2line answered %d addresses of %d", len(want), len(addrs))
	}
	base := func(s string) string {
		if i := strings.Index(s, "("); i >= 0 {
			s = s[:i]
		}
		return s
	}
	mismatches := 0
	for i, a := range addrs {
		exp := mapStrings(want[i], base)
		gotChain := mapStrings(a.chain, base)
		// addr2line prints the symbol table's name for the innermost frame even when it is
		// inlined code; compare that frame only by position.
		if len(exp) > 0 && len(gotChain) == len(exp) && exp[0] == gotChain[len(gotChain)-1] {
			exp[0] = gotChain[0]
		}
		got := strings.Join(gotChain, " <- ")
		if got != strings.Join(exp, " <- ") {
			mismatches++
			if mismatches <= 5 {
				t.Errorf("%#x: stax %q, addr2line %q", a.vaddr, got, strings.Join(want[i], " <- "))
			}
		}
	}
	t.Logf("%d sampled addresses compared, %d with inline frames, %d mismatches", len(addrs), inlinedSamples, mismatches)
	var top api.Top
	e.mustJSON(&top, "top", "-n", "10")
	for _, fn := range []string{"step", "mixbits"} { // DWARF names inlined statics unqualified, as addr2line prints them
		// mixbits is a few instructions: a short run may sample none of them. Top must list
		// each inlined function that addr2line finds at a sampled address.
		sampled := false
		for _, w := range want {
			for _, f := range w {
				sampled = sampled || base(f) == fn
			}
		}
		if !sampled {
			t.Logf("no sampled address is in %s", fn)
			continue
		}
		found := false
		for _, r := range top.Rows {
			if base(r.Func) == fn && r.Inlined {
				found = true
			}
		}
		if !found {
			t.Errorf("top lacks the inlined frame %s: %+v", fn, top.Rows)
		}
	}
}

func mapStrings(s []string, f func(string) string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}

func latestRun(t *testing.T, e *staxEnv) string {
	var l api.List
	e.mustJSON(&l, "list")
	if len(l.Runs) == 0 {
		t.Fatal("no runs")
	}
	return filepath.Join(e.home, "runs", l.Runs[0].ID+".stax")
}

func TestStrippedGoBinaryNamed(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := filepath.Join(t.TempDir(), "goprog")
	testutil.Run(t, filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/goprog"), "go", "build", "-ldflags=-s -w", "-o", prog, ".")
	if out, errOut, code := e.run("record", "-q", "--", prog, "300ms"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "20", "--sort", "total")
	// main.hotLoop is a frameless leaf, so frame pointers skip its caller main.main.
	for _, fn := range []string{"main.hotLoop", "runtime.main"} {
		if _, total, ok := row(top, fn); !ok || total < 50 {
			t.Errorf("stripped Go binary: %s not named: %+v", fn, top.Rows)
		}
	}
	found := false
	for _, r := range top.Rows {
		if r.Func == "main.mix" && r.Inlined {
			found = true
		}
	}
	if !found {
		t.Errorf("stripped Go binary: the inlined call main.mix is not a frame: %+v", top.Rows)
	}
}

// TestAnnotateFetchesMissingSourceFromDebuginfod deletes the source after the recording;
// annotate then gets it from the debuginfod server's /source endpoint.
func TestAnnotateFetchesMissingSourceFromDebuginfod(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "split.c")
	text, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/split.c"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(src, text, 0o644)
	header, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/cpubudget.h"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cpubudget.h"), header, 0o644)
	prog := testutil.CC(t, dir, "split", "gcc", "-g", "-O1", "-fno-omit-frame-pointer", "-fno-inline", src)
	id, err := debugfile.ReadBuildID(prog)
	if err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := e.run("record", "-q", "--", prog, "go"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	os.Remove(src)
	var asked syncBuffer
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(&asked, r.URL.Path)
		if r.URL.Path == fmt.Sprintf("/buildid/%x/source%s", id, src) {
			w.Write(text)
			return
		}
		http.NotFound(w, r)
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()
	t.Setenv("DEBUGINFOD_URLS", "http://"+l.Addr().String())
	t.Setenv("DEBUGINFOD_CACHE_PATH", t.TempDir())
	out, errOut, code := e.run("annotate", "split_hot")
	if code != 0 {
		t.Fatalf("annotate: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "sink += i * 7;") {
		t.Errorf("source text not fetched (server was asked %v):\n%s", asked.String(), out)
	}
}
