package elfsym

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"
)

// An image's finished symbol table (what Open, and Merge of its debug files, made of it)
// can be saved with WriteCache and read back with DecodeCache, so a later process need
// not parse the ELF symbol tables and sort them again. The saved form is:
//
//	magic "STAXELF1"
//	uvarint len, meta (the caller's record of what the table was made from)
//	uvarint len, build-id
//	uvarint machine, uvarint type
//	uvarint len, debuglink name, uvarint debuglink CRC
//	byte flags (1: HasDWARF)
//	uvarint loads, then per load uvarint off, vaddr, filesz, memsz, align, flags
//	uvarint symbols, uvarint names' bytes, the names back to back
//	per symbol (CacheEntryBytes, little-endian): addr 8, size 8, limit 8, name offset 4,
//	name length 4, flags 1
//
// Go images (IsGo) are not saved: their .gopclntab tables are read from the file.

const (
	cacheMagic = "STAXELF1"
	// CacheEntryBytes is the size of one symbol in the saved form.
	CacheEntryBytes = 33
	// MaxCacheMeta bounds the caller's record in a saved table.
	MaxCacheMeta = 1 << 16
	// MaxCacheBytes bounds a saved table.
	MaxCacheBytes = 1 << 31
	maxCacheLoads = 1 << 12
	flagMask      = flagLocal | flagWeak | flagHidden | flagZero
)

// ErrCache is wrapped by DecodeCache's errors for bytes that are not a saved table.
var ErrCache = errors.New("damaged symbol table cache")

// ErrCacheGo is returned by WriteCache for Go images, which are not saved.
var ErrCacheGo = errors.New("go images are not saved in the symbol table cache")

// WriteCache writes im's symbol data (all but its Path) with meta, which DecodeCache
// returns as it is.
func WriteCache(w io.Writer, im *Image, meta []byte) error {
	if im.IsGo || im.gotb != nil {
		return ErrCacheGo
	}
	if len(meta) > MaxCacheMeta {
		return fmt.Errorf("write symbol table cache: meta of %d bytes is over the %d-byte limit", len(meta), MaxCacheMeta)
	}
	syms := im.Symbols()
	var b []byte
	b = append(b, cacheMagic...)
	b = binary.AppendUvarint(b, uint64(len(meta)))
	b = append(b, meta...)
	b = binary.AppendUvarint(b, uint64(len(im.BuildID)))
	b = append(b, im.BuildID...)
	b = binary.AppendUvarint(b, uint64(im.Machine))
	b = binary.AppendUvarint(b, uint64(im.Type))
	b = binary.AppendUvarint(b, uint64(len(im.DebugLink)))
	b = append(b, im.DebugLink...)
	b = binary.AppendUvarint(b, uint64(im.DebugLinkCRC))
	var fl byte
	if im.HasDWARF {
		fl |= 1
	}
	b = append(b, fl)
	b = binary.AppendUvarint(b, uint64(len(im.Loads)))
	for _, s := range im.Loads {
		for _, v := range []uint64{s.Off, s.Vaddr, s.Filesz, s.Memsz, s.Align, uint64(s.Flags)} {
			b = binary.AppendUvarint(b, v)
		}
	}
	var total uint64
	for _, s := range syms {
		total += uint64(len(s.Name))
	}
	if total > 1<<32-1 || uint64(len(syms))*CacheEntryBytes+total > MaxCacheBytes {
		return fmt.Errorf("write symbol table cache: %d symbols with %d bytes of names are over its limits", len(syms), total)
	}
	b = binary.AppendUvarint(b, uint64(len(syms)))
	b = binary.AppendUvarint(b, total)
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.Write(b)
	for _, s := range syms {
		bw.WriteString(s.Name)
	}
	var e [CacheEntryBytes]byte
	off := uint32(0)
	for _, s := range syms {
		binary.LittleEndian.PutUint64(e[0:], s.Addr)
		binary.LittleEndian.PutUint64(e[8:], s.Size)
		binary.LittleEndian.PutUint64(e[16:], s.limit)
		binary.LittleEndian.PutUint32(e[24:], off)
		binary.LittleEndian.PutUint32(e[28:], uint32(len(s.Name)))
		e[32] = s.flags
		off += uint32(len(s.Name))
		bw.Write(e[:])
	}
	return bw.Flush()
}

// DecodeCache reads an image saved by WriteCache from data and returns it, as if loaded
// from path, with the meta it was saved with. The image keeps data: its symbols and their
// names (and meta) are read from it where they are, so data must neither change nor be
// freed while the image or any name it gave is in use. Any damage is an error wrapping
// ErrCache: every size is bounded, every name checked and the addresses must ascend.
func DecodeCache(data []byte, path string) (im *Image, meta []byte, err error) {
	bad := func() (*Image, []byte, error) {
		return nil, nil, fmt.Errorf("read symbol table cache of %s: %w", path, ErrCache)
	}
	if len(data) > MaxCacheBytes || !bytes.HasPrefix(data, []byte(cacheMagic)) {
		return bad()
	}
	d := data[len(cacheMagic):]
	short := false
	uv := func(limit uint64) uint64 {
		v, n := binary.Uvarint(d)
		if short || n <= 0 || v > limit {
			short = true
			return 0
		}
		d = d[n:]
		return v
	}
	take := func(n uint64) []byte {
		if short || n > uint64(len(d)) {
			short = true
			return nil
		}
		b := d[:n:n]
		d = d[n:]
		return b
	}
	meta = take(uv(MaxCacheMeta))
	im = &Image{Path: path}
	if id := take(uv(64)); len(id) > 0 {
		im.BuildID = bytes.Clone(id)
	}
	im.Machine = elf.Machine(uv(1<<16 - 1))
	im.Type = elf.Type(uv(1<<16 - 1))
	im.DebugLink = string(take(uv(4096)))
	im.DebugLinkCRC = uint32(uv(1<<32 - 1))
	fl := take(1)
	if short || fl[0]&^1 != 0 {
		return bad()
	}
	im.HasDWARF = fl[0]&1 != 0
	nl := uv(maxCacheLoads)
	for range nl {
		var v [6]uint64
		for i := range v {
			v[i] = uv(^uint64(0))
		}
		if short || v[5] > 1<<32-1 {
			return bad()
		}
		im.Loads = append(im.Loads, Segment{Off: v[0], Vaddr: v[1], Filesz: v[2], Memsz: v[3], Align: v[4], Flags: elf.ProgFlag(v[5])})
	}
	n := uv(MaxSymbols)
	nb := take(uv(1<<32 - 1))
	ents := take(n * CacheEntryBytes)
	if short || len(d) != 0 {
		return bad()
	}
	var names string
	if len(nb) > 0 {
		names = unsafe.String(&nb[0], len(nb))
	}
	var prev uint64
	for i := range int(n) {
		e := ents[i*CacheEntryBytes : (i+1)*CacheEntryBytes]
		addr := binary.LittleEndian.Uint64(e[0:])
		size := binary.LittleEndian.Uint64(e[8:])
		off := uint64(binary.LittleEndian.Uint32(e[24:]))
		nlen := uint64(binary.LittleEndian.Uint32(e[28:]))
		if (i > 0 && addr <= prev) || addr+size < addr || off+nlen > uint64(len(names)) || e[32]&^flagMask != 0 {
			return bad()
		}
		prev = addr
	}
	im.fromCache, im.raw, im.rawNames, im.nraw = true, ents, names, int(n)
	return im, meta, nil
}

// rawAddr and rawSize are symbol i's address and size in raw.
func (im *Image) rawAddr(i int) uint64 {
	return binary.LittleEndian.Uint64(im.raw[i*CacheEntryBytes:])
}

func (im *Image) rawSize(i int) uint64 {
	return binary.LittleEndian.Uint64(im.raw[i*CacheEntryBytes+8:])
}

// rawSymbol is symbol i of raw.
func (im *Image) rawSymbol(i int) Symbol {
	e := im.raw[i*CacheEntryBytes : (i+1)*CacheEntryBytes]
	off := binary.LittleEndian.Uint32(e[24:])
	n := binary.LittleEndian.Uint32(e[28:])
	return Symbol{
		Name:  im.rawNames[off : off+n],
		Addr:  binary.LittleEndian.Uint64(e[0:]),
		Size:  binary.LittleEndian.Uint64(e[8:]),
		limit: binary.LittleEndian.Uint64(e[16:]),
		flags: e[32],
	}
}

// lookupRaw is Lookup on raw.
func (im *Image) lookupRaw(addr uint64) (Symbol, bool) {
	lo, hi := 0, im.nraw
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if im.rawAddr(m) <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for i := lo - 1; i >= 0 && i >= lo-4; i-- {
		if a, size := im.rawAddr(i), im.rawSize(i); addr < a+size || (size == 0 && addr == a) {
			return im.rawSymbol(i), true
		}
	}
	return Symbol{}, false
}

// FromCache says whether the image was read by DecodeCache.
func (im *Image) FromCache() bool { return im.fromCache }
