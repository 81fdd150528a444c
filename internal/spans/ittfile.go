package spans

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// The spans file of stax's ITT collector, itt-PID.spans (collector/stax_itt.h): a 16-byte
// header (magic, pid), then records of a u16 type, a u16 size (the whole record, a
// multiple of 8), a u32 thread id and a body, little-endian.
const (
	ITTMagic      = "STAXITT\x01"
	ITTHeaderSize = 16
	ittName       = 1
	ittTask       = 2
	ittMark       = 3
	ittDrop       = 4
	ittNote       = 5
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

// ParseITTHeader checks a spans file's header and returns the pid it names.
func ParseITTHeader(b []byte) (pid uint32, err error) {
	if len(b) < ITTHeaderSize {
		return 0, errors.New("ITT spans header cut short")
	}
	if string(b[:8]) != ITTMagic {
		return 0, errors.New("not an ITT spans file (bad magic)")
	}
	return binary.LittleEndian.Uint32(b[8:]), nil
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
