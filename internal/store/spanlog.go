package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/stax-profiler/stax/internal/spans"
)

// A run's spans file holds the records of its spans, appended while it records, so that a
// checkpoint writes only the spans that are new: the spans of a recording only grow, and
// the records of the first spans, their names numbered in the order the spans first use
// them, never change as more come. The run's file names the spans' names and says how many
// of its spans are here, in how many bytes, with their CRC-32C (its layout's span_file_*);
// bytes past those (an append cut short by a crash) are not read.
//
// Layout: the 16-byte header (magic "STAXSPN\x00", version u32, zero u32), then the span
// records as in the spans section (spans.go).
const (
	spanLogMagic      = "STAXSPN\x00"
	spanLogVersion    = 1
	spanLogHeaderSize = 16
)

// SpanLogPath is where the run with id keeps its spans.
func SpanLogPath(id string) string { return filepath.Join(Dir(), id+".spanlog") }

// spanLogPathOf is the spans file beside a run's file.
func spanLogPathOf(path string) string { return strings.TrimSuffix(path, ".stax") + ".spanlog" }

// SpanLog appends the records of a recording's spans to its spans file, and says which
// are there. A Run with a SpanLog, saved with SaveStored, lists those spans by reference.
type SpanLog struct {
	f     *os.File
	names spanNames // the names of the spans in the file, numbered
	spans int       // the file holds the records of the first spans of the List
	bytes int64     // after the header
	crc   uint32    // of those bytes
	err   error
}

// CreateSpanLog creates a run's spans file (it must not exist).
func CreateSpanLog(path string) (*SpanLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create spans file: %w", err)
	}
	var hdr [spanLogHeaderSize]byte
	copy(hdr[:], spanLogMagic)
	binary.LittleEndian.PutUint32(hdr[8:], spanLogVersion)
	if _, err := f.Write(hdr[:]); err != nil {
		f.Close()
		return nil, fmt.Errorf("write spans file: %w", err)
	}
	return &SpanLog{f: f}, nil
}

// Append writes the records of the spans of sp not yet in the file, in one write. sp must
// be a later List of the spans the file holds (the same Set's Snapshot, say). After an
// error the log takes no more.
func (l *SpanLog) Append(sp spans.List) error {
	if l.err != nil {
		return l.err
	}
	if sp.Len() < l.spans {
		return fmt.Errorf("write spans: %d spans, the spans file holds %d", sp.Len(), l.spans)
	}
	all := sp.Names()
	b := make([]byte, 0, (sp.Len()-l.spans)*spanRecordSize)
	for id, s := range sp.NamedFrom(l.spans) {
		b = appendSpan(b, l.names.number(id, all), s)
	}
	if _, err := l.f.WriteAt(b, spanLogHeaderSize+l.bytes); err != nil {
		l.err = fmt.Errorf("write spans: %w", err)
		return l.err
	}
	l.spans = sp.Len()
	l.bytes += int64(len(b))
	l.crc = crc32.Update(l.crc, castagnoli, b)
	return nil
}

// Spans is how many spans the file holds.
func (l *SpanLog) Spans() int { return l.spans }

// Sync makes what was appended durable.
func (l *SpanLog) Sync() error { return l.f.Sync() }

// Close closes the file.
func (l *SpanLog) Close() error { return l.f.Close() }

// readSpanFile reads the records the layout says the spans file at path holds, checking
// their checksum.
func readSpanFile(path string, l *layout) ([]byte, error) {
	if path == "" {
		return nil, errors.New("read spans: the run's spans are in its spans file, beside the run's file in the run store; open the run from there")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read spans: %w (the run's other data still opens)", err)
	}
	defer f.Close()
	var hdr [spanLogHeaderSize]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil || string(hdr[:8]) != spanLogMagic {
		return nil, fmt.Errorf("read spans %s: not a stax spans file (the run's other data still opens)", path)
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != spanLogVersion {
		return nil, fmt.Errorf("read spans %s: version %d is not supported (a newer stax wrote it)", path, v)
	}
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read spans: %w", err)
	}
	if info.Size()-spanLogHeaderSize < l.SpanFileBytes {
		return nil, fmt.Errorf("read spans %s: %d bytes of spans, the run lists %d (the file is cut short; the run's other data still opens)",
			path, max(info.Size()-spanLogHeaderSize, 0), l.SpanFileBytes)
	}
	b := make([]byte, l.SpanFileBytes)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("read spans %s: %w", path, err)
	}
	if crc32.Checksum(b, castagnoli) != l.SpanFileCRC {
		return nil, fmt.Errorf("read spans %s: checksum mismatch (the file is damaged; the run's other data still opens)", path)
	}
	return b, nil
}
