package unwind

import (
	"encoding/binary"
	"slices"
	"testing"
)

// ehEntry appends one .eh_frame entry (a CIE or FDE body) with its length, padded to 4 bytes.
func ehEntry(b, body []byte) []byte {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(body)))
	return append(b, body...)
}

// cieBody is a CIE with augmentation aug ("zR", or "zRS" for a signal frame): code
// alignment 1, data alignment -8, return address in column 16, pc-relative FDE pointers.
func cieBody(aug string, ins ...byte) []byte {
	body := append([]byte{0, 0, 0, 0, 1}, aug...)
	body = append(body, 0, 1, 0x78, 16, 1, 0x1b)
	return append(body, ins...)
}

// fdeBody is an FDE at offset at of a section at secAddr, of the CIE at cieAt, covering
// [start, start+size).
func fdeBody(at, cieAt int, secAddr, start, size uint64, ins ...byte) []byte {
	body := binary.LittleEndian.AppendUint32(nil, uint32(at+4-cieAt))
	body = binary.LittleEndian.AppendUint32(body, uint32(int32(start-(secAddr+uint64(at)+8))))
	body = binary.LittleEndian.AppendUint32(body, uint32(size))
	body = append(body, 0)
	return append(body, ins...)
}

// loopCFI is an .eh_frame at 0x1000 whose rules go round: the function at [0x3000, 0x3010)
// has CFA = rsp+0x20 and its return address at CFA-8; the signal frame at [0x2000,
// 0x2010) (as a signal trampoline's, whose caller may lie on another stack) has CFA =
// rsp-0x20 and its return address in rbp. With rbp = 0x3008, a stack whose [sp+0x18] is
// 0x2008 goes 0x3008 -> 0x2008 -> 0x3008 at the same CFA, forever.
func loopCFI() []byte {
	const sec = 0x1000
	var b []byte
	b = ehEntry(b, cieBody("zR"))
	sigCIE := len(b)
	b = ehEntry(b, cieBody("zRS"))
	at := len(b)
	b = ehEntry(b, fdeBody(at, 0, sec, 0x3000, 0x10, 0x0c, 7, 0x20, 0x90, 1)) // def_cfa rsp+0x20; ra at cfa-8
	at = len(b)
	b = ehEntry(b, fdeBody(at, sigCIE, sec, 0x2000, 0x10, 0x12, 7, 4, 0x09, 16, 6)) // def_cfa_sf rsp-0x20; ra in rbp
	return append(b, 0, 0, 0, 0)
}

// loopStack is the stack loopCFI's walk reads: 0x2008 at sp+0x18.
func loopStack() []byte {
	stack := make([]byte, 64)
	binary.LittleEndian.PutUint64(stack[0x18:], 0x2008)
	return stack
}

// A step that gives a frame the walk was already in (here through a signal frame, whose
// caller may lie below it) ends the stack with EndLoop, keeping the frames before it.
func TestUnwindStopsAtLoop(t *testing.T) {
	tab, err := ParseEHFrame(loopCFI(), 0x1000)
	if err != nil || tab.NumFDEs() != 2 {
		t.Fatalf("parse: %v, %v", err, tab)
	}
	// The same rules with a CFA that stays put: CFA = rsp, return address = itself.
	var same []byte
	same = ehEntry(same, cieBody("zR"))
	at := len(same)
	same = ehEntry(same, fdeBody(at, 0, 0x1000, 0x3000, 0x10, 0x0c, 7, 0, 0x09, 16, 16))
	sameTab, err := ParseEHFrame(append(same, 0, 0, 0, 0), 0x1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		tab  *Table
		want []uint64
	}{
		{"cycle through a signal frame", tab, []uint64{0x3008, 0x2008}},
		{"same cfa and return address", sameTab, []uint64{0x3008}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var u Unwinder
			s := &Sample{Regs: Regs{IP: 0x3008, SP: 0x7ff000, BP: 0x3008}, Stack: loopStack()}
			pcs, end := u.Unwind(fuzzProc{tc.tab}, s, make([]uint64, 0, 64))
			if !slices.Equal(pcs, tc.want) || end != EndLoop {
				t.Errorf("pcs %#x (%v), want %#x (loop)", pcs, end, tc.want)
			}
			if u.Counts[EndLoop].Load() != 1 {
				t.Errorf("loop counted %d times", u.Counts[EndLoop].Load())
			}
		})
	}
}

// The kernel's frame-pointer chain of a frame whose saved rbp points at itself (as a JIT's
// deoptimisation entry can leave one) repeats the caller up to the depth limit. Where the
// stack copy shows that frame, neither the fallback to the chain nor the continuation along
// it keeps the repeats.
func TestFramePointerChainLoopIsCut(t *testing.T) {
	const sp = 0x7ffd0000
	stack := make([]byte, 64)
	binary.LittleEndian.PutUint64(stack[16:], sp+16)    // saved rbp at bp: bp itself
	binary.LittleEndian.PutUint64(stack[24:], 0x401234) // return address at bp+8
	chain := []uint64{0x401000}
	for range 126 {
		chain = append(chain, 0x401234)
	}
	var u Unwinder
	s := &Sample{Regs: Regs{IP: 0x401000, SP: sp, BP: sp + 16}, Stack: stack, FPChain: chain, FPChainEnd: EndMaxDepth}
	pcs, end := u.Unwind(jitProc{}, s, make([]uint64, 0, 1024))
	if want := []uint64{0x401000, 0x401234}; !slices.Equal(pcs, want) {
		t.Errorf("pcs %#x (%v), want %#x", pcs, end, want)
	}
	// Without the frame in the copy the chain cannot be checked, and is kept.
	s.Stack = stack[:16]
	if pcs, _ := u.Unwind(jitProc{}, s, make([]uint64, 0, 1024)); len(pcs) != len(chain) {
		t.Errorf("%d frames from a chain the copy does not cover, want its %d", len(pcs), len(chain))
	}
	// A chain whose frame pointers increase is kept whole.
	binary.LittleEndian.PutUint64(stack[16:], sp+32)
	binary.LittleEndian.PutUint64(stack[32:], sp+48)
	binary.LittleEndian.PutUint64(stack[40:], 0x401300)
	binary.LittleEndian.PutUint64(stack[48:], 0)
	binary.LittleEndian.PutUint64(stack[56:], 0x401400)
	s = &Sample{Regs: Regs{IP: 0x401000, SP: sp, BP: sp + 16}, Stack: stack, FPChain: []uint64{0x401000, 0x401234, 0x401300, 0x401400}}
	if pcs, end := u.Unwind(jitProc{}, s, make([]uint64, 0, 1024)); !slices.Equal(pcs, s.FPChain) {
		t.Errorf("pcs %#x (%v), want the chain %#x", pcs, end, s.FPChain)
	}
}

// A sample taken in the kernel whose user registers lie in no mapping (taken while exec
// replaced the program) has no user frames; one taken in user mode keeps its ip alone.
func TestUnmappedUserRegisters(t *testing.T) {
	for _, tc := range []struct {
		inKernel bool
		want     []uint64
	}{{true, nil}, {false, []uint64{0x5a462e}}} {
		var u Unwinder
		s := &Sample{Regs: Regs{IP: 0x5a462e, SP: 0xc000010000, BP: 0xc000010020}, InKernel: tc.inKernel,
			FPChain: []uint64{0x5a462e, 0x401234}}
		pcs, end := u.Unwind(jitProc{}, s, make([]uint64, 0, 16))
		if !slices.Equal(pcs, tc.want) || end != EndUnmapped {
			t.Errorf("in kernel %v: pcs %#x (%v), want %#x (unmapped)", tc.inKernel, pcs, end, tc.want)
		}
	}
}

// A walk ends complete at a function its image marks outermost (the Go runtime's
// TOPFRAME functions), without reading what lies above it: above a Go thread's mstart is
// runtime.clone, and above that the top of its stack.
func TestUnwindEndsAtTopFrame(t *testing.T) {
	tab, err := ParseEHFrame(loopCFI(), 0x1000)
	if err != nil {
		t.Fatal(err)
	}
	// The function at 0x3000 has its return address at rsp+0x18, past the copy.
	s := &Sample{Regs: Regs{IP: 0x3008, SP: 0x7ff000}, Stack: make([]byte, 0x10)}
	var u Unwinder
	if pcs, end := u.Unwind(fuzzProc{tab}, s, make([]uint64, 0, 64)); end != EndTruncated {
		t.Fatalf("pcs %#x (%v), want truncated", pcs, end)
	}
	tab.tops = []span{{0x3000, 0x3010}}
	pcs, end := u.Unwind(fuzzProc{tab}, s, make([]uint64, 0, 64))
	if !slices.Equal(pcs, []uint64{0x3008}) || end != EndComplete {
		t.Errorf("pcs %#x (%v), want [0x3008] (complete)", pcs, end)
	}
}

// TestFPChainOfCopy: the frame-pointer chain walked in the stack copy is the kernel's walk
// within it: it stops at a saved frame pointer that does not lie above the last frame's 16
// bytes (a loop, or frames that overlap) or a zero return address, and says it was cut
// where it leaves the copy after a checked frame, or fills up.
func TestFPChainOfCopy(t *testing.T) {
	const sp = 0x7ffd0000
	frames := func(words ...uint64) []byte {
		b := make([]byte, 8*len(words))
		for i, w := range words {
			binary.LittleEndian.PutUint64(b[8*i:], w)
		}
		return b
	}
	// Three frames at sp+16, sp+32 and sp+48, the outermost with a zero return address.
	whole := frames(0, 0, sp+32, 0x401100, sp+48, 0x401200, 0, 0)
	for _, c := range []struct {
		name  string
		regs  Regs
		stack []byte
		cap   int
		want  []uint64
		cut   bool
	}{
		{"whole", Regs{IP: 0x401000, SP: sp, BP: sp + 16}, whole, 64, []uint64{0x401000, 0x401100, 0x401200}, false},
		{"leaves the copy", Regs{IP: 0x401000, SP: sp, BP: sp + 16}, whole[:48], 64, []uint64{0x401000, 0x401100, 0x401200}, true},
		{"full", Regs{IP: 0x401000, SP: sp, BP: sp + 16}, whole, 2, []uint64{0x401000, 0x401100}, true},
		{"loop", Regs{IP: 0x401000, SP: sp, BP: sp + 16}, frames(0, 0, sp+16, 0x401100), 64, []uint64{0x401000, 0x401100}, false},
		{"overlapping frames", Regs{IP: 0x401000, SP: sp, BP: sp + 16}, frames(0, 0, sp+24, 0x401100, 0x401200, 0), 64, []uint64{0x401000, 0x401100}, false},
		{"frameless leaf: rbp above the copy", Regs{IP: 0x401000, SP: sp, BP: sp + 1<<20}, whole, 64, []uint64{0x401000}, false},
		{"frameless leaf: rbp holds a count", Regs{IP: 0x401000, SP: sp, BP: 7}, whole, 64, []uint64{0x401000}, false},
		{"no copy", Regs{IP: 0x401000, SP: sp, BP: sp + 16}, nil, 64, []uint64{0x401000}, false},
	} {
		got, cut := FPChainOfCopy(c.regs, c.stack, make([]uint64, 0, c.cap))
		if !slices.Equal(got, c.want) || cut != c.cut {
			t.Errorf("%s: %#x cut %v, want %#x cut %v", c.name, got, cut, c.want, c.cut)
		}
	}
}

func FuzzFPChainOfCopy(f *testing.F) {
	f.Add(uint64(0x7ffd0000), uint64(0x7ffd0010), []byte{16: 0x20, 17: 0, 18: 0xfd, 19: 0x7f, 24: 1})
	f.Fuzz(func(t *testing.T, sp, bp uint64, stack []byte) {
		chain, _ := FPChainOfCopy(Regs{IP: 1, SP: sp, BP: bp}, stack, make([]uint64, 0, 128))
		if len(chain) == 0 || len(chain) > 1+len(stack)/16 {
			t.Errorf("%d entries from a %d-byte copy", len(chain), len(stack))
		}
	})
}
