//go:build linux

package jitdump

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/unwind"
)

func TestUnwindingInfoRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	eh, hdr := FramelessEHFrame(0x7f0000001000, 0x40)
	if err := w.WriteUnwindingInfo(eh, hdr); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteCodeLoad("leaf", 0x7f0000001000, bytes.Repeat([]byte{0x90}, 0x40)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	recs, _, _, err := jit.ParseRecords(binary.LittleEndian, data[jit.HeaderSize:], nil)
	if err != nil || len(recs) != 2 || recs[0].Unwind == nil {
		t.Fatalf("parse: %v, %d records", err, len(recs))
	}
	u := recs[0].Unwind
	if u.EHFrameHdrSize != uint64(len(hdr)) || !bytes.Equal(u.Data[:len(eh)], eh) || !bytes.Equal(u.Data[len(eh):u.UnwindingSize], hdr) {
		t.Fatalf("unwinding info did not round-trip: %+v", u)
	}
	tab, err := unwind.ParseEHFrame(u.Data[:u.UnwindingSize-u.EHFrameHdrSize], 0)
	if err != nil || tab.NumFDEs() != 1 {
		t.Fatalf("parse .eh_frame: %v, %d FDEs", err, tab.NumFDEs())
	}
}
