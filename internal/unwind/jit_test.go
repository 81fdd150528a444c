package unwind

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/stax-profiler/stax/pkg/jitdump"
)

// jitProc maps an image at 0x400000 (no CFI) and anonymous JIT code at 0x7f0000000000.
type jitProc struct{}

func (jitProc) Mapping(addr uint64) (Mapping, bool) {
	switch {
	case addr >= 0x400000 && addr < 0x500000:
		return Mapping{Start: 0x400000, End: 0x500000, Path: "/app", Exec: true}, true
	case addr >= 0x7f0000000000 && addr < 0x7f0000010000:
		return Mapping{Start: 0x7f0000000000, End: 0x7f0000010000, Path: "//anon", Exec: true}, true
	}
	return Mapping{}, false
}
func (jitProc) Table(Mapping) *Table { return nil }

type jitInfo struct{ eh []byte }

func (j jitInfo) JITUnwindInfo(pid uint32, addr, time uint64) ([]byte, uint64, bool) {
	return j.eh, 0, addr >= 0x7f0000001000 && addr < 0x7f0000001040
}

func TestJITFramelessLeaf(t *testing.T) {
	// The leaf at 0x7f0000001010 pushed nothing: [sp] is its caller's return address in
	// /app; the caller keeps a frame-pointer chain that ends with a zero return address.
	const sp = 0x7ffd0000
	stack := make([]byte, 64)
	binary.LittleEndian.PutUint64(stack[0:], 0x401234)  // [sp]: return into /app
	binary.LittleEndian.PutUint64(stack[16:], sp+32)    // saved rbp at bp
	binary.LittleEndian.PutUint64(stack[24:], 0x401400) // return address at bp+8
	binary.LittleEndian.PutUint64(stack[32:], 0)        // outermost frame
	binary.LittleEndian.PutUint64(stack[40:], 0)
	regs := Regs{IP: 0x7f0000001010, SP: sp, BP: sp + 16}
	want := []uint64{0x7f0000001010, 0x401234, 0x401400}
	eh, _ := jitdump.FramelessEHFrame(0x7f0000001000, 0x40)
	for _, tc := range []struct {
		name string
		jit  JITUnwindInfo
	}{
		{"with unwinding info", jitInfo{eh}},
		{"without", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := Unwinder{JIT: tc.jit}
			pcs, end := u.Unwind(jitProc{}, &Sample{Regs: regs, Stack: stack}, make([]uint64, 0, 16))
			if !slices.Equal(pcs, want) {
				t.Errorf("pcs %#x (%v), want %#x", pcs, end, want)
			}
		})
	}
}

// TestLeafFrames: steps by the frameless leaf's unwinding info find the caller that the
// frame-pointer chain skips (bp still holds the caller's frame, whose return address is
// the caller's caller), and the steps are not counted as a walk.
func TestLeafFrames(t *testing.T) {
	const sp = 0x7ffd0000
	stack := make([]byte, 64)
	binary.LittleEndian.PutUint64(stack[0:], 0x401234)
	binary.LittleEndian.PutUint64(stack[16:], sp+32)
	binary.LittleEndian.PutUint64(stack[24:], 0x401400)
	regs := Regs{IP: 0x7f0000001010, SP: sp, BP: sp + 16}
	eh, _ := jitdump.FramelessEHFrame(0x7f0000001000, 0x40)
	u := Unwinder{JIT: jitInfo{eh}}
	pcs := u.LeafFrames(jitProc{}, &Sample{Regs: regs, Stack: stack, FPChain: []uint64{regs.IP, 0x401400}}, make([]uint64, 0, 2))
	if want := []uint64{regs.IP, 0x401234}; !slices.Equal(pcs, want) {
		t.Errorf("frames %#x, want %#x", pcs, want)
	}
	for end := range u.Counts {
		if n := u.Counts[end].Load(); n != 0 {
			t.Errorf("the steps counted as a walk that ended %v (%d)", EndReason(end), n)
		}
	}
	if pcs := u.LeafFrames(jitProc{}, &Sample{Regs: Regs{IP: 0x900000, SP: sp}, Stack: stack}, make([]uint64, 0, 2)); len(pcs) > 1 {
		t.Errorf("a leaf in no mapping gave callers %#x", pcs)
	}
}
