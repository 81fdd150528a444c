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

	"github.com/stax-profiler/stax/internal/dwarfenc"
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
		r := reader{dwarfenc.Reader{B: data[:end], Off: body + 4}}
		start := r.Ptr(enc, secAddr, ptrSize)
		n := r.Ptr(enc&0x0f, 0, ptrSize)
		if r.Bad || n == 0 || n > maxRange || start == 0 || start+n < start {
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
	r := reader{dwarfenc.Reader{B: d[:end], Off: pos + 8}}
	version := r.U8()
	i := bytes.IndexByte(d[r.Off:end], 0)
	if i < 0 {
		return 0, false
	}
	aug := d[r.Off : r.Off+i]
	r.Off += i + 1
	if version >= 4 {
		r.U8() // address size
		r.U8() // segment selector size
	}
	r.Uleb() // code alignment
	r.Sleb() // data alignment
	if version == 1 {
		r.U8()
	} else {
		r.Uleb() // return address register
	}
	enc := byte(dwarfenc.PEAbsptr)
	switch {
	case len(aug) > 0 && aug[0] == 'z':
		n := r.Uleb()
		if r.Bad || n > uint64(end-r.Off) {
			return 0, false
		}
		for _, ch := range aug[1:] {
			switch ch {
			case 'R':
				enc = r.U8()
				return enc, !r.Bad && enc != dwarfenc.PEOmit
			case 'P':
				r.Ptr(r.U8()&0x0f, 0, p.ptrSize) // the personality routine: skipped
			case 'L':
				r.U8()
			case 'S', 'B':
			default:
				return 0, false // an unknown letter: where 'R' would be is unknown
			}
		}
	case string(aug) == "eh":
		r.Fixed(p.ptrSize)
	case len(aug) > 0:
		return 0, false
	}
	return enc, !r.Bad
}

// reader reads the values of call-frame information (see dwarfenc).
type reader struct{ dwarfenc.Reader }

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
