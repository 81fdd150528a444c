package spans

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseMarkers(t *testing.T) {
	in := "100 200 load config\n" +
		"garbage\n" +
		"\n" +
		"300 250 ends before it starts\n" +
		"5 5 instant\r\n" +
		"18446744073709551615 18446744073709551615 max\n" +
		"1 2 \n" +
		"-1 2 negative\n" +
		"7 9 partial"
	ms, consumed, bad, long := ParseMarkers([]byte(in), nil)
	if long {
		t.Fatal("long")
	}
	want := []Marker{{100, 200, "load config"}, {5, 5, "instant"}, {1<<64 - 1, 1<<64 - 1, "max"}}
	if len(ms) != len(want) {
		t.Fatalf("markers %+v, want %+v", ms, want)
	}
	for i := range want {
		if ms[i] != want[i] {
			t.Errorf("marker %d: %+v, want %+v", i, ms[i], want[i])
		}
	}
	if bad != 4 {
		t.Errorf("bad %d, want 4", bad)
	}
	if consumed != strings.LastIndexByte(in, '\n')+1 {
		t.Errorf("consumed %d, want through the last newline", consumed)
	}
}

// A name of a megabyte is cut to MaxName, the line consumed, and the caller told to skip
// the rest of it.
func TestParseMarkersHugeName(t *testing.T) {
	name := strings.Repeat("é", 1<<19) // 1 MiB
	line := []byte("10 20 " + name)
	ms, consumed, bad, long := ParseMarkers(line[:64<<10], nil)
	if !long || consumed != 64<<10 || bad != 0 || len(ms) != 1 {
		t.Fatalf("markers %d, consumed %d, bad %d, long %v", len(ms), consumed, bad, long)
	}
	if n := len(ms[0].Name); n > MaxName || n < MaxName-3 || !utf8.ValidString(ms[0].Name) {
		t.Errorf("name of %d bytes (valid UTF-8: %v), want at most %d, cut between characters", n, utf8.ValidString(ms[0].Name), MaxName)
	}
	if ms[0].Start != 10 || ms[0].End != 20 {
		t.Errorf("times %d %d", ms[0].Start, ms[0].End)
	}
	// The same line whole, with its newline, in one piece.
	ms, consumed, _, long = ParseMarkers(append(bytes.Clone(line), '\n'), nil)
	if long || consumed != len(line)+1 || len(ms) != 1 || len(ms[0].Name) > MaxName {
		t.Errorf("whole line: markers %d, consumed %d, long %v", len(ms), consumed, long)
	}
}

func TestIsMarkerName(t *testing.T) {
	for _, c := range []struct {
		path     string
		pid, tid int
		ok       bool
	}{
		{"/tmp/marker-123.txt", 123, 0, true},
		{"marker-123-456.txt", 123, 456, true},
		{"/x/marker-0.txt", 0, 0, false},
		{"/x/marker-12a.txt", 0, 0, false},
		{"/x/marker-12-.txt", 0, 0, false},
		{"/x/marker-12.txt.bak", 0, 0, false},
		{"/x/jit-12.dump", 0, 0, false},
	} {
		pid, tid, ok := IsMarkerName(c.path)
		if pid != c.pid || tid != c.tid || ok != c.ok {
			t.Errorf("%s: %d %d %v, want %d %d %v", c.path, pid, tid, ok, c.pid, c.tid, c.ok)
		}
	}
}

func FuzzParseMarkers(f *testing.F) {
	f.Add([]byte("100 200 load config\n5 5 instant\r\n"))
	f.Add([]byte("garbage\n\n1 2 \n-1 2 x\n7 9 partial"))
	f.Add([]byte("18446744073709551616 1 overflow\n"))
	f.Add(append([]byte("1 2 "), bytes.Repeat([]byte{0xff}, 2*MaxMarkerLine)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, consumed, bad, _ := ParseMarkers(b, nil)
		if consumed < 0 || consumed > len(b) || bad < 0 {
			t.Fatalf("consumed %d of %d, bad %d", consumed, len(b), bad)
		}
		for _, m := range ms {
			if m.End < m.Start || len(m.Name) > MaxName || m.Name == "" {
				t.Fatalf("bad marker %+v", m)
			}
		}
	})
}

func TestSetBounds(t *testing.T) {
	s := NewSet()
	src := s.Source(KindMark, 0, "")
	if s.Source(KindMark, 0, "") != src {
		t.Fatal("the same source twice has two ids")
	}
	if !s.Add(Span{Name: strings.Repeat("x", 3*MaxName), Start: 1, End: 2, Source: src}) {
		t.Fatal("not kept")
	}
	if s.Add(Span{Name: "backwards", Start: 2, End: 1, Source: src}) {
		t.Fatal("a span that ends before it starts was kept")
	}
	s.Count(src, 3, 5)
	spans, srcs := s.Snapshot()
	if spans.Len() != 1 || len(spans.At(0).Name) != MaxName {
		t.Fatalf("spans %d, name %d bytes", spans.Len(), len(spans.At(0).Name))
	}
	if got := srcs[src]; got.Received != 7 || got.Dropped != 5 || got.Bad != 4 {
		t.Errorf("source %+v, want 7 received, 5 dropped, 4 bad", got)
	}
	for i := 0; s.t.n < MaxSpans; i++ {
		s.Add(Span{Name: "n", Start: uint64(i), End: uint64(i), Source: src})
	}
	if s.Add(Span{Name: "n", Source: src}) {
		t.Fatal("kept past MaxSpans")
	}
	// What an earlier snapshot holds does not change.
	if spans.At(0).Start != 1 || spans.Len() != 1 {
		t.Fatal("a snapshot changed")
	}
	if _, srcs = s.Snapshot(); srcs[src].Dropped != 6 {
		t.Errorf("dropped %d, want 6", srcs[src].Dropped)
	}
}

// TestSharedSetKeepsEachProcessToItsShare: in a set shared among processes, one that
// floods it takes at most half of the spans while it is alone, and what it leaves lets
// the next process in; names are shared the same way.
func TestSharedSetKeepsEachProcessToItsShare(t *testing.T) {
	s := NewSet()
	s.ShareAmongProcesses()
	flood := s.Source(KindITT, 10, "/tmp/itt-10.spans")
	other := s.Source(KindITT, 20, "/tmp/itt-20.spans")
	kept := 0
	for i := 0; i < MaxSpans; i++ {
		if s.Add(Span{Name: "flood", Pid: 10, Start: uint64(i), End: uint64(i), Source: flood}) {
			kept++
		}
	}
	if kept != MaxSpans/2 {
		t.Fatalf("the flooding process kept %d spans alone, want half of %d", kept, MaxSpans)
	}
	for i := 0; i < 1000; i++ {
		if !s.Add(Span{Name: "work", Pid: 20, Start: uint64(i), End: uint64(i), Source: other}) {
			t.Fatalf("the second process's span %d was dropped", i)
		}
	}
	// Names: the flood's distinct names stop at its share of the name bytes.
	s2 := NewSet()
	s2.ShareAmongProcesses()
	src := s2.Source(KindGo, 30, "/tmp/stax-30.spans")
	name := strings.Repeat("x", MaxName-8)
	var nameKept int
	for i := 0; i < 2*MaxNameBytes/len(name); i++ {
		if s2.Add(Span{Name: fmt.Sprintf("%s%08d", name, i), Pid: 30, Source: src}) {
			nameKept += MaxName
		}
	}
	if nameKept > MaxNameBytes/2 || nameKept < MaxNameBytes/2-MaxName {
		t.Errorf("the process kept %d bytes of names alone, want about half of %d", nameKept, MaxNameBytes)
	}
	if _, srcs := s2.Snapshot(); srcs[src].Dropped == 0 {
		t.Errorf("the names past its share were not counted dropped: %+v", srcs[src])
	}
	// A set not shared keeps one process to the run's bounds alone.
	s3 := NewSet()
	one := s3.Source(KindITT, 40, "")
	for i := 0; i < MaxSpans/2+1; i++ {
		if !s3.Add(Span{Name: "n", Pid: 40, Source: one}) {
			t.Fatalf("an unshared set dropped span %d", i)
		}
	}
}
