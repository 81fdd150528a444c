// Package unwind recovers user-space call stacks from a sample's registers and a copy of
// its user stack, with the .eh_frame/.debug_frame call-frame information of the images
// mapped by the process, falling back to the frame-pointer chain where that runs out. JIT
// code with no unwinding info is stepped over by its frame pointer where that is plausible,
// and CPython's perf trampolines by their known layout (jitStep) where the ProcessView can
// read code (CodeReader).
//
// An Unwinder is not safe for concurrent use: give each goroutine its own (they may share
// Tables through a Loader that caches them).
//
// Use, per sample of a run recorded with perfevent.Config{CallGraph: "dwarf"}:
//
//	_, user := perfrecord.SplitCallchain(s.Callchain)
//	pcs, end := u.Unwind(view, &unwind.Sample{Pid: s.Pid, Time: s.Time,
//		Regs:  unwind.Regs{BP: s.Regs[0], SP: s.Regs[1], IP: s.Regs[2]},
//		Stack: s.Stack, FPChain: user}, buf[:0])
//
// where view is the process's mappings at the sample's time (a ProcessView; Maps with a
// FileLoader shared by the run will do) and end is counted in u.Counts. A sample taken in
// the kernel sets InKernel: its registers are those the thread entered the kernel with. In
// fp mode, FixChain(view, user) drops the garbage a frame-pointer walk reads above the last
// frame.
package unwind

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/stax-profiler/stax/internal/proc"
)

// Regs are the user registers a sample carries (perf's BP, SP, IP).
type Regs struct{ IP, SP, BP uint64 }

// Mapping is one executable mapping of a process.
type Mapping struct {
	Start, End uint64
	Offset     uint64 // file offset mapped at Start
	Path       string
	BuildID    string
	Ino        uint64 // the file's inode: it tells files apart where there is no build-id
	Exec       bool
}

// ProcessView tells the unwinder what a process had mapped at the sample's time.
type ProcessView interface {
	// Mapping returns the mapping holding addr.
	Mapping(addr uint64) (Mapping, bool)
	// Table returns the call-frame information of the image behind m (nil when there is
	// none). Implementations cache it, by build-id or path; NewFileLoader does.
	Table(m Mapping) *Table
}

// JITUnwindInfo gives the .eh_frame a JIT announced for code at addr (jitdump
// CODE_UNWINDING_INFO). base is the address of the .eh_frame's first byte as the JIT laid it
// out (what pc-relative pointers in it are relative to).
type JITUnwindInfo interface {
	JITUnwindInfo(pid uint32, addr, time uint64) (ehFrame []byte, base uint64, ok bool)
}

// CodeReader is what a ProcessView may add: the bytes of the process's code at addr, in
// mapping m (the process's memory, for code no file holds). ok false: they could not be read.
type CodeReader interface {
	ReadCode(m Mapping, addr uint64, b []byte) (ok bool)
}

// JITFrames counts the frames in JIT code without unwinding info that a walk went through
// (stax status shows them).
type JITFrames struct {
	// FramePointer: frames unwound by their frame pointer (rbp recovered for them by their
	// callee's rules, pointing into the stack above their callee's frame).
	FramePointer atomic.Uint64
	// Trampoline: CPython's perf trampolines (python -X perf, -X perf_jit), recognised by
	// their code: sub $8,%rsp; call *%rcx; add $8,%rsp; ret.
	Trampoline atomic.Uint64
}

// EndReason says why a stack ended.
type EndReason uint8

const (
	EndComplete  EndReason = iota // reached the outermost frame
	EndTruncated                  // the stack copy ended first
	EndNoCFI                      // a frame had no call-frame information and no frame pointer
	EndBadMemory                  // a rule pointed outside the stack copy (below it) or was invalid
	EndGarbage                    // a return address was non-canonical or in no executable mapping
	EndMaxDepth                   // the output buffer was full
	// EndUnmapped: the sampled user instruction pointer lies in no mapping the process had
	// at the sample's time. A sample taken in the kernel while exec replaces the program
	// carries the old program's registers: its user frames are dropped. In user mode the
	// instruction pointer stays (the sample was taken there), alone.
	EndUnmapped
	// EndLoop: a step gave a frame the walk had already been in, or a canonical frame
	// address that does not increase (the stack grows down, so a caller's frame lies above
	// its callee's), or a JIT frame unwound by a frame pointer that saved itself and its
	// own pc as return address: what follows would repeat. The frames before it stay.
	EndLoop
	NumEndReasons
)

var endNames = [...]string{"complete", "truncated", "no_cfi", "bad_memory", "garbage", "max_depth", "unmapped", "loop"}

func (e EndReason) String() string {
	if int(e) < len(endNames) {
		return endNames[e]
	}
	return "unknown"
}

// Counts holds how many stacks ended for each reason.
type Counts [NumEndReasons]atomic.Uint64

// Unwinder unwinds stacks. The zero value is ready; set JIT to unwind through JIT code
// that has unwinding info.
type Unwinder struct {
	JIT    JITUnwindInfo
	Counts Counts
	// JITFrames counts the frames in JIT code without unwinding info the walks went through.
	JITFrames JITFrames

	cache [rowCacheSize]rowEntry
	jit   map[jitKey]*Table
	high  uint64 // bytes of the last stack copy the last walk needed (for captures)
	// measured says the last walk reached the outermost frame through the stack copy
	// alone: high is then the real depth of the stack (see Measured).
	measured bool
	mem      memory
	sps      []uint64 // the stack pointer of each frame of the walk, beside its pc
	fpEnd    int      // how much of the frame-pointer chain to use (FPLoopAt), -1 until known
	tramp    *[trampCacheSize]trampEntry
	// lastTramp is the verdict isTrampoline gave last.
	lastTramp trampEntry
	// walkJIT counts the JIT frames the walk went through, by how (jitHow): added to
	// JITFrames once a walk's stack is kept (an atomic add at each frame cost a node stack's
	// walk, nearly all JIT frames, 3%).
	walkJIT [3]uint64
	// plainJIT unwinds JIT frames without unwinding info as any frame without it, by the
	// frame pointer, unchecked (what BenchmarkJITSteps weighs jitStep against).
	plainJIT bool
}

type jitKey struct {
	base uint64
	n    int
	p    *byte
}

const maxJITTables = 4096

// jitRow looks pc up in the unwinding info a JIT announced for it.
func (u *Unwinder) jitRow(s *Sample, pc uint64) (row, bool) {
	eh, base, ok := u.JIT.JITUnwindInfo(s.Pid, pc, s.Time)
	if !ok || len(eh) == 0 {
		return row{}, false
	}
	k := jitKey{base: base, n: len(eh), p: &eh[0]}
	t := u.jit[k]
	if t == nil {
		var err error
		t, err = ParseEHFrame(eh, base)
		if err != nil {
			return row{}, false
		}
		if u.jit == nil || len(u.jit) >= maxJITTables {
			u.jit = map[jitKey]*Table{}
		}
		u.jit[k] = t
	}
	return u.cachedRow(t, pc)
}

const rowCacheSize = 4096

type rowEntry struct {
	t   *Table
	pc  uint64
	row row
	ok  bool
}

// Sample is what the unwinder needs of one sample.
type Sample struct {
	Pid  uint32
	Time uint64
	Regs Regs
	// Stack is the valid part of the user stack copy; it starts at Regs.SP.
	Stack []byte
	// FPChain is the user part of a frame-pointer callchain (the kernel's, or walked in
	// the stack copy: FPChainOfCopy), leaf first, if the sample has one: the walk
	// continues along it where CFI runs out.
	FPChain []uint64
	// FPChainEnd says why FPChain ends where it is not the outermost frame: EndMaxDepth
	// (the kernel's depth limit), EndTruncated (a chain walked in the stack copy reached
	// its end); EndComplete otherwise.
	FPChainEnd EndReason
	// InKernel says the sample was taken in the kernel: Regs are the user registers the
	// thread entered it with.
	InKernel bool
}

type frameRegs struct {
	pc, sp, bp uint64
	bpValid    bool
}

// maxCanonical is the highest user-space address on x86-64 (47-bit address space).
const maxCanonical = 0x00007fffffffffff

// Unwind walks the stack of s, appending return addresses (leaf first, starting with the
// sampled IP) to out, and returns the stack and why it ended.
func (u *Unwinder) Unwind(view ProcessView, s *Sample, out []uint64) ([]uint64, EndReason) {
	u.fpEnd = -1
	u.measured = false
	u.walkJIT = [3]uint64{}
	pcs, end := u.unwind(view, s, out)
	if end != EndComplete && end != EndUnmapped && len(s.FPChain) > len(pcs) {
		// Never return less than the frame-pointer chain alone gives.
		if fp, fend, top := u.fpChain(view, s); len(fp) > len(pcs) && len(fp) <= cap(out) {
			u.walkJIT = [3]uint64{} // the walk's frames are not the stack's
			pcs = append(out[:0], fp...)
			end = fend
			switch {
			case top:
			case end == EndComplete && s.FPChainEnd != EndComplete:
				end = s.FPChainEnd
			case end == EndComplete:
				end = EndNoCFI // the chain's end is not known to be the outermost frame
			}
		}
	}
	u.Counts[end].Add(1)
	if n := u.walkJIT[jitFramePointer]; n > 0 {
		u.JITFrames.FramePointer.Add(n)
	}
	if n := u.walkJIT[jitTrampoline]; n > 0 {
		u.JITFrames.Trampoline.Add(n)
	}
	u.high = u.mem.high
	return pcs, end
}

// LeafFrames appends to out the first frames of s's stack (up to cap(out)), walked by
// call-frame information alone: the start of a walk, not counted as one. A frame-pointer
// chain skips the frames of functions that have not pushed a frame pointer (libc's
// syscall wrappers, the first instructions of any function); these frames are the ones
// it skipped.
func (u *Unwinder) LeafFrames(view ProcessView, s *Sample, out []uint64) []uint64 {
	u.fpEnd = -1
	pcs, _ := u.unwind(view, &Sample{Pid: s.Pid, Time: s.Time, Regs: s.Regs, Stack: s.Stack, InKernel: s.InKernel}, out)
	u.measured = false
	return pcs
}

// Measured says the last walk went from the leaf to the outermost frame by the stack copy
// alone (call-frame information, CPython's trampolines, JIT frames' frame pointers read
// in the copy): High is then how deep the stack really was. A walk cut short (no
// call-frame information, a bad address, a loop, the depth limit) or finished along the
// kernel's frame-pointer chain read less of the copy than the stack holds.
func (u *Unwinder) Measured() bool { return u.measured }

// High is how many bytes of its stack copy the last walk read: what the copy had to hold
// for it (a walk cut short by the copy's end read all of it).
func (u *Unwinder) High() int { return int(u.high) }

func (u *Unwinder) unwind(view ProcessView, s *Sample, out []uint64) ([]uint64, EndReason) {
	out = out[:0]
	max := cap(out)
	if max == 0 {
		return out, EndMaxDepth
	}
	f := frameRegs{pc: s.Regs.IP, sp: s.Regs.SP, bp: s.Regs.BP, bpValid: true}
	stackStart := s.Regs.SP
	u.mem = memory{b: s.Stack, start: stackStart}
	mem := &u.mem
	if !usable(view, f.pc) {
		if s.InKernel || f.pc == 0 {
			return out, EndUnmapped
		}
		// The sample was taken there: keep it, whatever the mappings say.
		return append(out, f.pc), EndUnmapped
	}
	out = append(out, f.pc)
	u.sps = append(u.sps[:0], f.sp)
	signal := false
	// calleeFile says the frame the walk came from, f's callee, is in a file's code.
	calleeFile := false
	// descended says a signal frame's caller lay below it (an alternate signal stack): from
	// then on the stack pointer alone cannot tell a loop, so frames are compared.
	descended := false
	for i := 0; ; i++ {
		if len(out) >= max {
			return out, EndMaxDepth
		}
		lookup := f.pc
		if i > 0 && !signal {
			lookup-- // a return address points after the call, maybe past the function's end
		}
		m, _ := view.Mapping(f.pc)
		code := proc.CodeOf(m.Path)
		if code == proc.CodeFile && u.topOf(view, m, lookup) {
			u.measured = true
			return out, EndComplete
		}
		rw, ok := u.rowOf(view, s, m, code, lookup)
		var next frameRegs
		var end EndReason
		how := jitNone
		if ok {
			next, end, ok = step(&rw, &f, mem)
			signal = rw.signal
		} else {
			end = EndNoCFI
			signal = false
			jit := code != proc.CodeFile
			if i == 0 && jit {
				next, ok = frameless(&f, mem, view)
			}
			if !ok && i > 0 && jit && !u.plainJIT {
				if next, end, how = u.jitStep(view, s, &m, &f, mem, calleeFile); end == EndLoop {
					return out, EndLoop
				}
				ok = how != jitNone
			} else if !ok && f.bpValid {
				next, ok = fpStep(&f, mem)
			}
			if !ok {
				if u.inEntryCode(view, m, lookup) {
					u.measured = true
					return out, EndComplete
				}
				return u.continueFP(view, s, out, EndNoCFI)
			}
		}
		if !ok {
			if end == EndComplete {
				u.measured = true
				return out, EndComplete
			}
			return u.continueFP(view, s, out, end)
		}
		if next.pc == 0 {
			u.measured = true
			return out, EndComplete
		}
		if next.sp <= f.sp {
			// The stack grows down: a caller's frame lies above. Only a signal frame's
			// caller may lie below (on another stack), never in the same place.
			if !signal || next.sp == f.sp {
				return out, EndLoop
			}
			descended = true
		}
		if descended && u.seen(out, next) {
			return out, EndLoop
		}
		if !usable(view, next.pc) {
			return out, EndGarbage
		}
		u.walkJIT[how]++
		out = append(out, next.pc)
		u.sps = append(u.sps, next.sp)
		f = next
		calleeFile = code == proc.CodeFile
	}
}

// inEntryCode reports whether pc, in mapping m, lies in the code its image starts at where
// no call-frame information describes it (Table.setEntry): the outermost frame of a
// process. It is asked only once the frame pointer leads nowhere: some shared libraries'
// entry point is the linker's default, the start of code that is called (with a frame
// pointer, there).
func (u *Unwinder) inEntryCode(view ProcessView, m Mapping, pc uint64) bool {
	if proc.CodeOf(m.Path) != proc.CodeFile {
		return false
	}
	t := view.Table(m)
	if t == nil || t.entryEnd == 0 {
		return false
	}
	bias, ok := t.bias(m)
	return ok && pc-bias >= t.entry && pc-bias < t.entryEnd
}

// inTopFrame reports whether pc, in mapping m, lies in a function its image marks as
// outermost (Table.tops): nothing called it.
func (u *Unwinder) inTopFrame(view ProcessView, m Mapping, pc uint64) bool {
	return proc.CodeOf(m.Path) == proc.CodeFile && u.topOf(view, m, pc)
}

// topOf is inTopFrame for m known to map a file's code.
func (u *Unwinder) topOf(view ProcessView, m Mapping, pc uint64) bool {
	t := view.Table(m)
	if t == nil || len(t.tops) == 0 {
		return false
	}
	bias, ok := t.bias(m)
	return ok && t.isTop(pc-bias)
}

// seen reports whether the walk was already in frame f (the same pc and stack pointer).
func (u *Unwinder) seen(out []uint64, f frameRegs) bool {
	for i, sp := range u.sps {
		if sp == f.sp && out[i] == f.pc {
			return true
		}
	}
	return false
}

// continueFP appends the sample's frame-pointer callchain beyond the deepest frame the CFI
// walk found that the chain also holds.
func (u *Unwinder) continueFP(view ProcessView, s *Sample, out []uint64, end EndReason) ([]uint64, EndReason) {
	chain, cend, top := u.fpChain(view, s)
	if len(chain) == 0 {
		return out, end
	}
	// The chain may skip frames (leaves without a frame pointer) but never adds any, so
	// out[i]'s place in it is at most i; the deepest such place keeps a recursion, whose
	// return addresses repeat, from being walked twice.
	for i := len(out) - 1; i >= 1; i-- {
		for j := min(i, len(chain)-1); j >= 1; j-- {
			if chain[j] != out[i] {
				continue
			}
			rest := chain[j+1:]
			if len(rest) == 0 {
				return out, end
			}
			for _, pc := range rest {
				if len(out) >= cap(out) {
					return out, EndMaxDepth
				}
				out = append(out, pc)
			}
			if cend == EndComplete && !top {
				cend = s.FPChainEnd
			}
			return out, cend
		}
	}
	return out, end
}

// fpChain returns the part of the sample's frame-pointer chain to use, and why it ends
// there: EndGarbage at an address in no executable mapping, EndLoop where the chain goes
// round (FPLoopAt), EndComplete when all of it is used. top says it ends at an outermost
// frame (topAt).
func (u *Unwinder) fpChain(view ProcessView, s *Sample) (chain []uint64, end EndReason, top bool) {
	if u.fpEnd < 0 {
		u.fpEnd = FPLoopAt(s.FPChain, s.Regs, s.Stack)
	}
	chain, end = FixChain(view, s.FPChain[:u.fpEnd])
	if end == EndComplete && u.fpEnd < len(s.FPChain) {
		end = EndLoop
	}
	if n, ok := u.topAt(view, chain); ok {
		return chain[:n], EndComplete, true
	}
	return chain, end, false
}

// topAt returns the length of chain (leaf first) up to and including its first frame in a
// function its image marks as outermost (Table.tops), if it has one. A
// frame-pointer walk does not stop there: a Go thread's first frame pointer is its
// creator's, so above runtime.mstart it reads runtime.clone and the creator's stack.
func (u *Unwinder) topAt(view ProcessView, chain []uint64) (int, bool) {
	for i, pc := range chain {
		if i > 0 {
			pc-- // a return address: the call lies before it
		}
		if m, ok := view.Mapping(pc); ok && u.inTopFrame(view, m, pc) {
			return i + 1, true
		}
	}
	return len(chain), false
}

// FPLoopAt returns how many entries of the kernel's frame-pointer chain (user part, leaf
// first) to trust, given the sample's user registers and stack copy. The
// kernel follows saved frame pointers without asking that each lies above the last, so a
// frame whose saved rbp points at itself (or below it) repeats its caller up to the depth
// limit. The stack copy holds the frames the kernel read first: where it shows a saved
// frame pointer that does not increase, the chain is cut before the entries read from it.
func FPLoopAt(chain []uint64, regs Regs, stack []byte) int {
	lo, n := regs.SP, uint64(len(stack))
	fp := regs.BP
	// The kernel stored chain[k] from fp+8, then went on to the frame pointer saved at fp.
	for k := 1; k < len(chain); k++ {
		if fp < lo || fp-lo > n || n-(fp-lo) < 16 {
			break // beyond the copy: nothing to check against
		}
		off := fp - lo
		if binary.LittleEndian.Uint64(stack[off+8:]) != chain[k] {
			break // not the walk the kernel made (its chain did not start at these registers)
		}
		next := binary.LittleEndian.Uint64(stack[off:])
		if next <= fp && k+1 < len(chain) {
			return k + 1
		}
		fp = next
	}
	return len(chain)
}

// FPChainOfCopy walks the frame pointers saved in a sample's stack copy as the kernel walks
// them for a callchain, and returns out holding the chain (leaf first: the sampled IP, then
// each return address), up to out's capacity. The walk stops where a saved frame pointer
// does not lie above the last frame's 16 bytes (a loop, frames that overlap, or a frameless
// function's data in rbp) or a return address is 0: the frames it reads never overlap, so a
// copy of n bytes gives at most n/16 of them. cut says the chain goes on beyond what it holds: the walk reached the end
// of the copy with a frame pointer read from the copy pointing above it, or filled out.
func FPChainOfCopy(regs Regs, stack []byte, out []uint64) (chain []uint64, cut bool) {
	out = out[:0]
	if cap(out) == 0 {
		return out, true
	}
	out = append(out, regs.IP)
	lo, n := regs.SP, uint64(len(stack))
	fp := regs.BP
	for len(out) < cap(out) {
		if fp < lo || fp-lo > n || n-(fp-lo) < 16 {
			// Beyond the copy. Where the registers' own rbp points there, nothing of the
			// walk was checked: a frameless leaf keeps data in it.
			return out, fp >= lo && len(out) > 1
		}
		off := fp - lo
		ret := binary.LittleEndian.Uint64(stack[off+8:])
		if ret == 0 {
			return out, false
		}
		out = append(out, ret)
		next := binary.LittleEndian.Uint64(stack[off:])
		if next <= fp || next-fp < 16 {
			// The caller's frame lies above this one's saved rbp and return address.
			return out, false
		}
		fp = next
	}
	return out, true
}

// FixChain returns the prefix of a frame-pointer callchain (user part, leaf first) that
// holds only usable return addresses: it ends at the first address that is non-canonical
// or lies in no executable mapping (the garbage a frame-pointer walk reads above the last
// real frame). The reason is EndComplete when the whole chain was kept.
func FixChain(view ProcessView, chain []uint64) ([]uint64, EndReason) {
	for i, pc := range chain {
		if !usable(view, pc) {
			return chain[:i], EndGarbage
		}
	}
	return chain, EndComplete
}

func usable(view ProcessView, pc uint64) bool {
	if pc == 0 || pc > maxCanonical {
		return false
	}
	m, ok := view.Mapping(pc)
	return ok && m.Exec
}

// rowOf returns the rule row at pc for the code of mapping m (of kind code: proc.CodeOf), through the cache: from the
// unwinding info a JIT announced for it (code no regular file describes, and a deleted
// file, first), else from the image's call-frame information.
func (u *Unwinder) rowOf(view ProcessView, s *Sample, m Mapping, code proc.Code, pc uint64) (row, bool) {
	if code != proc.CodeFile && u.JIT != nil {
		if rw, ok := u.jitRow(s, pc); ok {
			return rw, true
		}
	}
	if code == proc.CodeJIT {
		return row{}, false
	}
	t := view.Table(m)
	if t == nil {
		return row{}, false
	}
	bias, ok := t.bias(m)
	if !ok {
		return row{}, false
	}
	return u.cachedRow(t, pc-bias)
}

func (u *Unwinder) cachedRow(t *Table, lpc uint64) (row, bool) {
	h := (lpc ^ lpc>>12 ^ uint64(uintptr(unsafePtr(t)))>>4) % rowCacheSize
	e := &u.cache[h]
	if e.t == t && e.pc == lpc {
		return e.row, e.ok
	}
	rw, ok := t.rowAt(lpc)
	*e = rowEntry{t: t, pc: lpc, row: rw, ok: ok}
	return rw, ok
}

// bias is the difference between run-time and link-time addresses for mapping m.
func (t *Table) bias(m Mapping) (uint64, bool) {
	if len(t.loads) == 0 {
		return 0, true // a JIT blob or a table given in run-time addresses
	}
	for _, s := range t.loads {
		if m.Offset >= s.off && m.Offset < s.off+max(s.filesz, 1) {
			return m.Start - (m.Offset - s.off + s.vaddr), true
		}
	}
	return 0, false
}

type memory struct {
	b     []byte
	start uint64
	high  uint64
}

// read returns the 8 bytes at addr and EndComplete, or why they could not be read.
func (m *memory) read(addr uint64) (uint64, EndReason) {
	if addr < m.start {
		return 0, EndBadMemory
	}
	off := addr - m.start
	if off+8 > m.high && off < 1<<20 {
		m.high = off + 8
	}
	if off > uint64(len(m.b)) || uint64(len(m.b))-off < 8 {
		return 0, EndTruncated
	}
	return binary.LittleEndian.Uint64(m.b[off:]), EndComplete
}

func regValue(f *frameRegs, reg uint8) (uint64, bool) {
	switch reg {
	case regRSP:
		return f.sp, true
	case regRBP:
		return f.bp, f.bpValid
	case regRA:
		return f.pc, true
	}
	return 0, false
}

// step applies a row to frame f. ok false with EndComplete means the outermost frame.
func step(rw *row, f *frameRegs, mem *memory) (frameRegs, EndReason, bool) {
	var cfa uint64
	switch rw.cfa.kind {
	case ruleOffset:
		v, ok := regValue(f, rw.cfa.reg)
		if !ok {
			return frameRegs{}, EndBadMemory, false
		}
		cfa = v + uint64(rw.cfa.off)
	case ruleExpr:
		v, end := evalExpr(rw.cfa.expr, f, mem, 0, false)
		if end != EndComplete {
			return frameRegs{}, end, false
		}
		cfa = v
	default:
		return frameRegs{}, EndBadMemory, false
	}
	next := frameRegs{sp: cfa}
	var end EndReason
	switch rw.ra.kind {
	case ruleUndef:
		return frameRegs{}, EndComplete, false
	default:
		var ok bool
		next.pc, ok, end = applyRule(&rw.ra, f, mem, cfa)
		if !ok {
			return frameRegs{}, end, false
		}
	}
	switch rw.rbp.kind {
	case ruleUndef:
		next.bpValid = false
	default:
		var ok bool
		next.bp, ok, _ = applyRule(&rw.rbp, f, mem, cfa)
		next.bpValid = ok
	}
	return next, EndComplete, true
}

func applyRule(r *rule, f *frameRegs, mem *memory, cfa uint64) (uint64, bool, EndReason) {
	switch r.kind {
	case ruleSame:
		if r == nil {
			return 0, false, EndBadMemory
		}
		return f.bp, f.bpValid, EndComplete // only rbp can sensibly be "same value"
	case ruleOffset:
		v, end := mem.read(cfa + uint64(r.off))
		return v, end == EndComplete, end
	case ruleValOff:
		return cfa + uint64(r.off), true, EndComplete
	case ruleReg:
		v, ok := regValue(f, r.reg)
		return v, ok, EndBadMemory
	case ruleExpr:
		addr, end := evalExpr(r.expr, f, mem, cfa, true)
		if end != EndComplete {
			return 0, false, end
		}
		v, end := mem.read(addr)
		return v, end == EndComplete, end
	case ruleValExpr:
		v, end := evalExpr(r.expr, f, mem, cfa, true)
		return v, end == EndComplete, end
	}
	return 0, false, EndBadMemory
}

// fpStep takes one frame-pointer step: the caller's return address is at [bp+8].
func fpStep(f *frameRegs, mem *memory) (frameRegs, bool) {
	if f.bp < f.sp || f.bp&7 != 0 {
		return frameRegs{}, false
	}
	ra, e1 := mem.read(f.bp + 8)
	bp, e2 := mem.read(f.bp)
	if e1 != EndComplete || e2 != EndComplete {
		return frameRegs{}, false
	}
	return frameRegs{pc: ra, sp: f.bp + 16, bp: bp, bpValid: true}, true
}

// frameless recovers the caller of a leaf that pushed nothing: its return address is at [sp].
func frameless(f *frameRegs, mem *memory, view ProcessView) (frameRegs, bool) {
	ra, end := mem.read(f.sp)
	if end != EndComplete || !usable(view, ra) {
		return frameRegs{}, false
	}
	return frameRegs{pc: ra, sp: f.sp + 8, bp: f.bp, bpValid: f.bpValid}, true
}
