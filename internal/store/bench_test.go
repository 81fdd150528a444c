package store

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stax-profiler/stax/internal/testutil/synthrun"
)

// run1M is a run of 1,000,000 samples over 50,000 stacks (see synthrun.Profile).
func run1M(tb testing.TB) *Run {
	return &Run{Meta: Meta{ID: "bench", Samples: 1_000_000, Freq: 999}, Profile: *synthrun.Profile(1_000_000, 50_000)}
}

// BenchmarkSaveOpen1M encodes and decodes a 1,000,000-sample run. Targets: each under 1 s,
// and under 12 bytes a sample (bytes/sample).
func BenchmarkSaveOpen1M(b *testing.B) {
	run := run1M(b)
	var buf bytes.Buffer
	if err := Encode(&buf, run); err != nil {
		b.Fatal(err)
	}
	b.Run("Save", func(b *testing.B) {
		for b.Loop() {
			buf.Reset()
			if err := Encode(&buf, run); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len())/1e6, "bytes/sample")
	})
	b.Run("Open", func(b *testing.B) {
		for b.Loop() {
			got, err := Decode(bytes.NewReader(buf.Bytes()))
			if err != nil {
				b.Fatal(err)
			}
			if got.Profile.Series.Len() != 1_000_000 {
				b.Fatalf("%d samples read back", got.Profile.Series.Len())
			}
		}
	})
}

// BenchmarkLoadParts1M reads a saved 1,000,000-sample run from a file as each query
// needs it: the meta alone (status; target under 50 ms including the command's start),
// the profile (top, flame), the profile and samples (windows, timelines), everything.
func BenchmarkLoadParts1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "run.stax")
	if err := Save(path, run1M(b)); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want Parts
	}{{"Meta", MetaOnly}, {"Profile", 0}, {"Samples", Samples}, {"All", All}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := LoadParts(path, c.want); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckpoint writes the run store's copy of a short recording's run (20,000
// samples over 500 stacks) again and again, as the recorder's checkpoints do.
func BenchmarkCheckpoint(b *testing.B) {
	run := &Run{Meta: Meta{ID: "bench", Samples: 20_000, Freq: 999}, Profile: *synthrun.Profile(20_000, 500)}
	path := filepath.Join(b.TempDir(), "run.stax")
	b.ReportAllocs()
	for b.Loop() {
		if err := SaveStored(path, run); err != nil {
			b.Fatal(err)
		}
	}
}
