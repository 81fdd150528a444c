package disasm

import (
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// maxX86Len is the architectural maximum length of an x86 instruction.
const maxX86Len = 15

// decodeX86 decodes one x86-64 instruction at the start of code.
// ok=false means the bytes are undecodable (the caller emits "(bad)").
func decodeX86(code []byte, pc uint64, syntax Syntax) (in Inst, ok bool) {
	defer func() {
		if recover() != nil {
			in, ok = Inst{}, false
		}
	}()
	if len(code) == 0 {
		return Inst{}, false
	}
	if fx, ok := x86Special(code); ok {
		return fx, true
	}
	xi, err := x86asm.Decode(code, 64)
	if err == nil && xi.Len > 0 && len(code) < maxX86Len {
		// The decoder does not always notice input that ends in the
		// middle of an instruction; decode again with padding and reject
		// the instruction if it would extend past the end of code.
		var buf [2 * maxX86Len]byte
		copy(buf[:], code)
		if pi, perr := x86asm.Decode(buf[:], 64); perr == nil && pi.Len > len(code) {
			return Inst{}, false
		}
	}
	vex, isVEX := parseVEX(code)
	if isVEX && (err != nil || xi.Len != vex.length || xi.Op == 0) {
		// A VEX/EVEX instruction the decoder does not know or gets the
		// length of wrong: keep in sync using the computed length.
		return vexFallback(code, vex), true
	}
	if err != nil || xi.Len <= 0 || xi.Op == 0 {
		return Inst{}, false
	}
	in = Inst{Len: xi.Len}
	classifyX86(&in, xi, pc)
	// The decoder prints branch targets relative to "." when pc is 0;
	// a lookup naming exactly the target makes it print the address.
	var lookup x86asm.SymLookup
	if in.HasTarget {
		t := in.Target
		lookup = func(a uint64) (string, uint64) {
			if a == t {
				return hexAddr(t), t
			}
			return "", 0
		}
	}
	if syntax == SyntaxIntel {
		in.Text = formatIntel(xi, code[:xi.Len], pc, lookup)
	} else {
		in.Text = formatATT(xi, code[:xi.Len], pc, lookup)
	}
	if pc == 0 && in.HasTarget {
		in.Text = dotRelRE.ReplaceAllString(in.Text, hexAddr(in.Target))
	}
	if m, ok := memInfo(xi); ok && m.Index == 0 {
		mb := modrmByte(code[:xi.Len])
		if m.Base == x86asm.RIP || (m.Base == 0 && mb >= 0 && mb>>6 == 0 && mb&7 == 5 && !isMovabs(code)) {
			in.DataRef = pc + uint64(xi.Len) + uint64(int64(int32(m.Disp)))
			in.HasDataRef = true
		}
	}
	return in, true
}

// x86Special handles encodings the decoder gets wrong.
func x86Special(code []byte) (Inst, bool) {
	// endbr64 / endbr32: f3 0f 1e fa / fb (CET). The decoder returns a
	// lone one-byte "rep".
	if len(code) >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e {
		switch code[3] {
		case 0xfa:
			return Inst{Len: 4, Text: "endbr64"}, true
		case 0xfb:
			return Inst{Len: 4, Text: "endbr32"}, true
		}
	}
	// rdpkru / wrpkru.
	if len(code) >= 3 && code[0] == 0x0f && code[1] == 0x01 {
		switch code[2] {
		case 0xee:
			return Inst{Len: 3, Text: "rdpkru"}, true
		case 0xef:
			return Inst{Len: 3, Text: "wrpkru"}, true
		}
	}
	// vzeroupper / vzeroall (VEX 0f 77) have no ModRM byte, but the
	// decoder consumes one.
	if len(code) >= 3 && (code[0] == 0xc5 || code[0] == 0xc4) {
		if v, ok := parseVEX(code); ok && v.mmap == 1 && v.opcode == 0x77 && v.prefixLen == 0 {
			if v.l != 0 {
				return Inst{Len: v.length, Text: "vzeroall"}, true
			}
			return Inst{Len: v.length, Text: "vzeroupper"}, true
		}
	}
	return Inst{}, false
}

func classifyX86(in *Inst, xi x86asm.Inst, pc uint64) {
	switch xi.Op {
	case x86asm.CALL, x86asm.LCALL:
		in.IsCall = true
	case x86asm.JMP, x86asm.LJMP, x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE,
		x86asm.JCXZ, x86asm.JE, x86asm.JECXZ, x86asm.JG, x86asm.JGE, x86asm.JL,
		x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP, x86asm.JNS, x86asm.JO,
		x86asm.JP, x86asm.JRCXZ, x86asm.JS, x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE,
		x86asm.XBEGIN:
		in.IsJump = true
	case x86asm.RET, x86asm.LRET, x86asm.IRET, x86asm.IRETD, x86asm.IRETQ:
		in.IsRet = true
	}
	if in.IsCall || in.IsJump {
		if rel, ok := xi.Args[0].(x86asm.Rel); ok {
			in.Target = pc + uint64(xi.Len) + uint64(int64(rel))
			in.HasTarget = true
		}
	}
}

// splitText splits decoder output into mnemonic (with prefix words) and
// operands.
func splitText(s string) (mnem, args string) {
	f := strings.Fields(s)
	i := 0
	for i < len(f)-1 && prefixWords[f[i]] {
		i++
	}
	if i >= len(f) {
		return s, ""
	}
	mnem = strings.Join(f[:i+1], " ")
	args = strings.Join(f[i+1:], " ")
	return mnem, args
}

// attMnem maps decoder mnemonics to the ones current binutils prints.
var attMnem = map[string]string{
	"retq": "ret", "callq": "call", "jmpq": "jmp", "pushq": "push", "popq": "pop",
	"cdqe": "cltq", "cdq": "cltd", "cqo": "cqto", "cwde": "cwtl", "cbw": "cbtw", "cwd": "cwtd",
	"movsxd": "movslq", "lretq": "lret", "leaveq": "leave", "xbeginq": "xbegin",
}

// memInfo finds the memory operand of xi, if any.
func memInfo(xi x86asm.Inst) (x86asm.Mem, bool) {
	for _, a := range xi.Args {
		if a == nil {
			break
		}
		if m, ok := a.(x86asm.Mem); ok {
			return m, true
		}
	}
	return x86asm.Mem{}, false
}

// modrmByte returns the ModRM byte of the instruction encoded in code,
// or -1 if it cannot be located.
func modrmByte(code []byte) int {
	if v, ok := parseVEX(code); ok {
		i := v.prefixLen + 3
		switch {
		case code[v.prefixLen] == 0xc4:
			i = v.prefixLen + 4
		case v.evex:
			i = v.prefixLen + 5
		}
		if i < len(code) {
			return int(code[i])
		}
		return -1
	}
	i := 0
	for i < len(code) && i < 14 && isLegacyPrefix(code[i]) {
		i++
	}
	if i < len(code) && code[i]&0xf0 == 0x40 {
		i++
	}
	if i < len(code) && code[i] == 0x0f {
		i++
		if i < len(code) && (code[i] == 0x38 || code[i] == 0x3a) {
			i++
		}
	}
	i++ // opcode
	if i < len(code) {
		return int(code[i])
	}
	return -1
}

// dataBits returns the operand size used to print immediates unsigned.
func dataBits(xi x86asm.Inst) int {
	for _, a := range xi.Args {
		if a == nil {
			break
		}
		if r, ok := a.(x86asm.Reg); ok {
			switch {
			case r >= x86asm.AL && r <= x86asm.R15B:
				return 8
			case r >= x86asm.AX && r <= x86asm.R15W:
				return 16
			case r >= x86asm.EAX && r <= x86asm.R15L:
				return 32
			case r >= x86asm.RAX && r <= x86asm.R15:
				return 64
			}
		}
	}
	if _, ok := memInfo(xi); ok && xi.MemBytes > 0 && xi.MemBytes <= 8 {
		return xi.MemBytes * 8
	}
	if xi.DataSize != 0 {
		return xi.DataSize
	}
	return 64
}

var (
	negImmRE       = regexp.MustCompile(`\$-0x[0-9a-f]+`)
	noScaleRE      = regexp.MustCompile(`\((%[a-z0-9]+)?,(%[a-z0-9]+)\)`)
	attSegRE       = regexp.MustCompile(`%[c-gs]s:`)
	intelSegRE     = regexp.MustCompile(`\b[c-gs]s:`)
	dotRelRE       = regexp.MustCompile(`\.[+-]0x[0-9a-f]+`)
	emptyOperandRE = regexp.MustCompile(`(^|,)(,|$)`)
	emptySegDispRE = regexp.MustCompile(`(%[c-gs]s:)(,|$)`)
	bigDispRE      = regexp.MustCompile(`0x[0-9a-f]{8}\(`)
	cmpImmRE       = regexp.MustCompile(`^\$0x([0-7]),`)
)

// bmiSuffixed lists BMI/BMI2 mnemonics the decoder prints with an
// operand-size suffix that objdump omits.
var bmiSuffixed = map[string]bool{}

func init() {
	for _, m := range []string{"andn", "bextr", "blsi", "blsmsk", "blsr", "bzhi", "mulx",
		"pdep", "pext", "rorx", "sarx", "shlx", "shrx"} {
		bmiSuffixed[m+"l"] = true
		bmiSuffixed[m+"q"] = true
	}
}

// isMovabs reports whether code is a mov with a 64-bit immediate or a
// 64-bit absolute address (objdump's movabs).
func isMovabs(code []byte) bool {
	i := 0
	for i < len(code) && isLegacyPrefix(code[i]) {
		i++
	}
	rexW := false
	if i < len(code) && code[i]&0xf0 == 0x40 {
		rexW = code[i]&8 != 0
		i++
	}
	if i >= len(code) {
		return false
	}
	op := code[i]
	switch {
	case op >= 0xb8 && op <= 0xbf:
		return rexW
	case op >= 0xa0 && op <= 0xa3:
		return true
	}
	return false
}

var cmpPreds = [8]string{"eq", "lt", "le", "false", "neq", "nlt", "nle", "true"}

// cmpPredicate turns the AVX-512 integer compares "vpcmp[u]{b,w,d,q}
// $imm,..." into objdump's predicate pseudo-ops ("vpcmpeqb", "vpcmpltub").
func cmpPredicate(base, args string) (string, string) {
	if !strings.HasPrefix(base, "vpcmp") || len(base) < 6 || len(base) > 7 {
		return base, args
	}
	suf := base[5:]
	switch suf {
	case "b", "w", "d", "q", "ub", "uw", "ud", "uq":
	default:
		return base, args
	}
	m := cmpImmRE.FindStringSubmatch(args)
	if m == nil {
		return base, args
	}
	return "vpcmp" + cmpPreds[m[1][0]-'0'] + suf, args[len(m[0]):]
}

// nopPrefixWords renders the redundant prefixes of a multi-byte NOP the
// way objdump does ("data16 cs nopw").
func nopPrefixWords(code []byte) string {
	var w []string
	n := 0
	for n < len(code) && isLegacyPrefix(code[n]) {
		n++
	}
	last66 := -1
	for i := n - 1; i >= 0; i-- {
		if code[i] == 0x66 {
			last66 = i
			break
		}
	}
	for i := 0; i < n; i++ {
		switch code[i] {
		case 0x66:
			if i != last66 {
				w = append(w, "data16")
			}
		case 0x2e:
			w = append(w, "cs")
		case 0x3e:
			w = append(w, "ds")
		case 0x26:
			w = append(w, "es")
		case 0x36:
			w = append(w, "ss")
		case 0x64:
			w = append(w, "fs")
		case 0x65:
			w = append(w, "gs")
		case 0x67:
			w = append(w, "addr32")
		case 0xf2:
			w = append(w, "repnz")
		case 0xf3:
			w = append(w, "repz")
		case 0xf0:
			w = append(w, "lock")
		}
	}
	return strings.Join(w, " ")
}

func formatATT(xi x86asm.Inst, code []byte, pc uint64, lookup x86asm.SymLookup) string {
	s := x86asm.GNUSyntax(xi, pc, lookup)
	if xi.Op == x86asm.NOP && len(xi.Args) > 0 && xi.Args[0] == nil && code[0] == 0x66 {
		// 66 90
		return pad("xchg", "%ax,%ax")
	}
	mnem, args := splitText(s)
	words := strings.Fields(mnem)
	base := words[len(words)-1]
	pre := words[:len(words)-1]
	if m, ok := attMnem[base]; ok {
		base = m
	}
	if xi.Op == x86asm.NOP {
		pre = nil
		if p := nopPrefixWords(code); p != "" {
			pre = []string{p}
		}
		args = attSegRE.ReplaceAllString(args, "")
	}
	pre = notrack(xi, code, pre)
	args = fixMem(xi, code, args, "(", "0x0")
	if _, vex := parseVEX(code); vex {
		args = fixSeg(code, args, attSegRE)
	}
	if strings.Contains(args, ":") {
		args = emptySegDispRE.ReplaceAllString(args, "${1}0x0$2")
	}
	if args == "%st,%st" {
		args = "%st(0),%st"
	}
	hasMem := strings.Contains(args, "(")
	if hasMem && strings.Contains(args, ",%") {
		args = noScaleRE.ReplaceAllString(args, "($1,$2,1)")
	}
	if strings.Contains(args, " {") {
		args = strings.ReplaceAll(args, " {", "{")
	}
	if strings.Contains(args, "%riz,1)") {
		args = strings.Replace(args, "(%rsp,%riz,1)", "(%rsp)", 1)
		args = strings.Replace(args, "(%r12,%riz,1)", "(%r12)", 1)
	}
	if args == "%st" {
		args = "%st(0)"
	}
	if hasMem && strings.Contains(args, "0x") {
		args = bigDispRE.ReplaceAllStringFunc(args, func(m string) string {
			v, err := strconv.ParseUint(m[2:len(m)-1], 16, 64)
			if err != nil || v < 0x80000000 || v > 0xffffffff {
				return m
			}
			return "-0x" + strconv.FormatUint(0x100000000-v, 16) + "("
		})
	}
	if strings.HasPrefix(base, "vpcmp") {
		base, args = cmpPredicate(base, args)
	}
	if bmiSuffixed[base] {
		base = base[:len(base)-1]
	}
	if base == "ret" && len(pre) == 1 && pre[0] == "rep" {
		pre[0] = "repz"
	}
	if base == "mov" && isMovabs(code) {
		base = "movabs"
	}
	if strings.Contains(args, "$-") {
		bits := dataBits(xi)
		args = negImmRE.ReplaceAllStringFunc(args, func(m string) string {
			v, err := strconv.ParseUint(m[4:], 16, 64)
			if err != nil {
				return m
			}
			u := -v
			if bits < 64 {
				u &= 1<<uint(bits) - 1
			}
			return "$0x" + strconv.FormatUint(u, 16)
		})
	}
	return pad(strings.Join(append(pre, base), " "), args)
}

// fixSeg drops segment overrides the decoder reports but the encoding
// does not contain.
func fixSeg(code []byte, args string, re *regexp.Regexp) string {
	if !strings.Contains(args, "s:") {
		return args
	}
	return re.ReplaceAllStringFunc(args, func(m string) string {
		seg := strings.TrimPrefix(m, "%")[:2]
		want := map[string]byte{"cs": 0x2e, "ds": 0x3e, "es": 0x26, "ss": 0x36, "fs": 0x64, "gs": 0x65}[seg]
		for i := 0; i < len(code) && isLegacyPrefix(code[i]); i++ {
			if code[i] == want {
				return m
			}
		}
		return ""
	})
}

// fixMem inserts an explicit zero displacement where the encoding has
// one (objdump prints "0x0(%rax)" for a disp8 of zero), and restores
// RIP-relative addressing the decoder lost on some VEX instructions.
func fixMem(xi x86asm.Inst, code []byte, args, open, zero string) string {
	m, ok := memInfo(xi)
	if !ok {
		return args
	}
	mb := modrmByte(code)
	if mb < 0 {
		return args
	}
	mod, rm := mb>>6, mb&7
	if m.Base == 0 && m.Index == 0 {
		if isMovabs(code) {
			return args
		}
		if open == "[" {
			if mod == 0 && rm == 5 && !strings.Contains(args, "[rip") {
				return strings.Replace(args, "[", "[rip+", 1)
			}
			return args
		}
		if mod == 0 && rm == 5 && !strings.Contains(args, "(%rip)") {
			d := "0x" + strconv.FormatUint(uint64(m.Disp), 16)
			if m.Disp < 0 {
				d = "-0x" + strconv.FormatUint(uint64(-m.Disp), 16)
			}
			if i := strings.Index(args, d); i >= 0 {
				return args[:i+len(d)] + "(%rip)" + args[i+len(d):]
			}
			return args
		}
		if m.Disp == 0 {
			return emptyOperandRE.ReplaceAllString(args, "${1}0x0$2")
		}
		return args
	}
	if m.Disp != 0 {
		return args
	}
	if mod != 1 && mod != 2 && m.Base != x86asm.RIP && m.Base != 0 {
		return args
	}
	i := strings.Index(args, open)
	if i < 0 {
		return args
	}
	if open == "(" {
		return args[:i] + zero + args[i:]
	}
	j := strings.Index(args[i:], "]")
	if j < 0 {
		return args
	}
	return args[:i+j] + zero + args[i+j:]
}

// notrack renders the 3e prefix of an indirect call or jump as
// "notrack" (CET), as objdump does.
func notrack(xi x86asm.Inst, code []byte, pre []string) []string {
	if xi.Op != x86asm.JMP && xi.Op != x86asm.CALL {
		return pre
	}
	if _, rel := xi.Args[0].(x86asm.Rel); rel {
		return pre
	}
	has := false
	for i := 0; i < len(code) && isLegacyPrefix(code[i]); i++ {
		has = has || code[i] == 0x3e
	}
	if !has {
		return pre
	}
	out := pre[:0:0]
	for _, w := range pre {
		if w != "ds" {
			out = append(out, w)
		}
	}
	return append([]string{"notrack"}, out...)
}

// intelMnem maps decoder mnemonics to objdump's Intel-syntax ones.
var intelMnem = map[string]string{
	"jz": "je", "jnz": "jne", "jnbe": "ja", "jnb": "jae", "jnae": "jb", "jna": "jbe",
	"jnle": "jg", "jnl": "jge", "jnge": "jl", "jng": "jle",
	"cmovz": "cmove", "cmovnz": "cmovne", "cmovnbe": "cmova", "cmovnb": "cmovae",
	"cmovnle": "cmovg", "cmovnl": "cmovge", "setz": "sete", "setnz": "setne",
	"setnbe": "seta", "setnb": "setae", "setnle": "setg", "setnl": "setge",
	"cmovna": "cmovbe", "setna": "setbe",
}

var (
	intelMemRE    = regexp.MustCompile(`\[[^\]]*\]`)
	intelNegImmRE = regexp.MustCompile(`(^|,)-0x[0-9a-f]+$`)
	scaleFirstRE  = regexp.MustCompile(`\b([1248])\*([a-z0-9]+)`)
	regRE         = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
)

// fixIntelMem rewrites a bracketed Intel memory operand the way objdump
// prints it: "[base+index*scale+disp]", scale always shown, negative RIP
// displacements sign-extended to 64 bits.
func fixIntelMem(m string) string {
	in := m[1 : len(m)-1]
	in = scaleFirstRE.ReplaceAllString(in, "$2*$1")
	if i := strings.IndexByte(in, '+'); i > 0 && regRE.MatchString(in[:i]) {
		rest := in[i+1:]
		j := strings.IndexAny(rest, "+-")
		idx := rest
		if j >= 0 {
			idx = rest[:j]
		}
		if regRE.MatchString(idx) && in[:i] != "rip" {
			in = in[:i+1] + idx + "*1" + rest[len(idx):]
		}
	}
	if i := strings.LastIndex(in, "+0x"); i > 0 && len(in)-i == 11 {
		if v, err := strconv.ParseUint(in[i+3:], 16, 64); err == nil && v >= 0x80000000 {
			if strings.HasPrefix(in, "rip+") {
				in = in[:i] + "+0x" + strconv.FormatUint(v|0xffffffff00000000, 16)
			} else {
				in = in[:i] + "-0x" + strconv.FormatUint(0x100000000-v, 16)
			}
		}
	}
	return "[" + in + "]"
}

var (
	intelSegAbsRE = regexp.MustCompile(`\b[c-gs]s:\[(0x[0-9a-f]+)?\]`)
	x87RegRE      = regexp.MustCompile(`\bst([0-7])\b`)
	intelCmpImmRE = regexp.MustCompile(`,0x([0-7])$`)
)

// isShiftByOne reports whether code is a shift/rotate by the implicit
// count 1 (d0/d1), which objdump prints as ",1" in Intel syntax.
func isShiftByOne(code []byte) bool {
	i := 0
	for i < len(code) && isLegacyPrefix(code[i]) {
		i++
	}
	if i < len(code) && code[i]&0xf0 == 0x40 {
		i++
	}
	return i < len(code) && (code[i] == 0xd0 || code[i] == 0xd1)
}

var ptrRE = regexp.MustCompile(`\b(byte|word|dword|qword|xmmword|ymmword|zmmword|tword|fword) ptr\b`)

func formatIntel(xi x86asm.Inst, code []byte, pc uint64, lookup x86asm.SymLookup) string {
	s := x86asm.IntelSyntax(xi, pc, lookup)
	mnem, args := splitText(s)
	words := strings.Fields(mnem)
	base := words[len(words)-1]
	pre := words[:len(words)-1]
	if m, ok := intelMnem[base]; ok {
		base = m
	}
	if xi.Op == x86asm.NOP {
		pre = nil
		if p := nopPrefixWords(code); p != "" {
			pre = []string{p}
		}
		if len(xi.Args) > 0 && xi.Args[0] == nil && code[0] == 0x66 {
			return pad("xchg", "ax,ax")
		}
		// The decoder prints the (ignored) register operand of 0f 1f.
		if i := strings.LastIndex(args, "], "); i >= 0 {
			args = args[:i+1]
		}
		args = intelSegRE.ReplaceAllString(args, "")
	}
	args = strings.ReplaceAll(args, ", ", ",")
	args = ptrRE.ReplaceAllStringFunc(args, func(m string) string {
		return strings.ToUpper(m[:len(m)-3]) + "PTR"
	})
	pre = notrack(xi, code, pre)
	args = strings.ReplaceAll(args, ",ptr [", ",[")
	args = strings.TrimPrefix(args, "ptr ")
	if strings.Contains(args, "[") {
		args = intelMemRE.ReplaceAllStringFunc(args, fixIntelMem)
	}
	args = fixMem(xi, code, args, "[", "+0x0")
	args = strings.ReplaceAll(args, " {", "{")
	if strings.Contains(args, "s:[") {
		args = intelSegAbsRE.ReplaceAllStringFunc(args, func(m string) string {
			if strings.HasSuffix(m, "[]") {
				return m[:3] + "0x0"
			}
			return m[:3] + m[4:len(m)-1]
		})
	}
	if strings.Contains(args, "st") {
		args = x87RegRE.ReplaceAllString(args, "st($1)")
	}
	if strings.HasPrefix(base, "vpcmp") {
		if m := intelCmpImmRE.FindStringSubmatch(args); m != nil {
			if b, _ := cmpPredicate(base, "$0x"+m[1]+","); b != base {
				base, args = b, args[:len(args)-len(m[0])]
			}
		}
	}
	if base == "mov" && isMovabs(code) {
		base = "movabs"
	}
	if base == "ret" && len(pre) == 0 && code[0] == 0xf3 {
		pre = []string{"repz"}
	}
	if isShiftByOne(code) {
		args = strings.TrimSuffix(args, ",0x1") + ",1"
	}
	if strings.Contains(args, "-0x") {
		bits := dataBits(xi)
		args = intelNegImmRE.ReplaceAllStringFunc(args, func(m string) string {
			lead := ""
			if m[0] == ',' {
				lead, m = ",", m[1:]
			}
			v, err := strconv.ParseUint(m[3:], 16, 64)
			if err != nil {
				return lead + m
			}
			u := -v
			if bits < 64 {
				u &= 1<<uint(bits) - 1
			}
			return lead + "0x" + strconv.FormatUint(u, 16)
		})
	}
	if _, vex := parseVEX(code); vex {
		args = fixSeg(code, args, intelSegRE)
	}
	return pad(strings.Join(append(pre, base), " "), args)
}
