package recorder

import (
	"bytes"
	"testing"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/resolve"
	"github.com/stax-profiler/stax/internal/symbol"
	"github.com/stax-profiler/stax/internal/unwind"
	"github.com/stax-profiler/stax/pkg/jitdump"
)

// The .eh_frame a jitdump announces for a function reaches the unwinder without its
// .eh_frame_hdr, and parses into a table covering the function.
func TestJITUnwindInfoFromJitdump(t *testing.T) {
	const addr, size = 0x7f0000001000, 0x40
	eh, hdr := jitdump.FramelessEHFrame(addr, size)
	data := append(append([]byte(nil), eh...), hdr...)
	res := resolve.New(proc.NewTracker(), symbol.Options{})
	res.JIT(42).Apply(1, jit.SourceJitdump, []jit.Record{
		{ID: jit.RecordID(4), Timestamp: 10, Unwind: &jit.UnwindingInfo{UnwindingSize: uint64(len(data)),
			EHFrameHdrSize: uint64(len(hdr)), MappedSize: uint64(len(data)), Data: data}},
		{ID: jit.RecordID(0), Timestamp: 11, Load: &jit.CodeLoad{Pid: 42, VMA: addr, CodeAddr: addr, CodeSize: size,
			CodeIndex: 1, Name: "leaf", Code: make([]byte, size)}},
	})
	info := jitUnwindInfo{res}
	got, base, ok := info.JITUnwindInfo(42, addr+8, 100)
	if !ok || !bytes.Equal(got, eh) || base != addr+size {
		t.Fatalf("JITUnwindInfo = %d bytes (want the %d of the .eh_frame), base %#x, %v", len(got), len(eh), base, ok)
	}
	tab, err := unwind.ParseEHFrame(got, base)
	if err != nil || tab.NumFDEs() != 1 {
		t.Fatalf("parse: %v, %v FDEs", err, tab)
	}
	if _, _, ok := info.JITUnwindInfo(42, addr+size+8, 100); ok {
		t.Error("an address outside the function has unwinding info")
	}
	if _, _, ok := info.JITUnwindInfo(7, addr, 100); ok {
		t.Error("another process has unwinding info")
	}
}
