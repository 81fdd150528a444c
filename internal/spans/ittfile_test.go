package spans

import (
	"encoding/binary"
	"errors"
	"testing"
)

// ittRec is one record of a spans file, as the collector writes it.
func ittRec(typ uint16, tid uint32, body ...any) []byte {
	var b []byte
	for _, v := range body {
		switch v := v.(type) {
		case uint64:
			b = binary.LittleEndian.AppendUint64(b, v)
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, v)
		case string:
			b = append(b, v...)
		}
	}
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	h := binary.LittleEndian.AppendUint16(nil, typ)
	h = binary.LittleEndian.AppendUint16(h, uint16(8+len(b)))
	h = binary.LittleEndian.AppendUint32(h, tid)
	return append(h, b...)
}

func ittSample() []byte {
	var b []byte
	b = append(b, ittRec(1, 7, uint64(0x10), "render")...)
	b = append(b, ittRec(2, 7, uint64(0x10), uint64(100), uint64(150), uint32(1), uint32(0))...)
	b = append(b, ittRec(2, 7, uint64(0x20), uint64(90), uint64(200), uint32(0), uint32(0))...)
	b = append(b, ittRec(3, 8, uint64(0x10), uint64(300))...)
	b = append(b, ittRec(4, 8, uint64(5))...)
	b = append(b, ittRec(9, 8, uint64(5))...)
	return b
}

func TestITTDecode(t *testing.T) {
	var d ITTDecoder
	var got []Span
	b := ittSample()
	consumed, bad, dropped, err := d.Decode(b[:len(b)-3], func(s Span) { got = append(got, s) })
	if err != nil || consumed != len(b)-16 || bad != 0 || dropped != 5 {
		t.Fatalf("consumed %d of %d, bad %d, dropped %d, %v", consumed, len(b), bad, dropped, err)
	}
	want := []Span{
		{Name: "render", Tid: 7, Start: 100, End: 150, Depth: 1},
		{Name: "itt_0x20", Tid: 7, Start: 90, End: 200},
		{Name: "render", Tid: 8, Start: 300, End: 300},
	}
	if len(got) != len(want) {
		t.Fatalf("spans %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("span %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, bad, _, _ = d.Decode(b[consumed:], func(Span) {}); bad != 1 {
		t.Errorf("unknown record: bad %d, want 1", bad)
	}
	damaged := ittRec(2, 1, uint64(1))
	binary.LittleEndian.PutUint16(damaged[2:], 12)
	if _, _, _, err := d.Decode(damaged, func(Span) {}); !errors.Is(err, ErrITTDamaged) {
		t.Errorf("a record of size 12: %v", err)
	}
}

func FuzzITTDecode(f *testing.F) {
	f.Add(ittSample())
	f.Add(ittRec(1, 1, uint64(1), string(make([]byte, MaxName+100))))
	f.Add(ittRec(2, 1, uint64(1), uint64(5), uint64(4), uint32(0), uint32(0)))
	f.Add(append(ittRec(2, 1, uint64(1), uint64(4), uint64(5), uint32(0), uint32(1)), ittRec(5, 1, uint64(2), uint64(3))...))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d, skip ITTDecoder
		n := 0
		consumed, bad, dropped, err := d.Decode(b, func(s Span) {
			n++
			if s.End < s.Start || len(s.Name) > MaxName {
				t.Fatalf("bad span %+v", s)
			}
		})
		if consumed < 0 || consumed > len(b) || bad < 0 || len(d.names) > MaxITTNames {
			t.Fatalf("consumed %d of %d, bad %d", consumed, len(b), bad)
		}
		// Skip counts what Decode makes spans of, with the same counts.
		sc, sn, sbad, sdropped, serr := skip.Skip(b)
		if sc != consumed || sn != n || sbad != bad || sdropped != dropped || (serr == nil) != (err == nil) ||
			skip.Unmatched != d.Unmatched || skip.Unfinished != d.Unfinished {
			t.Fatalf("Skip: %d %d %d %d %v, Decode: %d %d %d %d %v", sc, sn, sbad, sdropped, serr, consumed, n, bad, dropped, err)
		}
	})
}

func TestITTNames(t *testing.T) {
	for _, c := range []struct {
		path string
		pid  int
		ok   bool
		kind string
	}{
		{"/tmp/itt-12.spans", 12, true, KindITT},
		{"/x/stax-34.spans", 34, true, KindGo},
		{"/tmp/stax-34.recording", 0, false, ""},
		{"/tmp/stax-.spans", 0, false, ""},
		{"/tmp/other-1.spans", 0, false, ""},
	} {
		pid, ok := IsITTName(c.path)
		if pid != c.pid || ok != c.ok {
			t.Errorf("IsITTName(%s) = %d, %v", c.path, pid, ok)
		}
		if ok && KindOf(c.path) != c.kind {
			t.Errorf("KindOf(%s) = %s, want %s", c.path, KindOf(c.path), c.kind)
		}
	}
}

// TestITTNotes: tasks flagged unfinished and NOTE records are counted; a short NOTE is not
// a record the decoder can use.
func TestITTNotes(t *testing.T) {
	var b []byte
	b = append(b, ittRec(2, 7, uint64(1), uint64(10), uint64(20), uint32(0), uint32(1))...)
	b = append(b, ittRec(2, 7, uint64(1), uint64(10), uint64(20), uint32(0), uint32(0))...)
	b = append(b, ittRec(5, 7, uint64(2), uint64(3))...)
	b = append(b, ittRec(5, 7, uint64(9))...)
	var d ITTDecoder
	n := 0
	consumed, bad, _, err := d.Decode(b, func(Span) { n++ })
	if err != nil || consumed != len(b) || bad != 1 || n != 2 {
		t.Fatalf("decode: %v, %d of %d bytes, %d bad, %d spans", err, consumed, len(b), bad, n)
	}
	if d.Unmatched != 2 || d.Unfinished != 4 {
		t.Errorf("unmatched %d, unfinished %d: want 2 and 4", d.Unmatched, d.Unfinished)
	}
}

func TestCountITT(t *testing.T) {
	var b []byte
	b = append(b, ittRec(1, 7, uint64(1), "name")...)
	b = append(b, ittRec(2, 7, uint64(1), uint64(10), uint64(20), uint32(0), uint32(0))...)
	b = append(b, ittRec(3, 7, uint64(1), uint64(15))...)
	b = append(b, ittRec(4, 7, uint64(5))...)
	whole := len(b)
	b = append(b, ittRec(2, 7, uint64(1), uint64(10), uint64(20), uint32(0), uint32(0))[:20]...)
	n, consumed, err := CountITT(b)
	if n != 7 || consumed != whole || err != nil {
		t.Errorf("CountITT: %d spans, %d of %d bytes, %v: want 7 (a task, a marker, 5 dropped)", n, consumed, whole, err)
	}
	if _, _, err := CountITT(ittRec(2, 7, uint64(1))[:2:2]); err != nil {
		t.Errorf("a cut header: %v", err)
	}
	bad := ittRec(2, 7, uint64(1))
	bad[2] = 3
	if _, _, err := CountITT(bad); !errors.Is(err, ErrITTDamaged) {
		t.Errorf("a size of 3: %v, want ErrITTDamaged", err)
	}
}

// FuzzITTHeader: a header of either version parses or fails, never panics, and what it
// accepts is bounded.
func FuzzITTHeader(f *testing.F) {
	f.Add([]byte(ITTMagic + "\x05\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte(ITTMagicV2 + "\x05\x00\x00\x00\x28\x00\x00\x00" + "\x10\x00\x00\x00\x00\x00\x00\x00" + "\x07\x00\x00\x00\x00\x00\x00\x00" + "\x03\x00\x00\x00\x1c\x00\x00\x00"))
	f.Add([]byte(ITTMagicV2 + "\x05\x00\x00\x00\xff\xff\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseITTHeaderFull(b)
		if err != nil {
			return
		}
		if h.Size < ITTHeaderSize || h.Size > maxITTHeader || h.Size > len(b) && h.Version == 1 || h.Size < ITTHeaderNeed(b) {
			t.Fatalf("header %+v from %d bytes", h, len(b))
		}
	})
}
