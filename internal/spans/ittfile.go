package spans

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// The spans file of stax's ITT collector, itt-PID.spans (collector/stax_itt.h): a header,
// then records of a u16 type, a u16 size (the whole record, a multiple of 8), a u32 thread
// id and a body, little-endian. Version 1 (stax's Go package) has a 16-byte header (magic,
// pid); version 2 (the collector) a 40-byte one that adds the process's start time and the
// counts of what the collector could not write, updated in place.
const (
	ITTMagic   = "STAXITT\x01"
	ITTMagicV2 = "STAXITT\x02"
	// ITTHeaderSize is the size of a version 1 header, the least any version has.
	ITTHeaderSize = 16
	// ITTHeaderV2Size is the size of the collector's version 2 header.
	ITTHeaderV2Size = 40
	// maxITTHeader bounds the header size a version 2 file may give.
	maxITTHeader = 4096
	ittName      = 1
	ittTask      = 2
	ittMark      = 3
	ittDrop      = 4
	ittNote      = 5
	// ittUnfinished flags a task still open when its thread or the process ended.
	ittUnfinished = 1
	// maxITTRecord is the largest record the collector writes (a NAME of MaxName bytes).
	maxITTRecord = 16 + MaxName + 8
	// MaxITTNames bounds the names one file may define; spans of names past it are named
	// by their key.
	MaxITTNames = 1 << 16
)

// KindOf returns the kind of source of a spans file named as IsITTName accepts.
func KindOf(path string) string {
	if strings.HasPrefix(filepath.Base(path), "stax-") {
		return KindGo
	}
	return KindITT
}

// ErrITTDamaged says a spans file holds a record that cannot be a record: reading cannot
// find the next one.
var ErrITTDamaged = errors.New("damaged ITT spans record")

// ITTHeader is what a spans file's header says.
type ITTHeader struct {
	Version int
	Pid     uint32
	// Size is the header's size: where the records begin.
	Size int
	// Start is the writing process's start time (field 22 of /proc/PID/stat, clock ticks
	// since boot); 0 when the file does not say (version 1) or the writer did not know.
	Start uint64
	// Dropped counts every task and marker the writer could not write, DROP records
	// included; FailedWrites the writes that failed (and were rolled back), Errno the
	// error of the last. Version 2, updated in place while the process runs.
	Dropped      uint64
	FailedWrites uint32
	Errno        uint32
}

// ParseITTHeader checks a spans file's header and returns the pid it names.
func ParseITTHeader(b []byte) (pid uint32, err error) {
	h, err := ParseITTHeaderFull(b)
	return h.Pid, err
}

// ITTHeaderNeed is how many leading bytes ParseITTHeaderFull needs to read the header
// that begins with b (at least ITTHeaderSize bytes of it).
func ITTHeaderNeed(b []byte) int {
	if len(b) >= 8 && string(b[:8]) == ITTMagicV2 {
		return ITTHeaderV2Size
	}
	return ITTHeaderSize
}

// ParseITTHeaderFull checks a spans file's header, of either version, and returns it.
func ParseITTHeaderFull(b []byte) (ITTHeader, error) {
	var h ITTHeader
	if len(b) < ITTHeaderSize {
		return h, errors.New("ITT spans header cut short")
	}
	le := binary.LittleEndian
	h.Pid = le.Uint32(b[8:])
	switch string(b[:8]) {
	case ITTMagic:
		h.Version, h.Size = 1, ITTHeaderSize
		return h, nil
	case ITTMagicV2:
	default:
		return h, errors.New("not an ITT spans file (bad magic)")
	}
	if len(b) < ITTHeaderV2Size {
		return h, errors.New("ITT spans header cut short")
	}
	h.Version, h.Size = 2, int(le.Uint32(b[12:]))
	if h.Size < ITTHeaderV2Size || h.Size > maxITTHeader || h.Size%8 != 0 {
		return h, fmt.Errorf("%w: header size %d", ErrITTDamaged, h.Size)
	}
	h.Start = le.Uint64(b[16:])
	h.ParseCounts(b)
	return h, nil
}

// ParseCounts reads the counts of a version 2 header from its first ITTHeaderV2Size bytes
// b, read again: the writer updates them in place.
func (h *ITTHeader) ParseCounts(b []byte) {
	if h.Version < 2 || len(b) < ITTHeaderV2Size {
		return
	}
	le := binary.LittleEndian
	h.Dropped, h.FailedWrites, h.Errno = le.Uint64(b[24:]), le.Uint32(b[32:]), le.Uint32(b[36:])
}

// ITTDecoder decodes the records of one spans file, remembering the names they define.
type ITTDecoder struct {
	names map[uint64]string
	// Unmatched counts the task ends without a begin the writer reported; Unfinished the
	// tasks still open when their thread or the process ended (written as ending then, or
	// reported as not written).
	Unmatched, Unfinished uint64
}

// Reset forgets the names (the file was rewritten).
func (d *ITTDecoder) Reset() { d.names = nil }

// Decode reads the whole records at the start of b (records after the header), calling
// emit for each task and marker (Pid and Source left to the caller). It returns the bytes
// consumed (a partial last record is left), the records it could not use (unknown types,
// short bodies), the spans the writer said it dropped, and ErrITTDamaged when a record's
// size cannot be right (consumed then stops before it).
func (d *ITTDecoder) Decode(b []byte, emit func(Span)) (consumed, bad int, dropped uint64, err error) {
	consumed, _, bad, dropped, err = d.decode(b, emit)
	return consumed, bad, dropped, err
}

// Skip reads the records at the start of b as Decode does, counting the tasks and markers
// (n) instead of making spans of them: for a run that keeps no more.
func (d *ITTDecoder) Skip(b []byte) (consumed, n, bad int, dropped uint64, err error) {
	return d.decode(b, nil)
}

// decode is Decode, and Skip when emit is nil.
func (d *ITTDecoder) decode(b []byte, emit func(Span)) (consumed, n, bad int, dropped uint64, err error) {
	le := binary.LittleEndian
	for len(b)-consumed >= 8 {
		r := b[consumed:]
		typ, size, tid := le.Uint16(r), int(le.Uint16(r[2:])), le.Uint32(r[4:])
		if size < 8 || size%8 != 0 || size > maxITTRecord {
			return consumed, n, bad, dropped, fmt.Errorf("%w: size %d at its offset %d", ErrITTDamaged, size, consumed)
		}
		if size > len(r) {
			break
		}
		body := r[8:size]
		consumed += size
		switch {
		case typ == ittName && len(body) >= 8:
			key := le.Uint64(body)
			name := strings.TrimRight(string(body[8:]), "\x00")
			if d.names == nil {
				d.names = map[uint64]string{}
			}
			if _, ok := d.names[key]; ok || len(d.names) < MaxITTNames {
				d.names[key] = CutName(name)
			}
		case typ == ittTask && len(body) >= 32:
			start, end := le.Uint64(body[8:]), le.Uint64(body[16:])
			if end < start {
				bad++
				continue
			}
			if le.Uint32(body[28:])&ittUnfinished != 0 {
				d.Unfinished++
			}
			n++
			if emit != nil {
				emit(Span{Name: d.name(le.Uint64(body)), Tid: tid, Start: start, End: end, Depth: le.Uint32(body[24:])})
			}
		case typ == ittMark && len(body) >= 16:
			n++
			if emit != nil {
				at := le.Uint64(body[8:])
				emit(Span{Name: d.name(le.Uint64(body)), Tid: tid, Start: at, End: at})
			}
		case typ == ittDrop && len(body) >= 8:
			dropped += le.Uint64(body)
		case typ == ittNote && len(body) >= 16:
			d.Unmatched += le.Uint64(body)
			d.Unfinished += le.Uint64(body[8:])
		default:
			bad++
		}
	}
	return consumed, n, bad, dropped, nil
}

func (d *ITTDecoder) name(key uint64) string {
	if n, ok := d.names[key]; ok && n != "" {
		return n
	}
	return fmt.Sprintf("itt_%#x", key)
}

// IsITTName reports whether path names a spans file of stax's ITT collector,
// itt-PID.spans, or of stax's Go package (pkg/stax), stax-PID.spans (the same format),
// and returns the pid.
func IsITTName(path string) (pid int, ok bool) {
	base := filepath.Base(path)
	rest, found := strings.CutPrefix(base, "itt-")
	if !found {
		rest, found = strings.CutPrefix(base, "stax-")
	}
	if !found {
		return 0, false
	}
	rest, found = strings.CutSuffix(rest, ".spans")
	if !found {
		return 0, false
	}
	return number(rest)
}

// CountITT counts the tasks and markers of the whole records at the start of b, and the
// drops its DROP records report, without decoding them. It returns the count, the bytes
// consumed, and ErrITTDamaged where a record's size cannot be right.
func CountITT(b []byte) (n uint64, consumed int, err error) {
	le := binary.LittleEndian
	for len(b)-consumed >= 8 {
		r := b[consumed:]
		typ, size := le.Uint16(r), int(le.Uint16(r[2:]))
		if size < 8 || size%8 != 0 || size > maxITTRecord {
			return n, consumed, fmt.Errorf("%w: size %d at its offset %d", ErrITTDamaged, size, consumed)
		}
		if size > len(r) {
			break
		}
		switch {
		case typ == ittTask || typ == ittMark:
			n++
		case typ == ittDrop && size >= 16:
			n += le.Uint64(r[8:])
		}
		consumed += size
	}
	return n, consumed, nil
}
