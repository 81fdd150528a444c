package agg

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestSeriesRoundTrip(t *testing.T) {
	var w seriesWriter
	rng := rand.New(rand.NewPCG(1, 2))
	var want []Sample
	tm := uint64(1_000_000_000)
	for i := 0; i < 100_000; i++ {
		// Samples from several CPUs arrive out of time order: deltas go both ways.
		tm += uint64(rng.IntN(2_000_000))
		s := Sample{Time: tm - uint64(rng.IntN(1_000_000)), Key: uint32(rng.IntN(5000)), CPU: uint32(rng.IntN(64))}
		want = append(want, s)
		w.add(s.Time, s.Key, s.CPU, nil)
	}
	snap := w.snapshot()
	if len(snap.Chunks) < 2 {
		t.Fatalf("%d chunks for %d samples: want several", len(snap.Chunks), len(want))
	}
	if snap.Len() != uint64(len(want)) {
		t.Fatalf("Len = %d, want %d", snap.Len(), len(want))
	}
	if per := float64(snap.Bytes()) / float64(len(want)); per > 10 {
		t.Errorf("%.1f bytes per sample, want at most 10", per)
	}
	i := 0
	if err := snap.Each(0, 0, func(s Sample) {
		if !reflect.DeepEqual(s, want[i]) {
			t.Fatalf("sample %d = %+v, want %+v", i, s, want[i])
		}
		i++
	}); err != nil {
		t.Fatal(err)
	}
	// A window keeps exactly the samples inside it.
	from, to := want[40_000].Time, want[60_000].Time
	var n, wantN int
	for _, s := range want {
		if s.Time >= from && s.Time < to {
			wantN++
		}
	}
	snap.Each(from, to, func(s Sample) {
		if s.Time < from || s.Time >= to {
			t.Fatalf("sample at %d outside [%d, %d)", s.Time, from, to)
		}
		n++
	})
	if n != wantN {
		t.Errorf("window kept %d samples, want %d", n, wantN)
	}
	// A snapshot does not change when more samples arrive.
	before := snap.Len()
	w.add(tm, 1, 1, nil)
	if snap.Len() != before {
		t.Errorf("snapshot grew from %d to %d", before, snap.Len())
	}
}

func TestSeriesDamaged(t *testing.T) {
	var w seriesWriter
	for i := 0; i < 10; i++ {
		w.add(uint64(i), 1, 0, nil)
	}
	s := w.snapshot()
	s.Chunks[0].Data = s.Chunks[0].Data[:len(s.Chunks[0].Data)-1]
	if err := s.Each(0, 0, func(Sample) {}); err == nil {
		t.Error("a truncated chunk decoded without error")
	}
	s = w.snapshot()
	s.Chunks[0].N--
	if err := s.Each(0, 0, func(Sample) {}); err == nil {
		t.Error("a chunk with bytes past its count decoded without error")
	}
}

func TestProfileWindow(t *testing.T) {
	r := NewRun()
	// Thread 1 runs stack a in [0, 1 s), thread 2 runs stack b in [1 s, 2 s).
	for i := 0; i < 1000; i++ {
		r.AddSample(1, 1, 0, uint64(i)*1_000_000, 0, chainOf(1, 0))
		r.AddSample(1, 2, 1, 1_000_000_000+uint64(i)*1_000_000, 0, chainOf(2, 0))
	}
	r.Resolve(newFakeResolver(16))
	p := r.Profile(nil)
	if !p.HasTimes() {
		t.Fatal("profile has no times")
	}
	first, last := p.TimeRange()
	if first != 0 || last != 1_999_000_000 {
		t.Errorf("time range = %d..%d", first, last)
	}
	w, err := p.Window(0, 1_000_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Entries) != 1 || w.Entries[0].Tid != 1 || w.Entries[0].Count != 1000 {
		t.Errorf("first second: entries %+v, want thread 1's 1000 samples", w.Entries)
	}
	if w.Series.Len() != 1000 {
		t.Errorf("the first second's series holds %d samples, want 1000", w.Series.Len())
	}
	w, _ = p.Window(1_500_000_000, 0)
	if len(w.Entries) != 1 || w.Entries[0].Tid != 2 || w.Entries[0].Count != 500 {
		t.Errorf("last half second: entries %+v, want thread 2's 500 samples", w.Entries)
	}
	// A window of a window narrows again.
	w2, _ := w.Window(1_900_000_000, 0)
	if w2.TotalSamples() != 100 {
		t.Errorf("window of a window: %d samples, want 100", w2.TotalSamples())
	}
	if full, _ := p.Window(0, 0); full.TotalSamples() != p.TotalSamples() {
		t.Errorf("the whole window has %d samples, the profile %d", full.TotalSamples(), p.TotalSamples())
	}
}

// memChunks stands for a samples file: chunks written out, by ref.
type memChunks struct {
	data  map[int64][]byte
	reads int
}

func (m *memChunks) write(c *SeriesChunk) (int64, error) {
	ref := int64(len(m.data) + 1)
	m.data[ref] = append([]byte(nil), c.Data...)
	return ref, nil
}

func (m *memChunks) ReadChunk(c *SeriesChunk) ([]byte, error) {
	m.reads++
	b, ok := m.data[c.Ref]
	if !ok {
		return nil, fmt.Errorf("no chunk %d", c.Ref)
	}
	return b, nil
}

// TestSpilledSeriesReadsBack writes a run's sealed chunks out and drops them from memory:
// the memory the series keeps stops growing with the samples, and every view still sees
// every sample, read back from where the chunks went.
func TestSpilledSeriesReadsBack(t *testing.T) {
	r := NewRun()
	chain := []uint64{^uint64(511), 0x1000, 0x2000}
	var want []Sample
	for i := range 200_000 {
		tm := 1e9 + uint64(i)*1000
		r.AddSample(1, 2, uint32(i%4), tm, 0, chain)
		want = append(want, Sample{Time: tm, Key: 0, CPU: uint32(i % 4)})
	}
	before := r.Stats().SeriesBytes
	store := &memChunks{data: map[int64][]byte{}}
	if err := r.SpillSeries(store.write, store, 1); err != nil {
		t.Fatal(err)
	}
	after := r.Stats().SeriesBytes
	if len(store.data) < 5 || after > 2*chunkBytes || after >= before {
		t.Fatalf("%d chunks written; series keeps %d bytes, %d before", len(store.data), after, before)
	}
	// Spilling again writes only what is new.
	n := len(store.data)
	if err := r.SpillSeries(store.write, store, 1); err != nil || len(store.data) != n {
		t.Fatalf("second spill wrote %d more chunks (err %v)", len(store.data)-n, err)
	}
	r.Resolve(newFakeResolver(8))
	p := r.Profile(nil)
	i := 0
	if err := p.Series.Each(0, 0, func(s Sample) {
		if !reflect.DeepEqual(s, want[i]) {
			t.Fatalf("sample %d = %+v, want %+v", i, s, want[i])
		}
		i++
	}); err != nil {
		t.Fatal(err)
	}
	if i != len(want) || store.reads == 0 {
		t.Fatalf("read %d samples of %d, %d chunk reads", i, len(want), store.reads)
	}
	// A window reads only the chunks it overlaps.
	store.reads = 0
	last := want[len(want)-1].Time
	w, err := p.Window(last-10_000, 0)
	if err != nil || w.TotalSamples() != 11 || store.reads != 0 {
		t.Fatalf("window: %d samples, %d chunk reads, err %v", w.TotalSamples(), store.reads, err)
	}
	// Without its reader, a written-out chunk is an error, not a silent gap.
	p.Series.Reader = nil
	if err := p.Series.Each(0, 0, func(Sample) {}); err == nil {
		t.Fatal("reading dropped chunks without a reader succeeded")
	}
}
