// Package disasm decodes machine code into instructions for display.
//
// It wraps golang.org/x/arch (x86asm and arm64asm) with the behaviour a
// profiler needs when annotating hot code: decoding never panics and never
// stops early (undecodable bytes become one-byte "(bad)" instructions and
// decoding resumes at the next byte), instruction boundaries follow GNU
// objdump, direct call and jump targets are computed, and text is rendered
// in AT&T syntax (like "objdump -d") or Intel syntax (like
// "objdump -d -M intel").
//
// A few known shortcomings of the underlying x86 decoder are corrected here,
// e.g. endbr64/endbr32, vzeroupper/vzeroall and VEX/EVEX instructions the
// decoder does not know (their length is computed from the encoding so that
// decoding stays in sync).
package disasm

import (
	"fmt"
	"strings"
)

// Arch is an instruction set architecture.
type Arch int

// Supported architectures.
const (
	ArchUnknown Arch = iota
	ArchX86_64
	ArchARM64
)

// ELF machine numbers (e_machine) understood by ArchFromELF.
const (
	EM_X86_64  = 62
	EM_AARCH64 = 183
)

// ArchFromELF maps an ELF e_machine value to an Arch.
// Unknown machines map to ArchUnknown.
func ArchFromELF(machine uint16) Arch {
	switch machine {
	case EM_X86_64:
		return ArchX86_64
	case EM_AARCH64:
		return ArchARM64
	}
	return ArchUnknown
}

// String returns a short name for the architecture.
func (a Arch) String() string {
	switch a {
	case ArchX86_64:
		return "x86_64"
	case ArchARM64:
		return "aarch64"
	}
	return "unknown"
}

// Syntax selects the assembly syntax of Inst.Text.
type Syntax int

// Assembly syntaxes. The zero value is AT&T.
const (
	SyntaxATT   Syntax = iota // GNU/AT&T syntax, as printed by "objdump -d"
	SyntaxIntel               // Intel syntax, as printed by "objdump -d -M intel"
)

// String returns "att" or "intel".
func (s Syntax) String() string {
	if s == SyntaxIntel {
		return "intel"
	}
	return "att"
}

// Symbolizer names an address, typically the target of a call. It reports
// ok=false when the address has no name. The name may include an offset,
// e.g. "main+0x10".
type Symbolizer func(addr uint64) (name string, ok bool)

// Inst is one decoded instruction.
type Inst struct {
	Addr uint64 `json:"addr"`
	Len  int    `json:"len"`
	// Bytes are the instruction's bytes; the slice aliases the code passed
	// to Decode.
	Bytes []byte `json:"bytes"`
	// Text is the instruction in the selected syntax: mnemonic (with any
	// prefix words) padded to 6 columns as objdump does, then operands.
	// Direct branch targets are absolute "0x..." addresses. Undecodable
	// bytes are "(bad)" (x86) or ".inst 0x..." (an undefined arm64 word);
	// a VEX/EVEX instruction the decoder does not know is a mnemonic from
	// a small table or "(vex)"/"(evex)" followed by its bytes.
	Text      string `json:"text"`
	Target    uint64 `json:"target,omitempty"`     // direct branch target, if HasTarget
	HasTarget bool   `json:"has_target,omitempty"` // Target is valid
	IsCall    bool   `json:"is_call,omitempty"`
	IsJump    bool   `json:"is_jump,omitempty"` // conditional or unconditional jump (not call/ret)
	IsRet     bool   `json:"is_ret,omitempty"`
	Bad       bool   `json:"bad,omitempty"` // bytes could not be decoded ("(bad)")
	// DataRef is the address a RIP-relative memory operand refers to,
	// if HasDataRef. Text then ends in an objdump-style comment
	// "# 0x404010" (with " <name>" when a symbolizer names it).
	DataRef    uint64 `json:"data_ref,omitempty"`
	HasDataRef bool   `json:"has_data_ref,omitempty"`
}

// Mnemonic returns the first word of the instruction text, after any
// prefixes objdump prints in front of the mnemonic (rep, lock, notrack,
// bnd, data16, cs, ...).
func (in Inst) Mnemonic() string {
	return Mnemonic(in.Text)
}

// Mnemonic returns the mnemonic of an objdump-style instruction text,
// skipping leading prefix words.
func Mnemonic(text string) string {
	f := strings.Fields(text)
	for i, w := range f {
		if prefixWords[w] && i+1 < len(f) {
			continue
		}
		return w
	}
	return ""
}

var prefixWords = map[string]bool{
	"rep": true, "repz": true, "repnz": true, "repe": true, "repne": true,
	"lock": true, "notrack": true, "bnd": true, "data16": true, "data32": true,
	"addr32": true, "rex": true, "rex.W": true, "cs": true, "ds": true, "es": true,
	"ss": true, "fs": true, "gs": true, "xacquire": true, "xrelease": true,
	"{vex}": true, "{vex3}": true, "{evex}": true,
}

// Options controls DecodeWith.
type Options struct {
	Arch   Arch
	Syntax Syntax
	// Symbolize, if set, names direct call/jump targets, which are then
	// rendered as "call 0x401136 <inner>".
	Symbolize Symbolizer
	// MaxInsts bounds the number of decoded instructions (0: no bound other
	// than len(code)).
	MaxInsts int
}

// Decode decodes code, which starts at address addr, into instructions.
// It decodes the whole slice; undecodable bytes become one-byte "(bad)"
// instructions and decoding resumes at the next byte (arm64 keeps 4-byte
// alignment: an undefined word is one 4-byte ".inst"). An unknown arch
// yields one "(bad)" per byte. The work is linear in len(code).
func Decode(arch Arch, code []byte, addr uint64, syntax Syntax) []Inst {
	return DecodeWith(code, addr, Options{Arch: arch, Syntax: syntax})
}

// DecodeWith is Decode with options (symbolizer, instruction limit).
func DecodeWith(code []byte, addr uint64, opt Options) []Inst {
	var out []Inst
	if len(code) > 0 {
		guess := len(code) / 4
		if opt.MaxInsts > 0 && guess > opt.MaxInsts {
			guess = opt.MaxInsts
		}
		out = make([]Inst, 0, guess+1)
	}
	for off := 0; off < len(code); {
		if opt.MaxInsts > 0 && len(out) >= opt.MaxInsts {
			break
		}
		pc := addr + uint64(off)
		var in Inst
		var ok bool
		switch opt.Arch {
		case ArchX86_64:
			in, ok = decodeX86(code[off:], pc, opt.Syntax)
		case ArchARM64:
			in, ok = decodeARM64(code[off:], pc)
		}
		if !ok || in.Len <= 0 || in.Len > len(code)-off {
			in = badInst(code[off:], pc)
		}
		in.Addr = pc
		in.Bytes = code[off : off+in.Len : off+in.Len]
		if in.HasTarget && opt.Symbolize != nil && (in.IsCall || in.IsJump) {
			if name, ok := opt.Symbolize(in.Target); ok && name != "" {
				in.Text += " <" + name + ">"
			}
		}
		if in.HasDataRef {
			in.Text += "        # " + hexAddr(in.DataRef)
			if opt.Symbolize != nil {
				if name, ok := opt.Symbolize(in.DataRef); ok && name != "" {
					in.Text += " <" + name + ">"
				}
			}
		}
		out = append(out, in)
		off += in.Len
	}
	return out
}

func badInst(code []byte, pc uint64) Inst {
	n := 1
	if len(code) == 0 {
		n = 0
	}
	return Inst{Addr: pc, Len: n, Text: "(bad)", Bad: true}
}

// pad formats mnemonic and operands the way objdump does: the mnemonic
// (with prefixes) left-justified in 6 columns followed by a space.
func pad(mnem, args string) string {
	if args == "" {
		return mnem
	}
	if len(mnem) < 6 {
		return mnem + strings.Repeat(" ", 6-len(mnem)) + " " + args
	}
	return mnem + " " + args
}

// hex formats an address like objdump's branch targets, with 0x.
func hexAddr(v uint64) string { return fmt.Sprintf("%#x", v) }
