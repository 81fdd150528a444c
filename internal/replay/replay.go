// Package replay records the perf records a recording reads, with the CPU of the ring each
// came from, and plays them back as an event source, so the recorder can be driven and
// tested without a kernel. A capture is the magic "STAXCAP1" followed by frames of
// (cpu uint32, length uint32, record bytes), little-endian.
package replay

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

const magic = "STAXCAP1"

// Bounds on what a capture may hold: perf records are at most 64 KiB (their size is a
// u16), and a capture at most a million records.
const (
	maxRecord  = 1 << 16
	maxRecords = 1 << 20
	maxCPU     = 1 << 16
)

// Record is one perf record and the CPU ring it was read from.
type Record struct {
	CPU  int
	Data []byte
}

// Writer appends records to a capture. Safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	err error
}

// Create starts a capture at path, a new file that only its owner can read (a capture holds
// raw copies of the recorded programs' stacks, and whatever secrets they held): it is not
// created through a symbolic link, nor written over an existing file.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create capture: %w", err)
	}
	w := &Writer{f: f, w: bufio.NewWriter(f)}
	w.w.WriteString(magic)
	return w, nil
}

// Add appends one record.
func (w *Writer) Add(cpu int, rec []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	var hdr [8]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(cpu))
	binary.LittleEndian.PutUint32(hdr[4:], uint32(len(rec)))
	w.w.Write(hdr[:])
	_, w.err = w.w.Write(rec)
}

// Close flushes and closes the capture.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.w.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.err
	}
	return err
}

// Decode reads a whole capture, checking every bound.
func Decode(r io.Reader) ([]Record, error) {
	br := bufio.NewReader(r)
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(br, head); err != nil || string(head) != magic {
		return nil, errors.New("read capture: not a stax capture (bad magic)")
	}
	var recs []Record
	for off := int64(len(magic)); ; {
		var hdr [8]byte
		n, err := io.ReadFull(br, hdr[:])
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read capture: frame header at byte %d cut short after %d bytes", off, n)
		}
		cpu, size := binary.LittleEndian.Uint32(hdr[:]), binary.LittleEndian.Uint32(hdr[4:])
		if cpu >= maxCPU || size > maxRecord {
			return nil, fmt.Errorf("read capture: frame at byte %d: cpu %d, %d bytes: out of bounds", off, cpu, size)
		}
		if len(recs) == maxRecords {
			return nil, fmt.Errorf("read capture: more than %d records", maxRecords)
		}
		data := make([]byte, size)
		if _, err := io.ReadFull(br, data); err != nil {
			return nil, fmt.Errorf("read capture: record at byte %d cut short", off)
		}
		recs = append(recs, Record{CPU: int(cpu), Data: data})
		off += 8 + int64(size)
	}
}

// Source plays records back, a batch per Read, as the rings would deliver them.
type Source struct {
	mu    sync.Mutex
	recs  []Record
	next  int
	batch int
	done  chan struct{}
	once  sync.Once
}

// NewSource plays recs back, batch records per Read (at least 1).
func NewSource(recs []Record, batch int) *Source {
	return &Source{recs: recs, batch: max(batch, 1), done: make(chan struct{})}
}

// Open plays back the capture at path.
func Open(path string, batch int) (*Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open capture: %w", err)
	}
	defer f.Close()
	recs, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return NewSource(recs, batch), nil
}

// Read delivers the next batch of records.
func (s *Source) Read(fn func(cpu int, rec []byte)) error {
	s.mu.Lock()
	end := min(s.next+s.batch, len(s.recs))
	batch := s.recs[s.next:end]
	s.next = end
	if end == len(s.recs) {
		s.once.Do(func() { close(s.done) })
	}
	s.mu.Unlock()
	for _, r := range batch {
		fn(r.CPU, r.Data)
	}
	return nil
}

// Done is closed once every record has been delivered.
func (s *Source) Done() <-chan struct{} { return s.done }

// Wait returns at once while records remain, as a ring past its watermark would.
func (s *Source) Wait(timeout time.Duration) {
	select {
	case <-s.done:
		time.Sleep(min(timeout, time.Millisecond))
	default:
	}
}

// Enable, Disable and Close do nothing: a capture has no events to switch.
func (s *Source) Enable() error { return nil }
func (s *Source) Disable()      {}
func (s *Source) Close()        {}
