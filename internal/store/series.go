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

// readSeries reads the series section; a stream that ends after the body has none.
func readSeries(r *bufio.Reader, s *agg.Series) error {
	// The JSON encoder ends the body with a newline.
	for {
		c, err := r.ReadByte()
		if err == io.EOF {
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
	var hdr [32]byte
	if _, err := io.ReadFull(r, hdr[:len(seriesMagic)+4]); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if string(hdr[:len(seriesMagic)]) != seriesMagic {
		return errors.New("bad section marker")
	}
	n := binary.LittleEndian.Uint32(hdr[len(seriesMagic):])
	if n > maxChunks {
		return fmt.Errorf("%d chunks is over the limit of %d", n, maxChunks)
	}
	if n > 0 {
		s.Chunks = make([]agg.SeriesChunk, 0, min(n, 1<<12))
	}
	for i := uint32(0); i < n; i++ {
		if _, err := io.ReadFull(r, hdr[:32]); err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
		c := agg.SeriesChunk{
			Base: binary.LittleEndian.Uint64(hdr[0:]),
			Min:  binary.LittleEndian.Uint64(hdr[8:]),
			Max:  binary.LittleEndian.Uint64(hdr[16:]),
			N:    binary.LittleEndian.Uint32(hdr[24:]),
		}
		size := binary.LittleEndian.Uint32(hdr[28:])
		if size > maxChunkLength || c.N > size {
			return fmt.Errorf("chunk %d: %d samples in %d bytes", i, c.N, size)
		}
		c.Data = make([]byte, size)
		if _, err := io.ReadFull(r, c.Data); err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
		s.Chunks = append(s.Chunks, c)
	}
	return nil
}
