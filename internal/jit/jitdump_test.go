package jit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestParseHeader(t *testing.T) {
	le := newDump(binary.LittleEndian, 42, 0).bytes()
	be := newDump(binary.BigEndian, 42, 0).bytes()
	tsc := newDump(binary.LittleEndian, 42, FlagArchTimestamp).bytes()
	big := bytes.Clone(le)
	binary.LittleEndian.PutUint32(big[8:], 64)
	huge := bytes.Clone(le)
	binary.LittleEndian.PutUint32(huge[8:], 1<<30)
	small := bytes.Clone(le)
	binary.LittleEndian.PutUint32(small[8:], 16)
	bad := bytes.Clone(le)
	bad[0] = 'X'
	tests := []struct {
		name    string
		in      []byte
		wantErr error
		order   binary.ByteOrder
		size    uint32
	}{
		{"little endian", le, nil, binary.LittleEndian, HeaderSize},
		{"big endian", be, nil, binary.BigEndian, HeaderSize},
		{"bigger header", big, nil, binary.LittleEndian, 64},
		{"tsc timestamps", tsc, ErrArchTimestamp, nil, 0},
		{"truncated", le[:39], ErrTruncated, nil, 0},
		{"empty", nil, ErrTruncated, nil, 0},
		{"bad magic", bad, ErrBadMagic, nil, 0},
		{"huge header", huge, ErrBadRecord, nil, 0},
		{"header too small", small, ErrBadRecord, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := ParseHeader(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if h.Order != tt.order || h.Pid != 42 || h.TotalSize != tt.size || h.ElfMach != 62 || h.Timestamp != 12345 {
				t.Errorf("header = %+v", h)
			}
		})
	}
}

func TestParseRecordsAllKinds(t *testing.T) {
	for _, o := range []order{binary.LittleEndian, binary.BigEndian} {
		t.Run(o.String(), func(t *testing.T) {
			b := newDump(o, 1, 0).
				debug(9, 0x1000, dbgEntry{0x1000, 10, "a.js"}, dbgEntry{0x1004, 11, "\xff"}, dbgEntry{0x1008, 12, "b.js"}).
				unwind(9, []byte{1, 2, 3}).
				load(10, 0x1000, "fn one", []byte{0x90, 0xc3}).
				methodID(10, 0x1000, 2, 5).
				inline(10, 6, 5, 0x1000, 1, "inl", "i.js").
				move(11, 0x1000, 0x2000, 2).
				unload(12, 0x2000, 2).
				rec(77, 13, []byte{1, 2, 3, 4}).
				close(14).bytes()
			_, recs := mustRecords(t, b)
			want := []RecordID{RecCodeDebugInfo, RecCodeUnwindingInfo, RecCodeLoad, RecStaxMethodID, RecStaxInline, RecCodeMove, RecStaxCodeUnload, 77, RecCodeClose}
			if len(recs) != len(want) {
				t.Fatalf("got %d records, want %d", len(recs), len(want))
			}
			for i, r := range recs {
				if r.ID != want[i] {
					t.Errorf("record %d id %v, want %v", i, r.ID, want[i])
				}
			}
			d := recs[0].Debug
			if d == nil || len(d.Entries) != 3 || d.Entries[1].File != "a.js" || d.Entries[2].File != "b.js" || d.Entries[2].Line != 12 {
				t.Errorf("debug = %+v", d)
			}
			if u := recs[1].Unwind; u == nil || !bytes.Equal(u.Data, []byte{1, 2, 3}) {
				t.Errorf("unwind = %+v", u)
			}
			l := recs[2].Load
			if l == nil || l.Name != "fn one" || l.CodeAddr != 0x1000 || !bytes.Equal(l.Code, []byte{0x90, 0xc3}) || recs[2].Timestamp != 10 {
				t.Errorf("load = %+v", l)
			}
			if m := recs[3].MethodID; m == nil || m.MethodID != 5 || m.CodeSize != 2 {
				t.Errorf("method id = %+v", m)
			}
			if in := recs[4].Inline; in == nil || in.Name != "inl" || in.SourceFile != "i.js" || in.ParentMethodID != 5 {
				t.Errorf("inline = %+v", in)
			}
			if m := recs[5].Move; m == nil || m.NewCodeAddr != 0x2000 {
				t.Errorf("move = %+v", m)
			}
			if u := recs[6].Unload; u == nil || u.CodeAddr != 0x2000 {
				t.Errorf("unload = %+v", u)
			}
			if recs[7].ID.Known() || recs[7].Size != 20 {
				t.Errorf("unknown record = %+v", recs[7])
			}
		})
	}
}

func TestParseRecordsPartialAndErrors(t *testing.T) {
	o := binary.LittleEndian
	full := newDump(o, 1, 0).load(1, 0x1000, "f", []byte{1, 2, 3}).load(2, 0x2000, "g", []byte{4}).bytes()[HeaderSize:]
	firstLen := int(o.Uint32(full[4:]))

	// code_size larger than the record.
	badCode := newDump(o, 1, 0).load(1, 0x1000, "f", []byte{1, 2, 3}).bytes()[HeaderSize:]
	o.PutUint64(badCode[16+24:], 1000)
	// nr_entry far larger than the record.
	badDebug := newDump(o, 1, 0).debug(1, 0x1000, dbgEntry{0x1000, 1, "x"}).bytes()[HeaderSize:]
	o.PutUint64(badDebug[16+8:], 1<<60)
	// total_size below the prefix, and above the bound.
	tiny := bytes.Clone(full)
	o.PutUint32(tiny[4:], 8)
	huge := bytes.Clone(full)
	o.PutUint32(huge[4:], MaxRecordSize+1)
	// name without NUL.
	noNul := newDump(o, 1, 0).rec(RecCodeLoad, 1, append(make([]byte, 40), 'a', 'b')).bytes()[HeaderSize:]
	// short fixed fields.
	short := newDump(o, 1, 0).rec(RecCodeMove, 1, make([]byte, 10)).bytes()[HeaderSize:]
	// good record followed by a bad one: the good one is kept.
	goodThenBad := append(bytes.Clone(full[:firstLen]), tiny[:16]...)
	o.PutUint32(goodThenBad[firstLen+4:], 3)

	tests := []struct {
		name     string
		in       []byte
		recs     int
		consumed int
		need     int
		err      bool
	}{
		{"complete", full, 2, len(full), 0, false},
		{"partial second", full[:len(full)-1], 1, firstLen, len(full) - firstLen, false},
		{"partial prefix", full[:firstLen+5], 1, firstLen, RecordPrefixSize, false},
		{"only partial", full[:firstLen-1], 0, 0, firstLen, false},
		{"empty", nil, 0, 0, 0, false},
		{"code size too big", badCode, 0, 0, 0, true},
		{"nr_entry too big", badDebug, 0, 0, 0, true},
		{"total_size too small", tiny, 0, 0, 0, true},
		{"total_size too big", huge, 0, 0, 0, true},
		{"unterminated name", noNul, 0, 0, 0, true},
		{"short body", short, 0, 0, 0, true},
		{"good then bad", goodThenBad, 1, firstLen, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, n, need, err := ParseRecords(o, tt.in, nil)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if err != nil && !errors.Is(err, ErrBadRecord) {
				t.Errorf("err %v does not wrap ErrBadRecord", err)
			}
			if len(recs) != tt.recs || n != tt.consumed || need != tt.need {
				t.Errorf("got %d records, consumed %d, need %d; want %d, %d, %d", len(recs), n, need, tt.recs, tt.consumed, tt.need)
			}
		})
	}
}

func TestParseRecordsUnwindBound(t *testing.T) {
	data := make([]byte, MaxUnwindSize+10)
	_, recs := mustRecords(t, newDump(binary.LittleEndian, 1, 0).unwind(1, data).bytes())
	u := recs[0].Unwind
	if len(u.Data) != MaxUnwindSize || !u.Truncated {
		t.Errorf("kept %d bytes, truncated %v", len(u.Data), u.Truncated)
	}
}

func BenchmarkParseRecords(b *testing.B) {
	d := newDump(binary.LittleEndian, 1, 0)
	code := bytes.Repeat([]byte{0x90}, 200)
	for i := range 1000 {
		d.load(uint64(i), 0x10000+uint64(i)*256, "LazyCompile:*someFunction /app/lib/module.js:123", code)
	}
	buf := d.bytes()[HeaderSize:]
	recs := make([]Record, 0, 1000)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		recs, _, _, err = ParseRecords(binary.LittleEndian, buf, recs[:0])
		if err != nil {
			b.Fatal(err)
		}
	}
}
