package query

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/disasm"
	"github.com/stax-profiler/stax/internal/store"
)

// minZeroPrefix is how many zero bytes at its start make a reading of a function's code
// from memory implausible: code begins with an instruction, and zeros are what memory
// holds before code is written into it.
const minZeroPrefix = 8

// checkReadings marks as not captured each version of f whose bytes were read from the
// process's memory (a perf map runtime's code) but cannot be the code its samples ran in:
// they begin with zero bytes, a sampled address falls inside one of their instructions, or
// on zero or padding bytes. A reading made before the code was written, after it was freed
// or after other code took its address would show another object's bytes as this one's.
// A sample inside an instruction says so only where other code (all, the run's) was at
// those addresses too: in code the JIT wrote once, it may be data the decoding ran
// through (a JVM's constants, a jump table).
func checkReadings(f agg.Frame, vs []store.Code, sp split, all []store.Code) {
	for i := range vs {
		c := &vs[i]
		if c.Origin != "memory" || len(c.Bytes) == 0 {
			continue
		}
		why := notItsCode(c, sp.samples[i], !isWindow(f), reused(c, all))
		if why == "" {
			continue
		}
		c.Error = fmt.Sprintf("code bytes for %#x-%#x were not captured: %s", c.Start, c.Start+uint64(len(c.Bytes)), why)
		c.Bytes, c.Gaps, c.Warning = nil, nil, ""
	}
}

// notItsCode says why the bytes c read from memory are not the code its samples (by
// address) ran in; "" if nothing says so. fromStart: c begins where its code begins (a
// function, not a window of bytes around an address), so instructions are decoded from
// there and its first bytes are an instruction.
func notItsCode(c *store.Code, samples map[uint64]uint64, fromStart, reused bool) string {
	b := c.Bytes
	if fromStart && !inGap(c.Gaps, c.Start) {
		n := 0
		for n < len(b) && b[n] == 0 {
			n++
		}
		if n >= minZeroPrefix || n == len(b) {
			return fmt.Sprintf("the bytes read from memory begin with %d zero bytes, which no code does (read before the code was written or after it was freed)", n)
		}
		if p, ok := leadingPointer(c); ok {
			return fmt.Sprintf("the bytes read from memory begin with an address (%#x), as freed memory does, not with an instruction", p)
		}
	}
	var addrs []uint64
	for a, n := range samples {
		if n > 0 && a >= c.Start && a-c.Start < uint64(len(b)) && !inGap(c.Gaps, a) {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return ""
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
	// The captured stretches: decoded from their start where that is an instruction's
	// (the code's start), else only the sampled instruction's own bytes are checked.
	opt := disasm.Options{Arch: disasm.ArchFromELF(uint16(c.Arch))}
	var insts map[uint64]disasm.Inst
	decodedEnd, firstBad := c.Start, uint64(0)
	if fromStart && !inGap(c.Gaps, c.Start) {
		end := c.Start + uint64(len(b))
		for _, g := range c.Gaps {
			if g.Start > c.Start && g.Start < end {
				end = g.Start
			}
		}
		insts = map[uint64]disasm.Inst{}
		for _, in := range disasm.DecodeWith(b[:end-c.Start], c.Start, opt) {
			insts[in.Addr] = in
			decodedEnd = in.Addr + uint64(in.Len)
			if in.Bad && firstBad == 0 {
				firstBad = in.Addr
			}
		}
	}
	for _, a := range addrs {
		in, ok := insts[a]
		// Inside an instruction of a stream that decoded well up to it, the sample may be
		// at data in the code (a constant, a jump table) that the decoding ran through:
		// it says the bytes are not its code where other code had the address too, or
		// after bytes that are no instruction.
		if !ok && a < decodedEnd && (reused || firstBad != 0 && firstBad <= a) {
			return fmt.Sprintf("sampled address %#x falls inside an instruction of the bytes read from memory", a)
		}
		if !ok {
			off := a - c.Start
			ds := disasm.DecodeWith(b[off:min(off+16, uint64(len(b)))], a, opt)
			if len(ds) == 0 {
				continue
			}
			in = ds[0]
		}
		if padding(in.Bytes) {
			return fmt.Sprintf("sampled address %#x is on zero or padding bytes (%x) of the bytes read from memory", a, in.Bytes)
		}
	}
	return ""
}

// leadingPointer says whether x86-64 code read from memory begins with a user-space
// address above 4 GiB (its two top bytes zero), the link a heap's free list writes into
// freed memory; an instruction stream seldom does, but a function that sets up its frame
// pointer (push %rbp; mov %rsp,%rbp: 55 48 89 e5, then often a movabs, 48 b8-bf) or starts
// with endbr64 (f3 0f 1e fa) may, and is taken for code.
func leadingPointer(c *store.Code) (uint64, bool) {
	if elf.Machine(c.Arch) != elf.EM_X86_64 || len(c.Bytes) < 8 {
		return 0, false
	}
	b := c.Bytes
	if b[0] == 0x55 && b[1] == 0x48 && b[2] == 0x89 && b[3] == 0xe5 || b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa {
		return 0, false
	}
	p := binary.LittleEndian.Uint64(b)
	return p, p>>48 == 0 && p >= 1<<32
}

// padding says whether an instruction is what fills memory between code, never code run:
// zero bytes (add %al,(%rax) on x86) or int3.
func padding(b []byte) bool {
	switch {
	case len(b) >= 2 && b[0] == 0 && b[1] == 0:
		return true
	case len(b) == 1 && b[0] == 0xcc:
		return true
	case len(b) == 4 && b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 0: // arm64 udf #0
		return true
	}
	return false
}

func inGap(gaps []store.Gap, a uint64) bool {
	for _, g := range gaps {
		if a >= g.Start && a < g.End {
			return true
		}
	}
	return false
}

// reused says whether other code of the run (another function's, or another version's)
// was at some of c's addresses: the JIT reused them.
func reused(c *store.Code, all []store.Code) bool {
	end := c.Start + max(c.Size, uint64(len(c.Bytes)))
	for i := range all {
		o := &all[i]
		if o.Start == c.Start && o.LoadTime == c.LoadTime && o.Frame == c.Frame {
			continue // c itself
		}
		if oEnd := o.Start + max(o.Size, uint64(len(o.Bytes))); o.Start < end && c.Start < oEnd && o.Size > 0 {
			return true
		}
	}
	return false
}
