package ring

import (
	"encoding/binary"
	"reflect"
	"slices"
	"testing"
)

// mkrec returns a record of the given total size whose body bytes are all fill.
func mkrec(typ uint32, size int, fill byte) []byte {
	b := make([]byte, size)
	binary.LittleEndian.PutUint32(b, typ)
	binary.LittleEndian.PutUint16(b[6:], uint16(size))
	for i := 8; i < size; i++ {
		b[i] = fill
	}
	return b
}

// place writes recs into a ring of size bytes starting at absolute position start, the way
// the kernel does (wrapping at the end), and returns the ring and the head after the last.
func place(size int, start uint64, recs ...[]byte) ([]byte, uint64) {
	data := make([]byte, size)
	pos := start
	for _, r := range recs {
		for _, c := range r {
			data[pos&uint64(size-1)] = c
			pos++
		}
	}
	return data, pos
}

func collect(r *Reader, tail, head uint64) ([][]byte, uint64, error) {
	var got [][]byte
	nt, err := r.Drain(tail, head, func(rec []byte) { got = append(got, append([]byte(nil), rec...)) })
	return got, nt, err
}

func TestDrain(t *testing.T) {
	a := mkrec(9, 24, 0xa1)
	b := mkrec(9, 40, 0xb2)
	c := mkrec(10, 16, 0xc3)
	big := mkrec(9, 64, 0xd4)
	tests := []struct {
		name     string
		size     int
		start    uint64
		recs     [][]byte
		headCut  uint64 // bytes of the last record not yet written
		want     [][]byte
		wantTail func(start, head uint64) uint64
	}{
		{"one record", 64, 0, [][]byte{a}, 0, [][]byte{a}, nil},
		{"three records", 128, 0, [][]byte{a, b, c}, 0, [][]byte{a, b, c}, nil},
		{"empty", 64, 16, nil, 0, nil, nil},
		{"record wraps around the end", 64, 48, [][]byte{b}, 0, [][]byte{b}, nil},
		{"header wraps around the end", 64, 60, [][]byte{a, c}, 0, [][]byte{a, c}, nil},
		{"record ends exactly at the end", 64, 40, [][]byte{a, c}, 0, [][]byte{a, c}, nil},
		{"positions past many laps", 64, 64*1000 + 56, [][]byte{a, b}, 0, [][]byte{a, b}, nil},
		{"whole ring of one record", 64, 32, [][]byte{big}, 0, [][]byte{big}, nil},
		{"partial record at head", 128, 0, [][]byte{a, b}, 8, [][]byte{a},
			func(start, head uint64) uint64 { return start + 24 }},
		{"partial header at head", 128, 0, [][]byte{a, b}, 36, [][]byte{a},
			func(start, head uint64) uint64 { return start + 24 }},
		{"only partial record", 128, 8, [][]byte{b}, 1, nil,
			func(start, head uint64) uint64 { return start }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, head := place(tc.size, tc.start, tc.recs...)
			head -= tc.headCut
			r := &Reader{Data: data}
			got, tail, err := collect(r, tc.start, head)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("records = %x\nwant      %x", got, tc.want)
			}
			wantTail := head
			if tc.wantTail != nil {
				wantTail = tc.wantTail(tc.start, head)
			}
			if tail != wantTail {
				t.Errorf("tail = %d, want %d", tail, wantTail)
			}
		})
	}
}

// TestDrainResume checks that a walk stopped at a partial record resumes from the returned
// tail once the writer finished it.
func TestDrainResume(t *testing.T) {
	a := mkrec(9, 24, 1)
	b := mkrec(9, 48, 2)
	data, head := place(128, 100, a, b)
	r := &Reader{Data: data}
	got1, tail, err := collect(r, 100, head-10)
	if err != nil {
		t.Fatal(err)
	}
	got2, tail, err := collect(r, tail, head)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got1, [][]byte{a}) || !reflect.DeepEqual(got2, [][]byte{b}) || tail != head {
		t.Errorf("first %x, second %x, tail %d (head %d)", got1, got2, tail, head)
	}
}

func TestDrainErrors(t *testing.T) {
	a := mkrec(9, 24, 1)
	zero := mkrec(9, 16, 0)
	binary.LittleEndian.PutUint16(zero[6:], 0)
	four := mkrec(9, 16, 0)
	binary.LittleEndian.PutUint16(four[6:], 4)
	tests := []struct {
		name       string
		data       []byte
		tail, head uint64
		wantCalls  int
		wantTail   uint64
	}{
		{"zero size record", func() []byte { d, _ := place(64, 0, a, zero); return d }(), 0, 40, 1, 40},
		{"size below header", func() []byte { d, _ := place(64, 0, four); return d }(), 0, 16, 0, 16},
		{"head more than a ring past tail", make([]byte, 64), 0, 65, 0, 65},
		{"head behind tail", make([]byte, 64), 100, 50, 0, 50},
		{"data not a power of two", make([]byte, 48), 0, 24, 0, 0},
		{"no data", nil, 0, 8, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reader{Data: tc.data}
			calls := 0
			tail, err := r.Drain(tc.tail, tc.head, func([]byte) { calls++ })
			if err == nil {
				t.Fatal("no error")
			}
			if calls != tc.wantCalls {
				t.Errorf("%d records delivered, want %d", calls, tc.wantCalls)
			}
			if tail != tc.wantTail {
				t.Errorf("tail = %d, want %d", tail, tc.wantTail)
			}
		})
	}
}

// TestRecordsOutliveTheWalk checks that every record handed out, the wrapped one included,
// keeps its bytes after the walk moves on: the recorder decodes a batch of them afterwards.
func TestRecordsOutliveTheWalk(t *testing.T) {
	a, b, c := mkrec(9, 24, 0xa1), mkrec(9, 32, 0xb2), mkrec(9, 40, 0xc3)
	data, head := place(128, 100, a, b, c) // b wraps around the end
	r := &Reader{Data: data}
	var got [][]byte
	if _, err := r.Drain(100, head, func(rec []byte) { got = append(got, rec) }); err != nil {
		t.Fatal(err)
	}
	want := [][]byte{a, b, c}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("record %d changed after the walk: % x", i, got[i][:8])
		}
	}
}

// FuzzDrain walks arbitrary ring contents. Every record handed out must lie inside
// [tail, head), have at least a header, and declare the size it has; the returned tail never
// moves backwards or past head unless an error is reported.
func FuzzDrain(f *testing.F) {
	a := mkrec(9, 24, 1)
	b := mkrec(10, 40, 2)
	d1, h1 := place(64, 48, a, b)
	f.Add(d1, uint8(6), uint64(48), h1)
	d2, h2 := place(128, 0, a, a, b)
	f.Add(d2, uint8(7), uint64(0), h2-3)
	f.Add(make([]byte, 64), uint8(6), uint64(0), uint64(64))
	f.Add([]byte{9, 0, 0, 0, 0, 0, 0, 0}, uint8(3), uint64(0), uint64(8))
	f.Fuzz(func(t *testing.T, seed []byte, logSize uint8, tail, head uint64) {
		size := 1 << (logSize % 13)
		data := make([]byte, size)
		copy(data, seed)
		r := &Reader{Data: data}
		var seen uint64
		nt, err := r.Drain(tail, head, func(rec []byte) {
			if len(rec) < 8 {
				t.Fatalf("record of %d bytes", len(rec))
			}
			if got := binary.LittleEndian.Uint16(rec[6:]); int(got) != len(rec) {
				t.Fatalf("record declares %d bytes, has %d", got, len(rec))
			}
			seen += uint64(len(rec))
		})
		if err != nil {
			return
		}
		if nt-tail != seen {
			t.Fatalf("tail moved %d bytes, records cover %d", nt-tail, seen)
		}
		if head-tail <= uint64(size) && nt-tail > head-tail {
			t.Fatalf("tail %d moved past head %d (from %d)", nt, head, tail)
		}
	})
}

func BenchmarkDrain(b *testing.B) {
	const size = 1 << 16
	var recs [][]byte
	for i := 0; i < 200; i++ {
		recs = append(recs, mkrec(9, 216, byte(i)))
	}
	data, head := place(size, size-1000, recs...)
	r := &Reader{Data: data}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if _, err := r.Drain(size-1000, head, func(rec []byte) { n += len(rec) }); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(head - (size - 1000)))
}

// timedRing is a ring of 16-byte records, each carrying its time after the header.
func timedRing(size int, times ...uint64) *Span {
	r := &Reader{Data: make([]byte, size)}
	var head uint64
	for _, t := range times {
		rec := make([]byte, 16)
		binary.LittleEndian.PutUint16(rec[6:], 16)
		binary.LittleEndian.PutUint64(rec[8:], t)
		for i, b := range rec {
			r.Data[(head+uint64(i))%uint64(size)] = b
		}
		head += 16
	}
	return &Span{R: r, Head: head}
}

func TestMergeOrdersByTimeAndStopsAtUntil(t *testing.T) {
	a := timedRing(64, 1, 4, 9)
	b := timedRing(64, 2, 3, 5, 10)
	spans := []Span{*a, *b}
	var got []uint64
	err := Merge(spans, func(rec []byte) uint64 { return binary.LittleEndian.Uint64(rec[8:]) }, 9, func(i int, rec []byte) {
		got = append(got, binary.LittleEndian.Uint64(rec[8:]))
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	// What is at or past until stays: one record in a, one in b.
	if spans[0].Head-spans[0].Tail != 16 || spans[1].Head-spans[1].Tail != 16 {
		t.Errorf("left %d and %d bytes, want 16 each", spans[0].Head-spans[0].Tail, spans[1].Head-spans[1].Tail)
	}
}

func TestMergeSkipsACorruptRing(t *testing.T) {
	good := timedRing(64, 1, 2)
	bad := &Span{R: &Reader{Data: make([]byte, 64)}, Head: 32} // zero-sized record
	spans := []Span{*bad, *good}
	n := 0
	err := Merge(spans, func(rec []byte) uint64 { return binary.LittleEndian.Uint64(rec[8:]) }, ^uint64(0), func(int, []byte) { n++ })
	if err == nil || n != 2 || spans[0].Tail != spans[0].Head {
		t.Errorf("err %v, %d records, bad ring tail %d of %d", err, n, spans[0].Tail, spans[0].Head)
	}
}

// BenchmarkMerge reads 16 rings of 4,096 records each in time order: the cost per record
// of ordering across CPUs (ns/op is per record).
func BenchmarkMerge(b *testing.B) {
	const rings, perRing = 16, 4096
	base := make([]*Span, rings)
	for i := range base {
		times := make([]uint64, perRing)
		for j := range times {
			times[j] = uint64(j*rings + i)
		}
		base[i] = timedRing(1<<17, times...)
	}
	timeOf := func(rec []byte) uint64 { return binary.LittleEndian.Uint64(rec[8:]) }
	spans := make([]Span, rings)
	n := 0
	for b.Loop() {
		if n%(rings*perRing) == 0 {
			for i := range spans {
				spans[i] = *base[i]
			}
		}
		Merge(spans, timeOf, ^uint64(0), func(int, []byte) {})
		n += rings * perRing
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/record")
}
