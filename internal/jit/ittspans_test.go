package jit

import (
	"encoding/binary"
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
