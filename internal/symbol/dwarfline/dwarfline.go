// Package dwarfline resolves machine addresses to source positions and
// inline call chains from DWARF debugging information, for stax.
//
// A [Table] indexes only the address ranges of compilation units up front.
// The line table and the function/inline tree of a unit are decoded the
// first time an address inside it is looked up and cached afterwards, so a
// large debug file costs little until it is needed. All decoding recovers
// from panics in debug/dwarf and reports malformed data as errors.
package dwarfline

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	kzlib "github.com/klauspost/compress/zlib"
	"io"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/stax-profiler/stax/internal/targetfile"
)

// Limits applied to foreign debug information.
const (
	MaxUnits        = 1 << 20 // compilation units indexed per file
	MaxUnitEntries  = 1 << 22 // DIEs decoded per compilation unit
	MaxLineRows     = 1 << 24 // line table rows kept per compilation unit
	MaxInlineDepth  = 64      // longest inline chain reported
	MaxDWARFSection = 2 << 30 // largest (decompressed) DWARF section accepted

	// DecodeAll's bounds: a table with more units, or whose units cover more code, is left
	// to decode its units one at a time.
	MaxDecodeAllUnits = 1 << 13
	MaxDecodeAllCode  = 64 << 20
)

// ErrNoDWARF is returned when a file has no usable debugging information.
var ErrNoDWARF = errors.New("no DWARF debugging information")

// Frame is one source-level frame. For inlined functions, File and Line are
// the position inside the inlined function, and the next frame in a chain
// is the caller with the position of the call site.
type Frame struct {
	Func    string // linkage (possibly mangled) name if known, else the plain name
	File    string
	Line    int
	Inlined bool // this frame was inlined into the next one
}

// Table answers address queries for one file. It is safe for concurrent
// use.
type Table struct {
	d *dwarf.Data
	// open loads d on first need, for a table imported from a cache (d is nil until then).
	open    func() (*dwarf.Data, error)
	dOnce   sync.Once
	dErr    error
	decoded atomic.Int32 // units decoded from DWARF (not imported)
	missed  atomic.Bool  // imported, then a unit missing from the cache loaded the DWARF
	// oldFormat says the table was imported from a cache in an older format.
	oldFormat bool

	indexOnce sync.Once
	indexErr  error
	spans     []span   // sorted CU address ranges
	maxHi     []uint64 // maxHi[i] is the largest end among spans[:i+1]

	mu    sync.Mutex
	units map[dwarf.Offset]*unitEntry
	names sync.Map // dwarf.Offset -> string
}

type span struct {
	lo, hi uint64
	cu     dwarf.Offset
}

type unitEntry struct {
	once sync.Once
	u    *unit
	err  error
	raw  []byte // a unit imported from a cache and not yet decoded: its cached bytes
}

// New returns a table over d.
func New(d *dwarf.Data) *Table {
	return &Table{d: d, units: map[dwarf.Offset]*unitEntry{}}
}

// Open reads the DWARF data of the ELF file at p. The sections are read
// (and decompressed) immediately; units are decoded lazily.
func Open(p string) (*Table, error) {
	file, err := targetfile.Open(p)
	if err != nil {
		return nil, fmt.Errorf("open debug info: %w", err)
	}
	defer file.Close()
	ra := targetfile.ReaderAt(file)
	f, err := elf.NewFile(ra)
	if err != nil {
		return nil, fmt.Errorf("open debug info: %w", err)
	}
	return fromELF(f, ra)
}

// FromELF reads the DWARF data of f.
func FromELF(f *elf.File) (t *Table, err error) { return fromELF(f, nil) }

// fromELF reads the DWARF data of f; ra, when not nil, reads the file's raw bytes.
func fromELF(f *elf.File, ra io.ReaderAt) (t *Table, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("read DWARF: malformed data: %v", p)
		}
	}()
	info := f.Section(".debug_info")
	if info == nil || info.Type == elf.SHT_NOBITS {
		return nil, ErrNoDWARF
	}
	for _, s := range f.Sections {
		if len(s.Name) > 7 && (s.Name[:7] == ".debug_" || s.Name[:7] == ".zdebug") && s.Size > MaxDWARFSection {
			return nil, fmt.Errorf("read DWARF: section %s is %d bytes, limit %d", s.Name, s.Size, MaxDWARFSection)
		}
	}
	d, err := readDWARF(f, ra)
	if err != nil {
		return nil, fmt.Errorf("read DWARF: %w", err)
	}
	return New(d), nil
}

// maxInflated bounds a compressed section's declared size.
const maxInflated = 1 << 30

// sectionData returns a section's contents. SHF_COMPRESSED zlib sections are inflated here
// with a faster inflater than the standard library's, into a buffer of the declared size.
func sectionData(f *elf.File, s *elf.Section, ra io.ReaderAt) ([]byte, error) {
	if s.Flags&elf.SHF_COMPRESSED == 0 || ra == nil || f.Class != elf.ELFCLASS64 {
		return s.Data()
	}
	if s.FileSize < 24 || s.FileSize > MaxDWARFSection {
		return s.Data()
	}
	hdr := make([]byte, 24)
	if _, err := ra.ReadAt(hdr, int64(s.Offset)); err != nil {
		return nil, err
	}
	typ := f.ByteOrder.Uint32(hdr[0:])
	size := f.ByteOrder.Uint64(hdr[8:])
	if elf.CompressionType(typ) != elf.COMPRESS_ZLIB || size > maxInflated {
		return s.Data()
	}
	zr, err := kzlib.NewReader(io.NewSectionReader(ra, int64(s.Offset)+24, int64(s.FileSize)-24))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out := make([]byte, size)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, fmt.Errorf("inflate %s: %w", s.Name, err)
	}
	return out, nil
}

// readDWARF reads the sections names, lines and inline trees need, decompressing them in
// parallel; location lists and the like are never read. Relocatable objects and old-style
// .zdebug sections go through debug/elf, which knows how to relocate and inflate them.
func readDWARF(f *elf.File, ra io.ReaderAt) (*dwarf.Data, error) {
	if f.Type == elf.ET_REL {
		return f.DWARF()
	}
	for _, s := range f.Sections {
		if strings.HasPrefix(s.Name, ".zdebug_") {
			return f.DWARF()
		}
	}
	names := []string{"abbrev", "aranges", "info", "line", "ranges", "str", "addr", "line_str", "str_offsets", "rnglists"}
	data := make([][]byte, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		s := f.Section(".debug_" + n)
		if s == nil || s.Type == elf.SHT_NOBITS {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("section .debug_%s: malformed: %v", n, p)
				}
			}()
			data[i], errs[i] = sectionData(f, s, ra)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("section .debug_%s: %w", names[i], err)
		}
	}
	d, err := dwarf.New(data[0], data[1], nil, data[2], data[3], nil, data[4], data[5])
	if err != nil {
		return nil, err
	}
	for i, n := range names[6:] {
		if b := data[6+i]; b != nil {
			if err := d.AddSection(".debug_"+n, b); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// noCodeInside reports whether a DIE's children can hold no function or inlined code:
// types and call sites, most of a unit's entries, whose subtrees are skipped undecoded.
func noCodeInside(tag dwarf.Tag) bool {
	switch tag {
	case dwarf.TagStructType, dwarf.TagUnionType, dwarf.TagClassType, dwarf.TagEnumerationType,
		dwarf.TagArrayType, dwarf.TagSubroutineType, dwarf.TagCallSite, 0x4109 /* GNU_call_site */ :
		return true
	}
	return false
}

// index builds the sorted list of compilation unit ranges.
func (t *Table) index() error {
	t.indexOnce.Do(func() {
		t.indexErr = guard("index DWARF units", func() error {
			if _, err := t.data(); err != nil {
				return err
			}
			r := t.d.Reader()
			n := 0
			for {
				e, err := r.Next()
				if err != nil {
					return err
				}
				if e == nil {
					break
				}
				if n++; n > MaxUnits {
					return fmt.Errorf("more than %d units", MaxUnits)
				}
				if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
					rs, err := t.d.Ranges(e)
					if err == nil {
						for _, rg := range rs {
							if rg[1] > rg[0] && rg[0] != 0 {
								t.spans = append(t.spans, span{rg[0], rg[1], e.Offset})
							}
						}
					}
				}
				r.SkipChildren()
			}
			sort.Slice(t.spans, func(i, j int) bool { return t.spans[i].lo < t.spans[j].lo })
			t.maxHi = make([]uint64, len(t.spans))
			var m uint64
			for i, s := range t.spans {
				m = max(m, s.hi)
				t.maxHi[i] = m
			}
			return nil
		})
	})
	return t.indexErr
}

// Frames returns the source frames for pc, innermost first: inlined
// functions (Inlined set) followed by the function that contains them.
// It returns nil and no error when pc is not described.
func (t *Table) Frames(pc uint64) ([]Frame, error) {
	if err := t.index(); err != nil {
		return nil, err
	}
	// Spans may overlap in odd files; try every unit whose range holds pc,
	// starting with the one with the highest start.
	i := sort.Search(len(t.spans), func(i int) bool { return t.spans[i].lo > pc })
	tried := 0
	for j := i - 1; j >= 0 && tried < 8 && t.maxHi[j] > pc; j-- {
		s := t.spans[j]
		if pc >= s.hi {
			continue
		}
		tried++
		u, err := t.unit(s.cu)
		if err != nil {
			return nil, err
		}
		if fr := u.frames(t, pc); fr != nil {
			return fr, nil
		}
	}
	return nil, nil
}

func (t *Table) unit(off dwarf.Offset) (*unit, error) {
	t.mu.Lock()
	ue := t.units[off]
	if ue == nil {
		ue = &unitEntry{}
		t.units[off] = ue
	}
	t.mu.Unlock()
	ue.once.Do(func() {
		t.mu.Lock()
		raw := ue.raw
		t.mu.Unlock()
		if raw != nil {
			if ue.u, ue.err = importUnit(raw); ue.err == nil {
				return
			}
			// A damaged unit in the cache: decoded from the DWARF instead, and not
			// exported as it was.
			t.mu.Lock()
			ue.raw = nil
			t.mu.Unlock()
			if t.open == nil && t.d == nil {
				return
			}
		}
		ue.err = guard("decode DWARF unit", func() error {
			var err error
			ue.u, err = t.decodeUnit(off)
			return err
		})
	})
	return ue.u, ue.err
}

// guard runs f, turning a panic into an error.
func guard(what string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: malformed data: %v", what, p)
		}
	}()
	if err := f(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// unit is a decoded compilation unit.
type unit struct {
	files     []string // file names referenced by rows
	callFiles []string // line table file list, indexed by DW_AT_call_file
	rows      []row    // sorted line rows
	funcs     []fn     // functions and inlined instances, depth-first order
	tops      []topRange
	name      string
	compDir   string
}

// abs joins a relative file name with the compilation directory.
func (u *unit) abs(name string) string {
	if name == "" || u.compDir == "" || path.IsAbs(name) {
		return name
	}
	return path.Join(u.compDir, name)
}

type row struct {
	addr uint64
	file int32
	line int32
	end  bool // end of sequence: no position from here
}

type fn struct {
	ranges   [][2]uint64
	name     string
	callFile int32
	callLine int32
	parent   int32 // index in funcs, -1 for a subprogram
	end      int32 // index just past this function's descendants
	inlined  bool
}

type topRange struct {
	lo, hi uint64
	fn     int32
}

// data returns the DWARF data, loading it now for a table imported from a cache.
func (t *Table) data() (*dwarf.Data, error) {
	t.dOnce.Do(func() {
		if t.d == nil && t.open != nil {
			t.missed.Store(true)
			t.d, t.dErr = t.open()
		}
		if t.d == nil && t.dErr == nil {
			t.dErr = ErrNoDWARF
		}
	})
	return t.d, t.dErr
}

// MissedCache says whether the table, imported from a cache, had to load its file's DWARF
// for a unit the cache lacked: the cache did not hold what this run needed.
func (t *Table) MissedCache() bool { return t.missed.Load() }

// DecodeAll decodes every unit not decoded yet, so that an export holds them all and a
// table imported from it never loads the DWARF again. Loading a large file's DWARF (its
// sections inflated, every abbreviation table parsed) costs far more than the units one
// run looks up, and a program's samples meet a few new units of a library like libc in
// nearly every run. It does nothing (and reports false) past MaxDecodeAllUnits units or
// MaxDecodeAllCode bytes of code; a unit that fails to decode is left out.
func (t *Table) DecodeAll() bool {
	if err := t.index(); err != nil {
		return false
	}
	cus := make(map[dwarf.Offset]bool, len(t.spans))
	var code uint64
	for _, s := range t.spans {
		cus[s.cu] = true
		code += s.hi - s.lo
	}
	if len(cus) > MaxDecodeAllUnits || code > MaxDecodeAllCode {
		return false
	}
	t.mu.Lock()
	for cu := range cus {
		if t.units[cu] != nil {
			delete(cus, cu) // decoded, or imported from the cache
		}
	}
	t.mu.Unlock()
	for cu := range cus {
		t.unit(cu)
	}
	return true
}

func (t *Table) decodeUnit(off dwarf.Offset) (*unit, error) {
	if _, err := t.data(); err != nil {
		return nil, err
	}
	t.decoded.Add(1)
	r := t.d.Reader()
	r.Seek(off)
	cu, err := r.Next()
	if err != nil {
		return nil, err
	}
	if cu == nil {
		return nil, fmt.Errorf("no unit at offset %#x", off)
	}
	u := &unit{}
	u.name, _ = cu.Val(dwarf.AttrName).(string)
	u.compDir, _ = cu.Val(dwarf.AttrCompDir).(string)
	u.name = u.abs(u.name)

	if lr, err := t.d.LineReader(cu); err == nil && lr != nil {
		if err := u.readLines(lr); err != nil {
			return nil, err
		}
	}
	if !cu.Children {
		return u, nil
	}

	// Walk the DIE tree, keeping the index of the enclosing function.
	type level struct{ fn int32 }
	stack := []level{{-1}}
	n := 0
	for len(stack) > 0 {
		e, err := r.Next()
		if err != nil {
			return nil, err
		}
		if e == nil {
			break
		}
		if n++; n > MaxUnitEntries {
			return nil, fmt.Errorf("more than %d entries", MaxUnitEntries)
		}
		if e.Tag == 0 {
			top := stack[len(stack)-1]
			if top.fn >= 0 && (len(stack) < 2 || stack[len(stack)-2].fn != top.fn) {
				u.funcs[top.fn].end = int32(len(u.funcs))
			}
			stack = stack[:len(stack)-1]
			continue
		}
		cur := stack[len(stack)-1].fn
		idx := cur
		if e.Children && noCodeInside(e.Tag) {
			r.SkipChildren()
			continue
		}
		if e.Tag == dwarf.TagSubprogram || e.Tag == dwarf.TagInlinedSubroutine {
			rs, _ := t.d.Ranges(e)
			if len(rs) > 0 {
				f := fn{ranges: rs, parent: cur, name: t.entryName(e, 0), inlined: e.Tag == dwarf.TagInlinedSubroutine}
				if f.inlined {
					if v, ok := e.Val(dwarf.AttrCallFile).(int64); ok {
						f.callFile = int32(v)
					}
					if v, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
						f.callLine = int32(v)
					}
				}
				idx = int32(len(u.funcs))
				f.end = idx + 1
				u.funcs = append(u.funcs, f)
				if !f.inlined {
					for _, rg := range rs {
						u.tops = append(u.tops, topRange{rg[0], rg[1], idx})
					}
				}
			}
		}
		if e.Children {
			stack = append(stack, level{idx})
		} else if idx != cur {
			u.funcs[idx].end = idx + 1
		}
	}
	// Functions whose children were never closed (truncated data) end at
	// the last function.
	for i := range u.funcs {
		if u.funcs[i].end <= int32(i) {
			u.funcs[i].end = int32(len(u.funcs))
		}
	}
	sort.Slice(u.tops, func(i, j int) bool { return u.tops[i].lo < u.tops[j].lo })
	return u, nil
}

func (u *unit) readLines(lr *dwarf.LineReader) error {
	var e dwarf.LineEntry
	fileIdx := map[*dwarf.LineFile]int32{}
	for {
		if err := lr.Next(&e); err != nil {
			// io.EOF ends the table; a damaged table keeps the rows
			// decoded so far.
			break
		}
		if len(u.rows) >= MaxLineRows {
			return fmt.Errorf("more than %d line rows", MaxLineRows)
		}
		fi := int32(-1)
		if e.File != nil {
			var ok bool
			if fi, ok = fileIdx[e.File]; !ok {
				fi = int32(len(u.files))
				u.files = append(u.files, u.abs(e.File.Name))
				fileIdx[e.File] = fi
			}
		}
		u.rows = append(u.rows, row{addr: e.Address, file: fi, line: int32(e.Line), end: e.EndSequence})
	}
	// Remember the line table's own file list for DW_AT_call_file.
	files := lr.Files()
	callFiles := make([]string, len(files))
	for i, f := range files {
		if f != nil {
			callFiles[i] = u.abs(f.Name)
		}
	}
	u.callFiles = callFiles
	// Sort by address keeping the original order of rows at the same
	// address (an end-of-sequence row precedes the start of the next).
	slices.SortStableFunc(u.rows, func(a, b row) int {
		switch {
		case a.addr < b.addr:
			return -1
		case a.addr > b.addr:
			return 1
		case a.end && !b.end:
			return -1
		case b.end && !a.end:
			return 1
		}
		return 0
	})
	return nil
}

// lineAt returns the source position of pc from the line table.
func (u *unit) lineAt(pc uint64) (string, int) {
	i := sort.Search(len(u.rows), func(i int) bool { return u.rows[i].addr > pc })
	if i == 0 || i == len(u.rows) {
		// Past the last row there is no end-of-sequence marker to bound
		// the position, so it is not trusted.
		return "", 0
	}
	r := u.rows[i-1]
	if r.end || r.file < 0 {
		return "", 0
	}
	return u.files[r.file], int(r.line)
}

func (f *fn) contains(pc uint64) bool {
	for _, r := range f.ranges {
		if pc >= r[0] && pc < r[1] {
			return true
		}
	}
	return false
}

func (u *unit) callFile(i int32) string {
	if i >= 0 && int(i) < len(u.callFiles) {
		return u.callFiles[i]
	}
	return ""
}

// frames builds the inline chain for pc, or nil when the unit does not
// describe it.
func (u *unit) frames(t *Table, pc uint64) []Frame {
	file, line := u.lineAt(pc)
	i := sort.Search(len(u.tops), func(i int) bool { return u.tops[i].lo > pc })
	top := int32(-1)
	for j := i - 1; j >= 0 && j >= i-16; j-- {
		if pc < u.tops[j].hi && u.tops[j].fn > top {
			top = u.tops[j].fn
		}
	}
	if top < 0 {
		if line == 0 {
			return nil
		}
		return []Frame{{File: file, Line: line}}
	}
	chain := []int32{top}
	for k := top + 1; k < u.funcs[top].end && k < int32(len(u.funcs)); k++ {
		f := &u.funcs[k]
		if f.inlined && f.parent == chain[len(chain)-1] && f.contains(pc) {
			if len(chain) >= MaxInlineDepth {
				break
			}
			chain = append(chain, k)
		}
	}
	out := make([]Frame, 0, len(chain))
	for d := len(chain) - 1; d >= 0; d-- {
		f := &u.funcs[chain[d]]
		out = append(out, Frame{Func: f.name, File: file, Line: line, Inlined: d > 0})
		if f.inlined {
			file, line = u.callFile(f.callFile), int(f.callLine)
		}
	}
	return out
}

// entryName returns the linkage name of e, else its name, following
// DW_AT_abstract_origin and DW_AT_specification references.
func (t *Table) entryName(e *dwarf.Entry, depth int) string {
	if s, ok := e.Val(dwarf.AttrLinkageName).(string); ok && s != "" {
		return s
	}
	name, _ := e.Val(dwarf.AttrName).(string)
	if depth >= 4 {
		return name
	}
	for _, a := range []dwarf.Attr{dwarf.AttrAbstractOrigin, dwarf.AttrSpecification} {
		off, ok := e.Val(a).(dwarf.Offset)
		if !ok {
			continue
		}
		if v, ok := t.names.Load(off); ok {
			if s := v.(string); s != "" {
				return s
			}
			continue
		}
		r := t.d.Reader()
		r.Seek(off)
		ref, err := r.Next()
		s := ""
		if err == nil && ref != nil {
			s = t.entryName(ref, depth+1)
		}
		t.names.Store(off, s)
		if s != "" {
			return s
		}
	}
	return name
}
