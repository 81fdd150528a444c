package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/stax-profiler/stax/internal/agg"
)

// The sample series follows the JSON body in the compressed stream, as binary: "SERIES\x00\x01",
// the chunk count (u32), then per chunk its base, min and max times (u64), sample count and
// byte length (u32) and its bytes (agg.Series' varint encoding).
const (
	seriesMagic    = "SERIES\x00\x01"
	maxChunks      = 1 << 24
	maxChunkLength = 1 << 20
	chunkHeader    = 32 // base, min, max, sample count, byte length
)

func writeSeries(w io.Writer, s *agg.Series) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(seriesMagic)
	var b [36]byte
	binary.LittleEndian.PutUint32(b[:4], uint32(len(s.Chunks)))
	bw.Write(b[:4])
	for i := range s.Chunks {
		c := &s.Chunks[i]
		binary.LittleEndian.PutUint64(b[0:], c.Base)
		binary.LittleEndian.PutUint64(b[8:], c.Min)
		binary.LittleEndian.PutUint64(b[16:], c.Max)
		binary.LittleEndian.PutUint32(b[24:], c.N)
		binary.LittleEndian.PutUint32(b[28:], uint32(len(c.Data)))
		bw.Write(b[:32])
		bw.Write(c.Data)
	}
	return bw.Flush()
}

// readSeries reads the series section; a stream that ends after the body has none. Each
// chunk's size is checked against its sample count, the bounds of b and the declared
// layout l (nil: none) before its bytes are allocated.
func readSeries(r *bufio.Reader, s *agg.Series, b *budget, l *layout) error {
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
	var hdr [chunkHeader]byte
	if _, err := io.ReadFull(r, hdr[:len(seriesMagic)+4]); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if string(hdr[:len(seriesMagic)]) != seriesMagic {
		return errors.New("bad section marker")
	}
	n := int64(binary.LittleEndian.Uint32(hdr[len(seriesMagic):]))
	switch {
	case n > maxChunks:
		return fmt.Errorf("%d chunks is over the limit of %d", n, maxChunks)
	case l != nil && n != l.Chunks:
		return fmt.Errorf("%d chunks, the file declares %d", n, l.Chunks)
	case n*chunkHeader > b.outLimit:
		return fmt.Errorf("%d chunks do not fit in the file", n)
	}
	s.Chunks = nil
	if n > 0 {
		s.Chunks = make([]agg.SeriesChunk, 0, min(n, 1<<12))
	}
	var samples int64
	for i := int64(0); i < n; i++ {
		if _, err := io.ReadFull(r, hdr[:chunkHeader]); err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
		c := agg.SeriesChunk{
			Base: binary.LittleEndian.Uint64(hdr[0:]),
			Min:  binary.LittleEndian.Uint64(hdr[8:]),
			Max:  binary.LittleEndian.Uint64(hdr[16:]),
			N:    binary.LittleEndian.Uint32(hdr[24:]),
		}
		size := int64(binary.LittleEndian.Uint32(hdr[28:]))
		// A sample takes 3 varints: 3 to 30 bytes.
		if c.N == 0 || size > maxChunkLength || size < 3*int64(c.N) || size > 30*int64(c.N) {
			return fmt.Errorf("chunk %d: %d samples in %d bytes", i, c.N, size)
		}
		samples += int64(c.N)
		if l != nil && samples > l.Samples {
			return fmt.Errorf("chunk %d: more samples than the %d the file declares", i, l.Samples)
		}
		if err := b.charge(sizeChunk + size); err != nil {
			return err
		}
		c.Data = make([]byte, size)
		if _, err := io.ReadFull(r, c.Data); err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
		s.Chunks = append(s.Chunks, c)
	}
	if l != nil && samples != l.Samples {
		return fmt.Errorf("%d samples, the file declares %d", samples, l.Samples)
	}
	return nil
}
