// Package unwind recovers user-space call stacks from a sample's registers and a copy of
// its user stack, with the .eh_frame/.debug_frame call-frame information of the images
// mapped by the process, falling back to the frame-pointer chain where that runs out.
//
// An Unwinder is not safe for concurrent use: give each goroutine its own (they may share
// Tables through a Loader that caches them).
//
// Use, per sample of a run recorded with perfevent.Config{CallGraph: "dwarf"}:
//
//	_, user := record.SplitCallchain(s.Callchain)
//	pcs, end := u.Unwind(view, &unwind.Sample{Pid: s.Pid, Time: s.Time,
//		Regs:  unwind.Regs{BP: s.Regs[0], SP: s.Regs[1], IP: s.Regs[2]},
//		Stack: s.Stack, FPChain: user}, buf[:0])
//
// where view is the process's mappings at the sample's time (a ProcessView; Maps with a
// FileLoader shared by the run will do) and end is counted in u.Counts. In fp mode,
// FixChain(view, user) drops the garbage a frame-pointer walk reads above the last frame.
package unwind

import (
	"encoding/binary"
	"sync/atomic"
)

// Regs are the user registers a sample carries (perf's BP, SP, IP).
type Regs struct{ IP, SP, BP uint64 }

// Mapping is one executable mapping of a process.
type Mapping struct {
	Start, End uint64
	Offset     uint64 // file offset mapped at Start
	Path       string
	BuildID    string
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

// EndReason says why a stack ended.
type EndReason uint8

const (
	EndComplete  EndReason = iota // reached the outermost frame
	EndTruncated                  // the stack copy ended first
	EndNoCFI                      // a frame had no call-frame information and no frame pointer
	EndBadMemory                  // a rule pointed outside the stack copy (below it) or was invalid
	EndGarbage                    // a return address was non-canonical or in no executable mapping
	EndMaxDepth                   // the output buffer was full
	NumEndReasons
)

var endNames = [...]string{"complete", "truncated", "no_cfi", "bad_memory", "garbage", "max_depth"}

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

	cache [rowCacheSize]rowEntry
	jit   map[jitKey]*Table
	high  uint64 // bytes of the last stack copy the last walk needed (for captures)
	mem   memory
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
	// FPChain is the user part of the kernel's frame-pointer callchain, leaf first, if
	// the sample has one: the walk continues along it where CFI runs out.
	FPChain []uint64
	// FPChainCut says the kernel cut FPChain at its depth limit: its end is not the
	// outermost frame.
	FPChainCut bool
}

type frameRegs struct {
	pc, sp, bp uint64
	bpValid    bool
}

// maxCanonical is the highest user-space address on x86-64 (47-bit address space).
const maxCanonical = 0x00007fffffffffff

// Unwind walks the stack of s, appending return addresses (leaf first, starting with the
// sampled IP) to out, and returns the stack and why it ended.
func (u *Unwinder) Unwind(proc ProcessView, s *Sample, out []uint64) ([]uint64, EndReason) {
	pcs, end := u.unwind(proc, s, out)
	if end != EndComplete && len(s.FPChain) > len(pcs) {
		// Never return less than the frame-pointer chain alone gives.
		if fp, fend := FixChain(proc, s.FPChain); len(fp) > len(pcs) && len(fp) <= cap(out) {
			pcs = append(out[:0], fp...)
			end = fend
			switch {
			case end == EndComplete && s.FPChainCut:
				end = EndMaxDepth
			case end == EndComplete:
				end = EndNoCFI // the chain's end is not known to be the outermost frame
			}
		}
	}
	u.Counts[end].Add(1)
	u.high = u.mem.high
	return pcs, end
}

func (u *Unwinder) unwind(proc ProcessView, s *Sample, out []uint64) ([]uint64, EndReason) {
	out = out[:0]
	max := cap(out)
	if max == 0 {
		return out, EndMaxDepth
	}
	f := frameRegs{pc: s.Regs.IP, sp: s.Regs.SP, bp: s.Regs.BP, bpValid: true}
	stackStart := s.Regs.SP
	u.mem = memory{b: s.Stack, start: stackStart}
	mem := &u.mem
	if !usable(proc, f.pc) {
		// The sample was taken there: keep it, whatever the mappings say.
		if f.pc != 0 {
			out = append(out, f.pc)
		}
		return out, EndGarbage
	}
	out = append(out, f.pc)
	signal := false
	for i := 0; ; i++ {
		if len(out) >= max {
			return out, EndMaxDepth
		}
		lookup := f.pc
		if i > 0 && !signal {
			lookup-- // a return address points after the call, maybe past the function's end
		}
		m, _ := proc.Mapping(f.pc)
		rw, ok := u.row(proc, s, m, lookup)
		var next frameRegs
		var end EndReason
		if ok {
			next, end, ok = step(&rw, &f, mem)
			signal = rw.signal
		} else {
			end = EndNoCFI
			signal = false
			if i == 0 && isAnon(m.Path) {
				next, ok = frameless(&f, mem, proc)
			}
			if !ok && f.bpValid {
				next, ok = fpStep(&f, mem)
			}
			if !ok {
				return u.continueFP(proc, s, out, EndNoCFI)
			}
		}
		if !ok {
			if end == EndComplete {
				return out, EndComplete
			}
			return u.continueFP(proc, s, out, end)
		}
		if next.pc == 0 {
			return out, EndComplete
		}
		if next.sp <= f.sp && !(rw.signal && next.sp != f.sp) {
			// The stack grows down: a caller's frame lies above. Anything else loops.
			return out, EndBadMemory
		}
		if !usable(proc, next.pc) {
			return out, EndGarbage
		}
		out = append(out, next.pc)
		f = next
	}
}

// continueFP appends the kernel's frame-pointer callchain beyond the deepest frame the CFI
// walk found that the chain also holds.
func (u *Unwinder) continueFP(proc ProcessView, s *Sample, out []uint64, end EndReason) ([]uint64, EndReason) {
	if len(s.FPChain) == 0 {
		return out, end
	}
	// The chain may skip frames (leaves without a frame pointer) but never adds any, so
	// out[i]'s place in it is at most i; the deepest such place keeps a recursion, whose
	// return addresses repeat, from being walked twice.
	for i := len(out) - 1; i >= 1; i-- {
		for j := min(i, len(s.FPChain)-1); j >= 1; j-- {
			if s.FPChain[j] != out[i] {
				continue
			}
			rest, fend := FixChain(proc, s.FPChain[j+1:])
			if fend == EndComplete && s.FPChainCut {
				fend = EndMaxDepth
			}
			if len(rest) == 0 {
				if s.FPChainCut && j == len(s.FPChain)-1 && end == EndComplete {
					return out, EndMaxDepth
				}
				return out, end
			}
			for _, pc := range rest {
				if len(out) >= cap(out) {
					return out, EndMaxDepth
				}
				out = append(out, pc)
			}
			return out, fend
		}
	}
	return out, end
}

// FixChain returns the prefix of a frame-pointer callchain (user part, leaf first) that
// holds only usable return addresses: it ends at the first address that is non-canonical
// or lies in no executable mapping (the garbage a frame-pointer walk reads above the last
// real frame). The reason is EndComplete when the whole chain was kept.
func FixChain(proc ProcessView, chain []uint64) ([]uint64, EndReason) {
	for i, pc := range chain {
		if !usable(proc, pc) {
			return chain[:i], EndGarbage
		}
	}
	return chain, EndComplete
}

func usable(proc ProcessView, pc uint64) bool {
	if pc == 0 || pc > maxCanonical {
		return false
	}
	m, ok := proc.Mapping(pc)
	return ok && m.Exec
}

func isAnon(path string) bool {
	return path == "" || path == "//anon" || path[0] == '['
}

// row returns the rule row at pc for the image of mapping m, through the cache.
func (u *Unwinder) row(proc ProcessView, s *Sample, m Mapping, pc uint64) (row, bool) {
	var t *Table
	var bias uint64
	if m.Path != "" && !isAnon(m.Path) || m.Path == "[vdso]" {
		t = proc.Table(m)
		if t == nil {
			return row{}, false
		}
		var ok bool
		bias, ok = t.bias(m)
		if !ok {
			return row{}, false
		}
	} else if u.JIT != nil {
		return u.jitRow(s, pc)
	} else {
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
func frameless(f *frameRegs, mem *memory, proc ProcessView) (frameRegs, bool) {
	ra, end := mem.read(f.sp)
	if end != EndComplete || !usable(proc, ra) {
		return frameRegs{}, false
	}
	return frameRegs{pc: ra, sp: f.sp + 8, bp: f.bp, bpValid: f.bpValid}, true
}
