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
func checkReadings(f agg.Frame, vs []store.Code, sp split) {
	for i := range vs {
		c := &vs[i]
		if c.Origin != "memory" || len(c.Bytes) == 0 {
			continue
		}
		why := notItsCode(c, sp.samples[i], !isWindow(f))
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
func notItsCode(c *store.Code, samples map[uint64]uint64, fromStart bool) string {
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
	decodedEnd := c.Start
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
		}
	}
	for _, a := range addrs {
		in, ok := insts[a]
		if !ok && a < decodedEnd {
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
// freed memory; an instruction stream almost never does.
func leadingPointer(c *store.Code) (uint64, bool) {
	if elf.Machine(c.Arch) != elf.EM_X86_64 || len(c.Bytes) < 8 {
		return 0, false
	}
	p := binary.LittleEndian.Uint64(c.Bytes)
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
