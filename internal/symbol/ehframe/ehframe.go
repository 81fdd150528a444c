// Package ehframe reads the function ranges an ELF image's .eh_frame describes: the start
// and length of each FDE. Code no symbol names (a stripped library's static functions, the
// vdso's out-of-line helpers) is still bounded by these ranges, so stax groups its
// addresses by function. Only the CIE and FDE headers are read, never the call-frame
// instructions; damaged entries are skipped, sizes are bounded, and nothing panics.
package ehframe

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
)

// Bounds on foreign bytes.
const (
	MaxSection = 256 << 20 // largest .eh_frame read
	MaxRanges  = 4 << 20   // most FDEs kept
	maxRange   = 1 << 32   // longest function accepted
)

// Range is the code an FDE covers: [Start, End) in the image's virtual addresses.
type Range struct{ Start, End uint64 }

// ErrDamaged says an .eh_frame could not be read to its end.
var ErrDamaged = errors.New("damaged .eh_frame")

// Pointer encodings (DW_EH_PE_*).
const (
	peAbsptr = 0x00
	peUleb   = 0x01
	peUdata2 = 0x02
	peUdata4 = 0x03
	peUdata8 = 0x04
	peSleb   = 0x09
	peSdata2 = 0x0a
	peSdata4 = 0x0b
	peSdata8 = 0x0c
	pePcrel  = 0x10
	peOmit   = 0xff
)

// Parse returns the ranges of the FDEs of an .eh_frame section whose first byte is at
// address secAddr, with pointers of ptrSize bytes (8 for ELF64, 4 for ELF32), sorted by
// start. Where ranges overlap, the first by start (the longer at one start) is kept. An
// FDE that cannot be read (an unknown pointer encoding, a bad CIE) is left out; an entry
// whose length runs past the section ends the parse, and the ranges found before it are
// returned with ErrDamaged.
func Parse(data []byte, secAddr uint64, ptrSize int) ([]Range, error) {
	if len(data) > MaxSection {
		return nil, fmt.Errorf("read .eh_frame: %d bytes is over the %d limit", len(data), MaxSection)
	}
	if ptrSize != 4 {
		ptrSize = 8
	}
	p := parser{data: data, secAddr: secAddr, ptrSize: ptrSize, cies: map[int]int{}}
	var out []Range
	var err error
	for off := 0; off+4 <= len(data); {
		length := uint64(binary.LittleEndian.Uint32(data[off:]))
		body := off + 4
		if length == 0 {
			break // the terminator
		}
		if length == 0xffffffff { // 64-bit DWARF: no compiler emits it in .eh_frame; skip it
			if body+8 > len(data) {
				err = ErrDamaged
				break
			}
			length = binary.LittleEndian.Uint64(data[body:])
			body += 8
			if length > uint64(len(data)-body) {
				err = ErrDamaged
				break
			}
			off = body + int(length)
			continue
		}
		if length > uint64(len(data)-body) {
			err = ErrDamaged
			break
		}
		end := body + int(length)
		off = end
		if length < 4 {
			continue
		}
		id := binary.LittleEndian.Uint32(data[body:])
		if id == 0 {
			continue // a CIE: read when an FDE names it
		}
		ciePos := body - int(id)
		if ciePos < 0 {
			continue
		}
		enc, ok := p.cie(ciePos)
		if !ok {
			continue
		}
		r := reader{b: data[:end], off: body + 4}
		start := r.ptr(enc, secAddr, ptrSize)
		n := r.ptr(enc&0x0f, 0, ptrSize)
		if r.bad || n == 0 || n > maxRange || start == 0 || start+n < start {
			continue
		}
		if len(out) >= MaxRanges {
			break
		}
		out = append(out, Range{Start: start, End: start + n})
	}
	return normalize(out), err
}

// normalize sorts ranges by start and drops those that overlap one kept before.
func normalize(rs []Range) []Range {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Start != rs[j].Start {
			return rs[i].Start < rs[j].Start
		}
		return rs[i].End > rs[j].End
	})
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r.Start < out[n-1].End {
			continue
		}
		out = append(out, r)
	}
	return out
}

type parser struct {
	data    []byte
	secAddr uint64
	ptrSize int
	cies    map[int]int // CIE position -> FDE pointer encoding, -1 if unreadable
}

// cie returns the FDE pointer encoding of the CIE whose length field is at pos.
func (p *parser) cie(pos int) (byte, bool) {
	if enc, ok := p.cies[pos]; ok {
		return byte(enc), enc >= 0
	}
	enc, ok := p.readCIE(pos)
	if !ok {
		p.cies[pos] = -1
		return 0, false
	}
	p.cies[pos] = int(enc)
	return enc, true
}

func (p *parser) readCIE(pos int) (byte, bool) {
	d := p.data
	if pos < 0 || pos+8 > len(d) {
		return 0, false
	}
	length := uint64(binary.LittleEndian.Uint32(d[pos:]))
	if length < 4 || length == 0xffffffff || length > uint64(len(d)-pos-4) {
		return 0, false
	}
	end := pos + 4 + int(length)
	if binary.LittleEndian.Uint32(d[pos+4:]) != 0 {
		return 0, false
	}
	r := reader{b: d[:end], off: pos + 8}
	version := r.u8()
	i := bytes.IndexByte(d[r.off:end], 0)
	if i < 0 {
		return 0, false
	}
	aug := d[r.off : r.off+i]
	r.off += i + 1
	if version >= 4 {
		r.u8() // address size
		r.u8() // segment selector size
	}
	r.uleb() // code alignment
	r.sleb() // data alignment
	if version == 1 {
		r.u8()
	} else {
		r.uleb() // return address register
	}
	enc := byte(peAbsptr)
	switch {
	case len(aug) > 0 && aug[0] == 'z':
		n := r.uleb()
		if r.bad || n > uint64(end-r.off) {
			return 0, false
		}
		for _, ch := range aug[1:] {
			switch ch {
			case 'R':
				enc = r.u8()
				return enc, !r.bad && enc != peOmit
			case 'P':
				r.ptr(r.u8()&0x0f, 0, p.ptrSize) // the personality routine: skipped
			case 'L':
				r.u8()
			case 'S', 'B':
			default:
				return 0, false // an unknown letter: where 'R' would be is unknown
			}
		}
	case string(aug) == "eh":
		r.fixed(p.ptrSize)
	case len(aug) > 0:
		return 0, false
	}
	return enc, !r.bad
}

// reader reads little-endian DWARF values, marking itself bad rather than reading past b.
type reader struct {
	b   []byte
	off int
	bad bool
}

func (r *reader) u8() byte {
	if r.off < 0 || r.off >= len(r.b) {
		r.bad = true
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *reader) fixed(n int) uint64 {
	if r.off < 0 || n > len(r.b)-r.off {
		r.bad = true
		r.off = len(r.b)
		return 0
	}
	var v uint64
	switch n {
	case 2:
		v = uint64(binary.LittleEndian.Uint16(r.b[r.off:]))
	case 4:
		v = uint64(binary.LittleEndian.Uint32(r.b[r.off:]))
	case 8:
		v = binary.LittleEndian.Uint64(r.b[r.off:])
	}
	r.off += n
	return v
}

func (r *reader) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := r.u8()
		if r.bad {
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

func (r *reader) sleb() int64 {
	var v int64
	shift := uint(0)
	for {
		c := r.u8()
		if r.bad {
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

// ptr reads a pointer encoded as enc; base is the address of r.b[0] for pc-relative ones.
// Encodings an FDE's range never uses on Linux (relative to text, data or a function,
// indirect) mark the reader bad.
func (r *reader) ptr(enc byte, base uint64, ptrSize int) uint64 {
	at := base + uint64(r.off)
	var v uint64
	switch enc & 0x0f {
	case peAbsptr:
		v = r.fixed(ptrSize)
	case peUleb:
		v = r.uleb()
	case peSleb:
		v = uint64(r.sleb())
	case peUdata2:
		v = r.fixed(2)
	case peSdata2:
		v = uint64(int64(int16(r.fixed(2))))
	case peUdata4:
		v = r.fixed(4)
	case peSdata4:
		v = uint64(int64(int32(r.fixed(4))))
	case peUdata8, peSdata8:
		v = r.fixed(8)
	default:
		r.bad = true
		return 0
	}
	switch enc & 0xf0 {
	case 0:
	case pePcrel:
		v += at
	default:
		r.bad = true
	}
	if ptrSize == 4 {
		v &= 0xffffffff
	}
	return v
}

// Read reads the FDE ranges of the ELF image r holds, as Load does.
func Read(r io.ReaderAt) (rs []Range, err error) {
	defer func() {
		if p := recover(); p != nil {
			rs, err = nil, fmt.Errorf("read .eh_frame: malformed ELF: %v", p)
		}
	}()
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("read .eh_frame: %w", err)
	}
	return Load(f)
}

// Load reads the FDE ranges of an ELF file's .eh_frame; none, without error, when it has
// no .eh_frame.
func Load(f *elf.File) (rs []Range, err error) {
	defer func() {
		if p := recover(); p != nil {
			rs, err = nil, fmt.Errorf("read .eh_frame: malformed ELF: %v", p)
		}
	}()
	s := f.Section(".eh_frame")
	if f.ByteOrder != binary.LittleEndian {
		return nil, fmt.Errorf("read .eh_frame: big-endian images are not supported")
	}
	if s == nil || s.Type == elf.SHT_NOBITS || s.Size == 0 {
		return nil, nil
	}
	if s.Size > MaxSection {
		return nil, fmt.Errorf("read .eh_frame: %d bytes is over the %d limit", s.Size, MaxSection)
	}
	data, err := io.ReadAll(io.LimitReader(s.Open(), MaxSection))
	if err != nil {
		return nil, fmt.Errorf("read .eh_frame: %w", err)
	}
	ptrSize := 8
	if f.Class == elf.ELFCLASS32 {
		ptrSize = 4
	}
	return Parse(data, s.Addr, ptrSize)
}

// Find returns the range of rs (sorted, as Parse returns them) holding addr.
func Find(rs []Range, addr uint64) (Range, bool) {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Start > addr })
	if i > 0 && addr < rs[i-1].End {
		return rs[i-1], true
	}
	return Range{}, false
}
