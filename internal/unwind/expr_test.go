package unwind

import (
	"encoding/binary"
	"testing"
)

func TestPLTExpression(t *testing.T) {
	tab, err := ParseEHFrame(pltCIE(), 0x1000)
	if err != nil || tab.NumFDEs() != 1 {
		t.Fatalf("parse: %v, %d FDEs", err, tab.NumFDEs())
	}
	for _, tc := range []struct{ ip, cfa uint64 }{
		{0x2000, 0x7ff008}, // before the push: rsp+8
		{0x2009, 0x7ff008},
		{0x200a, 0x7ff010}, // after the push (lit10 in this expression): rsp+16
		{0x201f, 0x7ff010},
	} {
		rw, ok := tab.rowAt(tc.ip)
		if !ok {
			t.Fatalf("no row at %#x", tc.ip)
		}
		stack := make([]byte, 32)
		binary.LittleEndian.PutUint64(stack[8:], 0x3000)
		binary.LittleEndian.PutUint64(stack[0:], 0x3000)
		f := frameRegs{pc: tc.ip, sp: 0x7ff000}
		mem := memory{b: stack, start: 0x7ff000}
		next, end, ok := step(&rw, &f, &mem)
		if !ok || next.sp != tc.cfa || next.pc != 0x3000 {
			t.Errorf("ip %#x: cfa %#x pc %#x (%v), want cfa %#x", tc.ip, next.sp, next.pc, end, tc.cfa)
		}
	}
}

func TestFixChain(t *testing.T) {
	p := fuzzProc{}
	chain := []uint64{0x2000, 0x3000, 0xbe552274c0854800}
	got, end := FixChain(p, chain)
	if len(got) != 2 || end != EndGarbage {
		t.Errorf("FixChain = %#x, %v", got, end)
	}
	if got, end := FixChain(p, chain[:2]); len(got) != 2 || end != EndComplete {
		t.Errorf("FixChain = %#x, %v", got, end)
	}
}
