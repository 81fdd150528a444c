package dwarfline

import (
	"bufio"
	"bytes"
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"

	"github.com/stax-profiler/stax/internal/mapfile"
)

// The cache format keeps what decoding a file's DWARF produced, so a later process answers
// from it without inflating and walking the DWARF again: the unit index (address spans) and
// every unit decoded so far. All integers are unsigned varints; strings are a length and
// bytes. Units not in the cache are decoded from the DWARF on first need, as usual.
//
// Each unit is its offset, its length in bytes and its fields, so that an import passes
// over the units it is not asked for (most of a large cache, in one run) without reading
// them; a unit is checked when first decoded. Format 1 had no lengths: such a cache is still
// read, each unit checked whole at import, and written again in the current format.
const (
	cacheMagic   = "STAXDWL2"
	cacheMagicV1 = "STAXDWL1"
	maxCacheStr  = 1 << 16
	maxCacheSize = 1 << 30
)

// Decoded reports how many units this table decoded from DWARF (not from a cache), plus
// one when the cache it came from was in an older format: when it is zero, exporting again
// would add nothing.
func (t *Table) Decoded() int {
	n := int(t.decoded.Load())
	if t.oldFormat {
		n++
	}
	return n
}

// Export writes the unit index and every decoded unit.
func (t *Table) Export(w io.Writer) error {
	if err := t.index(); err != nil {
		return err
	}
	t.mu.Lock()
	offs := make([]dwarf.Offset, 0, len(t.units))
	units := make(map[dwarf.Offset]*unit, len(t.units))
	raws := map[dwarf.Offset][]byte{}
	for off, ue := range t.units {
		switch {
		case ue.raw != nil:
			offs = append(offs, off)
			raws[off] = ue.raw
		case ue.u != nil && ue.err == nil:
			offs = append(offs, off)
			units[off] = ue.u
		}
	}
	t.mu.Unlock()
	slices.Sort(offs)

	bw := bufio.NewWriterSize(w, 1<<16)
	var b []byte
	u := func(v uint64) { b = binary.AppendUvarint(b, v) }
	str := func(s string) {
		if len(s) > maxCacheStr {
			s = s[:maxCacheStr]
		}
		u(uint64(len(s)))
		b = append(b, s...)
	}
	flush := func() error {
		_, err := bw.Write(b)
		b = b[:0]
		return err
	}
	b = append(b, cacheMagic...)
	u(uint64(len(t.spans)))
	for _, s := range t.spans {
		u(s.lo)
		u(s.hi)
		u(uint64(s.cu))
	}
	u(uint64(len(offs)))
	for _, off := range offs {
		if raw := raws[off]; raw != nil {
			b = append(b, raw...) // as imported: the offset and the fields
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		un := units[off]
		u(uint64(off))
		head := len(b)
		str(un.name)
		str(un.compDir)
		u(uint64(len(un.files)))
		for _, f := range un.files {
			str(f)
		}
		u(uint64(len(un.callFiles)))
		for _, f := range un.callFiles {
			str(f)
		}
		u(uint64(len(un.rows)))
		var prev uint64
		for _, r := range un.rows {
			u(r.addr - prev) // rows are sorted by address
			prev = r.addr
			u(uint64(r.file + 1))
			u(uint64(r.line))
			if r.end {
				u(1)
			} else {
				u(0)
			}
		}
		u(uint64(len(un.funcs)))
		for _, f := range un.funcs {
			str(f.name)
			u(uint64(f.parent + 1))
			u(uint64(f.end))
			u(uint64(f.callFile + 1))
			u(uint64(f.callLine))
			if f.inlined {
				u(1)
			} else {
				u(0)
			}
			u(uint64(len(f.ranges)))
			for _, rg := range f.ranges {
				u(rg[0])
				u(rg[1] - rg[0])
			}
		}
		u(uint64(len(un.tops)))
		for _, tr := range un.tops {
			u(tr.lo)
			u(tr.hi - tr.lo)
			u(uint64(tr.fn))
		}
		// The length goes before the fields: move them up by its size.
		n := len(b) - head
		var lenBuf [binary.MaxVarintLen64]byte
		ln := binary.PutUvarint(lenBuf[:], uint64(n))
		b = append(b, lenBuf[:ln]...)
		copy(b[head+ln:], b[head:head+n])
		copy(b[head:], lenBuf[:ln])
		if err := flush(); err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return bw.Flush()
}

// errCache marks a damaged cache file.
var errCache = errors.New("damaged DWARF cache")

type cacheReader struct {
	b   []byte
	err error
}

func (r *cacheReader) u() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errCache
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a length that must fit limit and the bytes left (each item takes at least
// minBytes).
func (r *cacheReader) count(limit, minBytes int) int {
	v := r.u()
	if r.err == nil && (v > uint64(limit) || v*uint64(minBytes) > uint64(len(r.b))) {
		r.err = errCache
	}
	if r.err != nil {
		return 0
	}
	return int(v)
}

func (r *cacheReader) str() string {
	n := r.count(maxCacheStr, 1)
	if r.err != nil {
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *cacheReader) i32(limit int) int32 {
	v := r.u()
	if r.err == nil && v > uint64(limit) {
		r.err = errCache
	}
	return int32(v)
}

// unit reads a unit's fields after its offset, checking them all; with keep it returns the
// unit, else it only walks the bytes (and returns nil).
func (r *cacheReader) unit(keep bool) *unit {
	var un *unit
	str := func() string {
		if keep {
			return r.str()
		}
		r.b = r.b[min(r.count(maxCacheStr, 1), len(r.b)):]
		return ""
	}
	name, compDir := str(), str()
	if keep {
		un = &unit{name: name, compDir: compDir}
	}
	nf := r.count(MaxLineRows, 1)
	if keep {
		un.files = make([]string, nf)
	}
	for i := range nf {
		if f := str(); keep {
			un.files[i] = f
		}
	}
	nc := r.count(MaxLineRows, 1)
	if keep {
		un.callFiles = make([]string, nc)
	}
	for i := range nc {
		if f := str(); keep {
			un.callFiles[i] = f
		}
	}
	nr := r.count(MaxLineRows, 4)
	if keep {
		un.rows = make([]row, nr)
	}
	var addr uint64
	for i := range nr {
		addr += r.u()
		file := r.i32(nf) - 1
		line := r.i32(1 << 30)
		end := r.u() != 0
		if keep {
			un.rows[i] = row{addr: addr, file: file, line: line, end: end}
		}
	}
	nfn := r.count(MaxUnitEntries, 7)
	if keep {
		un.funcs = make([]fn, nfn)
	}
	for i := range nfn {
		f := fn{name: str()}
		f.parent = r.i32(nfn) - 1
		f.end = r.i32(nfn)
		f.callFile = r.i32(nc+1) - 1
		f.callLine = r.i32(1 << 30)
		f.inlined = r.u() != 0
		nrg := r.count(MaxUnitEntries, 2)
		if keep {
			f.ranges = make([][2]uint64, nrg)
		}
		for k := range nrg {
			lo := r.u()
			if hi := lo + r.u(); keep {
				f.ranges[k] = [2]uint64{lo, hi}
			}
		}
		if r.err == nil && (f.parent >= int32(i) || f.end < int32(i)) {
			r.err = errCache // parents precede children; end covers the descendants
		}
		if keep {
			un.funcs[i] = f
		}
	}
	nt := r.count(MaxUnitEntries, 3)
	if keep {
		un.tops = make([]topRange, nt)
	}
	for i := range nt {
		lo := r.u()
		hi := lo + r.u()
		if f := r.i32(max(nfn-1, 0)); keep {
			un.tops[i] = topRange{lo: lo, hi: hi, fn: f}
		}
	}
	if r.err == nil && nfn == 0 && nt > 0 {
		r.err = errCache
	}
	if r.err != nil {
		return nil
	}
	return un
}

// Import reads a table exported by Export. open loads the file's DWARF when a unit that is
// not in the cache is needed (it may be nil: such units are then unknown). A damaged cache
// is an error, never a panic.
func Import(rd io.Reader, open func() (*dwarf.Data, error)) (*Table, error) {
	if f, ok := rd.(*os.File); ok {
		// Mapped, the units a run never asks for are never read from disk or copied
		// (libc's cache is megabytes, and a run needs a few of its units).
		if data, err := mapfile.Map(f, int64(len(cacheMagic)), maxCacheSize); err == nil {
			t, err := importBytes(data, open)
			if err != nil {
				mapfile.Unmap(data)
			}
			return t, err
		}
	}
	size := 0 // the cache's size when known: read into a buffer of that size
	switch v := rd.(type) {
	case interface{ Stat() (os.FileInfo, error) }:
		if fi, err := v.Stat(); err == nil && fi.Size() <= maxCacheSize {
			size = int(fi.Size())
		}
	case interface{ Len() int }:
		size = min(v.Len(), maxCacheSize)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	_, err := buf.ReadFrom(io.LimitReader(rd, maxCacheSize+1))
	if err != nil {
		return nil, fmt.Errorf("read DWARF cache: %w", err)
	}
	return importBytes(buf.Bytes(), open)
}

func importBytes(data []byte, open func() (*dwarf.Data, error)) (*Table, error) {
	if len(data) > maxCacheSize || len(data) < len(cacheMagic) {
		return nil, fmt.Errorf("read DWARF cache: %w", errCache)
	}
	v1 := string(data[:len(cacheMagicV1)]) == cacheMagicV1
	if !v1 && string(data[:len(cacheMagic)]) != cacheMagic {
		return nil, fmt.Errorf("read DWARF cache: %w", errCache)
	}
	r := &cacheReader{b: data[len(cacheMagic):]}
	t := &Table{units: map[dwarf.Offset]*unitEntry{}, open: open, oldFormat: v1}
	ns := r.count(MaxUnits, 3)
	t.spans = make([]span, 0, ns)
	for range ns {
		lo, hi, cu := r.u(), r.u(), r.u()
		if r.err == nil && hi <= lo {
			r.err = errCache
		}
		t.spans = append(t.spans, span{lo, hi, dwarf.Offset(cu)})
	}
	if r.err == nil && !sort.SliceIsSorted(t.spans, func(i, j int) bool { return t.spans[i].lo < t.spans[j].lo }) {
		r.err = errCache
	}
	t.maxHi = make([]uint64, len(t.spans))
	var m uint64
	for i, s := range t.spans {
		m = max(m, s.hi)
		t.maxHi[i] = m
	}
	nu := r.count(MaxUnits, 2)
	for range nu {
		// Each unit is kept as its bytes: it is decoded, and checked, when an address in
		// it is first looked up (most of a large cache never is in one run).
		at := r.b
		off := dwarf.Offset(r.u())
		if v1 {
			// No length: the unit is walked, checked whole, and kept in the current
			// format.
			fields := r.b
			r.unit(false)
			if r.err != nil {
				break
			}
			fields = fields[:len(fields)-len(r.b)]
			raw := binary.AppendUvarint(nil, uint64(off))
			raw = binary.AppendUvarint(raw, uint64(len(fields)))
			t.units[off] = &unitEntry{raw: append(raw, fields...)}
			continue
		}
		n := r.count(maxCacheSize, 1)
		if r.err != nil {
			break
		}
		r.b = r.b[n:]
		t.units[off] = &unitEntry{raw: at[:len(at)-len(r.b)]}
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errCache
	}
	if r.err != nil {
		return nil, fmt.Errorf("read DWARF cache: %w", r.err)
	}
	t.indexOnce.Do(func() {}) // the index came with the cache
	return t, nil
}

// Data returns the DWARF data behind a table opened from a file (nil for one imported from
// a cache that has not needed it).
func (t *Table) Data() *dwarf.Data { return t.d }

// importUnit decodes a unit that Import checked and kept as its bytes.
func importUnit(raw []byte) (*unit, error) {
	r := &cacheReader{b: raw}
	r.u() // the offset
	n := r.count(maxCacheSize, 1)
	if r.err == nil {
		r.b = r.b[:n]
	}
	un := r.unit(true)
	if r.err == nil && len(r.b) != 0 {
		r.err = errCache
	}
	if r.err != nil {
		return nil, fmt.Errorf("read DWARF cache: %w", r.err)
	}
	return un, nil
}
