package jit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/stax-profiler/stax/internal/jit/jitformat"
)

// Magic is the jitdump magic number, "JiTD" as a big-endian u32.
const Magic = jitformat.Magic

// HeaderSize is the size of a version 1 jitdump header.
const HeaderSize = jitformat.HeaderSize

// RecordPrefixSize is the size of the prefix every record starts with.
const RecordPrefixSize = jitformat.RecordPrefixSize

// FlagArchTimestamp is JITDUMP_FLAGS_ARCH_TIMESTAMP: the file's timestamps
// come from the CPU's time-stamp counter rather than CLOCK_MONOTONIC.
const FlagArchTimestamp = jitformat.FlagArchTimestamp

// Bounds applied to sizes read from jitdump files.
const (
	// MaxHeaderSize bounds the header's total_size.
	MaxHeaderSize = 1 << 20
	// MaxRecordSize bounds a record's total_size.
	MaxRecordSize = jitformat.MaxRecordSize
	// MaxUnwindSize bounds the unwinding data kept for one function.
	MaxUnwindSize = 1 << 20
	// MaxNameSize bounds a function, file or inline name.
	MaxNameSize = 64 << 10
)

// RecordID identifies the kind of a jitdump record.
type RecordID uint32

// Record ids: perf's standard ones and stax's extensions.
const (
	RecCodeLoad          RecordID = jitformat.RecCodeLoad
	RecCodeMove          RecordID = jitformat.RecCodeMove
	RecCodeDebugInfo     RecordID = jitformat.RecCodeDebugInfo
	RecCodeClose         RecordID = jitformat.RecCodeClose
	RecCodeUnwindingInfo RecordID = jitformat.RecCodeUnwindingInfo
	RecStaxMethodID      RecordID = jitformat.RecStaxMethodID
	RecStaxInline        RecordID = jitformat.RecStaxInline
	RecStaxCodeUnload    RecordID = jitformat.RecStaxCodeUnload
)

// String returns the record id's name as the specification spells it.
func (id RecordID) String() string {
	switch id {
	case RecCodeLoad:
		return "CODE_LOAD"
	case RecCodeMove:
		return "CODE_MOVE"
	case RecCodeDebugInfo:
		return "CODE_DEBUG_INFO"
	case RecCodeClose:
		return "CODE_CLOSE"
	case RecCodeUnwindingInfo:
		return "CODE_UNWINDING_INFO"
	case RecStaxMethodID:
		return "STAX_METHOD_ID"
	case RecStaxInline:
		return "STAX_INLINE"
	case RecStaxCodeUnload:
		return "STAX_CODE_UNLOAD"
	}
	return fmt.Sprintf("record(%d)", uint32(id))
}

// Known reports whether the id is one this package decodes.
func (id RecordID) Known() bool {
	return id <= RecCodeUnwindingInfo || (id >= RecStaxMethodID && id <= RecStaxCodeUnload)
}

// Header is a jitdump file header.
type Header struct {
	Order     binary.ByteOrder
	Version   uint32
	TotalSize uint32
	ElfMach   uint32
	Pid       uint32
	Timestamp uint64
	Flags     uint64
}

// Errors returned by the parsers; wrapped with context.
var (
	ErrTruncated     = errors.New("truncated")
	ErrBadMagic      = errors.New("bad magic")
	ErrArchTimestamp = errors.New("file uses architecture (TSC) timestamps, not CLOCK_MONOTONIC")
	ErrBadRecord     = errors.New("malformed record")
)

// ParseHeader decodes a jitdump header from the start of b. The byte order
// is inferred from the magic. A header that announces TSC timestamps is
// rejected with ErrArchTimestamp. The returned header's TotalSize is where
// the first record starts.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, fmt.Errorf("parse jitdump header: %w: %d of %d bytes", ErrTruncated, len(b), HeaderSize)
	}
	switch {
	case binary.LittleEndian.Uint32(b) == Magic:
		h.Order = binary.LittleEndian
	case binary.BigEndian.Uint32(b) == Magic:
		h.Order = binary.BigEndian
	default:
		return h, fmt.Errorf("parse jitdump header: %w %#x", ErrBadMagic, binary.LittleEndian.Uint32(b))
	}
	var f jitformat.Header
	jitformat.Decode(h.Order, b, &f)
	h.Version, h.TotalSize, h.ElfMach, h.Pid, h.Timestamp, h.Flags = f.Version, f.TotalSize, f.ElfMach, f.Pid, f.Timestamp, f.Flags
	if h.TotalSize < HeaderSize || h.TotalSize > MaxHeaderSize {
		return h, fmt.Errorf("parse jitdump header: %w: header size %d", ErrBadRecord, h.TotalSize)
	}
	if h.Flags&FlagArchTimestamp != 0 {
		return h, fmt.Errorf("parse jitdump header: %w", ErrArchTimestamp)
	}
	return h, nil
}

// ParseStaxLost reads stax's header extension (jitformat.StaxLost, the counts of what stax's
// collector could not write) from the bytes after the 40-byte header, in the file's byte
// order; ok is false when they do not hold one.
func ParseStaxLost(o binary.ByteOrder, b []byte) (l jitformat.StaxLost, ok bool) {
	if _, ok = jitformat.Decode(o, b, &l); !ok || l.Magic != jitformat.StaxLostMagic || l.Size < jitformat.StaxLostSize {
		return jitformat.StaxLost{}, false
	}
	return l, true
}

// CodeLoad is a CODE_LOAD record.
type CodeLoad struct {
	Pid, Tid  uint32
	VMA       uint64
	CodeAddr  uint64
	CodeSize  uint64
	CodeIndex uint64
	Name      string
	Code      []byte // a copy, owned by the record
}

// CodeMove is a CODE_MOVE record.
type CodeMove struct {
	Pid, Tid    uint32
	VMA         uint64
	OldCodeAddr uint64
	NewCodeAddr uint64
	CodeSize    uint64
	CodeIndex   uint64
}

// DebugEntry is one line-table entry of a CODE_DEBUG_INFO record, with the
// "same file as before" shorthand already expanded.
type DebugEntry struct {
	Addr    uint64
	Line    uint32
	Discrim uint32
	File    string
}

// DebugInfo is a CODE_DEBUG_INFO record.
type DebugInfo struct {
	CodeAddr uint64
	Entries  []DebugEntry
}

// UnwindingInfo is a CODE_UNWINDING_INFO record. Data holds at most
// MaxUnwindSize bytes; Truncated says whether more were dropped.
type UnwindingInfo struct {
	UnwindingSize  uint64
	EHFrameHdrSize uint64
	MappedSize     uint64
	Data           []byte
	Truncated      bool
}

// MethodIDRecord is a STAX_METHOD_ID record.
type MethodIDRecord struct {
	CodeAddr uint64
	CodeSize uint64
	MethodID uint32
}

// InlineRecord is a STAX_INLINE record.
type InlineRecord struct {
	MethodID       uint32
	ParentMethodID uint32
	Start          uint64
	Size           uint64
	Name           string
	SourceFile     string
}

// CodeUnload is a STAX_CODE_UNLOAD record.
type CodeUnload struct {
	CodeAddr uint64
	CodeSize uint64
}

// Record is one decoded jitdump record. Exactly one of the pointer fields
// is set for known ids with a body; none for CODE_CLOSE and unknown ids.
type Record struct {
	ID        RecordID
	Size      uint32 // total_size, prefix included
	Timestamp uint64

	Load     *CodeLoad
	Move     *CodeMove
	Debug    *DebugInfo
	Unwind   *UnwindingInfo
	MethodID *MethodIDRecord
	Inline   *InlineRecord
	Unload   *CodeUnload
}

// ParseRecords decodes the whole records at the start of b, which must
// begin at a record boundary, appending them to out. It returns the
// records, the number of bytes they took, and the total size of the next
// record when b ends inside it (0 otherwise), so the caller knows how much
// to read. A partial trailing record is not consumed. A record whose size
// fields are impossible stops parsing with an error; the records before it
// are returned and consumed.
func ParseRecords(order binary.ByteOrder, b []byte, out []Record) (recs []Record, consumed int, need int, err error) {
	recs = out
	for {
		rest := b[consumed:]
		if len(rest) < RecordPrefixSize {
			if len(rest) > 0 {
				need = RecordPrefixSize
			}
			return recs, consumed, need, nil
		}
		var p jitformat.RecordPrefix
		jitformat.Decode(order, rest, &p)
		id, size := RecordID(p.ID), p.TotalSize
		if size < RecordPrefixSize || size > MaxRecordSize {
			return recs, consumed, 0, fmt.Errorf("parse jitdump record %v at offset %d: %w: total_size %d", id, consumed, ErrBadRecord, size)
		}
		if uint64(len(rest)) < uint64(size) {
			return recs, consumed, int(size), nil
		}
		r := Record{ID: id, Size: size, Timestamp: p.Timestamp}
		if err := decodeBody(order, &r, rest[RecordPrefixSize:size]); err != nil {
			return recs, consumed, 0, fmt.Errorf("parse jitdump record %v at offset %d: %w", id, consumed, err)
		}
		recs = append(recs, r)
		consumed += int(size)
	}
}

// reader decodes fixed fields from a record body.
type reader struct {
	o   binary.ByteOrder
	b   []byte
	err error
}

// fixed decodes the fixed part of a record body, or of a debug entry, into v.
func fixed[T jitformat.Layout](r *reader, v *T) {
	if r.err != nil {
		return
	}
	rest, ok := jitformat.Decode(r.o, r.b, v)
	if !ok {
		r.fail()
		return
	}
	r.b = rest
}

// entryName reads a debug entry's file name. V8 has been seen writing a freed buffer there,
// whose first bytes (allocator pointers) may hold a NUL: so the terminator taken is the
// first NUL after which the next entry's address lies near the code (or, for the last
// entry, the end of the record), falling back to the first NUL.
func (r *reader) entryName(codeAddr uint64, last bool) []byte {
	if r.err != nil {
		return nil
	}
	limit := min(len(r.b), MaxNameSize+1)
	for i := 0; i < limit; i++ {
		if r.b[i] != 0 {
			continue
		}
		rest := r.b[i+1:]
		ok := false
		switch {
		case last:
			ok = len(bytes.TrimRight(rest, "\x00")) == 0
		case len(rest) >= 8:
			next := r.o.Uint64(rest) // the next entry's Addr
			ok = next >= codeAddr && next-codeAddr < 1<<24
		}
		if ok {
			s := r.b[:i]
			r.b = rest
			return s
		}
	}
	return r.cstr()
}

// plausibleName reports whether a file name is text: valid UTF-8 without control bytes.
func plausibleName(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// cstr reads a NUL-terminated string of at most MaxNameSize bytes.
func (r *reader) cstr() []byte {
	if r.err != nil {
		return nil
	}
	i := bytes.IndexByte(r.b, 0)
	if i < 0 {
		if r.err == nil {
			r.err = fmt.Errorf("%w: unterminated string", ErrBadRecord)
		}
		return nil
	}
	s := r.b[:i]
	r.b = r.b[i+1:]
	if len(s) > MaxNameSize {
		s = s[:MaxNameSize]
	}
	return s
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("%w: body too short", ErrBadRecord)
	}
}

func decodeBody(o binary.ByteOrder, rec *Record, body []byte) error {
	r := &reader{o: o, b: body}
	switch rec.ID {
	case RecCodeLoad:
		var f jitformat.CodeLoad
		fixed(r, &f)
		l := &CodeLoad{Pid: f.Pid, Tid: f.Tid, VMA: f.VMA, CodeAddr: f.CodeAddr, CodeSize: f.CodeSize, CodeIndex: f.CodeIndex}
		name := r.cstr()
		if r.err != nil {
			return r.err
		}
		if l.CodeSize > uint64(len(r.b)) {
			return fmt.Errorf("%w: code_size %d exceeds the %d bytes left", ErrBadRecord, l.CodeSize, len(r.b))
		}
		if l.CodeAddr+l.CodeSize < l.CodeAddr {
			return fmt.Errorf("%w: code range %#x+%#x wraps", ErrBadRecord, l.CodeAddr, l.CodeSize)
		}
		l.Name = string(name)
		l.Code = bytes.Clone(r.b[:l.CodeSize])
		rec.Load = l
	case RecCodeMove:
		var f jitformat.CodeMove
		fixed(r, &f)
		m := &CodeMove{Pid: f.Pid, Tid: f.Tid, VMA: f.VMA, OldCodeAddr: f.OldCodeAddr, NewCodeAddr: f.NewCodeAddr, CodeSize: f.CodeSize, CodeIndex: f.CodeIndex}
		if r.err != nil {
			return r.err
		}
		if m.NewCodeAddr+m.CodeSize < m.NewCodeAddr {
			return fmt.Errorf("%w: code range %#x+%#x wraps", ErrBadRecord, m.NewCodeAddr, m.CodeSize)
		}
		rec.Move = m
	case RecCodeDebugInfo:
		var f jitformat.DebugInfo
		fixed(r, &f)
		d := &DebugInfo{CodeAddr: f.CodeAddr}
		n := f.NrEntry
		if r.err != nil {
			return r.err
		}
		// Each entry takes at least its fixed part and a NUL.
		if n > uint64(len(r.b))/(jitformat.DebugEntrySize+1) {
			return fmt.Errorf("%w: nr_entry %d does not fit in %d bytes", ErrBadRecord, n, len(r.b))
		}
		d.Entries = make([]DebugEntry, 0, n)
		prev := ""
		for i := range n {
			var fe jitformat.DebugEntry
			fixed(r, &fe)
			e := DebugEntry{Addr: fe.Addr, Line: fe.Line, Discrim: fe.Discrim}
			name := r.entryName(d.CodeAddr, i == n-1)
			if r.err != nil {
				return r.err
			}
			if !(len(name) == 1 && name[0] == 0xff) && !plausibleName(name) {
				name = nil // garbage: the reader of the table may know the file otherwise
			}
			if len(name) == 1 && name[0] == 0xff {
				e.File = prev
			} else {
				if string(name) != prev {
					prev = string(name)
				}
				e.File = prev
			}
			d.Entries = append(d.Entries, e)
		}
		rec.Debug = d
	case RecCodeClose:
	case RecCodeUnwindingInfo:
		var f jitformat.UnwindingInfo
		fixed(r, &f)
		u := &UnwindingInfo{UnwindingSize: f.UnwindingSize, EHFrameHdrSize: f.EHFrameHdrSize, MappedSize: f.MappedSize}
		if r.err != nil {
			return r.err
		}
		if u.UnwindingSize > uint64(len(r.b)) {
			return fmt.Errorf("%w: unwinding_size %d exceeds the %d bytes left", ErrBadRecord, u.UnwindingSize, len(r.b))
		}
		if u.EHFrameHdrSize > u.UnwindingSize {
			return fmt.Errorf("%w: eh_frame_hdr_size %d exceeds unwinding_size %d", ErrBadRecord, u.EHFrameHdrSize, u.UnwindingSize)
		}
		n := u.UnwindingSize
		if n > MaxUnwindSize {
			n = MaxUnwindSize
			u.Truncated = true
		}
		u.Data = bytes.Clone(r.b[:n])
		rec.Unwind = u
	case RecStaxMethodID:
		var f jitformat.StaxMethodID
		fixed(r, &f)
		m := &MethodIDRecord{CodeAddr: f.CodeAddr, CodeSize: f.CodeSize, MethodID: f.MethodID}
		if r.err != nil {
			return r.err
		}
		rec.MethodID = m
	case RecStaxInline:
		var f jitformat.StaxInline
		fixed(r, &f)
		in := &InlineRecord{MethodID: f.MethodID, ParentMethodID: f.ParentMethodID, Start: f.Start, Size: f.Size}
		name := r.cstr()
		file := r.cstr()
		if r.err != nil {
			return r.err
		}
		in.Name, in.SourceFile = string(name), string(file)
		rec.Inline = in
	case RecStaxCodeUnload:
		var f jitformat.StaxCodeUnload
		fixed(r, &f)
		u := &CodeUnload{CodeAddr: f.CodeAddr, CodeSize: f.CodeSize}
		if r.err != nil {
			return r.err
		}
		rec.Unload = u
	}
	return nil
}
