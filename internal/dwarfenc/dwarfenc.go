// Package dwarfenc reads the values DWARF call-frame information is made of: fixed-size
// little-endian integers, LEB128 numbers and DW_EH_PE-encoded pointers. A Reader never
// reads past its bytes: it marks itself bad instead, and its reads then return zero.
// Both the unwinder's CFI parser and the function-range reader of .eh_frame use it.
package dwarfenc

import "encoding/binary"

// Pointer encodings (DW_EH_PE_*): the low four bits give the format, the next three what the
// value is relative to.
const (
	PEAbsptr  = 0x00
	PEUleb    = 0x01
	PEUdata2  = 0x02
	PEUdata4  = 0x03
	PEUdata8  = 0x04
	PESleb    = 0x09
	PESdata2  = 0x0a
	PESdata4  = 0x0b
	PESdata8  = 0x0c
	PEPcrel   = 0x10
	PEDatarel = 0x30
	PEOmit    = 0xff
)

// Reader reads values from B at Off.
type Reader struct {
	B   []byte
	Off int
	Bad bool // a read went past B, or met an encoding it does not know
}

// U8 reads a byte.
func (r *Reader) U8() byte {
	if r.Off < 0 || r.Off >= len(r.B) {
		r.Bad = true
		return 0
	}
	v := r.B[r.Off]
	r.Off++
	return v
}

// Fixed reads an n-byte little-endian unsigned integer (n is 1, 2, 4 or 8).
func (r *Reader) Fixed(n int) uint64 {
	if n < 0 || r.Off < 0 || r.Off+n > len(r.B) || r.Off+n < r.Off {
		r.Bad = true
		r.Off = len(r.B)
		return 0
	}
	var v uint64
	switch n {
	case 1:
		v = uint64(r.B[r.Off])
	case 2:
		v = uint64(binary.LittleEndian.Uint16(r.B[r.Off:]))
	case 4:
		v = uint64(binary.LittleEndian.Uint32(r.B[r.Off:]))
	case 8:
		v = binary.LittleEndian.Uint64(r.B[r.Off:])
	}
	r.Off += n
	return v
}

// Uleb reads an unsigned LEB128 number (bits past the 64th are dropped).
func (r *Reader) Uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := r.U8()
		if r.Bad {
			return 0
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		if c&0x80 == 0 {
			return v
		}
	}
}

// Sleb reads a signed LEB128 number.
func (r *Reader) Sleb() int64 {
	var v int64
	var shift uint
	for {
		c := r.U8()
		if r.Bad {
			return 0
		}
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

// Ptr reads a pointer encoded as enc, of ptrSize bytes when absolute (8 for ELF64, 4 for
// ELF32); base is the address of B[0], for pc-relative pointers. DW_EH_PE_omit reads
// nothing and gives 0. Pointers relative to text, data or a function, and indirect ones,
// never occur in the call-frame information of Linux images: they mark the reader bad.
func (r *Reader) Ptr(enc byte, base uint64, ptrSize int) uint64 {
	if enc == PEOmit {
		return 0
	}
	at := base + uint64(r.Off)
	var v uint64
	switch enc & 0x0f {
	case PEAbsptr:
		v = r.Fixed(ptrSize)
	case PEUleb:
		v = r.Uleb()
	case PESleb:
		v = uint64(r.Sleb())
	case PEUdata2:
		v = r.Fixed(2)
	case PESdata2:
		v = uint64(int64(int16(r.Fixed(2))))
	case PEUdata4:
		v = r.Fixed(4)
	case PESdata4:
		v = uint64(int64(int32(r.Fixed(4))))
	case PEUdata8, PESdata8:
		v = r.Fixed(8)
	default:
		r.Bad = true
		return 0
	}
	switch enc & 0xf0 {
	case 0:
	case PEPcrel:
		v += at
	default:
		r.Bad = true
	}
	if ptrSize == 4 {
		v &= 0xffffffff
	}
	return v
}
