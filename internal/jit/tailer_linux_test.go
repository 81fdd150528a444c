package jit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func names(recs []Record) []string {
	var out []string
	for _, r := range recs {
		if r.Load != nil {
			out = append(out, r.Load.Name)
		} else {
			out = append(out, r.ID.String())
		}
	}
	return out
}

func TestTailerGrowth(t *testing.T) {
	for _, chunk := range []int{readChunk, 24} {
		old := readChunk
		readChunk = chunk
		t.Cleanup(func() { readChunk = old })
		dir := t.TempDir()
		path := filepath.Join(dir, "jit-7.dump")
		uid := uint32(os.Getuid())
		full := newDump(binary.BigEndian, 7, 0).
			load(1, 0x1000, "first", bytes.Repeat([]byte{1}, 300)).
			rec(99, 2, []byte{1, 2, 3}).
			load(3, 0x2000, "second", []byte{2}).
			close(4).bytes()
		// Write the header and part of the first record.
		writeFile(t, path, full[:30])
		tl, err := OpenTailer(path, 7, uid)
		if err != nil {
			t.Fatal(err)
		}
		defer tl.Close()
		steps := []struct {
			upTo  int // file length after this step
			want  []string
			reset bool
		}{
			{30, nil, false},
			{60, nil, false},
			{len(full) - 20, []string{"first", "record(99)"}, false},
			{len(full) - 20, nil, false},
			{len(full), []string{"second", "CODE_CLOSE"}, false},
			{len(full), nil, false},
		}
		written := 30
		for i, st := range steps {
			if st.upTo > written {
				appendFile(t, path, full[written:st.upTo])
				written = st.upTo
			}
			recs, reset, err := tl.Poll()
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			if got := names(recs); !equalStrings(got, st.want) || reset != st.reset {
				t.Errorf("chunk %d step %d: got %v reset %v, want %v %v", chunk, i, got, reset, st.want, st.reset)
			}
		}
		s := tl.Status()
		if s.Records != 4 || s.Functions != 2 || !s.Closed || s.Skipped[SkipUnknownID] != 1 || s.LastError != "" || s.Kind != SourceJitdump {
			t.Errorf("status = %+v", s)
		}
		if h, ok := tl.Header(); !ok || h.Order != binary.BigEndian {
			t.Errorf("header = %+v %v", h, ok)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTailerResets(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jit-7.dump")
	uid := uint32(os.Getuid())
	one := newDump(binary.LittleEndian, 7, 0).load(1, 0x1000, "one", []byte{1}).load(2, 0x2000, "two", []byte{2}).bytes()
	writeFile(t, path, one)
	tl, err := OpenTailer(path, 7, uid)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	poll := func(wantReset bool, want ...string) {
		t.Helper()
		recs, reset, err := tl.Poll()
		if err != nil {
			t.Fatal(err)
		}
		if got := names(recs); !equalStrings(got, want) || reset != wantReset {
			t.Errorf("got %v reset %v, want %v %v", got, reset, want, wantReset)
		}
	}
	poll(false, "one", "two")

	// Truncated and rewritten shorter.
	d := newDump(binary.LittleEndian, 7, 0)
	d.buf[24] = 99 // a different header timestamp
	writeFile(t, path, d.load(5, 0x3000, "three", nil).bytes())
	poll(true, "three")

	// Rewritten in place, longer than before, between two polls.
	d = newDump(binary.LittleEndian, 7, 0)
	d.buf[24] = 98
	writeFile(t, path, d.load(6, 0x4000, "four", make([]byte, 100)).load(7, 0x5000, "five", nil).bytes())
	poll(true, "four", "five")

	// Replaced by rename.
	d = newDump(binary.LittleEndian, 7, 0)
	tmp := path + ".new"
	writeFile(t, tmp, d.load(8, 0x6000, "six", nil).bytes())
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	poll(true, "six")
	poll(false)
	if s := tl.Status(); s.Resets != 3 {
		t.Errorf("resets = %d", s.Resets)
	}
}

func TestTailerRefusals(t *testing.T) {
	dir := t.TempDir()
	uid := uint32(os.Getuid())
	good := filepath.Join(dir, "jit-7.dump")
	writeFile(t, good, newDump(binary.LittleEndian, 7, 0).bytes())
	link := filepath.Join(dir, "jit-8.dump")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		uid  uint32
		want error
	}{
		{"symlink", link, uid, ErrSymlink},
		{"other owner", good, uid + 1, ErrWrongOwner},
		{"fifo", fifo, uid, ErrNotRegular},
		{"missing", filepath.Join(dir, "none"), uid, os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, err := OpenTailer(tt.path, 7, tt.uid)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tl != nil {
				t.Error("tailer returned with an error")
			}
			if _, err := OpenPerfMapTailer(tt.path, tt.uid); !errors.Is(err, tt.want) {
				t.Errorf("perf map: err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestTailerBadContent(t *testing.T) {
	le := binary.LittleEndian
	good := newDump(le, 7, 0).load(1, 0x1000, "kept", nil).bytes()
	bad := append(bytes.Clone(good), newDump(le, 7, 0).load(2, 0x2000, "bad", nil).bytes()[HeaderSize:]...)
	le.PutUint32(bad[len(good)+4:], 4) // total_size below the prefix
	tests := []struct {
		name string
		data []byte
		want error
		recs int
	}{
		{"wrong pid", newDump(le, 8, 0).bytes(), ErrWrongPid, 0},
		{"tsc", newDump(le, 7, FlagArchTimestamp).bytes(), ErrArchTimestamp, 0},
		{"bad magic", make([]byte, 64), ErrBadMagic, 0},
		{"bad record", bad, ErrBadRecord, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "jit-7.dump")
			writeFile(t, path, tt.data)
			tl, err := OpenTailer(path, 7, uint32(os.Getuid()))
			if err != nil {
				t.Fatal(err)
			}
			defer tl.Close()
			recs, _, err := tl.Poll()
			if !errors.Is(err, tt.want) || len(recs) != tt.recs {
				t.Fatalf("got %d records, err %v; want %d, %v", len(recs), err, tt.recs, tt.want)
			}
			if tl.Status().LastError == "" {
				t.Error("status has no error")
			}
			appendFile(t, path, []byte("more bytes that cannot help"))
			if recs, _, err := tl.Poll(); err != nil || len(recs) != 0 {
				t.Errorf("after failure: %d records, err %v", len(recs), err)
			}
		})
	}
}

func TestPerfMapTailer(t *testing.T) {
	for _, chunk := range []int{perfMapChunk, 7} {
		old := perfMapChunk
		perfMapChunk = chunk
		t.Cleanup(func() { perfMapChunk = old })
		path := filepath.Join(t.TempDir(), "perf-7.map")
		writeFile(t, path, []byte("1000 10 alpha\n2000 10 be"))
		tl, err := OpenPerfMapTailer(path, uint32(os.Getuid()))
		if err != nil {
			t.Fatal(err)
		}
		defer tl.Close()
		poll := func(wantReset bool, want ...string) {
			t.Helper()
			es, reset, err := tl.Poll()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range es {
				got = append(got, e.Name)
			}
			if !equalStrings(got, want) || reset != wantReset {
				t.Errorf("chunk %d: got %v reset %v, want %v %v", chunk, got, reset, want, wantReset)
			}
		}
		poll(false, "alpha")
		appendFile(t, path, []byte("ta\nbad line\n"))
		poll(false, "beta")
		poll(false)
		writeFile(t, path, []byte("3000 10 gamma\n"))
		poll(true, "gamma")
		s := tl.Status()
		if s.Skipped[SkipBadLine] != 1 || s.Resets != 1 || s.Functions != 1 || s.Kind != SourcePerfMap {
			t.Errorf("status = %+v", s)
		}
	}
}

func TestPerfMapTailerLongLine(t *testing.T) {
	old := perfMapChunk
	perfMapChunk = 4096
	t.Cleanup(func() { perfMapChunk = old })
	path := filepath.Join(t.TempDir(), "perf-7.map")
	long := append([]byte("1000 10 "), bytes.Repeat([]byte("x"), 3*MaxPerfMapLine)...)
	writeFile(t, path, append(append([]byte("1 1 a\n"), long...), "\n2000 10 after\n"...))
	tl, err := OpenPerfMapTailer(path, uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	var got []string
	for range 3 {
		es, _, err := tl.Poll()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			got = append(got, e.Name)
		}
	}
	if !equalStrings(got, []string{"a", "after"}) {
		t.Errorf("got %v", got)
	}
	if s := tl.Status(); s.Skipped[SkipBadLine] == 0 {
		t.Errorf("status = %+v", s)
	}
}

func TestDiscover(t *testing.T) {
	pid := os.Getpid()
	name := "jit-" + strconv.Itoa(pid) + ".dump"
	held := filepath.Join(t.TempDir(), name)
	f, err := os.Create(held)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cands, err := Discover(pid, pid)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range cands {
		if c.Inner == held && c.Kind == SourceJitdump {
			found = true
			if _, err := os.Stat(c.Path); err != nil {
				t.Errorf("candidate path %s: %v", c.Path, err)
			}
		}
	}
	if !found {
		t.Errorf("held-open dump not found in %+v", cands)
	}
	if _, err := Discover(1<<30, 1<<30); err == nil {
		t.Error("no error for a missing process")
	}
}

func TestIsJitdumpName(t *testing.T) {
	tests := []struct {
		in  string
		pid int
		ok  bool
	}{
		{"/tmp/jit-123.dump", 123, true},
		{"jit-1.dump", 1, true},
		{"/x/y/jit-4242.dump", 4242, true},
		{"/tmp/jit-.dump", 0, false},
		{"/tmp/jit-12a.dump", 0, false},
		{"/tmp/jit-123.dump.old", 0, false},
		{"/tmp/perf-123.map", 0, false},
		{"/tmp/jit-0.dump", 0, false},
		{"/tmp/jit-99999999999.dump", 0, false},
		{"/tmp/jit--1.dump", 0, false},
	}
	for _, tt := range tests {
		pid, ok := IsJitdumpName(tt.in)
		if pid != tt.pid || ok != tt.ok {
			t.Errorf("IsJitdumpName(%q) = %d %v, want %d %v", tt.in, pid, ok, tt.pid, tt.ok)
		}
	}
}

func BenchmarkTailerPollIdle(b *testing.B) {
	path := filepath.Join(b.TempDir(), "jit-7.dump")
	if err := os.WriteFile(path, newDump(binary.LittleEndian, 7, 0).load(1, 1, "f", nil).bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	tl, err := OpenTailer(path, 7, uint32(os.Getuid()))
	if err != nil {
		b.Fatal(err)
	}
	defer tl.Close()
	tl.Poll()
	b.ReportAllocs()
	for b.Loop() {
		tl.Poll()
	}
}
