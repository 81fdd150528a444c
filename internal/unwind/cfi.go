package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/stax-profiler/stax/internal/dwarfenc"
)

// Bounds on foreign CFI bytes.
const (
	maxCFISection  = 256 << 20 // bytes of .eh_frame or .debug_frame
	maxFDEs        = 4 << 20
	maxCFIOps      = 4096 // instructions evaluated per row
	maxRememberDep = 16
	maxExprOps     = 64
	maxExprStack   = 32
)

// DWARF register numbers on x86-64.
const (
	regRBP = 6
	regRSP = 7
	regRA  = 16
)

// Table is the call-frame information of one image (or one JIT code blob), with FDEs
// sorted by address. Addresses are the image's link-time virtual addresses. A Table is
// immutable after Parse and safe to share.
type Table struct {
	data     []byte
	secAddr  uint64 // address of data[0], for pc-relative pointers
	debug    bool   // .debug_frame layout
	cies     []cie
	fdes     []fde
	loads    []segment
	BuildID  string
	Complete bool // every FDE parsed (false if parsing stopped at damage)
	// [entry, entryEnd) is the code at the image's entry point when no FDE describes it
	// (setEntry); entryEnd is 0 when there is none.
	entry, entryEnd uint64
	// tops are the Go runtime's outermost functions (setGoTops): a walk ends at them.
	tops []span
}

type span struct{ start, end uint64 }

// isTop reports whether the image address pc lies in one of t's outermost functions.
func (t *Table) isTop(pc uint64) bool {
	for _, s := range t.tops {
		if pc >= s.start && pc < s.end {
			return true
		}
	}
	return false
}

type segment struct{ off, vaddr, filesz uint64 }

type cie struct {
	codeAlign uint64
	dataAlign int64
	raReg     uint64
	ins, end  uint32 // initial instructions
	fdeEnc    byte
	signal    bool
	hasAug    bool
}

type fde struct {
	start, end uint64
	cie        int32
	ins, insE  uint32
}

var errCFI = errors.New("malformed call frame information")

// cfiReader reads the values of call-frame information (see dwarfenc).
type cfiReader struct{ dwarfenc.Reader }

// ParseEHFrame parses an .eh_frame section whose first byte is at address secAddr.
func ParseEHFrame(data []byte, secAddr uint64) (*Table, error) {
	return parse(data, secAddr, false)
}

// ParseDebugFrame parses a .debug_frame section.
func ParseDebugFrame(data []byte) (*Table, error) {
	return parse(data, 0, true)
}

func parse(data []byte, secAddr uint64, debug bool) (*Table, error) {
	if len(data) > maxCFISection {
		return nil, fmt.Errorf("parse call frame information: section of %d bytes is over the %d limit", len(data), maxCFISection)
	}
	t := &Table{data: data, secAddr: secAddr, debug: debug, Complete: true}
	cieAt := map[int]int32{}
	off := 0
	for off+4 <= len(data) {
		start := off
		length := uint64(binary.LittleEndian.Uint32(data[off:]))
		off += 4
		if length == 0 {
			if debug {
				continue
			}
			break // .eh_frame terminator
		}
		if length == 0xffffffff {
			t.Complete = false
			break // 64-bit DWARF CFI is not produced on x86-64 Linux
		}
		if length > uint64(len(data)-off) {
			t.Complete = false
			break
		}
		body := off
		end := off + int(length)
		off = end
		if end-body < 4 {
			t.Complete = false
			continue
		}
		id := binary.LittleEndian.Uint32(data[body:])
		isCIE := id == 0
		if debug {
			isCIE = id == 0xffffffff
		}
		if isCIE {
			c, ok := parseCIE(data[:end], body+4, secAddr, debug)
			if !ok {
				t.Complete = false
				continue
			}
			cieAt[start] = int32(len(t.cies))
			t.cies = append(t.cies, c)
			continue
		}
		if len(t.fdes) >= maxFDEs {
			t.Complete = false
			break
		}
		if !t.addFDE(data, body, end, id, cieAt) {
			t.Complete = false
		}
	}
	sort.Slice(t.fdes, func(i, j int) bool { return t.fdes[i].start < t.fdes[j].start })
	if len(t.cies) == 0 && len(data) > 0 && !t.Complete {
		return nil, fmt.Errorf("parse call frame information: %w", errCFI)
	}
	return t, nil
}

// addFDE parses the FDE whose body (after its length) is data[body:end], with CIE pointer
// id, and adds it to t; cieAt maps the CIEs parsed so far by offset.
func (t *Table) addFDE(data []byte, body, end int, id uint32, cieAt map[int]int32) bool {
	var ciePos int
	if t.debug {
		ciePos = int(id)
	} else {
		ciePos = body - int(id)
	}
	ci, ok := cieAt[ciePos]
	if !ok {
		// A CIE after its FDE is legal but rare; parse it in place.
		c, ok2 := t.cieAtOffset(ciePos)
		if !ok2 {
			return false
		}
		ci = int32(len(t.cies))
		cieAt[ciePos] = ci
		t.cies = append(t.cies, c)
	}
	c := &t.cies[ci]
	r := cfiReader{dwarfenc.Reader{B: data[:end], Off: body + 4}}
	enc := c.fdeEnc
	if t.debug {
		enc = dwarfenc.PEUdata8
	}
	pcStart := r.Ptr(enc, t.secAddr, 8)
	pcLen := r.Ptr(enc&0x0f, 0, 8)
	if c.hasAug {
		n := r.Uleb()
		if n > uint64(end-r.Off) {
			r.Bad = true
		} else {
			r.Off += int(n)
		}
	}
	if r.Bad || pcStart+pcLen < pcStart {
		return false
	}
	t.fdes = append(t.fdes, fde{start: pcStart, end: pcStart + pcLen, cie: ci, ins: uint32(r.Off), insE: uint32(end)})
	return true
}

func (t *Table) cieAtOffset(pos int) (cie, bool) {
	if pos < 0 || pos+8 > len(t.data) {
		return cie{}, false
	}
	length := int(binary.LittleEndian.Uint32(t.data[pos:]))
	if length <= 4 || length > len(t.data)-pos-4 {
		return cie{}, false
	}
	id := binary.LittleEndian.Uint32(t.data[pos+4:])
	if (t.debug && id != 0xffffffff) || (!t.debug && id != 0) {
		return cie{}, false
	}
	return parseCIE(t.data[:pos+4+length], pos+8, t.secAddr, t.debug)
}

func parseCIE(b []byte, off int, secAddr uint64, debug bool) (cie, bool) {
	r := cfiReader{dwarfenc.Reader{B: b, Off: off}}
	version := r.U8()
	augStart := r.Off
	for r.Off < len(b) && b[r.Off] != 0 {
		r.Off++
	}
	aug := string(b[augStart:min(r.Off, len(b))])
	r.Off++
	c := cie{fdeEnc: dwarfenc.PEAbsptr}
	if version >= 4 {
		r.U8() // address size
		r.U8() // segment selector size
	}
	c.codeAlign = r.Uleb()
	c.dataAlign = r.Sleb()
	if version == 1 {
		c.raReg = uint64(r.U8())
	} else {
		c.raReg = r.Uleb()
	}
	if len(aug) > 0 && aug[0] == 'z' {
		c.hasAug = true
		n := r.Uleb()
		augEnd := r.Off + int(n)
		if n > uint64(len(b)) || augEnd > len(b) {
			return cie{}, false
		}
		for _, ch := range aug[1:] {
			switch ch {
			case 'R':
				c.fdeEnc = r.U8()
			case 'P':
				e := r.U8()
				r.Ptr(e&0x7f, secAddr, 8) // personality: skip (indirect bit cleared)
			case 'L':
				r.U8()
			case 'S':
				c.signal = true
			case 'B':
			default:
				r.Off = augEnd // unknown letters: the length lets us skip them
			}
		}
		r.Off = augEnd
	} else if aug == "eh" {
		r.Fixed(8)
	} else if aug != "" {
		return cie{}, false
	}
	if r.Bad || r.Off > len(b) {
		return cie{}, false
	}
	c.ins, c.end = uint32(r.Off), uint32(len(b))
	_ = debug
	return c, true
}

// find returns the FDE covering the link-time address pc.
func (t *Table) find(pc uint64) (*fde, bool) {
	i := sort.Search(len(t.fdes), func(i int) bool { return t.fdes[i].end > pc })
	if i < len(t.fdes) && t.fdes[i].start <= pc && pc < t.fdes[i].end {
		return &t.fdes[i], true
	}
	return nil, false
}

// NumFDEs is the number of functions the table describes.
func (t *Table) NumFDEs() int { return len(t.fdes) }
