package disasm

import (
	"encoding/binary"
	"strings"

	"golang.org/x/arch/arm64/arm64asm"
)

// decodeARM64 decodes one AArch64 instruction (always 4 bytes).
func decodeARM64(code []byte, pc uint64) (in Inst, ok bool) {
	defer func() {
		if recover() != nil {
			in, ok = Inst{}, false
		}
	}()
	if len(code) < 4 {
		return Inst{}, false
	}
	ai, err := arm64asm.Decode(code[:4])
	if err != nil {
		// Keep 4-byte alignment, as objdump does for undefined words.
		w := binary.LittleEndian.Uint32(code)
		return Inst{Len: 4, Text: pad(".inst", hexAddr(uint64(w))), Bad: true}, true
	}
	in = Inst{Len: 4}
	switch ai.Op {
	case arm64asm.BL, arm64asm.BLR:
		in.IsCall = true
	case arm64asm.B, arm64asm.BR, arm64asm.CBZ, arm64asm.CBNZ, arm64asm.TBZ, arm64asm.TBNZ:
		in.IsJump = true
	case arm64asm.RET, arm64asm.ERET:
		in.IsRet = true
	}
	if in.IsCall || in.IsJump {
		for _, a := range ai.Args {
			if a == nil {
				break
			}
			if rel, ok := a.(arm64asm.PCRel); ok {
				in.Target = pc + uint64(int64(rel))
				in.HasTarget = true
			}
		}
	}
	s := arm64asm.GNUSyntax(ai)
	if in.HasTarget {
		// GNUSyntax prints PC-relative operands relative to ".";
		// print the absolute target instead.
		for _, a := range ai.Args {
			if rel, ok := a.(arm64asm.PCRel); ok {
				s = strings.Replace(s, strings.ToLower(rel.String()), hexAddr(in.Target), 1)
			}
		}
	}
	mnem, args := splitText(s)
	in.Text = pad(mnem, args)
	return in, true
}
