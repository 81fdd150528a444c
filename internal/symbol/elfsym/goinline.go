package elfsym

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// GoFrame is one frame of a Go inline chain from .gopclntab.
type GoFrame struct {
	Func    string
	File    string
	Line    int
	Inlined bool // inlined into the next frame
}

// goInline decodes the runtime's inline tree, which debug/gosym does not
// expose. It supports the pclntab of Go 1.20 and later and needs the
// link-time addresses stored in the module data (the Go linker writes them
// for position-independent executables too).
type goInline struct {
	bo        binary.ByteOrder
	ptr       int
	quantum   uint64
	textStart uint64
	nfunc     int
	funcnames []byte
	pctab     []byte
	pclntable []byte // functab followed by _func records
	gofunc    []byte // memory at moduledata.gofunc
}

const (
	go120Magic         = 0xfffffff1
	pcdataInlTreeIndex = 2
	funcdataInlTree    = 3
	inlinedCallSize    = 16
	moduledataGofunc   = 40 // index of moduledata.gofunc in pointer-sized words
	moduledataText     = 22 // index of moduledata.text
)

// newGoInline sets up inline decoding; it returns nil when the layout is
// not recognised.
func newGoInline(f *elf.File, pcln []byte, pclnAddr, text uint64) *goInline {
	if len(pcln) < 8+8*8 || f.ByteOrder.Uint32(pcln) != go120Magic {
		return nil
	}
	bo := f.ByteOrder
	ptr := int(pcln[7])
	if ptr != 8 && ptr != 4 {
		return nil
	}
	word := func(b []byte, i int) uint64 {
		if ptr == 8 {
			return bo.Uint64(b[i*8:])
		}
		return uint64(bo.Uint32(b[i*4:]))
	}
	hdr := pcln[8:]
	// Newer toolchains leave the header's text start zero; the module
	// data's text field (checked below) then equals the .text address.
	g := &goInline{bo: bo, ptr: ptr, quantum: uint64(pcln[6]), textStart: word(hdr, 2)}
	if g.textStart == 0 {
		g.textStart = text
	}
	nfunc := word(hdr, 0)
	off := func(i int) []byte {
		o := word(hdr, i)
		if o >= uint64(len(pcln)) {
			return nil
		}
		return pcln[o:]
	}
	g.funcnames, g.pctab, g.pclntable = off(3), off(6), off(7)
	if g.funcnames == nil || g.pctab == nil || g.pclntable == nil || nfunc == 0 ||
		nfunc > uint64(len(g.pclntable))/8 || g.quantum == 0 {
		return nil
	}
	g.nfunc = int(nfunc)

	// Find the module data: it starts with a pointer to the pclntab
	// header followed by the funcnametab slice.
	nameAddr := pclnAddr + word(hdr, 3)
	for _, s := range f.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_WRITE == 0 || s.Size > MaxSectionSize {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		for i := 0; i+(moduledataGofunc+1)*ptr <= len(data); i += ptr {
			md := data[i:]
			if word(md, 0) != pclnAddr || word(md, 1) != nameAddr || word(md, moduledataText) != g.textStart {
				continue
			}
			g.gofunc = readAt(f, word(md, moduledataGofunc), pcln, pclnAddr)
			if g.gofunc == nil {
				return nil
			}
			return g
		}
	}
	return nil
}

// readAt returns the bytes of the allocated section from addr onwards.
func readAt(f *elf.File, addr uint64, pcln []byte, pclnAddr uint64) []byte {
	if addr >= pclnAddr && addr-pclnAddr < uint64(len(pcln)) {
		return pcln[addr-pclnAddr:]
	}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Type == elf.SHT_NOBITS || addr < s.Addr || addr-s.Addr >= s.Size || s.Size > MaxPclntabSize {
			continue
		}
		data, err := s.Data()
		if err != nil || addr-s.Addr >= uint64(len(data)) {
			return nil
		}
		return data[addr-s.Addr:]
	}
	return nil
}

func (g *goInline) u32(b []byte, off uint64) (uint32, bool) {
	if off > uint64(len(b)) || uint64(len(b))-off < 4 {
		return 0, false
	}
	return g.bo.Uint32(b[off:]), true
}

// funcAt returns the _func record and entry address of the function
// containing pc.
func (g *goInline) funcAt(pc uint64) ([]byte, uint64, bool) {
	if pc < g.textStart {
		return nil, 0, false
	}
	rel := pc - g.textStart
	lo, hi := 0, g.nfunc
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		e, ok := g.u32(g.pclntable, uint64(m)*8)
		if !ok {
			return nil, 0, false
		}
		if uint64(e) <= rel {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return nil, 0, false
	}
	i := uint64(lo - 1)
	entry, ok1 := g.u32(g.pclntable, i*8)
	foff, ok2 := g.u32(g.pclntable, i*8+4)
	if !ok1 || !ok2 || uint64(foff) >= uint64(len(g.pclntable)) {
		return nil, 0, false
	}
	return g.pclntable[foff:], g.textStart + uint64(entry), true
}

// pcvalue evaluates the pc-value table at off for targetpc.
func (g *goInline) pcvalue(off uint32, entry, targetpc uint64) (int32, bool) {
	if off == 0 || uint64(off) >= uint64(len(g.pctab)) {
		return -1, false
	}
	p := g.pctab[off:]
	val := int32(-1)
	pc := entry
	for first := true; ; first = false {
		uv, n := binary.Uvarint(p)
		if n <= 0 || (uv == 0 && !first) {
			return -1, false
		}
		p = p[n:]
		if uv&1 != 0 {
			uv = ^(uv >> 1)
		} else {
			uv >>= 1
		}
		pcd, n := binary.Uvarint(p)
		if n <= 0 {
			return -1, false
		}
		p = p[n:]
		val += int32(uv)
		pc += pcd * g.quantum
		if targetpc < pc {
			return val, true
		}
	}
}

func (g *goInline) name(off int32) string {
	if off < 0 || int(off) >= len(g.funcnames) {
		return ""
	}
	b := g.funcnames[off:]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// chain returns the names of the inlined functions at pc, innermost
// first, and for each the pc whose position is its call site.
func (g *goInline) chain(pc uint64) (names []string, sites []uint64, outer string) {
	fn, entry, ok := g.funcAt(pc)
	if !ok || len(fn) < 44 {
		return nil, nil, ""
	}
	nameOff := int32(g.bo.Uint32(fn[4:]))
	outer = g.name(nameOff)
	npcdata := uint64(g.bo.Uint32(fn[28:]))
	nfuncdata := uint64(fn[43])
	if npcdata <= pcdataInlTreeIndex || nfuncdata <= funcdataInlTree {
		return nil, nil, outer
	}
	idxOff, ok1 := g.u32(fn, 44+4*pcdataInlTreeIndex)
	treeOff, ok2 := g.u32(fn, 44+4*npcdata+4*funcdataInlTree)
	if !ok1 || !ok2 || treeOff == ^uint32(0) {
		return nil, nil, outer
	}
	cur := pc
	for range 64 {
		ix, ok := g.pcvalue(idxOff, entry, cur)
		if !ok || ix < 0 {
			break
		}
		rec := uint64(treeOff) + uint64(ix)*inlinedCallSize
		if rec+inlinedCallSize > uint64(len(g.gofunc)) {
			break
		}
		call := g.gofunc[rec:]
		names = append(names, g.name(int32(g.bo.Uint32(call[4:]))))
		parent := int32(g.bo.Uint32(call[8:]))
		cur = entry + uint64(int64(parent))
		sites = append(sites, cur)
	}
	return names, sites, outer
}

// GoFrames returns the Go inline chain for pc, innermost first, from
// .gopclntab: inlined functions followed by the enclosing function. ok is
// false when the image has no usable Go line table.
func (im *Image) GoFrames(pc uint64) (frames []GoFrame, ok bool) {
	if im.gotb == nil {
		return nil, false
	}
	defer func() {
		if recover() != nil {
			frames, ok = nil, false
		}
	}()
	fn, file, line, ok := im.GoLine(pc)
	if !ok {
		return nil, false
	}
	if im.goinl == nil {
		return []GoFrame{{Func: fn, File: file, Line: line}}, true
	}
	names, sites, outer := im.goinl.chain(pc)
	if outer == "" {
		outer = fn
	}
	for i, n := range names {
		frames = append(frames, GoFrame{Func: n, File: file, Line: line, Inlined: true})
		file, line = "", 0
		if f, l, fnc := im.gotb.PCToLine(sites[i]); fnc != nil {
			file, line = f, l
		}
	}
	return append(frames, GoFrame{Func: outer, File: file, Line: line}), true
}
