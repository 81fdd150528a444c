package jit

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/spans"
)

func ittFileRecord(typ uint16, tid uint32, words ...uint64) []byte {
	b := binary.LittleEndian.AppendUint16(nil, typ)
	b = binary.LittleEndian.AppendUint16(b, uint16(8+8*len(words)))
	b = binary.LittleEndian.AppendUint32(b, tid)
	for _, w := range words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return b
}

func ittFileHeader(pid uint32) []byte {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32([]byte(spans.ITTMagic), pid), 0)[:spans.ITTHeaderSize]
}

// The tailer reads whole records as they are appended, leaving a partial one for later,
// and refuses a file of another pid.
func TestITTSpanTailer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "itt-5.spans")
	name := ittFileRecord(1, 9, 0x10, 0x6f6c6c6568) // "hello"
	task := ittFileRecord(2, 9, 0x10, 100, 200, 0)
	data := append(append(ittFileHeader(5), name...), task[:20]...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	tl, err := OpenITTSpanTailer(path, 5, uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	var got []spans.Span
	emit := func(s spans.Span) { got = append(got, s) }
	if _, _, _, err := tl.PollUpTo(1<<20, emit); err != nil || len(got) != 0 {
		t.Fatalf("first poll: %v, %+v", err, got)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(task[20:])
	f.Write(ittFileRecord(4, 9, 3))
	f.Close()
	bad, dropped, _, err := tl.PollUpTo(1<<20, emit)
	if err != nil || bad != 0 || dropped != 3 || len(got) != 1 || got[0].Name != "hello" || got[0].Start != 100 || got[0].End != 200 || got[0].Tid != 9 {
		t.Fatalf("second poll: %v, bad %d, dropped %d, %+v", err, bad, dropped, got)
	}

	other := filepath.Join(t.TempDir(), "itt-6.spans")
	os.WriteFile(other, ittFileHeader(7), 0o600)
	tl2, err := OpenITTSpanTailer(other, 6, uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	defer tl2.Close()
	if _, _, _, err := tl2.PollUpTo(1<<20, emit); err == nil || !strings.Contains(err.Error(), "pid") {
		t.Errorf("a file of another pid: %v", err)
	}
}

func ittFileHeaderV2(pid uint32, start, dropped uint64, failed, errno uint32) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32([]byte(spans.ITTMagicV2), pid)
	b = le.AppendUint32(b, spans.ITTHeaderV2Size)
	b = le.AppendUint64(b, start)
	b = le.AppendUint64(b, dropped)
	b = le.AppendUint32(b, failed)
	return le.AppendUint32(b, errno)
}

// A version 2 file's header counts change in place: the tailer reads them at each poll
// without taking the file for a rewritten one (its spans are not read again), counts as
// dropped the larger of the header's count and the DROP records', and says a torn last
// record once it has read up to it.
func TestITTSpanTailerV2Counts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "itt-5.spans")
	name := ittFileRecord(1, 9, 0x10, 0x6f6c6c6568)
	task := ittFileRecord(2, 9, 0x10, 100, 200, 0)
	data := append(append(ittFileHeaderV2(5, 77, 0, 0, 0), name...), task...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	tl, err := OpenITTSpanTailer(path, 5, uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	var got []spans.Span
	emit := func(s spans.Span) { got = append(got, s) }
	if _, dropped, _, err := tl.PollUpTo(1<<20, emit); err != nil || dropped != 0 || len(got) != 1 {
		t.Fatalf("first poll: %v, %d dropped, %+v", err, dropped, got)
	}
	if h, ok := tl.Header(); !ok || h.Version != 2 || h.Start != 77 {
		t.Fatalf("header %+v", h)
	}
	// The writer failed 3 writes (7 spans), then wrote a DROP record of 2 of them and a
	// task, and half of a task it could not finish.
	f, _ := os.OpenFile(path, os.O_WRONLY, 0)
	f.WriteAt(ittFileHeaderV2(5, 77, 7, 3, 28)[24:], 24)
	f.WriteAt(append(append(ittFileRecord(4, 9, 2), task...), task[:12]...), int64(len(data)))
	f.Close()
	_, dropped, _, err := tl.PollUpTo(1<<20, emit)
	if err != nil || dropped != 7 || len(got) != 2 {
		t.Fatalf("second poll: %v, %d dropped (want the header's 7), %d spans (want 2: none read again)", err, dropped, len(got))
	}
	if n, errno := tl.WriteFailures(); n != 3 || errno != 28 {
		t.Errorf("write failures %d, errno %d", n, errno)
	}
	if torn := tl.Torn(); torn != 12 {
		t.Errorf("torn tail %d bytes, want 12", torn)
	}
	// DROP records past the header's count (a writer that updates it later) count too.
	f, _ = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.Truncate(int64(len(data) + 16 + len(task)))
	f.Write(ittFileRecord(4, 9, 9))
	f.Close()
	if _, dropped, _, err := tl.PollUpTo(1<<20, emit); err != nil || dropped != 4 {
		t.Fatalf("third poll: %v, %d more dropped, want 4 (11 in DROP records, 7 counted)", err, dropped)
	}
}

// A version 2 file whose header names another start time than the process's is an earlier
// process's with the same pid: refused as stale.
func TestITTSpanTailerStaleHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "itt-5.spans")
	os.WriteFile(path, append(ittFileHeaderV2(5, 77, 0, 0, 0), ittFileRecord(2, 9, 0x10, 100, 200, 0)...), 0o600)
	for _, c := range []struct {
		want uint64
		ok   bool
	}{{77, true}, {0, true}, {78, false}} {
		tl, err := OpenITTSpanTailer(path, 5, uint32(os.Getuid()))
		if err != nil {
			t.Fatal(err)
		}
		tl.ExpectStart(c.want)
		n := 0
		_, _, _, err = tl.PollUpTo(1<<20, func(spans.Span) { n++ })
		tl.Close()
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrStale)) || c.ok != (n == 1) {
			t.Errorf("process started at %d, file at 77: %v, %d spans", c.want, err, n)
		}
	}
}
