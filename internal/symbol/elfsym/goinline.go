package elfsym

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// GoFrame is one frame of a Go inline chain from .gopclntab.
type GoFrame struct {
	Func    string
	File    string
	Line    int
	Inlined bool // inlined into the next frame
}

// goInline decodes the runtime's inline tree, which debug/gosym does not
// expose. It reads the runtime's own structures (runtime._func,
// runtime.inlinedCall, runtime.moduledata) at offsets known for the Go
// versions in goLayoutVersions, and needs the link-time addresses stored in
// the module data (the Go linker writes them for position-independent
// executables too). A binary of another version is read only when its DWARF
// type info confirms every offset used; otherwise its Go frames come without
// inline functions, and the image's GoInlineNote says why.
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

	// Offsets in runtime._func (its fixed part is funcSize bytes; the pcdata
	// and funcdata offsets follow) and runtime.inlinedCall.
	funcNameOff       = 4
	funcNpcdata       = 28
	funcNfuncdata     = 43
	funcSize          = 44
	inlCallNameOff    = 4
	inlCallParentPc   = 8
	goLayoutFirst     = 20 // Go 1.20 ...
	goLayoutLast      = 26 // ... to Go 1.26 share the layout above
	maxLayoutEntries  = 1 << 22
	goLayoutVersions  = "go1.20 to go1.26"
	noInlineFallback  = "Go frames without inline functions"
	dwarfLayoutNeeded = "runtime._func, runtime.inlinedCall and runtime.moduledata"
)

// newGoInline sets up inline decoding. It returns nil and a note saying why
// when the layout is not recognised or cannot be trusted.
func newGoInline(f *elf.File, pcln []byte, pclnAddr, text uint64) (*goInline, string) {
	if len(pcln) < 8+8*8 {
		return nil, "Go line table too short for an inline tree; " + noInlineFallback
	}
	if m := f.ByteOrder.Uint32(pcln); m != go120Magic {
		return nil, fmt.Sprintf("Go line table of a Go before 1.20 (magic %#x); %s", m, noInlineFallback)
	}
	bo := f.ByteOrder
	ptr := int(pcln[7])
	if ptr != 8 && ptr != 4 {
		return nil, fmt.Sprintf("Go line table with %d-byte pointers; %s", ptr, noInlineFallback)
	}
	if note := checkGoLayout(f, ptr); note != "" {
		return nil, note
	}
	g, note := findGoInline(f, bo, ptr, pcln, pclnAddr, text)
	if g == nil {
		return nil, note + "; " + noInlineFallback
	}
	return g, ""
}

// findGoInline reads the tables of the inline tree.
func findGoInline(f *elf.File, bo binary.ByteOrder, ptr int, pcln []byte, pclnAddr, text uint64) (*goInline, string) {
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
		return nil, "Go line table header out of bounds"
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
				return nil, "Go module data's gofunc is not in the file"
			}
			return g, ""
		}
	}
	return nil, "Go module data not found"
}

// checkGoLayout returns "" when the offsets goInline uses are the binary's: it was built
// by a Go whose runtime layout is known, or its DWARF type info says so. Otherwise it
// returns a note saying why inline functions are left out.
func checkGoLayout(f *elf.File, ptr int) string {
	version := "an unknown Go version"
	if v := goVersion(f); v != "" {
		if knownGoLayout(v) {
			return ""
		}
		version = strconv.Quote(v)
	}
	err := dwarfGoLayout(f, ptr)
	if err == nil {
		return ""
	}
	return fmt.Sprintf("built with %s, not %s whose runtime layout stax knows, and %v; %s",
		version, goLayoutVersions, err, noInlineFallback)
}

// buildInfoMagic starts the .go.buildinfo section.
const buildInfoMagic = "\xff Go buildinf:"

// maxBuildInfoRead bounds what is read of .go.buildinfo: the header and the version.
const maxBuildInfoRead = 4096

// goVersion returns the Go version the binary was built with, as its .go.buildinfo section
// says (the form of Go 1.18 and later: the version inline after a 32-byte header); "" when
// it does not say.
func goVersion(f *elf.File) string {
	s := f.Section(".go.buildinfo")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return ""
	}
	b := make([]byte, min(s.Size, maxBuildInfoRead))
	n, _ := s.ReadAt(b, 0)
	return parseBuildInfoVersion(b[:n])
}

// parseBuildInfoVersion reads the version from the start of a .go.buildinfo section.
func parseBuildInfoVersion(b []byte) string {
	const hdr = 32
	if len(b) < hdr || string(b[:len(buildInfoMagic)]) != buildInfoMagic || b[len(buildInfoMagic)+1]&2 == 0 {
		return ""
	}
	n, k := binary.Uvarint(b[hdr:])
	if k <= 0 || n == 0 || n > 256 || n > uint64(len(b)-hdr-k) {
		return ""
	}
	return string(b[hdr+k : hdr+k+int(n)])
}

// knownGoLayout reports whether Go version v (runtime.Version's form: go1.22.5,
// go1.23rc1) has the layout goInline reads. Development versions are not known.
func knownGoLayout(v string) bool {
	rest, ok := strings.CutPrefix(v, "go1.")
	if !ok {
		return false
	}
	n := 0
	for n < len(rest) && n < 4 && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	minor, err := strconv.Atoi(rest[:n])
	if err != nil {
		return false
	}
	// What may follow the minor version: a patch (.5), a pre-release (rc1, beta2), or the
	// experiments of a build (" X:..."), nothing else.
	if tail := rest[n:]; tail != "" && tail[0] != '.' && tail[0] != ' ' &&
		!strings.HasPrefix(tail, "rc") && !strings.HasPrefix(tail, "beta") {
		return false
	}
	return minor >= goLayoutFirst && minor <= goLayoutLast
}

// errNoTypeInfo says a binary has no DWARF type info for the runtime's structures.
var errNoTypeInfo = errors.New("it has no DWARF type info for " + dwarfLayoutNeeded + " to check it against")

// dwarfGoLayout checks the offsets goInline uses against the binary's DWARF description of
// the runtime's structures; nil when every one is as expected.
func dwarfGoLayout(f *elf.File, ptr int) error {
	want := map[string]map[string]int64{
		"runtime._func":       {"nameOff": funcNameOff, "npcdata": funcNpcdata, "nfuncdata": funcNfuncdata},
		"runtime.inlinedCall": {"nameOff": inlCallNameOff, "parentPc": inlCallParentPc},
		"runtime.moduledata": {"pcHeader": 0, "funcnametab": int64(ptr), "text": int64(moduledataText * ptr),
			"gofunc": int64(moduledataGofunc * ptr)},
	}
	wantSize := map[string]int64{"runtime._func": funcSize, "runtime.inlinedCall": inlinedCallSize}
	return dwarfLayout(f, want, wantSize)
}

// dwarfLayout checks, in f's DWARF, the field offsets want gives per structure and the
// sizes wantSize gives; nil when each is as given.
func dwarfLayout(f *elf.File, want map[string]map[string]int64, wantSize map[string]int64) (err error) {
	defer func() {
		if recover() != nil {
			err = errNoTypeInfo // a damaged DWARF section
		}
	}()
	d, derr := f.DWARF()
	if derr != nil {
		return errNoTypeInfo
	}
	rd := d.Reader()
	var cur string
	got := map[string]map[string]int64{}
	for n := 0; n < maxLayoutEntries && len(want) > len(got) || cur != ""; n++ {
		e, rerr := rd.Next()
		if rerr != nil || e == nil || n >= maxLayoutEntries {
			break
		}
		switch {
		case e.Tag == 0:
			cur = "" // the end of a structure's members
		case e.Tag == dwarf.TagStructType:
			name, _ := e.Val(dwarf.AttrName).(string)
			if _, ok := want[name]; ok && got[name] == nil && e.Children {
				cur = name
				got[name] = map[string]int64{}
				if sz, ok := wantSize[name]; ok {
					if bs, ok := e.Val(dwarf.AttrByteSize).(int64); !ok || bs != sz {
						return fmt.Errorf("its DWARF gives %s %d bytes, not %d", name, bs, sz)
					}
				}
				continue
			}
			if e.Children {
				rd.SkipChildren()
			}
		case e.Tag == dwarf.TagMember && cur != "":
			name, _ := e.Val(dwarf.AttrName).(string)
			if off, ok := e.Val(dwarf.AttrDataMemberLoc).(int64); ok {
				got[cur][name] = off
			}
		case e.Tag == dwarf.TagCompileUnit:
			// its children are the types looked for
		case e.Children:
			rd.SkipChildren()
		}
	}
	for s, fields := range want {
		if got[s] == nil {
			return errNoTypeInfo
		}
		for field, off := range fields {
			g, ok := got[s][field]
			if !ok {
				return fmt.Errorf("its DWARF has no %s.%s", s, field)
			}
			if g != off {
				return fmt.Errorf("its DWARF puts %s.%s at %d, not %d", s, field, g, off)
			}
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

// funcAt returns the _func record, entry address and end of the function
// containing pc.
func (g *goInline) funcAt(pc uint64) ([]byte, uint64, uint64, bool) {
	if pc < g.textStart {
		return nil, 0, 0, false
	}
	rel := pc - g.textStart
	lo, hi := 0, g.nfunc
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		e, ok := g.u32(g.pclntable, uint64(m)*8)
		if !ok {
			return nil, 0, 0, false
		}
		if uint64(e) <= rel {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return nil, 0, 0, false
	}
	i := uint64(lo - 1)
	entry, ok1 := g.u32(g.pclntable, i*8)
	foff, ok2 := g.u32(g.pclntable, i*8+4)
	end, ok3 := g.u32(g.pclntable, i*8+8) // the next function's entry, or the table's end
	if !ok1 || !ok2 || !ok3 || end <= entry || uint64(foff) >= uint64(len(g.pclntable)) {
		return nil, 0, 0, false
	}
	return g.pclntable[foff:], g.textStart + uint64(entry), g.textStart + uint64(end), true
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
// first, and for each the pc whose position is its call site. An entry of
// the tree that cannot be right (a name outside the name table, a call site
// outside the function) leaves the whole chain out.
func (g *goInline) chain(pc uint64) (names []string, sites []uint64, outer string) {
	fn, entry, end, ok := g.funcAt(pc)
	if !ok || len(fn) < funcSize {
		return nil, nil, ""
	}
	nameOff := int32(g.bo.Uint32(fn[funcNameOff:]))
	outer = g.name(nameOff)
	npcdata := uint64(g.bo.Uint32(fn[funcNpcdata:]))
	nfuncdata := uint64(fn[funcNfuncdata])
	if npcdata <= pcdataInlTreeIndex || nfuncdata <= funcdataInlTree {
		return nil, nil, outer
	}
	idxOff, ok1 := g.u32(fn, funcSize+4*pcdataInlTreeIndex)
	treeOff, ok2 := g.u32(fn, funcSize+4*npcdata+4*funcdataInlTree)
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
		name := int32(g.bo.Uint32(call[inlCallNameOff:]))
		parent := int32(g.bo.Uint32(call[inlCallParentPc:]))
		if name < 0 || int(name) >= len(g.funcnames) || parent < 0 || uint64(parent) >= end-entry {
			return nil, nil, outer
		}
		names = append(names, g.name(name))
		cur = entry + uint64(parent)
		sites = append(sites, cur)
	}
	return names, sites, outer
}

// GoNoInline returns how many lookups of GoFrames came without inline functions because
// the image's runtime layout could not be trusted, and why (GoInlineNote).
func (im *Image) GoNoInline() (n uint64, why string) {
	return im.goNoInline.Load(), im.GoInlineNote
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
		if im.GoInlineNote != "" {
			im.goNoInline.Add(1)
		}
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
