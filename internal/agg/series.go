package agg

import (
	"encoding/binary"
	"errors"
)

// Series is every sample of a run in the order it was counted: its time, the key (thread and
// raw stack) it was counted under, its CPU and, in a run that reads counters with its
// samples (stax record --counters), what they counted. Samples are packed in chunks of
// varints: per sample the zigzag time delta from the previous sample of the chunk (from Base
// for the first), the key and the CPU, about 5 bytes a sample, then Counters uvarints.
// Chunks are sealed when full and never change after, so a snapshot shares them instead of
// copying.
//
// A sealed chunk may live on disk rather than in memory (the run store's samples file): its
// Data is then nil, Ref says where it is, and Reader fetches it when a view reads it.
type Series struct {
	Chunks []SeriesChunk `json:"chunks"`
	// Counters is the number of counters each sample carries (0: none).
	Counters int         `json:"counters,omitempty"`
	Reader   ChunkReader `json:"-"`
}

// MaxSeriesCounters bounds Series.Counters.
const MaxSeriesCounters = 16

// SeriesChunk is a run of samples. Min and Max bound its times so a window skips chunks
// that lie outside it.
type SeriesChunk struct {
	Base uint64 `json:"base"`
	Min  uint64 `json:"min"`
	Max  uint64 `json:"max"`
	N    uint32 `json:"n"`
	Data []byte `json:"data"`
	// Ref locates the chunk where it was written out; 0: it was not.
	Ref int64 `json:"ref,omitempty"`
}

// ChunkReader fetches the data of chunks written out of memory.
type ChunkReader interface {
	ReadChunk(c *SeriesChunk) ([]byte, error)
}

// ErrSamplesUnavailable says a chunk's samples are neither in memory nor readable.
var ErrSamplesUnavailable = errors.New("the run's samples file is missing")

// data returns the chunk's samples, reading them if they were written out.
func (s *Series) data(c *SeriesChunk) ([]byte, error) {
	if c.Data != nil || c.N == 0 {
		return c.Data, nil
	}
	if c.Ref == 0 || s.Reader == nil {
		return nil, ErrSamplesUnavailable
	}
	return s.Reader.ReadChunk(c)
}

// Sample is one decoded sample. Key indexes Profile.KeyEntry.
type Sample struct {
	Time uint64
	Key  uint32
	CPU  uint32
	// Counters are what the counters counted (Series.Counters of them); valid during the
	// call that is given the sample only.
	Counters []uint64
}

const chunkBytes = 64 << 10

// seriesWriter appends to a Series; the last chunk stays open until full. A chunk is made
// at its full size, so appending never copies it, and it is sealed as it is (less than one
// sample's bytes unused).
type seriesWriter struct {
	s       Series
	last    uint64
	spilled int // chunks [0, spilled) were written out (SpillSeries)
}

// MaxSampleBytes bounds one sample's varints in a series of counters counters.
func MaxSampleBytes(counters int) int { return (3 + counters) * binary.MaxVarintLen64 }

// add appends a sample with its counters (w.s.Counters of them: missing ones are 0).
func (w *seriesWriter) add(t uint64, key, cpu uint32, counters []uint64) {
	n := len(w.s.Chunks)
	if n == 0 || len(w.s.Chunks[n-1].Data)+MaxSampleBytes(w.s.Counters) > chunkBytes {
		w.s.Chunks = append(w.s.Chunks, SeriesChunk{Base: t, Min: t, Max: t, Data: make([]byte, 0, chunkBytes)})
		w.last = t
		n++
	}
	c := &w.s.Chunks[n-1]
	c.Data = binary.AppendVarint(c.Data, int64(t-w.last))
	c.Data = binary.AppendUvarint(c.Data, uint64(key))
	c.Data = binary.AppendUvarint(c.Data, uint64(cpu))
	for j := range w.s.Counters {
		var v uint64
		if j < len(counters) {
			v = counters[j]
		}
		c.Data = binary.AppendUvarint(c.Data, v)
	}
	c.N++
	c.Min, c.Max = min(c.Min, t), max(c.Max, t)
	w.last = t
}

// snapshot returns the series as it stands: sealed chunks shared, the open one copied.
func (w *seriesWriter) snapshot() Series {
	n := len(w.s.Chunks)
	out := Series{Chunks: make([]SeriesChunk, n), Counters: w.s.Counters, Reader: w.s.Reader}
	copy(out.Chunks, w.s.Chunks)
	if n > 0 {
		c := &out.Chunks[n-1]
		c.Data = append([]byte(nil), c.Data...)
	}
	return out
}

// Bytes is the memory the series' samples take (chunks written out and dropped from memory
// take none).
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
	if s.Counters < 0 || s.Counters > MaxSeriesCounters {
		return errSeries
	}
	var counters []uint64
	if s.Counters > 0 {
		counters = make([]uint64, s.Counters)
	}
	for i := range s.Chunks {
		c := &s.Chunks[i]
		if c.Max < from || (to != 0 && c.Min >= to) {
			continue
		}
		d, err := s.data(c)
		if err != nil {
			return err
		}
		t := c.Base
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
			for j := range counters {
				v, n := binary.Uvarint(d)
				if n <= 0 {
					return errSeries
				}
				counters[j] = v
				d = d[n:]
			}
			t += uint64(dt)
			if t >= from && (to == 0 || t < to) {
				fn(Sample{Time: t, Key: uint32(key), CPU: uint32(cpu), Counters: counters})
			}
		}
		if len(d) != 0 {
			return errSeries
		}
	}
	return nil
}

// SpillSeries writes the sealed chunks not yet written out with write, which returns where
// each went (its Ref, never 0); then every written chunk but the newest keep is dropped
// from memory, to be read back through reader when a view needs it. write runs without the
// run's lock: samples keep being counted meanwhile.
func (r *Run) SpillSeries(write func(c *SeriesChunk) (int64, error), reader ChunkReader, keep int) error {
	type todo struct {
		i int
		c SeriesChunk
	}
	var work []todo
	r.mu.Lock()
	r.series.s.Reader = reader
	sealed := len(r.series.s.Chunks) - 1 // the last chunk is still being filled
	for i := r.series.spilled; i < sealed; i++ {
		work = append(work, todo{i, r.series.s.Chunks[i]})
	}
	r.mu.Unlock()

	var err error
	done := 0
	refs := make([]int64, len(work))
	for k := range work {
		if refs[k], err = write(&work[k].c); err != nil {
			break
		}
		done++
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range work[:done] {
		r.series.s.Chunks[work[k].i].Ref = refs[k]
	}
	if done > 0 {
		r.series.spilled = work[done-1].i + 1
	}
	for i := 0; i < r.series.spilled-keep; i++ {
		r.series.s.Chunks[i].Data = nil
	}
	return err
}
