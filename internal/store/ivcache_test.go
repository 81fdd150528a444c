package store

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

// intervalsFrom appends n intervals to r, continuing its times, of two threads waking
// each other with some jitter: they compress as a recording's do, to some 5 bytes each.
func intervalsFrom(r *Run, n int) {
	start := uint64(1e9)
	if k := len(r.OffCPUIntervals); k > 0 {
		start = r.OffCPUIntervals[k-1].Start
	}
	for range n {
		i := len(r.OffCPUIntervals)
		jitter := uint64(uint32(i) * 2654435761 >> 20) // 0..4095, scattered
		start += 3000 + jitter
		r.OffCPUIntervals = append(r.OffCPUIntervals, agg.Interval{Tid: 1235 + uint32(i%2), Stack: uint32(i % 2), Start: start, End: start + 2000 + jitter/3, Waker: 1236 - uint32(i%2)})
	}
}

// Saves of a recording with a cache compress only the blocks of intervals they have not
// compressed before, and what they write reads back as the same intervals, with the same
// bytes once decompressed as a save without the cache writes.
func TestIntervalCacheCompressesOnlyWhatChanged(t *testing.T) {
	r := offCPURun()
	intervalsFrom(r, 2*intervalBlock+100)
	c := &IntervalCache{}
	r.IntervalCache = c
	check := func(step string, wantReused, wantCompressed uint64) {
		t.Helper()
		c.Reused, c.Compressed = 0, 0
		with := encode(t, r)
		if c.Reused != wantReused || c.Compressed != wantCompressed {
			t.Errorf("%s: %d blocks reused and %d compressed, want %d and %d", step, c.Reused, c.Compressed, wantReused, wantCompressed)
		}
		got, err := Decode(bytes.NewReader(with))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if !reflect.DeepEqual(got.OffCPUIntervals, r.OffCPUIntervals) {
			t.Errorf("%s: the intervals changed through the file", step)
		}
		r.IntervalCache = nil
		without := encode(t, r)
		r.IntervalCache = c
		// Each block is a member of its own, with its own header and trailer, and is
		// compressed apart from its neighbours.
		if limit := len(without) + len(without)/20 + 64*(len(r.OffCPUIntervals)/intervalBlock+2); len(with) > limit {
			t.Errorf("%s: %d bytes with the cache, %d without", step, len(with), len(without))
		}
	}
	check("first save", 0, 2)
	check("the same intervals again", 2, 0)
	intervalsFrom(r, intervalBlock)
	check("a block more", 2, 1)
	r.OffCPUIntervals[5].Waker = 99 // a block changed under the cache: compressed again
	check("the first block changed", 2, 1)
	r.OffCPUIntervals = r.OffCPUIntervals[:intervalBlock+10]
	check("fewer intervals", 1, 0)
	r.OffCPUIntervals = nil
	check("none", 0, 0)
}

// A checkpoint of a million intervals with the cache, one block added since the last.
func BenchmarkSaveIntervalsCached(b *testing.B) {
	r := offCPURun()
	intervalsFrom(r, 1<<20)
	r.IntervalCache = &IntervalCache{}
	path := filepath.Join(b.TempDir(), "run.stax")
	if err := Save(path, r); err != nil {
		b.Fatal(err)
	}
	base := r.OffCPUIntervals
	for b.Loop() {
		b.StopTimer()
		r.OffCPUIntervals = base[:len(base)-intervalBlock]
		if err := Save(path, r); err != nil {
			b.Fatal(err)
		}
		r.OffCPUIntervals = base
		b.StartTimer()
		if err := Save(path, r); err != nil {
			b.Fatal(err)
		}
	}
}

// A million intervals of a run with two stacks (its counts compress to almost nothing)
// open, written with the cache's blocks or without.
func TestManyIntervalsOfFewStacksOpen(t *testing.T) {
	r := offCPURun()
	intervalsFrom(r, 1<<20)
	for _, c := range []*IntervalCache{nil, {}} {
		r.IntervalCache = c
		got, err := Decode(bytes.NewReader(encode(t, r)))
		if err != nil {
			t.Fatalf("cache %v: %v", c != nil, err)
		}
		if !reflect.DeepEqual(got.OffCPUIntervals, r.OffCPUIntervals) {
			t.Errorf("cache %v: the intervals changed through the file", c != nil)
		}
		// A reader that wants the samples alone passes over the intervals' members.
		data := encode(t, r)
		part, err := decode(bytes.NewReader(data), int64(len(data)), Samples, "")
		if err != nil {
			t.Fatalf("cache %v, samples alone: %v", c != nil, err)
		}
		if part.OffCPUIntervals != nil || !reflect.DeepEqual(part.Profile.Series, got.Profile.Series) {
			t.Errorf("cache %v: a reader that wants samples alone read the intervals, or other samples", c != nil)
		}
	}
}
