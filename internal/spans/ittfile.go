package spans

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/stax-profiler/stax/internal/collectorabi"
)

// The spans file of stax's ITT collector, itt-PID.spans, and of stax's Go package: its
// format is defined in package collectorabi. Version 1 (stax's Go package) has a 16-byte
// header (magic, pid); version 2 (the collector) a 40-byte one that adds the process's
// start time and the counts of what the collector could not write, updated in place.
const (
	ITTMagic   = collectorabi.SpansMagicV1
	ITTMagicV2 = collectorabi.SpansMagicV2
	// ITTHeaderSize is the size of a version 1 header, the least any version has.
	ITTHeaderSize = collectorabi.HeaderV1Size
	// ITTHeaderV2Size is the size of the collector's version 2 header.
	ITTHeaderV2Size = collectorabi.HeaderV2Size
	// maxITTHeader bounds the header size a version 2 file may give.
	maxITTHeader  = 4096
	ittName       = collectorabi.RecName
	ittTask       = collectorabi.RecTask
	ittMark       = collectorabi.RecMark
	ittDrop       = collectorabi.RecDrop
	ittNote       = collectorabi.RecNote
	ittUnfinished = collectorabi.TaskUnfinished
	// maxITTRecord is the largest record read, a little over the largest written (a NAME of
	// MaxName bytes).
	maxITTRecord = 16 + MaxName + 8
	// MaxITTNames bounds the names one file may define; spans of names past it are named
	// by their key.
	MaxITTNames = 1 << 16
)

// KindOf returns the kind of source of a spans file named as IsITTName accepts.
func KindOf(path string) string {
	if strings.HasPrefix(filepath.Base(path), collectorabi.GoSpansPrefix) {
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
	h.Pid = le.Uint32(b[collectorabi.HdrPid:])
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
	h.Version, h.Size = 2, int(le.Uint32(b[collectorabi.HdrSize:]))
	if h.Size < ITTHeaderV2Size || h.Size > maxITTHeader || h.Size%8 != 0 {
		return h, fmt.Errorf("%w: header size %d", ErrITTDamaged, h.Size)
	}
	h.Start = le.Uint64(b[collectorabi.HdrStart:])
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
	h.Dropped = le.Uint64(b[collectorabi.HdrDropped:])
	h.FailedWrites, h.Errno = le.Uint32(b[collectorabi.HdrFailedWrites:]), le.Uint32(b[collectorabi.HdrErrno:])
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
	rest, found := strings.CutPrefix(base, collectorabi.ITTSpansPrefix)
	if !found {
		rest, found = strings.CutPrefix(base, collectorabi.GoSpansPrefix)
	}
	if !found {
		return 0, false
	}
	rest, found = strings.CutSuffix(rest, collectorabi.SpansSuffix)
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
