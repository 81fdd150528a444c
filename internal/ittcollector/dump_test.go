package ittcollector

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"

	"github.com/stax-profiler/stax/internal/jit/jitformat"
)

// A deliberately small, strict jitdump reader used only to check what the
// collector writes: every size must be exact.

const (
	recCodeLoad  = jitformat.RecCodeLoad
	recDebugInfo = jitformat.RecCodeDebugInfo
	recClose     = jitformat.RecCodeClose
	recMethodID  = jitformat.RecStaxMethodID
	recInline    = jitformat.RecStaxInline
	recUnload    = jitformat.RecStaxCodeUnload
)

type dumpHeader struct {
	Magic, Version, TotalSize, ElfMach, Pad, Pid uint32
	Timestamp, Flags                             uint64
	// stax's extension: the functions not written, the failed writes, the last errno.
	LostFunctions       uint64
	FailedWrites, Errno uint32
}

type record struct {
	ID   uint32
	TS   uint64
	Body []byte // after the 16-byte prefix
	Off  int
	// decoded, by ID
	Load   *codeLoad
	Debug  *debugInfo
	Method *methodID
	Inline *inlineRange
	Unload *unloadRange
}

type codeLoad struct {
	Pid, Tid               uint32
	VMA, Addr, Size, Index uint64
	Name                   string
	Code                   []byte
}

type debugEntry struct {
	Addr          uint64
	Line, Discrim uint32
	File          string
}

type debugInfo struct {
	Addr    uint64
	Entries []debugEntry
}

type methodID struct {
	Addr, Size uint64
	ID, Pad    uint32
}

type inlineRange struct {
	ID, Parent   uint32
	Start, Size  uint64
	Name, Source string
}

type unloadRange struct {
	Addr, Size uint64
}

var le = binary.LittleEndian

func readDump(path string) (dumpHeader, []record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return dumpHeader{}, nil, err
	}
	return parseDump(data)
}

func parseDump(data []byte) (dumpHeader, []record, error) {
	var h dumpHeader
	if len(data) < 40 {
		return h, nil, fmt.Errorf("file of %d bytes has no header", len(data))
	}
	h = dumpHeader{
		Magic: le.Uint32(data[0:]), Version: le.Uint32(data[4:]), TotalSize: le.Uint32(data[8:]),
		ElfMach: le.Uint32(data[12:]), Pad: le.Uint32(data[16:]), Pid: le.Uint32(data[20:]),
		Timestamp: le.Uint64(data[24:]), Flags: le.Uint64(data[32:]),
	}
	// The collector's header extension: what it could not write.
	if h.TotalSize != 64 || len(data) < 64 || le.Uint32(data[40:]) != 0x4C585453 || le.Uint32(data[44:]) != 24 {
		return h, nil, fmt.Errorf("header size %d, without stax's extension", h.TotalSize)
	}
	h.LostFunctions, h.FailedWrites, h.Errno = le.Uint64(data[48:]), le.Uint32(data[56:]), le.Uint32(data[60:])
	var recs []record
	for off := 64; off < len(data); {
		if len(data)-off < 16 {
			return h, recs, fmt.Errorf("truncated prefix at %d", off)
		}
		id, size := le.Uint32(data[off:]), int(le.Uint32(data[off+4:]))
		if size < 16 || size > len(data)-off {
			return h, recs, fmt.Errorf("record %d at %d: bad size %d", id, off, size)
		}
		r := record{ID: id, TS: le.Uint64(data[off+8:]), Body: data[off+16 : off+size], Off: off}
		if err := decode(&r); err != nil {
			return h, recs, fmt.Errorf("record %d at %d: %w", id, off, err)
		}
		recs = append(recs, r)
		off += size
	}
	return h, recs, nil
}

// cstr returns the NUL-terminated string at b and the rest after the NUL.
func cstr(b []byte) (string, []byte, error) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", nil, fmt.Errorf("unterminated string")
	}
	return string(b[:i]), b[i+1:], nil
}

func decode(r *record) error {
	b := r.Body
	switch r.ID {
	case recCodeLoad:
		if len(b) < 40 {
			return fmt.Errorf("short code load")
		}
		l := &codeLoad{Pid: le.Uint32(b), Tid: le.Uint32(b[4:]), VMA: le.Uint64(b[8:]),
			Addr: le.Uint64(b[16:]), Size: le.Uint64(b[24:]), Index: le.Uint64(b[32:])}
		name, rest, err := cstr(b[40:])
		if err != nil {
			return err
		}
		if uint64(len(rest)) != l.Size {
			return fmt.Errorf("code size %d but %d bytes follow the name", l.Size, len(rest))
		}
		l.Name, l.Code = name, rest
		r.Load = l
	case recDebugInfo:
		if len(b) < 16 {
			return fmt.Errorf("short debug info")
		}
		d := &debugInfo{Addr: le.Uint64(b)}
		n := le.Uint64(b[8:])
		rest := b[16:]
		for i := uint64(0); i < n; i++ {
			if len(rest) < 16 {
				return fmt.Errorf("debug entry %d truncated", i)
			}
			e := debugEntry{Addr: le.Uint64(rest), Line: le.Uint32(rest[8:]), Discrim: le.Uint32(rest[12:])}
			var err error
			e.File, rest, err = cstr(rest[16:])
			if err != nil {
				return err
			}
			d.Entries = append(d.Entries, e)
		}
		if len(rest) != 0 {
			return fmt.Errorf("%d bytes after %d debug entries", len(rest), n)
		}
		r.Debug = d
	case recClose:
		if len(b) != 0 {
			return fmt.Errorf("close record with %d bytes of body", len(b))
		}
	case recMethodID:
		if len(b) != 24 {
			return fmt.Errorf("method id body of %d bytes", len(b))
		}
		r.Method = &methodID{Addr: le.Uint64(b), Size: le.Uint64(b[8:]), ID: le.Uint32(b[16:]), Pad: le.Uint32(b[20:])}
	case recInline:
		if len(b) < 24 {
			return fmt.Errorf("short inline record")
		}
		in := &inlineRange{ID: le.Uint32(b), Parent: le.Uint32(b[4:]), Start: le.Uint64(b[8:]), Size: le.Uint64(b[16:])}
		name, rest, err := cstr(b[24:])
		if err != nil {
			return err
		}
		src, rest, err := cstr(rest)
		if err != nil {
			return err
		}
		if len(rest) != 0 {
			return fmt.Errorf("%d bytes after inline strings", len(rest))
		}
		in.Name, in.Source = name, src
		r.Inline = in
	case recUnload:
		if len(b) != 16 {
			return fmt.Errorf("unload body of %d bytes", len(b))
		}
		r.Unload = &unloadRange{Addr: le.Uint64(b), Size: le.Uint64(b[8:])}
	default:
		return fmt.Errorf("unexpected record id")
	}
	return nil
}

func recordIDs(recs []record) []uint32 {
	ids := make([]uint32, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	return ids
}
