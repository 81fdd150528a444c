package unwind

import (
	"unsafe"

	"github.com/stax-profiler/stax/internal/dwarfenc"
)

func unsafePtr(t *Table) unsafe.Pointer { return unsafe.Pointer(t) }

// evalExpr evaluates the DWARF expressions CFI uses in practice (PLT entries' CFA, signal
// frames' register rules). pushCFA pushes cfa first, as register rules require.
func evalExpr(expr []byte, f *frameRegs, mem *memory, cfa uint64, pushCFA bool) (uint64, EndReason) {
	var st [maxExprStack]uint64
	n := 0
	push := func(v uint64) bool {
		if n >= maxExprStack {
			return false
		}
		st[n] = v
		n++
		return true
	}
	if pushCFA {
		push(cfa)
	}
	r := cfiReader{dwarfenc.Reader{B: expr}}
	for ops := 0; r.Off < len(expr); ops++ {
		if ops >= maxExprOps || r.Bad {
			return 0, EndBadMemory
		}
		op := r.U8()
		switch {
		case op >= 0x30 && op <= 0x4f: // lit0..31
			if !push(uint64(op - 0x30)) {
				return 0, EndBadMemory
			}
			continue
		case op >= 0x70 && op <= 0x8f: // breg0..31
			off := r.Sleb()
			v, ok := regValue(f, op-0x70)
			if !ok || !push(v+uint64(off)) {
				return 0, EndBadMemory
			}
			continue
		case op == 0x92: // bregx
			reg := r.Uleb()
			off := r.Sleb()
			v, ok := regValue(f, uint8(min(reg, 255)))
			if !ok || !push(v+uint64(off)) {
				return 0, EndBadMemory
			}
			continue
		}
		var v uint64
		binary := false
		switch op {
		case 0x08: // const1u
			v = r.Fixed(1)
		case 0x09:
			v = uint64(int64(int8(r.Fixed(1))))
		case 0x0a:
			v = r.Fixed(2)
		case 0x0b:
			v = uint64(int64(int16(r.Fixed(2))))
		case 0x0c:
			v = r.Fixed(4)
		case 0x0d:
			v = uint64(int64(int32(r.Fixed(4))))
		case 0x0e, 0x0f:
			v = r.Fixed(8)
		case 0x10:
			v = r.Uleb()
		case 0x11:
			v = uint64(r.Sleb())
		case 0x06: // deref
			if n < 1 {
				return 0, EndBadMemory
			}
			x, end := mem.read(st[n-1])
			if end != EndComplete {
				return 0, end
			}
			st[n-1] = x
			continue
		case 0x12: // dup
			if n < 1 || !push(st[n-1]) {
				return 0, EndBadMemory
			}
			continue
		case 0x13: // drop
			if n < 1 {
				return 0, EndBadMemory
			}
			n--
			continue
		case 0x23: // plus_uconst
			if n < 1 {
				return 0, EndBadMemory
			}
			st[n-1] += r.Uleb()
			continue
		case 0x96: // nop
			continue
		default:
			binary = true
		}
		if !binary {
			if !push(v) {
				return 0, EndBadMemory
			}
			continue
		}
		if n < 2 {
			return 0, EndBadMemory
		}
		a, b := st[n-2], st[n-1]
		var res uint64
		switch op {
		case 0x1a: // and
			res = a & b
		case 0x1c: // minus
			res = a - b
		case 0x1e: // mul
			res = a * b
		case 0x21: // or
			res = a | b
		case 0x22: // plus
			res = a + b
		case 0x24: // shl
			res = a << (b & 63)
		case 0x25: // shr
			res = a >> (b & 63)
		case 0x27: // xor
			res = a ^ b
		case 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e: // eq ge gt le lt ne (signed)
			x, y := int64(a), int64(b)
			var c bool
			switch op {
			case 0x29:
				c = x == y
			case 0x2a:
				c = x >= y
			case 0x2b:
				c = x > y
			case 0x2c:
				c = x <= y
			case 0x2d:
				c = x < y
			case 0x2e:
				c = x != y
			}
			if c {
				res = 1
			}
		default:
			return 0, EndBadMemory
		}
		n--
		st[n-1] = res
	}
	if n < 1 || r.Bad {
		return 0, EndBadMemory
	}
	return st[n-1], EndComplete
}
