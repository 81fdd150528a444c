package unwind

import "bytes"

// cpythonTrampoline is the code CPython (3.12 and 3.13, x86-64) copies in front of each
// Python function it runs with perf support (Python/asm_trampoline.S): it keeps no frame
// pointer and announces no unwinding info in a perf map, and in a jitdump only once its
// buffered writes reach the file. At the return address (right after the call) the frame is
// 16 bytes: 8 bytes of alignment, then the caller's return address.
var cpythonTrampoline = []byte{
	0x48, 0x83, 0xec, 0x08, // sub $8,%rsp
	0xff, 0xd1, // call *%rcx
	0x48, 0x83, 0xc4, 0x08, // add $8,%rsp
	0xc3, // ret
}

// cpythonTrampolineRet is the offset of the return address in cpythonTrampoline.
const cpythonTrampolineRet = 6

// trampCacheSize is how many return addresses' verdicts an Unwinder keeps (direct-mapped:
// a JIT frame is asked about at every step through it, and a map's lookup cost the walk of
// a node stack, nearly all JIT frames, 3%).
const trampCacheSize = 1 << 13

type trampEntry struct {
	pc  uint64
	pid uint32
	// verdict: 0 not asked, trampNo, trampYes.
	verdict uint8
}

const (
	trampNo = 1 + iota
	trampYes
)

// jitHow says how jitStep unwound a frame.
type jitHow uint8

const (
	jitNone jitHow = iota
	jitTrampoline
	jitFramePointer
)

// jitStep unwinds frame f, whose return address pc lies in JIT code (mapping m) that has
// no unwinding info, called from its callee (calleeFile: in a file's code): as CPython's
// trampoline where its code is that, else by its frame
// pointer where the frame below left a plausible one (rbp recovered by the callee's rules,
// pointing into the stack at or above f's stack pointer, inside the copy); how says which,
// for the caller to count once it keeps the frame (a frame-pointer step may lead to a return
// address in no code: garbage). A frame whose saved frame pointer and return address are its
// own (the next steps would give the same pc and CFA forever) ends the stack with EndLoop.
func (u *Unwinder) jitStep(view ProcessView, s *Sample, m *Mapping, f *frameRegs, mem *memory, calleeFile bool) (next frameRegs, end EndReason, how jitHow) {
	// A trampoline calls the evaluator, _PyEval_EvalFrameDefault: a JIT frame whose
	// callee is JIT code too (a JIT's own calls, most of its frames) is none.
	if calleeFile && u.isTrampoline(view, s.Pid, m, f.pc) {
		ra, end := mem.read(f.sp + 8)
		if end == EndComplete && usable(view, ra) {
			return frameRegs{pc: ra, sp: f.sp + 16, bp: f.bp, bpValid: f.bpValid}, EndComplete, jitTrampoline
		}
		return frameRegs{}, EndNoCFI, jitNone
	}
	if !f.bpValid || f.bp < f.sp || f.bp-mem.start >= uint64(len(mem.b)) {
		return frameRegs{}, EndNoCFI, jitNone
	}
	next, ok := fpStep(f, mem)
	if !ok {
		return frameRegs{}, EndNoCFI, jitNone
	}
	if next.pc == f.pc && next.bp == f.bp {
		return frameRegs{}, EndLoop, jitNone
	}
	return next, EndComplete, jitFramePointer
}

// isTrampoline reports whether the return address pc, in mapping m of process pid, lies
// right after the call of a CPython trampoline, reading the code through view (a
// CodeReader); verdicts are kept per address.
func (u *Unwinder) isTrampoline(view ProcessView, pid uint32, m *Mapping, pc uint64) bool {
	if pc < m.Start+cpythonTrampolineRet || pc+uint64(len(cpythonTrampoline)-cpythonTrampolineRet) > m.End {
		return false
	}
	// The verdict of the last return address asked first: a recursion's frames, and a
	// loop's calls, return to the same address one after the other.
	if last := &u.lastTramp; last.verdict != 0 && last.pc == pc && last.pid == pid {
		return last.verdict == trampYes
	}
	if u.tramp == nil {
		u.tramp = new([trampCacheSize]trampEntry)
	}
	e := &u.tramp[(pc^pc>>13^uint64(pid)*0x9e3779b1)&(trampCacheSize-1)]
	if e.verdict != 0 && e.pc == pc && e.pid == pid {
		u.lastTramp = *e
		return e.verdict == trampYes
	}
	cr, ok := view.(CodeReader)
	if !ok {
		return false
	}
	var b [16]byte
	code := b[:len(cpythonTrampoline)]
	v := cr.ReadCode(*m, pc-cpythonTrampolineRet, code) && bytes.Equal(code, cpythonTrampoline)
	*e = trampEntry{pc: pc, pid: pid, verdict: trampNo}
	if v {
		e.verdict = trampYes
	}
	u.lastTramp = *e
	return v
}
