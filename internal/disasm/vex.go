package disasm

import (
	"fmt"
	"strings"
)

// vexInfo describes the layout of a VEX (c4/c5) or EVEX (62) encoded
// instruction, as far as needed to compute its length.
type vexInfo struct {
	prefixLen int  // legacy prefixes before the VEX/EVEX prefix
	evex      bool // EVEX (62) rather than VEX
	mmap      byte // opcode map: 1=0f, 2=0f38, 3=0f3a, 5/6 (EVEX)
	pp        byte // implied prefix: 0=none 1=66 2=f3 3=f2
	l         byte // vector length bits (VEX.L, EVEX.L'L)
	w         bool
	opcode    byte
	length    int // total instruction length
}

// parseVEX computes the layout of a VEX/EVEX instruction at the start of
// code (after optional legacy prefixes). ok=false if code does not start
// with a VEX/EVEX instruction or is truncated.
func parseVEX(code []byte) (v vexInfo, ok bool) {
	i := 0
	for i < len(code) && i < 14 && isLegacyPrefix(code[i]) {
		i++
	}
	if i >= len(code) {
		return v, false
	}
	v.prefixLen = i
	switch code[i] {
	case 0xc5:
		if i+2 >= len(code) {
			return v, false
		}
		b1 := code[i+1]
		v.mmap, v.pp, v.l = 1, b1&3, (b1>>2)&1
		v.opcode = code[i+2]
		i += 3
	case 0xc4:
		if i+3 >= len(code) {
			return v, false
		}
		b1, b2 := code[i+1], code[i+2]
		v.mmap = b1 & 0x1f
		v.w, v.pp, v.l = b2&0x80 != 0, b2&3, (b2>>2)&1
		v.opcode = code[i+3]
		i += 4
	case 0x62:
		if i+4 >= len(code) {
			return v, false
		}
		b1, b2, b3 := code[i+1], code[i+2], code[i+3]
		if b2&0x04 == 0 { // EVEX.P[10] must be 1
			return v, false
		}
		v.evex = true
		v.mmap = b1 & 7
		v.w, v.pp, v.l = b2&0x80 != 0, b2&3, (b3>>5)&3
		v.opcode = code[i+4]
		i += 5
	default:
		return v, false
	}
	if v.mmap == 0 || v.mmap == 4 || v.mmap > 6 || (!v.evex && v.mmap > 3) {
		return v, false
	}
	// vzeroupper/vzeroall have no ModRM.
	if v.mmap == 1 && v.opcode == 0x77 && !v.evex {
		v.length = i
		return v, true
	}
	if i >= len(code) {
		return v, false
	}
	modrm := code[i]
	i++
	mod, rm := modrm>>6, modrm&7
	if mod != 3 {
		if rm == 4 {
			if i >= len(code) {
				return v, false
			}
			sib := code[i]
			i++
			if mod == 0 && sib&7 == 5 {
				i += 4
			}
		} else if mod == 0 && rm == 5 {
			i += 4 // RIP-relative disp32
		}
		switch mod {
		case 1:
			i++
		case 2:
			i += 4
		}
	}
	if vexHasImm8(v.mmap, v.opcode) {
		i++
	}
	if i > len(code) || i > maxX86Len {
		return v, false
	}
	v.length = i
	return v, true
}

func isLegacyPrefix(b byte) bool {
	switch b {
	case 0xf0, 0xf2, 0xf3, 0x2e, 0x36, 0x3e, 0x26, 0x64, 0x65, 0x66, 0x67:
		return true
	}
	return false
}

// vexHasImm8 reports whether a VEX/EVEX opcode takes an 8-bit immediate.
func vexHasImm8(mmap, op byte) bool {
	switch mmap {
	case 3:
		return true
	case 1:
		switch op {
		case 0x70, 0x71, 0x72, 0x73, 0xc2, 0xc4, 0xc5, 0xc6:
			return true
		}
	}
	return false
}

// vexNames names common AVX/AVX2 opcodes (map, implied prefix, opcode),
// enough to label the vector loops of libc's string functions when the
// decoder cannot.
var vexNames = map[[3]byte]string{
	{1, 1, 0x6f}: "vmovdqa", {1, 2, 0x6f}: "vmovdqu", {1, 1, 0x7f}: "vmovdqa", {1, 2, 0x7f}: "vmovdqu",
	{1, 0, 0x10}: "vmovups", {1, 0, 0x11}: "vmovups", {1, 0, 0x28}: "vmovaps", {1, 0, 0x29}: "vmovaps",
	{1, 1, 0x10}: "vmovupd", {1, 1, 0x11}: "vmovupd", {1, 1, 0xe7}: "vmovntdq", {1, 0, 0x2b}: "vmovntps",
	{1, 1, 0x74}: "vpcmpeqb", {1, 1, 0x75}: "vpcmpeqw", {1, 1, 0x76}: "vpcmpeqd", {2, 1, 0x29}: "vpcmpeqq",
	{1, 1, 0x64}: "vpcmpgtb", {1, 1, 0xd7}: "vpmovmskb", {1, 1, 0xda}: "vpminub", {1, 1, 0xde}: "vpmaxub",
	{2, 1, 0x3a}: "vpminuw", {2, 1, 0x38}: "vpminsb", {1, 1, 0xeb}: "vpor", {1, 1, 0xdb}: "vpand",
	{1, 1, 0xdf}: "vpandn", {1, 1, 0xef}: "vpxor", {2, 1, 0x17}: "vptest", {2, 1, 0x78}: "vpbroadcastb",
	{2, 1, 0x79}: "vpbroadcastw", {2, 1, 0x58}: "vpbroadcastd", {2, 1, 0x59}: "vpbroadcastq",
	{1, 1, 0xfc}: "vpaddb", {1, 1, 0xfe}: "vpaddd", {1, 1, 0xd4}: "vpaddq", {1, 1, 0xf8}: "vpsubb",
	{1, 1, 0xfa}: "vpsubd", {2, 1, 0x00}: "vpshufb", {3, 1, 0x0f}: "vpalignr", {1, 1, 0x6e}: "vmovd",
	{1, 1, 0x7e}: "vmovd", {1, 2, 0x7e}: "vmovq", {1, 1, 0xd6}: "vmovq", {3, 1, 0x46}: "vperm2i128",
	{3, 1, 0x38}: "vinserti128", {3, 1, 0x39}: "vextracti128", {1, 0, 0x57}: "vxorps", {1, 1, 0x57}: "vxorpd",
	{1, 0, 0x58}: "vaddps", {1, 1, 0x58}: "vaddpd", {1, 0, 0x59}: "vmulps", {1, 1, 0x59}: "vmulpd",
	{1, 2, 0x58}: "vaddss", {1, 3, 0x58}: "vaddsd", {1, 2, 0x59}: "vmulss", {1, 3, 0x59}: "vmulsd",
	{1, 1, 0x60}: "vpunpcklbw", {1, 1, 0x70}: "vpshufd", {1, 1, 0x73}: "vpsrldq",
	{2, 0, 0xf2}: "andn", {2, 0, 0xf3}: "blsr", {2, 0, 0xf5}: "bzhi", {2, 2, 0xf7}: "sarx",
	{2, 3, 0xf7}: "shrx", {2, 1, 0xf7}: "shlx", {3, 3, 0xf0}: "rorx", {2, 2, 0xf5}: "pext", {2, 3, 0xf5}: "pdep",
}

// vexFallback renders a VEX/EVEX instruction the decoder could not
// handle, given its parsed layout.
func vexFallback(code []byte, v vexInfo) Inst {
	name := vexNames[[3]byte{v.mmap, v.pp, v.opcode}]
	if name == "" || v.evex {
		var b strings.Builder
		b.WriteString("(vex)")
		if v.evex {
			b.Reset()
			b.WriteString("(evex)")
		}
		for _, c := range code[:v.length] {
			fmt.Fprintf(&b, " %02x", c)
		}
		return Inst{Len: v.length, Text: b.String()}
	}
	return Inst{Len: v.length, Text: name}
}

// decodeVEXFallback computes the length of a VEX (c4/c5) or EVEX (62)
// encoded instruction that the decoder rejected, so that decoding stays in
// sync. The text is a mnemonic from a small table, or "(vex)" followed by
// the instruction bytes.
func decodeVEXFallback(code []byte) (Inst, bool) {
	v, ok := parseVEX(code)
	if !ok {
		return Inst{}, false
	}
	return vexFallback(code, v), true
}
