package e2e

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/jit/jitformat"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/testutil"
)

// plantOld writes a file as an earlier process with the same pid would have left it: last
// written an hour ago.
// The file gets its time before it takes its name, so that stax never sees it new.
func plantOld(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".planting-"+filepath.Base(path))
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
}

// ittSpansFile is a version 1 spans file of pid holding one task named stale_task.
func ittSpansFile(pid int) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32([]byte(spans.ITTMagic), uint32(pid))
	b = le.AppendUint32(b, 0)
	name := []byte("stale_task\x00\x00\x00\x00\x00\x00")
	b = le.AppendUint16(b, 1)
	b = le.AppendUint16(b, uint16(16+len(name)))
	b = le.AppendUint32(b, uint32(pid))
	b = le.AppendUint64(b, 0x10)
	b = append(b, name...)
	b = le.AppendUint16(b, 2)
	b = le.AppendUint16(b, 40)
	b = le.AppendUint32(b, uint32(pid))
	for _, v := range []uint64{0x10, 1, 2, 0} {
		b = le.AppendUint64(b, v)
	}
	return b
}

// jitdumpFile is a jitdump of pid announcing one function, stale_jit_fn.
func jitdumpFile(pid int) []byte {
	h := jitformat.Header{Magic: jitformat.Magic, Version: jitformat.Version, TotalSize: jitformat.HeaderSize,
		ElfMach: jitformat.HostMachine(), Pid: uint32(pid), Timestamp: 1}
	b := jitformat.Append(nil, &h)
	name := "stale_jit_fn\x00"
	code := make([]byte, 16)
	p := jitformat.RecordPrefix{ID: jitformat.RecCodeLoad, TotalSize: uint32(jitformat.RecordPrefixSize + jitformat.CodeLoadSize + len(name) + len(code)), Timestamp: 2}
	b = jitformat.Append(b, &p)
	l := jitformat.CodeLoad{Pid: uint32(pid), Tid: uint32(pid), VMA: 0x7f0000001000, CodeAddr: 0x7f0000001000, CodeSize: 16}
	b = jitformat.Append(b, &l)
	return append(append(b, name...), code...)
}

// TestStaleFilesOfReusedPidIgnored records a process for whose pid a spans file, a jitdump,
// a perf map and a marker file were left an hour before it started, as by an earlier process
// with the same pid: none is read, and status says each is stale.
func TestStaleFilesOfReusedPidIgnored(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	dir := t.TempDir()
	e.env = append(e.env, "STAX_JIT_DIR="+dir)
	rec := e.startUntilReady(t.TempDir(), "sh", "-c", "echo ready; read x")
	// The live run answers once its recorder has registered it: asked until it does.
	var st api.Status
	for deadline := time.Now().Add(30 * time.Second); ; {
		out, errOut, code := e.run("status", "--json")
		if code == 0 && json.Unmarshal([]byte(out), &st) == nil && st.Meta.Pid > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stax status of the live run: exit %d\n%s%s", code, out, errOut)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pid := st.Meta.Pid
	ps := strconv.Itoa(pid)
	plantOld(t, filepath.Join(dir, "itt-"+ps+".spans"), ittSpansFile(pid))
	plantOld(t, filepath.Join(dir, "jit-"+ps+".dump"), jitdumpFile(pid))
	plantOld(t, "/tmp/perf-"+ps+".map", []byte("7f0000002000 10 stale_map_fn\n"))
	plantOld(t, "/tmp/marker-"+ps+".txt", []byte("1 2 stale_marker\n"))
	rec.finish(t)

	e.mustJSON(&st, "status")
	kinds := map[string]bool{}
	for _, j := range st.JIT {
		t.Logf("jit: %+v", j)
		if j.Functions != 0 || !strings.Contains(j.Error, "stale") {
			t.Errorf("%s %s: %d functions (%q): want none read, said stale", j.Kind, j.Path, j.Functions, j.Error)
		}
		kinds[j.Kind] = true
	}
	if !kinds["jitdump"] || !kinds["perfmap"] {
		t.Errorf("the stale jitdump and perf map are not in the status: %+v", st.JIT)
	}
	var res api.Spans
	e.mustJSON(&res, "spans")
	if len(res.Rows) != 0 {
		t.Errorf("spans of stale files were read: %+v", res.Rows)
	}
	n := 0
	for _, src := range res.Sources {
		t.Logf("spans: %+v", src)
		if src.Path == "" {
			continue
		}
		n++
		if src.Received != 0 || !strings.Contains(src.Error, "stale") {
			t.Errorf("%s: %d received (%q): want none, said stale", src.Path, src.Received, src.Error)
		}
	}
	if n != 2 {
		t.Errorf("%d spans sources with a path, want the spans file and the marker file", n)
	}
	if txt, _, _ := e.run("status"); strings.Count(txt, "stale: written by an earlier process with this pid") != 4 {
		t.Errorf("stax status does not say the 4 files are stale:\n%s", txt)
	}
}

// TestLaunchedRunRemovesSpansFile: the spans file of a command stax launched is read, then
// removed once the command is over; another process's is left.
func TestLaunchedRunRemovesSpansFile(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	dir := t.TempDir()
	e.env = append(e.env, "STAX_JIT_DIR="+dir)
	other := filepath.Join(dir, "itt-1.spans")
	if err := os.WriteFile(other, ittSpansFile(1), 0o600); err != nil {
		t.Fatal(err)
	}
	prog := testutil.CC(t, t.TempDir(), "ittrate", "gcc", "-std=gnu11", "-O2", "-pthread",
		filepath.Join(testutil.RepoRoot(t), "collector/testdata/ittrate.c"), "-ldl")
	if out, errOut, code := e.run("record", "-q", "--", prog, "1", "0.3", "200"); code != 0 {
		t.Fatalf("stax record: exit %d\n%s%s", code, out, errOut)
	}
	var res api.Spans
	e.mustJSON(&res, "spans")
	if unit, ok := spanRow(res, "unit"); !ok || unit.Count == 0 {
		t.Fatalf("no unit spans were read: %+v", res.Rows)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.spans"))
	if len(left) != 1 || left[0] != other {
		t.Errorf("spans files left: %v, want only %s", left, other)
	}
}

// TestGCSpansRemovesStale: stax gc --spans removes the spans files of a pid that is gone and
// of a pid reused by a younger process, and leaves the file of a live process.
func TestGCSpansRemovesStale(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	gone := testutil.GonePid(t)
	self := os.Getpid()
	goneFile := filepath.Join(dir, "itt-"+strconv.Itoa(gone)+".spans")
	reused := filepath.Join(dir, "stax-"+strconv.Itoa(self)+".spans")
	live := filepath.Join(dir, "itt-"+strconv.Itoa(self)+".spans")
	plantOld(t, goneFile, ittSpansFile(gone))
	plantOld(t, reused, ittSpansFile(self))
	if err := os.WriteFile(live, ittSpansFile(self), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := e.run("gc", "--spans", "--dir", dir)
	if code != 0 {
		t.Fatalf("stax gc --spans: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("%s", out)
	for _, want := range []string{"removed " + goneFile, "pid " + strconv.Itoa(gone) + " is gone", "removed " + reused,
		"pid " + strconv.Itoa(self) + " is a younger process"} {
		if !strings.Contains(out, want) {
			t.Errorf("stax gc --spans does not say %q:\n%s", want, out)
		}
	}
	for _, p := range []string{goneFile, reused} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is left", p)
		}
	}
	if _, err := os.Lstat(live); err != nil {
		t.Errorf("the live process's file is gone: %v", err)
	}
}
