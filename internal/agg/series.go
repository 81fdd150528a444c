package agg

import (
	"encoding/binary"
	"errors"
)

// Series is every sample of a run in the order it was counted: its time, the key (thread and
// raw stack) it was counted under, and its CPU. Samples are packed in chunks of varints:
// per sample the zigzag time delta from the previous sample of the chunk (from Base for the
// first), the key and the CPU, about 5 bytes a sample. Chunks are sealed when full and never
// change after, so a snapshot shares them instead of copying.
type Series struct {
	Chunks []SeriesChunk `json:"chunks"`
}

// SeriesChunk is a run of samples. Min and Max bound its times so a window skips chunks
// that lie outside it.
type SeriesChunk struct {
	Base uint64 `json:"base"`
	Min  uint64 `json:"min"`
	Max  uint64 `json:"max"`
	N    uint32 `json:"n"`
	Data []byte `json:"data"`
}

// Sample is one decoded sample. Key indexes Profile.KeyEntry.
type Sample struct {
	Time uint64
	Key  uint32
	CPU  uint32
}

const chunkBytes = 64 << 10

// seriesWriter appends to a Series; the last chunk stays open until full. A chunk is made
// at its full size, so appending never copies it, and it is sealed as it is (less than one
// sample's bytes unused).
type seriesWriter struct {
	s    Series
	last uint64
}

// maxSampleBytes bounds one sample's varints.
const maxSampleBytes = 3 * binary.MaxVarintLen64

func (w *seriesWriter) add(t uint64, key, cpu uint32) {
	n := len(w.s.Chunks)
	if n == 0 || len(w.s.Chunks[n-1].Data)+maxSampleBytes > chunkBytes {
		w.s.Chunks = append(w.s.Chunks, SeriesChunk{Base: t, Min: t, Max: t, Data: make([]byte, 0, chunkBytes)})
		w.last = t
		n++
	}
	c := &w.s.Chunks[n-1]
	c.Data = binary.AppendVarint(c.Data, int64(t-w.last))
	c.Data = binary.AppendUvarint(c.Data, uint64(key))
	c.Data = binary.AppendUvarint(c.Data, uint64(cpu))
	c.N++
	c.Min, c.Max = min(c.Min, t), max(c.Max, t)
	w.last = t
}

// snapshot returns the series as it stands: sealed chunks shared, the open one copied.
func (w *seriesWriter) snapshot() Series {
	n := len(w.s.Chunks)
	out := Series{Chunks: make([]SeriesChunk, n)}
	copy(out.Chunks, w.s.Chunks)
	if n > 0 {
		c := &out.Chunks[n-1]
		c.Data = append([]byte(nil), c.Data...)
	}
	return out
}

// Bytes is the memory the series' samples take.
func (s *Series) Bytes() int {
	n := 0
	for i := range s.Chunks {
		n += cap(s.Chunks[i].Data)
	}
	return n
}

// Len is the number of samples.
func (s *Series) Len() uint64 {
	var n uint64
	for i := range s.Chunks {
		n += uint64(s.Chunks[i].N)
	}
	return n
}

var errSeries = errors.New("damaged sample series")

// Each calls fn for every sample with from <= Time < to (to 0: no end), in order. It stops
// and returns an error at the first damaged chunk.
func (s *Series) Each(from, to uint64, fn func(Sample)) error {
	for i := range s.Chunks {
		c := &s.Chunks[i]
		if c.Max < from || (to != 0 && c.Min >= to) {
			continue
		}
		t, d := c.Base, c.Data
		for k := uint32(0); k < c.N; k++ {
			dt, n1 := binary.Varint(d)
			if n1 <= 0 {
				return errSeries
			}
			d = d[n1:]
			key, n2 := binary.Uvarint(d)
			if n2 <= 0 || key > 1<<32-1 {
				return errSeries
			}
			d = d[n2:]
			cpu, n3 := binary.Uvarint(d)
			if n3 <= 0 || cpu > 1<<32-1 {
				return errSeries
			}
			d = d[n3:]
			t += uint64(dt)
			if t >= from && (to == 0 || t < to) {
				fn(Sample{Time: t, Key: uint32(key), CPU: uint32(cpu)})
			}
		}
		if len(d) != 0 {
			return errSeries
		}
	}
	return nil
}
