package store

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/testutil/synthrun"
)

// bigTimedRun is a run whose series spans several chunks.
func bigTimedRun() *Run {
	r := agg.NewRun()
	for i := range 100_000 {
		chain := []uint64{^uint64(511), uint64(i%6+1) << 8, 7 << 8}
		r.AddSample(10, uint32(10+i%3), uint32(i%2), 1e9+uint64(i)*1e5, 0, chain)
	}
	r.Resolve(synthrun.Names{})
	run := &Run{Meta: Meta{ID: "big", Samples: 100_000, StartNs: 1e9}, Profile: *r.Profile(nil)}
	run.Code = sampleRun().Code
	return run
}

// TestLoadPartsReadsWhatItIsAsked: a view that needs neither samples nor code gets the
// profile alone; one that needs samples gets them; code comes only when asked (and with
// the samples, which lie before it).
func TestLoadPartsReadsWhatItIsAsked(t *testing.T) {
	want := bigTimedRun()
	path := filepath.Join(t.TempDir(), "run.stax")
	if err := Save(path, want); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		parts        Parts
		series, code bool
		name         string
	}{{0, false, false, "profile"}, {Samples, true, false, "samples"}, {CodeParts, true, true, "code"}, {All, true, true, "all"}} {
		got, err := LoadParts(path, c.parts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got.Profile.Entries, want.Profile.Entries) || !reflect.DeepEqual(got.Profile.Stacks, want.Profile.Stacks) {
			t.Errorf("%s: the profile differs", c.name)
		}
		if has := len(got.Profile.Series.Chunks) > 0 && len(got.Profile.KeyEntry) > 0; has != c.series {
			t.Errorf("%s: series read: %v, want %v", c.name, has, c.series)
		}
		if has := len(got.Code) > 0; has != c.code {
			t.Errorf("%s: code read: %v, want %v", c.name, has, c.code)
		}
	}
	// The meta alone says what status shows.
	m, err := ReadMeta(path)
	if err != nil || m.Summary == nil || m.Summary.DistinctStacks != len(want.Profile.Stacks) || m.Summary.Threads != len(want.Profile.Threads) {
		t.Fatalf("meta summary %+v, %v", m.Summary, err)
	}
}

// TestStoredCopyListsChunksOfTheSamplesFile: the run store's copy of a run whose chunks
// went to its samples file lists them by reference; read back, every sample is there, and
// a copy saved for travel holds them all.
func TestStoredCopyListsChunksOfTheSamplesFile(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	os.MkdirAll(Dir(), 0o700)
	want := bigTimedRun()
	log, err := CreateSampleLog(SamplesPath("big"))
	if err != nil {
		t.Fatal(err)
	}
	live := agg.NewRun()
	for i := range 100_000 {
		chain := []uint64{^uint64(511), uint64(i%6+1) << 8, 7 << 8}
		live.AddSample(10, uint32(10+i%3), uint32(i%2), 1e9+uint64(i)*1e5, 0, chain)
	}
	live.Resolve(synthrun.Names{})
	reader := OpenSampleFile(SamplesPath("big"))
	defer reader.Close()
	if err := live.SpillSeries(log.Append, reader, 0); err != nil {
		t.Fatal(err)
	}
	log.Close()
	run := &Run{Meta: want.Meta, Profile: *live.Profile(nil)}
	if err := SaveStored(Path("big"), run); err != nil {
		t.Fatal(err)
	}
	stored, _ := os.Stat(Path("big"))
	travel := filepath.Join(t.TempDir(), "travel.stax")
	if err := Save(travel, run); err != nil {
		t.Fatal(err)
	}
	got, err := LoadParts(Path("big"), Samples)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Profile.Series.Reader.(*SampleFile).Close()
	var n int
	var last uint64
	if err := got.Profile.Series.Each(0, 0, func(s agg.Sample) { n++; last = s.Time }); err != nil {
		t.Fatal(err)
	}
	if n != 100_000 || last != 1e9+99_999*1e5 {
		t.Fatalf("read %d samples back, last at %d", n, last)
	}
	if stored.Size() > 16<<10 {
		t.Errorf("the stored copy takes %d bytes: its chunks are not listed by reference", stored.Size())
	}
	// The copy for travel holds every sample itself.
	moved, err := LoadParts(travel, Samples)
	if err != nil || moved.Profile.Series.Len() != 100_000 || moved.Profile.Series.Chunks[0].Data == nil {
		t.Fatalf("the saved copy: %v", err)
	}
	// The samples file gone, the run says what it lost rather than showing fewer samples
	// silently: every chunk that was there, and what is left in the run's own file.
	got.Profile.Series.Reader.(*SampleFile).Close()
	os.Remove(SamplesPath("big"))
	again, err := LoadParts(Path("big"), Samples)
	if err != nil {
		t.Fatal(err)
	}
	d := again.SamplesDamage
	if d == nil || d.Chunks != d.OfChunks || d.Samples+again.Profile.Series.Len() != 100_000 {
		t.Errorf("a missing samples file: damage %+v, %d samples left", d, again.Profile.Series.Len())
	}
	if err := again.Profile.Series.Each(0, 0, func(agg.Sample) {}); err != nil {
		t.Errorf("the rest does not read: %v", err)
	}
}
