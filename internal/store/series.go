package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/stax-profiler/stax/internal/agg"
)

// The sample series follows the JSON body in the compressed stream, as binary.
//
// Format 3: "SERIES\x00\x01", the chunk count (u32), then per chunk its base, min and max
// times (u64), sample count and byte length (u32) and its bytes (agg.Series' varint
// encoding).
//
// Format 4: "SERIES\x00\x02", the key count (u32) and each key's entry (a zigzag varint,
// -1 for a key not named), then the chunk count (u32) and per chunk the same header as
// format 3 followed by the chunk's Ref (i64): a chunk with a Ref and a byte length of 0
// lives in the run's samples file (samples.go), any other is inline.
//
// Format 7, for a series whose samples carry counters (agg.Series.Counters): "SERIES\x00\x03",
// the key count and entries as format 4, the number of counters (u32, 1 to
// agg.MaxSeriesCounters), then the chunks as format 4. A series without counters is
// written as format 4's in every version.
const (
	seriesMagic    = "SERIES\x00\x01"
	seriesMagic4   = "SERIES\x00\x02"
	seriesMagic7   = "SERIES\x00\x03"
	maxChunks      = 1 << 24
	maxChunkLength = 1 << 20
	chunkHeader    = 32 // base, min, max, sample count, byte length
	chunkHeader4   = chunkHeader + 8
)

// seriesOut is a run's series as format 4 writes it: the key entries, and each chunk
// with the bytes it is written with (nil for a chunk written as a reference).
type seriesOut struct {
	keys     []byte // the key entries' varints
	nkeys    int
	counters int // per sample (format 7); 0: none
	chunks   []agg.SeriesChunk
	data     [][]byte
}

// newSeriesOut prepares p's series. With refs, a chunk that was written to the
// samples file is written as its reference; else every chunk is inline, those that left
// memory read back first.
func newSeriesOut(p *agg.Profile, refs bool) (*seriesOut, error) {
	s := &seriesOut{chunks: p.Series.Chunks, nkeys: len(p.KeyEntry), counters: p.Series.Counters, data: make([][]byte, len(p.Series.Chunks))}
	for _, e := range p.KeyEntry {
		s.keys = binary.AppendVarint(s.keys, int64(e))
	}
	for i := range s.chunks {
		c := &s.chunks[i]
		if refs && c.Ref != 0 {
			continue
		}
		d := c.Data
		if d == nil && c.N > 0 {
			if p.Series.Reader == nil || c.Ref == 0 {
				return nil, agg.ErrSamplesUnavailable
			}
			var err error
			if d, err = p.Series.Reader.ReadChunk(c); err != nil {
				return nil, err
			}
		}
		s.data[i] = d
	}
	return s, nil
}

// size is the section's bytes.
func (s *seriesOut) size() int64 {
	n := int64(len(seriesMagic4)+4+len(s.keys)+4) + int64(len(s.chunks))*chunkHeader4
	if s.counters > 0 {
		n += 4
	}
	for _, d := range s.data {
		n += int64(len(d))
	}
	return n
}

func (s *seriesOut) samples() int64 {
	var n int64
	for i := range s.chunks {
		n += int64(s.chunks[i].N)
	}
	return n
}

func (s *seriesOut) write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if s.counters > 0 {
		bw.WriteString(seriesMagic7)
	} else {
		bw.WriteString(seriesMagic4)
	}
	var b [chunkHeader4]byte
	binary.LittleEndian.PutUint32(b[:4], uint32(s.nkeys))
	bw.Write(b[:4])
	bw.Write(s.keys)
	if s.counters > 0 {
		binary.LittleEndian.PutUint32(b[:4], uint32(s.counters))
		bw.Write(b[:4])
	}
	binary.LittleEndian.PutUint32(b[:4], uint32(len(s.chunks)))
	bw.Write(b[:4])
	for i := range s.chunks {
		c := &s.chunks[i]
		ref := int64(0)
		if s.data[i] == nil {
			ref = c.Ref
		}
		binary.LittleEndian.PutUint64(b[0:], c.Base)
		binary.LittleEndian.PutUint64(b[8:], c.Min)
		binary.LittleEndian.PutUint64(b[16:], c.Max)
		binary.LittleEndian.PutUint32(b[24:], c.N)
		binary.LittleEndian.PutUint32(b[28:], uint32(len(s.data[i])))
		binary.LittleEndian.PutUint64(b[32:], uint64(ref))
		bw.Write(b[:])
		bw.Write(s.data[i])
	}
	return bw.Flush()
}

// readSeries reads the series section into p; a stream that ends after the body has none.
// Each chunk's size is checked against its sample count, the bounds of b and the declared
// layout l (nil: none) before its bytes are allocated.
func readSeries(r *bufio.Reader, p *agg.Profile, b *budget, l *layout, version uint32) error {
	s := &p.Series
	// The JSON encoder ends the body with a newline.
	for {
		c, err := r.ReadByte()
		if err == io.EOF {
			if l != nil && l.Chunks > 0 {
				return fmt.Errorf("none, the file declares %d chunks", l.Chunks)
			}
			return nil
		}
		if err != nil {
			return err
		}
		if c != '\n' && c != ' ' && c != '\r' && c != '\t' {
			r.UnreadByte()
			break
		}
	}
	var hdr [chunkHeader4]byte
	if _, err := io.ReadFull(r, hdr[:len(seriesMagic)]); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	want, head := seriesMagic, chunkHeader
	if version >= 4 {
		want, head = seriesMagic4, chunkHeader4
	}
	withCounters := version >= 7 && string(hdr[:len(seriesMagic)]) == seriesMagic7
	if string(hdr[:len(seriesMagic)]) != want && !withCounters {
		return errors.New("bad section marker")
	}
	if version >= 4 {
		if err := readKeys(r, p, b, l); err != nil {
			return err
		}
	}
	s.Counters = 0
	if withCounters {
		if _, err := io.ReadFull(r, hdr[:4]); err != nil {
			return fmt.Errorf("counters: %w", err)
		}
		n := binary.LittleEndian.Uint32(hdr[:4])
		if n == 0 || n > agg.MaxSeriesCounters {
			return fmt.Errorf("%d counters per sample (1 to %d)", n, agg.MaxSeriesCounters)
		}
		s.Counters = int(n)
	}
	// A sample takes 3 varints and one per counter: 1 to 10 bytes each.
	minSample, maxSample := int64(3+s.Counters), int64(agg.MaxSampleBytes(s.Counters))
	if _, err := io.ReadFull(r, hdr[:4]); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	n := int64(binary.LittleEndian.Uint32(hdr[:4]))
	switch {
	case n > maxChunks:
		return fmt.Errorf("%d chunks is over the limit of %d", n, maxChunks)
	case l != nil && n != l.Chunks:
		return fmt.Errorf("%d chunks, the file declares %d", n, l.Chunks)
	case n*int64(head) > b.outLimit:
		return fmt.Errorf("%d chunks do not fit in the file", n)
	}
	s.Chunks = nil
	if n > 0 {
		s.Chunks = make([]agg.SeriesChunk, 0, min(n, 1<<12))
	}
	var samples int64
	for i := int64(0); i < n; i++ {
		if _, err := io.ReadFull(r, hdr[:head]); err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
		c := agg.SeriesChunk{
			Base: binary.LittleEndian.Uint64(hdr[0:]),
			Min:  binary.LittleEndian.Uint64(hdr[8:]),
			Max:  binary.LittleEndian.Uint64(hdr[16:]),
			N:    binary.LittleEndian.Uint32(hdr[24:]),
		}
		size := int64(binary.LittleEndian.Uint32(hdr[28:]))
		if head == chunkHeader4 {
			c.Ref = int64(binary.LittleEndian.Uint64(hdr[32:]))
		}
		external := c.Ref != 0 && size == 0
		switch {
		case c.Ref < 0 || (c.Ref != 0 && c.Ref < samplesHeaderSize):
			return fmt.Errorf("chunk %d: reference %d is not in a samples file", i, c.Ref)
		case !external && (c.N == 0 || size > maxChunkLength || size < minSample*int64(c.N) || size > maxSample*int64(c.N)):
			return fmt.Errorf("chunk %d: %d samples in %d bytes", i, c.N, size)
		case external && (c.N == 0 || int64(c.N) > maxChunkLength/minSample):
			return fmt.Errorf("chunk %d: %d samples in one chunk", i, c.N)
		}
		samples += int64(c.N)
		if l != nil && samples > l.Samples {
			return fmt.Errorf("chunk %d: more samples than the %d the file declares", i, l.Samples)
		}
		if err := b.charge(sizeChunk + size); err != nil {
			return err
		}
		if !external {
			c.Data = make([]byte, size)
			if _, err := io.ReadFull(r, c.Data); err != nil {
				return fmt.Errorf("chunk %d: %w", i, err)
			}
		}
		s.Chunks = append(s.Chunks, c)
	}
	if l != nil && samples != l.Samples {
		return fmt.Errorf("%d samples, the file declares %d", samples, l.Samples)
	}
	return nil
}

// readKeys reads format 4's key entries.
func readKeys(r *bufio.Reader, p *agg.Profile, b *budget, l *layout) error {
	var n4 [4]byte
	if _, err := io.ReadFull(r, n4[:]); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	n := int64(binary.LittleEndian.Uint32(n4[:]))
	switch {
	case l != nil && n != l.Keys:
		return fmt.Errorf("%d keys, the file declares %d", n, l.Keys)
	case n > b.outLimit:
		return fmt.Errorf("%d keys do not fit in the file", n)
	}
	if err := b.charge(4 * n); err != nil {
		return err
	}
	p.KeyEntry = nil
	if n > 0 {
		p.KeyEntry = make([]int32, 0, min(n, 1<<16))
	}
	for range n {
		v, err := binary.ReadVarint(r)
		if err != nil {
			return fmt.Errorf("keys: %w", err)
		}
		if v < -1 || v > 1<<31-1 {
			return fmt.Errorf("keys: entry %d is out of range", v)
		}
		p.KeyEntry = append(p.KeyEntry, int32(v))
	}
	return nil
}
