package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stax-profiler/stax/internal/spans"
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

// spans1M is a million spans over 1,000 names and 8 threads, as a program reporting ITT
// tasks makes them.
func spans1M() spans.List {
	var b spans.Builder
	for i := range spans.MaxSpans {
		at := uint64(3e14 + i*1000)
		b.Add(spans.Span{Name: fmt.Sprintf("task %d", i%1000), Pid: 123456, Tid: uint32(123456 + i%8), Start: at, End: at + uint64(300+i%2000), Depth: uint32(i % 3)})
	}
	return b.List()
}

// BenchmarkCheckpointSpans writes a checkpoint of a run of a million spans, 10,000 of them
// new since the last checkpoint: bytes/op is what the checkpoint writes.
func BenchmarkCheckpointSpans(b *testing.B) {
	run := &Run{Meta: Meta{ID: "bench", Samples: 20_000, Freq: 999}, Profile: *synthrun.Profile(20_000, 500)}
	run.Spans = spans1M()
	dir := b.TempDir()
	path := filepath.Join(dir, "run.stax")
	b.Run("Inline", func(b *testing.B) {
		for b.Loop() {
			if err := SaveStored(path, run); err != nil {
				b.Fatal(err)
			}
		}
		info, _ := os.Stat(path)
		b.ReportMetric(float64(info.Size()), "written/op")
	})
	// The spans file holds all but the last 10,000 spans: the checkpoint appends those
	// and writes the run's file without the records.
	var sb spans.Builder
	for s := range run.Spans.All() {
		sb.Add(s)
		if sb.List().Len() == run.Spans.Len()-10_000 {
			break
		}
	}
	earlier := sb.List()
	logs := 0
	b.Run("SpanLog", func(b *testing.B) {
		var runFile, appended int64
		for range b.N {
			b.StopTimer()
			logs++
			log, err := CreateSpanLog(filepath.Join(dir, fmt.Sprintf("%d.spanlog", logs)))
			if err != nil {
				b.Fatal(err)
			}
			if err := log.Append(earlier); err != nil {
				b.Fatal(err)
			}
			before := log.bytes
			b.StartTimer()
			if err := log.Append(run.Spans); err != nil {
				b.Fatal(err)
			}
			r := *run
			r.SpanLog = log
			if err := SaveStored(path, &r); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			info, _ := os.Stat(path)
			runFile, appended = info.Size(), log.bytes-before
			log.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(runFile+appended), "written/op")
		b.ReportMetric(float64(appended), "spans-file/op")
	})
}
