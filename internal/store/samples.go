package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/stax-profiler/stax/internal/agg"
)

// A run's samples file holds the sealed chunks of its sample series, appended while it
// records, so that the recorder keeps only recent samples in memory and a checkpoint writes
// only what is new. The run's file lists the chunks it counts, with their offsets here.
//
// Layout: the 16-byte header (magic "STAXSMP\x00", version u32, zero u32), then one record
// per chunk: payload length u32, CRC-32C of the payload u32, and the payload: base, min and
// max times (u64), sample count (u32), then the chunk's bytes. A chunk's Ref is its
// record's offset. A record cut short by a crash is never listed by the run's file.
const (
	samplesMagic      = "STAXSMP\x00"
	samplesVersion    = 1
	samplesHeaderSize = 16
	chunkHeaderSize   = 8 + 28
)

// SamplesPath is where the run with id keeps its samples.
func SamplesPath(id string) string { return filepath.Join(Dir(), id+".samples") }

// SampleLog appends chunks to a samples file.
type SampleLog struct {
	f   *os.File
	off int64
}

// CreateSampleLog creates a run's samples file (it must not exist).
func CreateSampleLog(path string) (*SampleLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create samples file: %w", err)
	}
	var hdr [samplesHeaderSize]byte
	copy(hdr[:], samplesMagic)
	binary.LittleEndian.PutUint32(hdr[8:], samplesVersion)
	if _, err := f.Write(hdr[:]); err != nil {
		f.Close()
		return nil, fmt.Errorf("write samples file: %w", err)
	}
	return &SampleLog{f: f, off: samplesHeaderSize}, nil
}

// Append writes a sealed chunk and returns its Ref.
func (l *SampleLog) Append(c *agg.SeriesChunk) (int64, error) {
	if len(c.Data) > maxChunkLength {
		return 0, fmt.Errorf("write samples: chunk of %d bytes is over the %d-byte limit", len(c.Data), maxChunkLength)
	}
	rec := make([]byte, chunkHeaderSize, chunkHeaderSize+len(c.Data))
	binary.LittleEndian.PutUint32(rec[0:], uint32(28+len(c.Data)))
	binary.LittleEndian.PutUint64(rec[8:], c.Base)
	binary.LittleEndian.PutUint64(rec[16:], c.Min)
	binary.LittleEndian.PutUint64(rec[24:], c.Max)
	binary.LittleEndian.PutUint32(rec[32:], c.N)
	rec = append(rec, c.Data...)
	binary.LittleEndian.PutUint32(rec[4:], crc32.Checksum(rec[8:], castagnoli))
	// At the end of what was written whole: a record a full disk cut short is written
	// over by the next try.
	if _, err := l.f.WriteAt(rec, l.off); err != nil {
		return 0, fmt.Errorf("write samples to %s: %w", l.f.Name(), err)
	}
	ref := l.off
	l.off += int64(len(rec))
	return ref, nil
}

// Size is the bytes of the file that hold whole records: the header and every chunk
// appended.
func (l *SampleLog) Size() int64 { return l.off }

// Sync makes what was appended durable.
func (l *SampleLog) Sync() error { return l.f.Sync() }

// Close closes the file.
func (l *SampleLog) Close() error { return l.f.Close() }

// SampleFile reads chunks back from a samples file; it implements agg.ChunkReader. It
// opens the file at its first read, so a run whose views never need old samples never
// touches it.
type SampleFile struct {
	path string

	mu  sync.Mutex
	f   *os.File
	err error
}

// OpenSampleFile returns a reader of the samples file at path.
func OpenSampleFile(path string) *SampleFile { return &SampleFile{path: path} }

func (s *SampleFile) open() (*os.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil || s.err != nil {
		return s.f, s.err
	}
	f, err := os.Open(s.path)
	if err != nil {
		s.err = fmt.Errorf("open samples: %w", err)
		return nil, s.err
	}
	var hdr [samplesHeaderSize]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil || string(hdr[:8]) != samplesMagic {
		f.Close()
		s.err = fmt.Errorf("read samples %s: not a stax samples file", s.path)
		return nil, s.err
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != samplesVersion {
		f.Close()
		s.err = fmt.Errorf("read samples %s: version %d is not supported", s.path, v)
		return nil, s.err
	}
	s.f = f
	return f, nil
}

var errChunkDamaged = errors.New("the run's samples file is damaged")

// ReadChunk reads the chunk c describes, checking that the record is whole, undamaged and
// the one described.
func (s *SampleFile) ReadChunk(c *agg.SeriesChunk) ([]byte, error) {
	f, err := s.open()
	if err != nil {
		return nil, err
	}
	if c.Ref < samplesHeaderSize {
		return nil, errChunkDamaged
	}
	var hdr [chunkHeaderSize]byte
	if _, err := f.ReadAt(hdr[:], c.Ref); err != nil {
		return nil, fmt.Errorf("read samples at %d: %w", c.Ref, errChunkDamaged)
	}
	size := binary.LittleEndian.Uint32(hdr[0:])
	if size < 28 || size-28 > maxChunkLength {
		return nil, fmt.Errorf("read samples at %d: %w", c.Ref, errChunkDamaged)
	}
	rec := make([]byte, 8+int(size))
	if _, err := f.ReadAt(rec, c.Ref); err != nil {
		return nil, fmt.Errorf("read samples at %d: %w", c.Ref, errChunkDamaged)
	}
	if crc32.Checksum(rec[8:], castagnoli) != binary.LittleEndian.Uint32(rec[4:]) {
		return nil, fmt.Errorf("read samples at %d: %w (checksum)", c.Ref, errChunkDamaged)
	}
	if binary.LittleEndian.Uint64(rec[8:]) != c.Base || binary.LittleEndian.Uint64(rec[16:]) != c.Min ||
		binary.LittleEndian.Uint64(rec[24:]) != c.Max || binary.LittleEndian.Uint32(rec[32:]) != c.N {
		return nil, fmt.Errorf("read samples at %d: %w (not the chunk the run lists)", c.Ref, errChunkDamaged)
	}
	return rec[chunkHeaderSize:], nil
}

// Close closes the file if it was opened.
func (s *SampleFile) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// PushQueuePath is the directory of the windows of run id not yet pushed (record --push).
func PushQueuePath(id string) string { return filepath.Join(Dir(), id+".push") }

// Remove deletes the stored run with id: its file, its samples, spans, delta and end files and
// its push queue. A run whose file does not exist gives an error satisfying
// errors.Is(err, os.ErrNotExist).
func Remove(id string) error {
	err := os.Remove(Path(id))
	for _, p := range []string{SamplesPath(id), SpanLogPath(id), EndPath(id), DeltaPath(id)} {
		if serr := os.Remove(p); err == nil && serr != nil && !errors.Is(serr, os.ErrNotExist) {
			err = serr
		}
	}
	if qerr := os.RemoveAll(PushQueuePath(id)); err == nil && qerr != nil {
		err = qerr
	}
	return err
}

// SamplesDamage says what a run lost of its samples to a damaged samples file (cut short
// by a full disk or a crash, or changed since): the chunks its file lists that could not
// be read back whole, which the run read without.
type SamplesDamage struct {
	Chunks   int    `json:"chunks"`    // chunks lost
	OfChunks int    `json:"of_chunks"` // chunks the run lists
	Samples  uint64 `json:"samples"`   // samples in the chunks lost
	// FromNs and ToNs bound the lost samples' times, in nanoseconds from the run's start.
	FromNs uint64 `json:"from_ns"`
	ToNs   uint64 `json:"to_ns"`
	Reason string `json:"reason"` // the first chunk's error
}

// String says what was lost, for a note.
func (d *SamplesDamage) String() string {
	return fmt.Sprintf("its samples file is damaged (%s): %d of %d chunks lost, %d samples from %.1fs to %.1fs of the run",
		d.Reason, d.Chunks, d.OfChunks, d.Samples, float64(d.FromNs)/1e9, float64(d.ToNs)/1e9)
}

// salvage reads every chunk of s that lives in the samples file (checking each whole, as
// ReadChunk does) and drops from s those that cannot be read back, so that views work on
// the rest; it says what was dropped (nil: nothing). startNs is the run's start on the
// samples' clock.
func salvage(s *agg.Series, startNs uint64) *SamplesDamage {
	var d SamplesDamage
	kept := s.Chunks[:0]
	for _, c := range s.Chunks {
		if c.Data != nil || c.N == 0 || c.Ref == 0 {
			kept = append(kept, c)
			continue
		}
		d.OfChunks++
		var err error
		if s.Reader == nil {
			err = agg.ErrSamplesUnavailable
		} else {
			_, err = s.Reader.ReadChunk(&c)
		}
		if err == nil {
			kept = append(kept, c)
			continue
		}
		if d.Chunks == 0 {
			d.Reason, d.FromNs, d.ToNs = err.Error(), c.Min, c.Max
		}
		d.Chunks++
		d.Samples += uint64(c.N)
		d.FromNs, d.ToNs = min(d.FromNs, c.Min), max(d.ToNs, c.Max)
	}
	for i := len(kept); i < len(s.Chunks); i++ {
		s.Chunks[i] = agg.SeriesChunk{}
	}
	s.Chunks = kept
	if d.Chunks == 0 {
		return nil
	}
	d.FromNs, d.ToNs = d.FromNs-min(d.FromNs, startNs), d.ToNs-min(d.ToNs, startNs)
	return &d
}

// SamplesDamageOf says what the stored run at path, whose meta is m, lost to a damaged
// samples file. It looks no further than the file's size unless that is short of what the
// run counts on (Meta.SamplesFileSize), so list and status afford it for every run; a
// chunk changed in place is found by the views that read it.
//
// A run written before its meta kept that size is looked at more closely only when its
// samples file ends inside a record (cut short there); one cut between records is found
// by the views.
func SamplesDamageOf(path string, m Meta) (*SamplesDamage, error) {
	info, err := os.Stat(samplesPathOf(path))
	switch {
	case m.SamplesFileSize > 0 && err == nil && info.Size() >= m.SamplesFileSize:
		return nil, nil
	case m.SamplesFileSize <= 0 && (err != nil || !endsInRecord(samplesPathOf(path), info.Size())):
		return nil, nil
	}
	r, err := LoadParts(path, Samples)
	if err != nil {
		return nil, err
	}
	return r.SamplesDamage, nil
}

// endsInRecord says whether the samples file at path, of size bytes, ends inside a chunk
// record: its records' headers are walked, one read each.
func endsInRecord(path string, size int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var hdr [8]byte
	off := int64(samplesHeaderSize)
	for off < size {
		if _, err := f.ReadAt(hdr[:], off); err != nil {
			return true
		}
		n := int64(binary.LittleEndian.Uint32(hdr[:]))
		if n < 28 || n-28 > maxChunkLength {
			return true
		}
		off += 8 + n
	}
	return off != size && size > samplesHeaderSize
}
