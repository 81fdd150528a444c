package perfrecord

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// staxSampleType is the layout the recorder asks the kernel for (perfevent.SampleType);
// it is spelled out here so this package's tests do not import the kernel-facing package.
const staxSampleType = SampleIP | SampleTID | SampleTime | SampleCPU | SamplePeriod | SampleCallchain

// rb builds a record byte by byte, little-endian.
type rb struct{ b []byte }

func (w *rb) u8(v uint8)   { w.b = append(w.b, v) }
func (w *rb) u16(v uint16) { w.b = binary.LittleEndian.AppendUint16(w.b, v) }
func (w *rb) u32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *rb) u64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }

// str writes s NUL-terminated and padded to 8 bytes, as the kernel does.
func (w *rb) str(s string) {
	w.b = append(w.b, s...)
	w.b = append(w.b, 0)
	for len(w.b)%8 != 0 {
		w.b = append(w.b, 0)
	}
}

// trailer writes the sample_id_all trailer for staxSampleType: pid, tid, time, cpu, res.
func (w *rb) trailer(id SampleID) {
	w.u32(id.Pid)
	w.u32(id.Tid)
	w.u64(id.Time)
	w.u32(id.CPU)
	w.u32(0)
}

// rec prefixes body with a header whose size covers the whole record.
func rec(typ uint32, misc uint16, body []byte) []byte {
	var w rb
	w.u32(typ)
	w.u16(misc)
	w.u16(uint16(headerSize + len(body)))
	return append(w.b, body...)
}

type sampleFields struct {
	ip       uint64
	pid, tid uint32
	time     uint64
	cpu      uint32
	period   uint64
	chain    []uint64
}

func sampleBody(s sampleFields) []byte {
	var w rb
	w.u64(s.ip)
	w.u32(s.pid)
	w.u32(s.tid)
	w.u64(s.time)
	w.u32(s.cpu)
	w.u32(0)
	w.u64(s.period)
	w.u64(uint64(len(s.chain)))
	for _, a := range s.chain {
		w.u64(a)
	}
	return w.b
}

func sampleRec(s sampleFields, misc uint16) []byte { return rec(TypeSample, misc, sampleBody(s)) }

type mmapFields struct {
	pid, tid         uint32
	addr, len, pgoff uint64
	maj, min         uint32
	ino, inoGen      uint64
	buildID          []byte // non-nil: the build-id variant
	prot, flags      uint32
	name             string
}

func mmap2Rec(m mmapFields, id SampleID, withTrailer bool) []byte {
	var w rb
	w.u32(m.pid)
	w.u32(m.tid)
	w.u64(m.addr)
	w.u64(m.len)
	w.u64(m.pgoff)
	misc := uint16(MiscUser)
	if m.buildID != nil {
		misc |= MiscMmapBuildID
		w.u8(uint8(len(m.buildID)))
		w.u8(0)
		w.u16(0)
		var id20 [20]byte
		copy(id20[:], m.buildID)
		w.b = append(w.b, id20[:]...)
	} else {
		w.u32(m.maj)
		w.u32(m.min)
		w.u64(m.ino)
		w.u64(m.inoGen)
	}
	w.u32(m.prot)
	w.u32(m.flags)
	w.str(m.name)
	if withTrailer {
		w.trailer(id)
	}
	return rec(TypeMmap2, misc, w.b)
}

func mmapRec(m mmapFields, id SampleID) []byte {
	var w rb
	w.u32(m.pid)
	w.u32(m.tid)
	w.u64(m.addr)
	w.u64(m.len)
	w.u64(m.pgoff)
	w.str(m.name)
	w.trailer(id)
	return rec(TypeMmap, MiscUser, w.b)
}

func commRec(pid, tid uint32, comm string, exec bool, id SampleID) []byte {
	var w rb
	w.u32(pid)
	w.u32(tid)
	w.str(comm)
	w.trailer(id)
	misc := uint16(MiscUser)
	if exec {
		misc |= MiscCommExec
	}
	return rec(TypeComm, misc, w.b)
}

func taskRec(typ uint32, pid, ppid, tid, ptid uint32, time uint64, id SampleID) []byte {
	var w rb
	w.u32(pid)
	w.u32(ppid)
	w.u32(tid)
	w.u32(ptid)
	w.u64(time)
	w.trailer(id)
	return rec(typ, 0, w.b)
}

func lostRec(id, lost uint64, sid SampleID) []byte {
	var w rb
	w.u64(id)
	w.u64(lost)
	w.trailer(sid)
	return rec(TypeLost, 0, w.b)
}

func lostSamplesRec(lost uint64, sid SampleID) []byte {
	var w rb
	w.u64(lost)
	w.trailer(sid)
	return rec(TypeLostSamples, 0, w.b)
}

func newDecoder() *Decoder { return &Decoder{SampleType: staxSampleType, SampleIDAll: true} }

func TestParseHeader(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		want    Header
		wantErr bool
	}{
		{"empty", nil, Header{}, true},
		{"seven bytes", make([]byte, 7), Header{}, true},
		{"sample", []byte{9, 0, 0, 0, 2, 0, 0x30, 0}, Header{Type: TypeSample, Misc: MiscUser, Size: 0x30}, false},
		{"high bits", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1}, Header{Type: 0xffffffff, Misc: 0xffff, Size: 0xffff}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseHeader(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				if !errors.Is(err, ErrShort) {
					t.Errorf("err = %v, want ErrShort", err)
				}
				return
			}
			if h != tc.want {
				t.Errorf("header = %+v, want %+v", h, tc.want)
			}
		})
	}
}

func TestSample(t *testing.T) {
	chain := []uint64{ContextKernel, 0xffffffff81000010, 0xffffffff81000020, ContextUser, 0x401000, 0x401100, 0x401200}
	tests := []struct {
		name string
		in   sampleFields
		misc uint16
	}{
		{"kernel and user chain", sampleFields{ip: 0xffffffff81000010, pid: 100, tid: 101, time: 123456789, cpu: 3, period: 1000, chain: chain}, MiscKernel},
		{"user chain", sampleFields{ip: 0x401000, pid: 1, tid: 1, time: 1, cpu: 0, period: 1, chain: chain[3:]}, MiscUser},
		{"empty chain", sampleFields{ip: 0x401000, pid: 7, tid: 8, time: 9, cpu: 10, period: 11}, MiscUser},
		{"max values", sampleFields{ip: ^uint64(0), pid: ^uint32(0), tid: ^uint32(0), time: ^uint64(0), cpu: ^uint32(0), period: ^uint64(0), chain: []uint64{ContextUser}}, MiscUser},
	}
	d := newDecoder()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s Sample
			if err := d.Sample(sampleRec(tc.in, tc.misc), &s); err != nil {
				t.Fatal(err)
			}
			got := sampleFields{ip: s.IP, pid: s.Pid, tid: s.Tid, time: s.Time, cpu: s.CPU, period: s.Period, chain: append([]uint64(nil), s.Callchain...)}
			want := tc.in
			if want.chain == nil {
				want.chain = []uint64{}
			}
			if got.chain == nil {
				got.chain = []uint64{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("sample = %+v, want %+v", got, want)
			}
			if s.Misc != tc.misc {
				t.Errorf("misc = %#x, want %#x", s.Misc, tc.misc)
			}
		})
	}
}

// TestSampleReusesBuffer checks that decoding does not allocate once the callchain buffer
// is big enough, and that the callchain aliases the decoder's buffer.
func TestSampleReusesBuffer(t *testing.T) {
	d := newDecoder()
	chain := make([]uint64, 20)
	for i := range chain {
		chain[i] = 0x400000 + uint64(i)*16
	}
	r := sampleRec(sampleFields{ip: 1, pid: 2, tid: 3, time: 4, chain: chain}, MiscUser)
	var s Sample
	if err := d.Sample(r, &s); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := d.Sample(r, &s); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Sample allocates %.1f times per call, want 0", allocs)
	}
	first := &s.Callchain[0]
	if err := d.Sample(r, &s); err != nil {
		t.Fatal(err)
	}
	if &s.Callchain[0] != first {
		t.Errorf("callchain buffer was not reused")
	}
}

func TestSampleOtherLayouts(t *testing.T) {
	tests := []struct {
		name       string
		sampleType uint64
		body       func(w *rb)
		want       Sample
		wantErr    bool
	}{
		{
			name:       "identifier addr id stream_id",
			sampleType: SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleAddr | SampleIDBit | SampleStreamID | SampleCPU | SamplePeriod,
			body: func(w *rb) {
				w.u64(0xdead) // identifier
				w.u64(0x1234) // ip
				w.u32(5)
				w.u32(6)
				w.u64(77)   // time
				w.u64(0xaa) // addr
				w.u64(0xbb) // id
				w.u64(0xcc) // stream id
				w.u32(2)
				w.u32(0)
				w.u64(10) // period
			},
			want: Sample{IP: 0x1234, Pid: 5, Tid: 6, Time: 77, CPU: 2, Period: 10, ID: 0xdead},
		},
		{
			name:       "read of one counter",
			sampleType: SampleIP | SampleRead,
			body:       func(w *rb) { w.u64(1); w.u64(2) },
			want:       Sample{IP: 1, Read: ReadValues{Values: []ReadValue{{Value: 2}}}},
		},
		{
			name:       "read cut short",
			sampleType: SampleIP | SampleRead,
			body:       func(w *rb) { w.u64(1) },
			wantErr:    true,
		},
		{
			name:       "raw data",
			sampleType: SampleIP | SampleRaw,
			body:       func(w *rb) { w.u64(1); w.u32(4); w.u32(0x04030201) },
			want:       Sample{IP: 1, Raw: []byte{1, 2, 3, 4}},
		},
		{
			name:       "raw data larger than the record",
			sampleType: SampleIP | SampleRaw,
			body:       func(w *rb) { w.u64(1); w.u32(12); w.u32(0) },
			wantErr:    true,
		},
		{
			name:       "raw data over the bound",
			sampleType: SampleIP | SampleRaw,
			body:       func(w *rb) { w.u64(1); w.u32(MaxRaw + 1); w.u32(0) },
			wantErr:    true,
		},
		{
			name:       "raw data size all ones",
			sampleType: SampleIP | SampleRaw,
			body:       func(w *rb) { w.u64(1); w.u32(^uint32(0)) },
			wantErr:    true,
		},
		{
			name:       "ip only",
			sampleType: SampleIP,
			body:       func(w *rb) { w.u64(0x42) },
			want:       Sample{IP: 0x42},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w rb
			tc.body(&w)
			d := &Decoder{SampleType: tc.sampleType}
			var s Sample
			err := d.Sample(rec(TypeSample, 0, w.b), &s)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && !reflect.DeepEqual(s, tc.want) {
				t.Errorf("sample = %+v, want %+v", s, tc.want)
			}
		})
	}
}

func TestSampleHostile(t *testing.T) {
	good := sampleRec(sampleFields{ip: 1, pid: 2, tid: 3, time: 4, cpu: 5, period: 6, chain: []uint64{ContextUser, 1, 2, 3}}, MiscUser)
	withNr := func(nr uint64) []byte {
		b := append([]byte(nil), good...)
		binary.LittleEndian.PutUint64(b[headerSize+40:], nr)
		return b
	}
	withSize := func(size uint16) []byte {
		b := append([]byte(nil), good...)
		binary.LittleEndian.PutUint16(b[6:], size)
		return b
	}
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"header only", good[:headerSize]},
		{"size larger than buffer", withSize(uint16(len(good) + 8))},
		{"size below header", withSize(4)},
		{"size zero", withSize(0)},
		{"truncated before callchain", withSize(headerSize + 40)},
		{"truncated inside callchain", withSize(uint16(len(good) - 8))},
		{"callchain count too big for record", withNr(5)},
		{"callchain count over limit", withNr(maxCallchainSize + 1)},
		{"callchain count huge", withNr(1 << 62)},
		{"callchain count all ones", withNr(^uint64(0))},
		{"buffer cut short", good[:len(good)-1]},
	}
	d := newDecoder()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s Sample
			if err := d.Sample(tc.in, &s); err == nil {
				t.Errorf("no error for %x", tc.in)
			}
		})
	}
}

func TestMmap2(t *testing.T) {
	id := SampleID{Pid: 10, Tid: 11, Time: 999, CPU: 2}
	bid := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	tests := []struct {
		name string
		in   mmapFields
		want Mmap2
	}{
		{
			name: "inode variant",
			in:   mmapFields{pid: 10, tid: 11, addr: 0x400000, len: 0x2000, pgoff: 0x1000, maj: 8, min: 2, ino: 12345, inoGen: 7, prot: 5, flags: 2, name: "/usr/bin/prog"},
			want: Mmap2{Pid: 10, Tid: 11, Addr: 0x400000, Len: 0x2000, Pgoff: 0x1000, Maj: 8, Min: 2, Ino: 12345, Prot: 5, Flag: 2, Filename: "/usr/bin/prog", SampleID: id, Misc: MiscUser},
		},
		{
			name: "build-id variant",
			in:   mmapFields{pid: 10, tid: 11, addr: 0x7f0000000000, len: 0x1000, buildID: bid, prot: 5, flags: 2, name: "/lib/libc.so.6"},
			want: Mmap2{Pid: 10, Tid: 11, Addr: 0x7f0000000000, Len: 0x1000, BuildID: bid, Prot: 5, Flag: 2, Filename: "/lib/libc.so.6", SampleID: id, Misc: MiscUser | MiscMmapBuildID},
		},
		{
			name: "short build-id",
			in:   mmapFields{pid: 10, tid: 11, addr: 0x1000, len: 0x1000, buildID: bid[:8], name: "/a"},
			want: Mmap2{Pid: 10, Tid: 11, Addr: 0x1000, Len: 0x1000, BuildID: bid[:8], Filename: "/a", SampleID: id, Misc: MiscUser | MiscMmapBuildID},
		},
		{
			name: "name of exactly eight bytes",
			in:   mmapFields{pid: 10, tid: 11, name: "/bin/abc"},
			want: Mmap2{Pid: 10, Tid: 11, Filename: "/bin/abc", SampleID: id, Misc: MiscUser},
		},
		{
			name: "anonymous name with spaces",
			in:   mmapFields{pid: 10, tid: 11, name: "/tmp/a file (deleted)"},
			want: Mmap2{Pid: 10, Tid: 11, Filename: "/tmp/a file (deleted)", SampleID: id, Misc: MiscUser},
		},
	}
	d := newDecoder()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := d.Mmap2(mmap2Rec(tc.in, id, true))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("mmap2 = %+v\nwant    %+v", got, tc.want)
			}
		})
	}
}

func TestMmap2BuildIDSizeClamped(t *testing.T) {
	// A hostile build-id size above 20 is clamped to the 20 bytes the record holds.
	m := mmap2Rec(mmapFields{buildID: make([]byte, 20), name: "/x"}, SampleID{}, true)
	m[headerSize+32] = 200
	got, err := newDecoder().Mmap2(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.BuildID) != 20 {
		t.Errorf("build-id of %d bytes, want 20", len(got.BuildID))
	}
}

func TestMmapWithoutSampleIDAll(t *testing.T) {
	m := mmap2Rec(mmapFields{pid: 1, tid: 1, addr: 0x1000, len: 0x1000, name: "/bin/true"}, SampleID{}, false)
	d := &Decoder{SampleType: staxSampleType}
	got, err := d.Mmap2(m)
	if err != nil {
		t.Fatal(err)
	}
	if got.Filename != "/bin/true" || got.SampleID != (SampleID{}) {
		t.Errorf("got %+v", got)
	}
}

func TestMmap(t *testing.T) {
	id := SampleID{Pid: 4, Tid: 4, Time: 55, CPU: 1}
	got, err := newDecoder().Mmap2(mmapRec(mmapFields{pid: 4, tid: 4, addr: 0x10000, len: 0x3000, pgoff: 0x2000, name: "/usr/lib/ld.so"}, id))
	if err != nil {
		t.Fatal(err)
	}
	want := Mmap2{Pid: 4, Tid: 4, Addr: 0x10000, Len: 0x3000, Pgoff: 0x2000, Filename: "/usr/lib/ld.so", SampleID: id, Misc: MiscUser}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mmap = %+v, want %+v", got, want)
	}
}

func TestMmapHostile(t *testing.T) {
	good := mmap2Rec(mmapFields{pid: 1, tid: 1, addr: 0x1000, len: 0x1000, name: "/bin/true"}, SampleID{Time: 1}, true)
	goodBID := mmap2Rec(mmapFields{pid: 1, tid: 1, buildID: []byte{1, 2}, name: "/bin/true"}, SampleID{Time: 1}, true)
	cut := func(b []byte, size int) []byte {
		c := append([]byte(nil), b[:size]...)
		binary.LittleEndian.PutUint16(c[6:], uint16(size))
		return c
	}
	noNul := func() []byte {
		var w rb
		for range 5 {
			w.u64(1)
		}
		for range 4 {
			w.u64(0)
		}
		w.b = append(w.b, bytes.Repeat([]byte{'a'}, 13)...)
		w.trailer(SampleID{})
		return rec(TypeMmap2, 0, w.b)
	}
	tests := []struct {
		name    string
		in      []byte
		wantErr bool
	}{
		{"empty", nil, true},
		{"header only", cut(good, headerSize), true},
		{"shorter than trailer", cut(good, headerSize+16), true},
		{"fixed fields cut", cut(good, headerSize+24+24), true},
		{"build-id fields cut", cut(goodBID, headerSize+40+24), true},
		{"size past buffer", good[:len(good)-8], true},
		{"name without NUL", noNul(), false},
	}
	d := newDecoder()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.Mmap2(tc.in)
			if (err != nil) != tc.wantErr {
				t.Errorf("err = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

func TestComm(t *testing.T) {
	id := SampleID{Pid: 3, Tid: 5, Time: 100, CPU: 7}
	tests := []struct {
		name string
		in   []byte
		want Comm
	}{
		{"rename", commRec(3, 5, "worker-1", false, id), Comm{Pid: 3, Tid: 5, Comm: "worker-1", SampleID: id}},
		{"exec", commRec(3, 3, "python3", true, id), Comm{Pid: 3, Tid: 3, Comm: "python3", Exec: true, SampleID: id}},
		{"empty name", commRec(3, 3, "", false, id), Comm{Pid: 3, Tid: 3, SampleID: id}},
		{"fifteen chars", commRec(3, 3, "abcdefghijklmno", true, id), Comm{Pid: 3, Tid: 3, Comm: "abcdefghijklmno", Exec: true, SampleID: id}},
	}
	d := newDecoder()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := d.Comm(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("comm = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTask(t *testing.T) {
	id := SampleID{Pid: 20, Tid: 21, Time: 300, CPU: 1}
	tests := []struct {
		name string
		in   []byte
		want Task
	}{
		{"fork thread", taskRec(TypeFork, 20, 20, 21, 20, 300, id), Task{Pid: 20, PPid: 20, Tid: 21, PTid: 20, Time: 300, SampleID: id}},
		{"fork process", taskRec(TypeFork, 30, 20, 30, 20, 301, id), Task{Pid: 30, PPid: 20, Tid: 30, PTid: 20, Time: 301, SampleID: id}},
		{"exit", taskRec(TypeExit, 20, 1, 21, 1, 400, id), Task{Pid: 20, PPid: 1, Tid: 21, PTid: 1, Time: 400, SampleID: id}},
	}
	d := newDecoder()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := d.Task(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("task = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLost(t *testing.T) {
	id := SampleID{Pid: 1, Tid: 2, Time: 3, CPU: 4}
	tests := []struct {
		name string
		in   []byte
		want Lost
	}{
		{"lost", lostRec(77, 12, id), Lost{Lost: 12, SampleID: id}},
		{"lost samples", lostSamplesRec(34, id), Lost{Lost: 34, SampleID: id}},
	}
	d := newDecoder()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := d.Lost(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("lost = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSmallRecordsHostile(t *testing.T) {
	cut := func(b []byte, size int) []byte {
		c := append([]byte(nil), b[:size]...)
		binary.LittleEndian.PutUint16(c[6:], uint16(size))
		return c
	}
	withSize := func(b []byte, size uint16) []byte {
		c := append([]byte(nil), b...)
		binary.LittleEndian.PutUint16(c[6:], size)
		return c
	}
	comm := commRec(1, 1, "x", false, SampleID{})
	task := taskRec(TypeFork, 1, 1, 2, 1, 5, SampleID{})
	lost := lostRec(1, 2, SampleID{})
	lostS := lostSamplesRec(2, SampleID{})
	d := newDecoder()
	tests := []struct {
		name   string
		decode func([]byte) error
		in     []byte
	}{
		{"comm empty", func(b []byte) error { _, err := d.Comm(b); return err }, nil},
		{"comm too short", func(b []byte) error { _, err := d.Comm(b); return err }, cut(comm, headerSize+24)},
		{"comm size past buffer", func(b []byte) error { _, err := d.Comm(b); return err }, comm[:len(comm)-1]},
		{"task empty", func(b []byte) error { _, err := d.Task(b); return err }, nil},
		{"task too short", func(b []byte) error { _, err := d.Task(b); return err }, cut(task, headerSize+16)},
		{"task size below header", func(b []byte) error { _, err := d.Task(b); return err }, withSize(task, 4)},
		{"lost empty", func(b []byte) error { _, err := d.Lost(b); return err }, nil},
		{"lost too short", func(b []byte) error { _, err := d.Lost(b); return err }, cut(lost, headerSize+8)},
		{"lost samples too short", func(b []byte) error { _, err := d.Lost(b); return err }, cut(lostS, headerSize+4)},
		{"lost size past buffer", func(b []byte) error { _, err := d.Lost(b); return err }, lost[:len(lost)-1]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.decode(tc.in); err == nil {
				t.Errorf("no error for %x", tc.in)
			}
		})
	}
}

func TestSplitCallchain(t *testing.T) {
	k1, k2 := uint64(0xffffffff81000001), uint64(0xffffffff81000002)
	u1, u2, u3 := uint64(0x401000), uint64(0x401100), uint64(0x7f0000001000)
	tests := []struct {
		name         string
		in           []uint64
		kernel, user []uint64
	}{
		{"kernel and user", []uint64{ContextKernel, k1, k2, ContextUser, u1, u2, u3}, []uint64{k1, k2}, []uint64{u1, u2, u3}},
		{"user only", []uint64{ContextUser, u1, u2}, nil, []uint64{u1, u2}},
		{"kernel only", []uint64{ContextKernel, k1}, []uint64{k1}, nil},
		{"no markers", []uint64{u1, u2}, nil, nil},
		{"empty", nil, nil, nil},
		{"markers only", []uint64{ContextKernel, ContextUser}, []uint64{}, []uint64{}},
		{"hypervisor part dropped", []uint64{ContextHV, 5, ContextKernel, k1, ContextUser, u1}, []uint64{k1}, []uint64{u1}},
		{"unknown marker ends part", []uint64{ContextUser, u1, ContextMax, u2}, nil, []uint64{u1}},
		{"user before kernel", []uint64{ContextUser, u1, ContextKernel, k1}, []uint64{k1}, []uint64{u1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, u := SplitCallchain(tc.in)
			if !sameSeq(k, tc.kernel) || !sameSeq(u, tc.user) {
				t.Errorf("SplitCallchain = %x, %x; want %x, %x", k, u, tc.kernel, tc.user)
			}
		})
	}
}

// sameSeq compares ignoring the nil/empty distinction.
func sameSeq(a, b []uint64) bool {
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

func BenchmarkSample(b *testing.B) {
	chain := make([]uint64, 22)
	chain[0] = ContextUser
	for i := 1; i < len(chain); i++ {
		chain[i] = 0x400000 + uint64(i)*64
	}
	r := sampleRec(sampleFields{ip: chain[1], pid: 1, tid: 2, time: 3, cpu: 4, period: 5, chain: chain}, MiscUser)
	d := newDecoder()
	var s Sample
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Sample(r, &s); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTimeOfEveryRecord(t *testing.T) {
	d := newDecoder()
	id := SampleID{Pid: 7, Tid: 8, Time: 555, CPU: 1}
	for name, c := range map[string]struct {
		rec  []byte
		want uint64
	}{
		"sample":    {sampleRec(sampleFields{ip: 1, pid: 7, tid: 8, time: 444, chain: []uint64{1}}, MiscUser), 444},
		"comm":      {commRec(7, 8, "x", true, id), 555},
		"lost":      {lostRec(1, 3, id), 555},
		"too short": {[]byte{9, 0, 0, 0, 0, 0, 12, 0, 1, 2, 3, 4}, 0},
		"empty":     {nil, 0},
	} {
		if got := d.Time(c.rec); got != c.want {
			t.Errorf("%s: time %d, want %d", name, got, c.want)
		}
	}
}

// TestSamplePid: the pid is read where the layout puts it, and nothing is read from a
// record that is not a whole sample.
func TestSamplePid(t *testing.T) {
	d := newDecoder()
	good := sampleRec(sampleFields{ip: 0x401000, pid: 4242, tid: 4243, time: 9, chain: []uint64{ContextUser, 0x401000}}, MiscUser)
	if pid, ok := d.SamplePid(good); !ok || pid != 4242 {
		t.Errorf("SamplePid = %d, %v; want 4242", pid, ok)
	}
	withID := &Decoder{SampleType: SampleIdentifier | SampleIP | SampleTID | SampleTime}
	w := &rb{}
	w.u64(0xdead)
	w.u64(0x1234)
	w.u32(77)
	w.u32(78)
	w.u64(5)
	if pid, ok := withID.SamplePid(rec(TypeSample, MiscUser, w.b)); !ok || pid != 77 {
		t.Errorf("with an identifier: SamplePid = %d, %v; want 77", pid, ok)
	}
	for name, bad := range map[string][]byte{
		"empty":       nil,
		"header only": good[:headerSize],
		"cut short":   rec(TypeSample, MiscUser, good[headerSize:headerSize+10]),
		"a comm":      commRec(1, 1, "x", false, SampleID{Pid: 1}),
	} {
		if pid, ok := d.SamplePid(bad); ok {
			t.Errorf("%s: SamplePid = %d, true", name, pid)
		}
	}
	if _, ok := (&Decoder{SampleType: SampleIP | SampleTime}).SamplePid(good); ok {
		t.Error("a layout without PERF_SAMPLE_TID gave a pid")
	}
}
