// Package elfsym loads function symbols, the build-id and the loadable
// segments of an ELF image, and translates sampled addresses from a process
// mapping into the image's virtual addresses, which stax then resolves to
// function names.
//
// Symbols come from .symtab and .dynsym (STT_FUNC and STT_GNU_IFUNC); Go
// binaries without a symbol table fall back to .gopclntab. Aliases at the
// same address are folded into one entry and version (@@GLIBC_2.2.5,
// @GLIBC_2.2.5) and @plt suffixes are stripped. Parsing is defensive: a
// malformed image yields an error, never a panic.
package elfsym

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/stax-profiler/stax/internal/targetfile"
)

// Limits applied to foreign images.
const (
	MaxSectionSize = 1 << 30   // largest symbol or string table read
	MaxPclntabSize = 256 << 20 // largest .gopclntab read
	MaxSymbols     = 1 << 24   // most symbols kept per image
	MaxNoteSize    = 1 << 16   // largest build-id note section
)

// Symbol is one function symbol. Addr is an ELF virtual address.
type Symbol struct {
	Name string // raw (possibly mangled) name without version or @plt suffix
	Addr uint64
	Size uint64

	limit uint64 // end of the containing section, 0 if unknown
	flags uint8
}

const (
	flagLocal  uint8 = 1 << iota // STB_LOCAL
	flagWeak                     // STB_WEAK
	flagHidden                   // non-default symbol version (name@VER)
	flagZero                     // size was zero in the table
)

// End returns the address just past the symbol.
func (s Symbol) End() uint64 { return s.Addr + s.Size }

// Segment is a PT_LOAD program header.
type Segment struct {
	Off, Vaddr, Filesz, Memsz, Align uint64
	Flags                            elf.ProgFlag
}

// Image is the symbol information of one ELF file. It is immutable after
// loading (except through [Image.Merge] before it is shared) and safe for
// concurrent lookups.
type Image struct {
	Path    string
	BuildID []byte // contents of the NT_GNU_BUILD_ID note, nil if absent
	Machine elf.Machine
	Type    elf.Type
	Loads   []Segment

	// DebugLink is the file name in .gnu_debuglink and DebugLinkCRC its
	// CRC-32; DebugLink is "" when the section is absent.
	DebugLink    string
	DebugLinkCRC uint32

	HasDWARF bool // the image has a .debug_info section with contents
	IsGo     bool // the image has a .gopclntab section
	// GoInlineNote says why Go frames come without their inline functions (the image's
	// runtime layout could not be trusted, see goinline.go); "" when they come with them
	// or the image is not Go.
	GoInlineNote string
	// goNoInline counts the lookups GoFrames answered without inline functions because of
	// GoInlineNote.
	goNoInline atomic.Uint64

	syms  []Symbol
	gotb  *gosym.Table
	goinl *goInline

	// An image read by DecodeCache keeps its symbols in the saved form (raw, names in
	// rawNames, nraw of them), decoded where a lookup needs them, until Symbols or Merge
	// wants them as a slice.
	fromCache bool
	raw       []byte
	rawNames  string
	nraw      int
	rawOnce   sync.Once
}

// Open loads the ELF image at path.
func Open(path string) (*Image, error) {
	f, err := targetfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open image: %w", err)
	}
	defer f.Close()
	im, err := Load(targetfile.ReaderAt(f), path)
	if err != nil {
		return nil, err
	}
	return im, nil
}

// Load reads an ELF image from r; path is recorded for messages only.
func Load(r io.ReaderAt, path string) (im *Image, err error) {
	defer func() {
		if p := recover(); p != nil {
			im, err = nil, fmt.Errorf("load image %s: malformed ELF: %v", path, p)
		}
	}()
	var ident [elf.EI_NIDENT]byte
	n, _ := r.ReadAt(ident[:], 0)
	if n < len(elf.ELFMAG) || string(ident[:len(elf.ELFMAG)]) != elf.ELFMAG {
		return nil, fmt.Errorf("load image %s: %s", path, notELF(ident[:n]))
	}
	f, err := elf.NewFile(r)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("load image %s: the ELF file is truncated", path)
	}
	if err != nil {
		return nil, fmt.Errorf("load image %s: %w", path, err)
	}
	defer f.Close()
	return load(f, path)
}

// notELF says why a file with these first bytes is not an ELF file.
func notELF(head []byte) string {
	switch {
	case len(head) == 0:
		return "not an ELF file (it is empty)"
	case len(head) < len(elf.ELFMAG) && string(head) == elf.ELFMAG[:len(head)]:
		return fmt.Sprintf("not an ELF file (it has only %d bytes)", len(head))
	}
	return fmt.Sprintf("not an ELF file (it starts with %q)", head[:min(len(head), 4)])
}

// FromFile extracts symbol information from an already-open ELF file.
func FromFile(f *elf.File, path string) (im *Image, err error) {
	defer func() {
		if p := recover(); p != nil {
			im, err = nil, fmt.Errorf("load image %s: malformed ELF: %v", path, p)
		}
	}()
	return load(f, path)
}

func load(f *elf.File, path string) (*Image, error) {
	im := &Image{Path: path, Machine: f.Machine, Type: f.Type}
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		im.Loads = append(im.Loads, Segment{Off: p.Off, Vaddr: p.Vaddr, Filesz: p.Filesz, Memsz: p.Memsz, Align: p.Align, Flags: p.Flags})
	}
	im.BuildID = buildID(f)
	im.DebugLink, im.DebugLinkCRC = debugLink(f)
	if s := f.Section(".debug_info"); s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0 {
		im.HasDWARF = true
	}

	var syms []Symbol
	var errs []error
	for _, st := range []struct {
		name string
		typ  elf.SectionType
		read func() ([]elf.Symbol, error)
	}{
		{".symtab", elf.SHT_SYMTAB, f.Symbols},
		{".dynsym", elf.SHT_DYNSYM, f.DynamicSymbols},
	} {
		sec := f.SectionByType(st.typ)
		if sec == nil {
			continue
		}
		if err := checkSection(f, sec); err != nil {
			errs = append(errs, err)
			continue
		}
		raw, err := st.read()
		if err != nil {
			if !errors.Is(err, elf.ErrNoSymbols) {
				errs = append(errs, fmt.Errorf("read %s: %w", st.name, err))
			}
			continue
		}
		syms = appendFuncs(syms, f, raw)
		if len(syms) > MaxSymbols {
			return nil, fmt.Errorf("load image %s: more than %d symbols", path, MaxSymbols)
		}
	}

	if s := f.Section(".gopclntab"); s != nil && s.Type != elf.SHT_NOBITS {
		im.IsGo = true
		if tb, data, text, err := goTable(f, s); err != nil {
			errs = append(errs, err)
		} else {
			im.gotb = tb
			im.goinl, im.GoInlineNote = newGoInline(f, data, s.Addr, text)
			if len(syms) == 0 {
				for _, fn := range tb.Funcs {
					if fn.End > fn.Entry && fn.Sym != nil {
						syms = append(syms, Symbol{Name: fn.Name, Addr: fn.Entry, Size: fn.End - fn.Entry})
					}
				}
			}
		}
	}
	if len(syms) == 0 && len(errs) > 0 {
		return nil, fmt.Errorf("load image %s: %w", path, errors.Join(errs...))
	}
	im.syms = finalize(syms)
	return im, nil
}

func checkSection(f *elf.File, s *elf.Section) error {
	if s.Size > MaxSectionSize {
		return fmt.Errorf("read %s: section size %d exceeds limit %d", s.Name, s.Size, MaxSectionSize)
	}
	if s.Link > 0 && int(s.Link) < len(f.Sections) {
		if l := f.Sections[s.Link]; l.Size > MaxSectionSize {
			return fmt.Errorf("read %s: string table size %d exceeds limit %d", s.Name, l.Size, MaxSectionSize)
		}
	}
	return nil
}

func appendFuncs(dst []Symbol, f *elf.File, raw []elf.Symbol) []Symbol {
	for _, s := range raw {
		typ := elf.ST_TYPE(s.Info)
		if typ != elf.STT_FUNC && typ != elf.STT_GNU_IFUNC {
			continue
		}
		if s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE || s.Value == 0 {
			continue
		}
		name, hidden := stripSuffix(s.Name)
		if name == "" {
			continue
		}
		sym := Symbol{Name: name, Addr: s.Value, Size: s.Size}
		if int(s.Section) < len(f.Sections) {
			sec := f.Sections[s.Section]
			if sec.Addr <= s.Value && s.Value < sec.Addr+sec.Size {
				sym.limit = sec.Addr + sec.Size
			}
		}
		switch elf.ST_BIND(s.Info) {
		case elf.STB_LOCAL:
			sym.flags |= flagLocal
		case elf.STB_WEAK:
			sym.flags |= flagWeak
		}
		if hidden || (s.HasVersion && s.VersionIndex.IsHidden()) {
			sym.flags |= flagHidden
		}
		if s.Size == 0 {
			sym.flags |= flagZero
		}
		dst = append(dst, sym)
	}
	return dst
}

// stripSuffix removes "@plt", "@@VER" and "@VER" suffixes. hidden reports
// a non-default version ("name@VER").
func stripSuffix(name string) (string, bool) {
	i := strings.IndexByte(name, '@')
	if i <= 0 {
		return name, false
	}
	rest := name[i:]
	return name[:i], !strings.HasPrefix(rest, "@@") && rest != "@plt"
}

// better reports whether a should represent an address rather than b.
func better(a, b *Symbol) bool {
	if ra, rb := bindRank(a.flags), bindRank(b.flags); ra != rb {
		return ra < rb
	}
	if ha, hb := a.flags&flagHidden != 0, b.flags&flagHidden != 0; ha != hb {
		return !ha
	}
	ua, ub := underscores(a.Name), underscores(b.Name)
	if ua != ub {
		return ua < ub
	}
	if len(a.Name) != len(b.Name) {
		return len(a.Name) < len(b.Name)
	}
	return a.Name < b.Name
}

func bindRank(fl uint8) int {
	switch {
	case fl&flagLocal != 0:
		return 2
	case fl&flagWeak != 0:
		return 1
	}
	return 0
}

func underscores(s string) int {
	n := 0
	for n < len(s) && s[n] == '_' {
		n++
	}
	return n
}

// finalize sorts symbols, folds aliases and gives zero-size symbols the
// extent up to the next symbol, bounded by their section.
func finalize(syms []Symbol) []Symbol {
	slices.SortFunc(syms, func(a, b Symbol) int {
		switch {
		case a.Addr < b.Addr:
			return -1
		case a.Addr > b.Addr:
			return 1
		}
		return 0
	})
	out := syms[:0]
	for i := 0; i < len(syms); {
		j := i + 1
		best := syms[i]
		size, limit := best.Size, best.limit
		sized := best.flags&flagZero == 0
		for ; j < len(syms) && syms[j].Addr == syms[i].Addr; j++ {
			if better(&syms[j], &best) {
				best = syms[j]
			}
			if syms[j].flags&flagZero == 0 {
				sized = true
				size = max(size, syms[j].Size)
			}
			limit = max(limit, syms[j].limit)
		}
		best.Size, best.limit = size, limit
		if sized {
			best.flags &^= flagZero
		} else {
			best.flags |= flagZero
		}
		out = append(out, best)
		i = j
	}
	for i := range out {
		s := &out[i]
		if s.flags&flagZero == 0 {
			continue
		}
		end := s.limit
		if i+1 < len(out) && (end == 0 || out[i+1].Addr < end) {
			end = out[i+1].Addr
		}
		if end > s.Addr {
			s.Size = end - s.Addr
		} else {
			s.Size = 0
		}
	}
	return slices.Clip(out)
}

// Merge adds the symbols of other (typically the separate debug file of a
// stripped image) to im. It must not be called once im is shared.
func (im *Image) Merge(other *Image) {
	if other == nil {
		return
	}
	mine, theirs := im.Symbols(), other.Symbols()
	all := make([]Symbol, 0, len(mine)+len(theirs))
	all = append(all, mine...)
	all = append(all, theirs...)
	im.syms, im.raw, im.nraw = finalize(all), nil, 0
	if other.HasDWARF {
		im.HasDWARF = true
	}
	if im.gotb == nil && other.gotb != nil {
		im.gotb, im.goinl, im.IsGo, im.GoInlineNote = other.gotb, other.goinl, true, other.GoInlineNote
	}
}

// Symbols returns the sorted, alias-free function symbols. The slice must
// not be modified.
func (im *Image) Symbols() []Symbol {
	if im.raw != nil {
		im.rawOnce.Do(func() {
			syms := make([]Symbol, im.nraw)
			for i := range syms {
				syms[i] = im.rawSymbol(i)
			}
			im.syms = syms
		})
	}
	return im.syms
}

// Lookup returns the function symbol containing the virtual address addr.
func (im *Image) Lookup(addr uint64) (Symbol, bool) {
	if im.raw != nil {
		return im.lookupRaw(addr)
	}
	syms := im.syms
	lo, hi := 0, len(syms)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if syms[m].Addr <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	// syms[lo-1] is the last symbol starting at or before addr. A nested
	// or overlapping symbol may hide a larger enclosing one, so look back
	// a few entries.
	for i := lo - 1; i >= 0 && i >= lo-4; i-- {
		if s := syms[i]; addr < s.Addr+s.Size || (s.Size == 0 && addr == s.Addr) {
			return s, true
		}
	}
	return Symbol{}, false
}

// GoLine returns the function, file and line of pc from .gopclntab.
func (im *Image) GoLine(pc uint64) (fn, file string, line int, ok bool) {
	if im.gotb == nil {
		return "", "", 0, false
	}
	defer func() {
		if recover() != nil {
			fn, file, line, ok = "", "", 0, false
		}
	}()
	file, line, f := im.gotb.PCToLine(pc)
	if f == nil {
		return "", "", 0, false
	}
	return f.Name, file, line, true
}

func goTable(f *elf.File, s *elf.Section) (*gosym.Table, []byte, uint64, error) {
	if s.Size > MaxPclntabSize {
		return nil, nil, 0, fmt.Errorf("read .gopclntab: size %d exceeds limit %d", s.Size, MaxPclntabSize)
	}
	data, err := s.Data()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("read .gopclntab: %w", err)
	}
	var text uint64
	if t := f.Section(".text"); t != nil {
		text = t.Addr
	}
	tb, err := gosym.NewTable(nil, gosym.NewLineTable(data, text))
	if err != nil {
		return nil, nil, 0, fmt.Errorf("parse .gopclntab: %w", err)
	}
	return tb, data, text, nil
}

// NT_GNU_BUILD_ID note type.
const ntGNUBuildID = 3

func buildID(f *elf.File) []byte {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE || s.Size > MaxNoteSize {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		if id := parseNotes(data, f.ByteOrder); id != nil {
			return id
		}
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > MaxNoteSize {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil {
			continue
		}
		if id := parseNotes(data, f.ByteOrder); id != nil {
			return id
		}
	}
	return nil
}

// parseNotes returns the GNU build-id descriptor in a note section.
func parseNotes(b []byte, bo binary.ByteOrder) []byte {
	for len(b) >= 12 {
		namesz, descsz, typ := uint64(bo.Uint32(b)), uint64(bo.Uint32(b[4:])), bo.Uint32(b[8:])
		b = b[12:]
		nameEnd := align4(namesz)
		descEnd := nameEnd + align4(descsz)
		if nameEnd > uint64(len(b)) || descEnd > uint64(len(b)) || nameEnd+descsz > uint64(len(b)) {
			return nil
		}
		name := b[:namesz]
		if typ == ntGNUBuildID && bytes.Equal(name, []byte("GNU\x00")) && descsz > 0 && descsz <= 64 {
			return slices.Clone(b[nameEnd : nameEnd+descsz])
		}
		b = b[descEnd:]
	}
	return nil
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

func debugLink(f *elf.File) (string, uint32) {
	s := f.Section(".gnu_debuglink")
	if s == nil || s.Size > 4096 {
		return "", 0
	}
	data, err := s.Data()
	if err != nil {
		return "", 0
	}
	return ParseDebugLink(data, f.ByteOrder)
}

// ParseDebugLink decodes a .gnu_debuglink section: a NUL-terminated file
// name padded to four bytes followed by a CRC-32.
func ParseDebugLink(data []byte, bo binary.ByteOrder) (string, uint32) {
	i := bytes.IndexByte(data, 0)
	if i <= 0 {
		return "", 0
	}
	off := align4(uint64(i) + 1)
	if off+4 > uint64(len(data)) {
		return "", 0
	}
	name := string(data[:i])
	if strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return "", 0
	}
	return name, bo.Uint32(data[off:])
}

// BuildIDHex returns the build-id as lowercase hex, "" if absent.
func (im *Image) BuildIDHex() string { return fmt.Sprintf("%x", im.BuildID) }
