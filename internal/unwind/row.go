package unwind

import "github.com/stax-profiler/stax/internal/dwarfenc"

// Rule kinds for a register or the CFA.
const (
	ruleUndef    uint8 = iota // register: not recoverable (for the return address: end of stack)
	ruleSame                  // register: unchanged
	ruleOffset                // register: saved at CFA+off; CFA: reg+off
	ruleValOff                // register: value is CFA+off
	ruleReg                   // register: in register reg
	ruleExpr                  // register: saved at address expr; CFA: value of expr
	ruleValExpr               // register: value is expr
	ruleNotFound              // the row could not be computed
)

type rule struct {
	kind uint8
	reg  uint8
	off  int64
	expr []byte // aliases the table's section bytes
}

// row is the unwinding rule set at one address, for the registers stax tracks.
type row struct {
	cfa    rule
	rbp    rule
	ra     rule
	signal bool
}

type regState struct{ rbp, ra rule }

// rowAt evaluates the CFI program of the FDE covering pc (a link-time address).
func (t *Table) rowAt(pc uint64) (row, bool) {
	f, ok := t.find(pc)
	if !ok {
		return row{}, false
	}
	c := &t.cies[f.cie]
	var rw row
	rw.signal = c.signal
	rw.rbp.kind = ruleSame
	rw.ra.kind = ruleUndef
	if !t.exec(&rw, c, nil, c.ins, c.end, f.start, ^uint64(0)) {
		return row{}, false
	}
	initial := regState{rw.rbp, rw.ra}
	if !t.exec(&rw, c, &initial, f.ins, f.insE, f.start, pc) {
		return row{}, false
	}
	return rw, true
}

// exec runs CFA instructions data[ins:end] from location loc until loc passes pc.
func (t *Table) exec(rw *row, c *cie, initial *regState, ins, end uint32, loc, pc uint64) bool {
	if int(end) > len(t.data) || ins > end {
		return false
	}
	r := cfiReader{dwarfenc.Reader{B: t.data[:end], Off: int(ins)}}
	var stack [maxRememberDep]row
	depth := 0
	setReg := func(reg uint64, ru rule) {
		switch reg {
		case regRBP:
			rw.rbp = ru
		case c.raReg:
			rw.ra = ru
		}
	}
	restore := func(reg uint64) {
		if initial == nil {
			return
		}
		switch reg {
		case regRBP:
			rw.rbp = initial.rbp
		case c.raReg:
			rw.ra = initial.ra
		}
	}
	advance := func(delta uint64) bool {
		loc += delta * c.codeAlign
		return loc > pc
	}
	for n := 0; r.Off < len(r.B); n++ {
		if n >= maxCFIOps || r.Bad {
			return false
		}
		op := r.U8()
		switch op >> 6 {
		case 1: // DW_CFA_advance_loc
			if advance(uint64(op & 0x3f)) {
				return true
			}
			continue
		case 2: // DW_CFA_offset
			setReg(uint64(op&0x3f), rule{kind: ruleOffset, off: int64(r.Uleb()) * c.dataAlign})
			continue
		case 3: // DW_CFA_restore
			restore(uint64(op & 0x3f))
			continue
		}
		switch op {
		case 0x00: // nop
		case 0x01: // set_loc
			loc = r.Ptr(c.fdeEnc, t.secAddr, 8)
			if loc > pc {
				return true
			}
		case 0x02:
			if advance(r.Fixed(1)) {
				return true
			}
		case 0x03:
			if advance(r.Fixed(2)) {
				return true
			}
		case 0x04:
			if advance(r.Fixed(4)) {
				return true
			}
		case 0x05: // offset_extended
			reg := r.Uleb()
			setReg(reg, rule{kind: ruleOffset, off: int64(r.Uleb()) * c.dataAlign})
		case 0x06: // restore_extended
			restore(r.Uleb())
		case 0x07: // undefined
			setReg(r.Uleb(), rule{kind: ruleUndef})
		case 0x08: // same_value
			setReg(r.Uleb(), rule{kind: ruleSame})
		case 0x09: // register
			reg := r.Uleb()
			src := r.Uleb()
			setReg(reg, rule{kind: ruleReg, reg: uint8(min(src, 255))})
		case 0x0a: // remember_state
			if depth >= maxRememberDep {
				return false
			}
			stack[depth] = *rw
			depth++
		case 0x0b: // restore_state
			if depth == 0 {
				return false
			}
			depth--
			sig := rw.signal
			*rw = stack[depth]
			rw.signal = sig
		case 0x0c: // def_cfa
			reg := r.Uleb()
			rw.cfa = rule{kind: ruleOffset, reg: uint8(min(reg, 255)), off: int64(r.Uleb())}
		case 0x0d: // def_cfa_register
			rw.cfa.reg = uint8(min(r.Uleb(), 255))
			if rw.cfa.kind != ruleOffset {
				rw.cfa.kind = ruleOffset
				rw.cfa.off = 0
			}
		case 0x0e: // def_cfa_offset
			rw.cfa.off = int64(r.Uleb())
		case 0x0f: // def_cfa_expression
			rw.cfa = rule{kind: ruleExpr, expr: r.block()}
		case 0x10: // expression
			reg := r.Uleb()
			setReg(reg, rule{kind: ruleExpr, expr: r.block()})
		case 0x11: // offset_extended_sf
			reg := r.Uleb()
			setReg(reg, rule{kind: ruleOffset, off: r.Sleb() * c.dataAlign})
		case 0x12: // def_cfa_sf
			reg := r.Uleb()
			rw.cfa = rule{kind: ruleOffset, reg: uint8(min(reg, 255)), off: r.Sleb() * c.dataAlign}
		case 0x13: // def_cfa_offset_sf
			rw.cfa.off = r.Sleb() * c.dataAlign
		case 0x14: // val_offset
			reg := r.Uleb()
			setReg(reg, rule{kind: ruleValOff, off: int64(r.Uleb()) * c.dataAlign})
		case 0x15: // val_offset_sf
			reg := r.Uleb()
			setReg(reg, rule{kind: ruleValOff, off: r.Sleb() * c.dataAlign})
		case 0x16: // val_expression
			reg := r.Uleb()
			setReg(reg, rule{kind: ruleValExpr, expr: r.block()})
		case 0x2e: // GNU_args_size
			r.Uleb()
		case 0x2f: // GNU_negative_offset_extended
			reg := r.Uleb()
			setReg(reg, rule{kind: ruleOffset, off: -int64(r.Uleb()) * c.dataAlign})
		default:
			return false
		}
	}
	return !r.Bad
}

func (r *cfiReader) block() []byte {
	n := r.Uleb()
	if r.Bad || n > uint64(len(r.B)-r.Off) {
		r.Bad = true
		return nil
	}
	b := r.B[r.Off : r.Off+int(n) : r.Off+int(n)]
	r.Off += int(n)
	return b
}
