//go:build linux

package jitdump

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stax-profiler/stax/internal/jit"
)

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	want := filepath.Join(dir, "jit-"+strconv.Itoa(os.Getpid())+".dump")
	if w.Path() != want {
		t.Errorf("path %s, want %s", w.Path(), want)
	}
	if err := w.MarkMmap(); err != nil {
		t.Logf("MarkMmap: %v (a noexec mount refuses it)", err)
	}
	code1 := []byte{0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3}
	code2 := bytes.Repeat([]byte{0x90}, 100)
	steps := []struct {
		name  string
		addr  uint64
		code  []byte
		lines []DebugEntry
	}{
		{"first", 0x1000, code1, []DebugEntry{{Addr: 0x1000, Line: 1, File: "a.src"}, {Addr: 0x1004, Line: 2, File: "a.src"}}},
		{"second with spaces", 0x2000, code2, nil},
		{"third\x00cut", 0x3000, code1, []DebugEntry{{Addr: 0x3000, Line: 7, File: "b.src"}, {Addr: 0x3002, Line: 8, File: "c.src"}}},
	}
	for _, s := range steps {
		if s.lines != nil {
			if err := w.WriteDebugInfo(s.addr, s.lines); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.WriteCodeLoad(s.name, s.addr, s.code); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteClose(); err != nil {
		t.Fatal(err)
	}

	tl, err := jit.OpenTailer(w.Path(), os.Getpid(), uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	recs, _, err := tl.Poll()
	if err != nil {
		t.Fatal(err)
	}
	tab := jit.NewTable()
	tab.Apply(1, jit.SourceJitdump, recs)
	if st := tl.Status(); st.Functions != 3 || !st.Closed {
		t.Errorf("status = %+v", st)
	}
	now := Now()
	tests := []struct {
		addr uint64
		name string
		code []byte
		file string
		line int
	}{
		{0x1000, "first", code1, "a.src", 1},
		{0x1005, "first", code1, "a.src", 2},
		{0x2063, "second with spaces", code2, "", 0},
		{0x3003, "third", code1, "c.src", 8},
	}
	for _, tt := range tests {
		f, ok := tab.Lookup(tt.addr, now)
		if !ok || f.Name != tt.name || !bytes.Equal(f.Code, tt.code) {
			t.Errorf("Lookup(%#x) = %+v, %v", tt.addr, f, ok)
			continue
		}
		if f.LoadTime == 0 || f.LoadTime > now {
			t.Errorf("%s load time %d, now %d", f.Name, f.LoadTime, now)
		}
		file, line, _ := tab.LineAt(f, tt.addr)
		if file != tt.file || line != tt.line {
			t.Errorf("LineAt(%#x) = %s:%d, want %s:%d", tt.addr, file, line, tt.file, tt.line)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteClose(); !errors.Is(err, ErrClosed) {
		t.Errorf("write after close: %v", err)
	}
}

func TestConcurrentWrites(t *testing.T) {
	w, err := Open(filepath.Join(t.TempDir(), "jit-1.dump"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				addr := uint64(g)<<32 | uint64(i)<<8
				if err := w.WriteCodeLoad("f", addr, make([]byte, 64)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	tl, err := jit.OpenTailer(w.Path(), os.Getpid(), uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	recs, _, err := tl.Poll()
	if err != nil || len(recs) != 800 {
		t.Fatalf("%d records, err %v", len(recs), err)
	}
}

func TestPerfMapRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m, err := CreatePerfMap(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(0x7f0000001000, 0x40, "Foo::bar(int, char)"); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(0x7f0000002000, 0x10, "multi\nline"); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	tl, err := jit.OpenPerfMapTailer(filepath.Join(dir, "perf-"+strconv.Itoa(os.Getpid())+".map"), uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	es, _, err := tl.Poll()
	if err != nil {
		t.Fatal(err)
	}
	want := []jit.PerfMapEntry{{Start: 0x7f0000001000, Size: 0x40, Name: "Foo::bar(int, char)"}, {Start: 0x7f0000002000, Size: 0x10, Name: "multi line"}}
	if len(es) != len(want) || es[0] != want[0] || es[1] != want[1] {
		t.Errorf("entries = %+v", es)
	}
}

func BenchmarkWriteCodeLoad(b *testing.B) {
	w, err := Open(filepath.Join(b.TempDir(), "jit-1.dump"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	code := make([]byte, 200)
	b.ReportAllocs()
	addr := uint64(0x1000)
	for b.Loop() {
		addr += 256
		if err := w.WriteCodeLoad("LazyCompile:*handleRequest /srv/app/router.js:10:5", addr, code); err != nil {
			b.Fatal(err)
		}
	}
}
