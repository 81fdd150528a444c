package unwind

import (
	"encoding/binary"
	"slices"
	"testing"
)

// codeProc is jitProc whose JIT mapping holds code (at 0x7f0000001000) a CodeReader serves.
type codeProc struct {
	jitProc
	code []byte
}

func (p codeProc) ReadCode(m Mapping, addr uint64, b []byte) bool {
	const at = 0x7f0000001000
	if addr < at || addr+uint64(len(b)) > at+uint64(len(p.code)) {
		return false
	}
	copy(b, p.code[addr-at:])
	return true
}

// The leaf in /app (no CFI) keeps a frame pointer; its caller is JIT code at
// 0x7f0000001000 with no unwinding info, called from /app at 0x401400.
func jitCallerStack(jitRBP uint64) (Regs, []byte) {
	const sp = 0x7ffd0000
	stack := make([]byte, 96)
	binary.LittleEndian.PutUint64(stack[16:], jitRBP)         // leaf's saved rbp: the JIT frame's
	binary.LittleEndian.PutUint64(stack[24:], 0x7f0000001006) // return into the JIT code
	binary.LittleEndian.PutUint64(stack[32:], 0xdead)         // JIT frame: padding (or its saved rbp)
	binary.LittleEndian.PutUint64(stack[40:], 0x401400)       // then its caller's return address
	binary.LittleEndian.PutUint64(stack[48:], 0)              // a frame record that ends the chain
	binary.LittleEndian.PutUint64(stack[56:], 0)
	return Regs{IP: 0x401234, SP: sp, BP: sp + 16}, stack
}

func TestJITFramesWithoutUnwindInfo(t *testing.T) {
	const sp = 0x7ffd0000
	trampoline := append(append([]byte{}, cpythonTrampoline...), 0xcc, 0xcc)
	other := []byte{0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0x5d, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc}
	for _, tc := range []struct {
		name        string
		code        []byte
		rbp         uint64 // rbp the leaf saved: the JIT frame's
		want        []uint64
		fp, tramp   uint64
		stackEndsAt EndReason
	}{
		// CPython's trampoline keeps no frame pointer: rbp is a heap pointer.
		{"cpython trampoline", trampoline, 0x555500001000, []uint64{0x401234, 0x7f0000001006, 0x401400}, 0, 1, EndNoCFI},
		// Other JIT code whose rbp points into the stack above it: a frame pointer.
		{"frame pointer", other, sp + 32, []uint64{0x401234, 0x7f0000001006, 0x401400}, 1, 0, EndNoCFI},
		// rbp that points nowhere in the stack: the stack ends at the JIT frame.
		{"no plausible frame pointer", other, 0x555500001000, []uint64{0x401234, 0x7f0000001006}, 0, 0, EndNoCFI},
		// rbp below the frame's stack pointer is not the frame's.
		{"frame pointer below the frame", other, sp, []uint64{0x401234, 0x7f0000001006}, 0, 0, EndNoCFI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			regs, stack := jitCallerStack(tc.rbp)
			var u Unwinder
			for range 2 { // the second walk takes the trampoline's verdict from the cache
				pcs, end := u.Unwind(codeProc{code: tc.code}, &Sample{Regs: regs, Stack: stack}, make([]uint64, 0, 16))
				if !slices.Equal(pcs, tc.want) || end != tc.stackEndsAt {
					t.Errorf("pcs %#x (%v), want %#x (%v)", pcs, end, tc.want, tc.stackEndsAt)
				}
			}
			if fp, tr := u.JITFrames.FramePointer.Load(), u.JITFrames.Trampoline.Load(); fp != 2*tc.fp || tr != 2*tc.tramp {
				t.Errorf("counted %d by frame pointer, %d trampolines; want %d, %d", fp, tr, 2*tc.fp, 2*tc.tramp)
			}
		})
	}
}

// A JIT frame whose saved frame pointer points at itself and whose return address is its
// own pc (a deoptimization entry that keeps calling itself, as V8's was seen to) would
// repeat the same pc at the same CFA: the stack ends there as a loop, counted.
func TestJITFramePointerLoop(t *testing.T) {
	const sp = 0x7ffd0000
	regs, stack := jitCallerStack(sp + 32)
	binary.LittleEndian.PutUint64(stack[32:], sp+32)          // the JIT frame's saved rbp: itself
	binary.LittleEndian.PutUint64(stack[40:], 0x7f0000001006) // and its return address: its own pc
	other := []byte{0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0x5d, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc}
	var u Unwinder
	pcs, end := u.Unwind(codeProc{code: other}, &Sample{Regs: regs, Stack: stack}, make([]uint64, 0, 16))
	if want := []uint64{0x401234, 0x7f0000001006}; !slices.Equal(pcs, want) || end != EndLoop {
		t.Errorf("pcs %#x (%v), want %#x (loop)", pcs, end, want)
	}
	if n := u.Counts[EndLoop].Load(); n != 1 {
		t.Errorf("%d stacks counted as loops, want 1", n)
	}
}
