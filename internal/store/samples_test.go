package store

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

func testChunks(n int) []agg.SeriesChunk {
	var out []agg.SeriesChunk
	for i := range n {
		data := bytes.Repeat([]byte{byte(i), 1, 2}, 100+i)
		out = append(out, agg.SeriesChunk{Base: uint64(i) * 1000, Min: uint64(i) * 1000, Max: uint64(i)*1000 + 999, N: uint32(len(data) / 3), Data: data})
	}
	return out
}

func writeSamples(t testing.TB, path string, chunks []agg.SeriesChunk) []agg.SeriesChunk {
	t.Helper()
	l, err := CreateSampleLog(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]agg.SeriesChunk, len(chunks))
	for i := range chunks {
		ref, err := l.Append(&chunks[i])
		if err != nil {
			t.Fatal(err)
		}
		out[i] = chunks[i]
		out[i].Ref, out[i].Data = ref, nil
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSamplesFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.samples")
	chunks := testChunks(20)
	refs := writeSamples(t, path, chunks)
	if _, err := CreateSampleLog(path); err == nil {
		t.Fatal("a second samples file was created over the first")
	}
	sf := OpenSampleFile(path)
	defer sf.Close()
	s := agg.Series{Chunks: refs, Reader: sf}
	for i := range refs {
		b, err := sf.ReadChunk(&refs[i])
		if err != nil || !bytes.Equal(b, chunks[i].Data) {
			t.Fatalf("chunk %d: %v", i, err)
		}
	}
	if s.Len() != func() (n uint64) {
		for _, c := range chunks {
			n += uint64(c.N)
		}
		return
	}() {
		t.Fatal("length differs")
	}
}

func TestSamplesFileDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.samples")
	refs := writeSamples(t, path, testChunks(3))
	b, _ := os.ReadFile(path)

	flipped := append([]byte(nil), b...)
	flipped[refs[1].Ref+chunkHeaderSize+5] ^= 0xff
	cases := map[string][]byte{
		"flipped":   flipped,
		"truncated": b[:refs[2].Ref+10],
		"foreign":   append([]byte("NOTSTAX\x00"), b[8:]...),
	}
	for name, data := range cases {
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, data, 0o600)
		sf := OpenSampleFile(p)
		var failed bool
		for i := range refs {
			if _, err := sf.ReadChunk(&refs[i]); err != nil {
				failed = true
			}
		}
		sf.Close()
		if !failed {
			t.Errorf("%s: every chunk read", name)
		}
	}
	// A chunk descriptor that does not match the record is refused.
	sf := OpenSampleFile(path)
	defer sf.Close()
	other := refs[0]
	other.N++
	if _, err := sf.ReadChunk(&other); err == nil {
		t.Error("a chunk that is not the one described was read")
	}
	other = refs[0]
	other.Ref++
	if _, err := sf.ReadChunk(&other); err == nil {
		t.Error("a chunk at a wrong offset was read")
	}
	if _, err := OpenSampleFile(filepath.Join(t.TempDir(), "missing")).ReadChunk(&refs[0]); err == nil {
		t.Error("a missing file was read")
	}
}

// FuzzReadChunk reads chunks from arbitrary bytes at arbitrary offsets: an error or the
// chunk described, never a panic or a huge allocation.
func FuzzReadChunk(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.samples")
	refs := writeSamples(f, path, testChunks(2))
	seed, _ := os.ReadFile(path)
	f.Add(seed, refs[1].Ref, refs[1].Base, refs[1].Min, refs[1].Max, refs[1].N)
	f.Add(seed[:40], int64(16), uint64(0), uint64(0), uint64(999), uint32(100))
	f.Fuzz(func(t *testing.T, data []byte, ref int64, base, lo, hi uint64, n uint32) {
		p := filepath.Join(t.TempDir(), "f.samples")
		os.WriteFile(p, data, 0o600)
		sf := OpenSampleFile(p)
		defer sf.Close()
		c := agg.SeriesChunk{Base: base, Min: lo, Max: hi, N: n, Ref: ref}
		b, err := sf.ReadChunk(&c)
		if err == nil && len(b) > maxChunkLength {
			t.Fatalf("read %d bytes", len(b))
		}
	})
}

// TestSalvageKeepsTheWholeChunks cuts a samples file short in its third of five chunks:
// the series keeps the two before, and the damage counts the three lost, their samples and
// times.
func TestSalvageKeepsTheWholeChunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.samples")
	chunks := testChunks(5)
	refs := writeSamples(t, path, chunks)
	if err := os.Truncate(path, refs[2].Ref+chunkHeaderSize+3); err != nil {
		t.Fatal(err)
	}
	inline := agg.SeriesChunk{Base: 9000, Min: 9000, Max: 9001, N: 1, Data: []byte{0, 0, 0}}
	s := agg.Series{Chunks: append(refs, inline), Reader: OpenSampleFile(path)}
	d := salvage(&s, 500)
	if d == nil || d.Chunks != 3 || d.OfChunks != 5 || d.FromNs != 2000-500 || d.ToNs != 4999-500 {
		t.Fatalf("damage %+v", d)
	}
	if want := uint64(chunks[2].N + chunks[3].N + chunks[4].N); d.Samples != want {
		t.Errorf("%d samples lost, want %d", d.Samples, want)
	}
	if len(s.Chunks) != 3 || s.Chunks[0].Ref != refs[0].Ref || s.Chunks[1].Ref != refs[1].Ref || s.Chunks[2].Data == nil {
		t.Errorf("kept %+v", s.Chunks)
	}
	n := 0
	if err := s.Each(0, 0, func(agg.Sample) { n++ }); err != nil || uint64(n) != s.Len() {
		t.Errorf("the rest reads %d samples (%v), holds %d", n, err, s.Len())
	}
	// A whole file: nothing lost.
	path2 := filepath.Join(t.TempDir(), "whole.samples")
	s2 := agg.Series{Chunks: writeSamples(t, path2, testChunks(3)), Reader: OpenSampleFile(path2)}
	if d := salvage(&s2, 0); d != nil || len(s2.Chunks) != 3 {
		t.Errorf("a whole file: damage %+v, %d chunks", d, len(s2.Chunks))
	}
}

// TestSampleLogRetryOverwritesTheCutRecord: an append that a full disk cut short leaves
// the log where it was, so the next append's record starts where the cut one did and the
// file reads back whole.
func TestSampleLogRetryOverwritesTheCutRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.samples")
	l, err := CreateSampleLog(path)
	if err != nil {
		t.Fatal(err)
	}
	chunks := testChunks(2)
	ref0, err := l.Append(&chunks[0])
	if err != nil {
		t.Fatal(err)
	}
	// What a write cut short leaves: part of a record past the end.
	if _, err := l.f.WriteAt([]byte("torn record"), l.Size()); err != nil {
		t.Fatal(err)
	}
	ref1, err := l.Append(&chunks[1])
	if err != nil || ref1 != ref0+int64(chunkHeaderSize+len(chunks[0].Data)) {
		t.Fatalf("the retried append is at %d (%v)", ref1, err)
	}
	l.Close()
	sf := OpenSampleFile(path)
	defer sf.Close()
	c := chunks[1]
	c.Ref = ref1
	if b, err := sf.ReadChunk(&c); err != nil || !bytes.Equal(b, chunks[1].Data) {
		t.Errorf("the retried chunk: %v", err)
	}
}

// FuzzSalvage salvages a series of chunk descriptors over arbitrary bytes: never a panic,
// and what it keeps reads back, the damage counting exactly what it left out.
func FuzzSalvage(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.samples")
	refs := writeSamples(f, path, testChunks(3))
	seed, _ := os.ReadFile(path)
	f.Add(seed, refs[1].Ref, uint32(refs[1].N), refs[2].Ref)
	f.Add(seed[:refs[2].Ref+9], refs[1].Ref, uint32(refs[1].N), refs[2].Ref)
	f.Add([]byte("STAXSMP\x00\x01\x00\x00\x00\x00\x00\x00\x00"), int64(16), uint32(1), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, ref1 int64, n1 uint32, ref2 int64) {
		p := filepath.Join(t.TempDir(), "f.samples")
		os.WriteFile(p, data, 0o600)
		sf := OpenSampleFile(p)
		defer sf.Close()
		chunks := []agg.SeriesChunk{refs[0], {Base: 1000, Min: 1000, Max: 1999, N: n1, Ref: ref1}, {Base: 2000, Min: 2000, Max: 2999, N: refs[2].N, Ref: ref2}}
		s := agg.Series{Chunks: slices.Clone(chunks), Reader: sf}
		before := s.Len()
		d := salvage(&s, 0)
		var lost uint64
		if d != nil {
			lost = d.Samples
			if d.Chunks == 0 || d.Chunks > d.OfChunks || d.FromNs > d.ToNs {
				t.Fatalf("damage %+v", d)
			}
		}
		if s.Len()+lost != before {
			t.Fatalf("kept %d and lost %d of %d samples", s.Len(), lost, before)
		}
		for i := range s.Chunks {
			if _, err := s.Reader.ReadChunk(&s.Chunks[i]); err != nil && s.Chunks[i].N != 0 && s.Chunks[i].Ref != 0 {
				t.Fatalf("kept chunk %d does not read: %v", i, err)
			}
		}
	})
}

// TestSamplesDamageOfLooksAtTheFileSize: a run whose samples file is as long as its meta
// says is not read further; one cut short is, and says what it lost; a run written before
// the meta kept the size is read when its file ends inside a record.
func TestSamplesDamageOfLooksAtTheFileSize(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	os.MkdirAll(Dir(), 0o700)
	refs := writeSamples(t, SamplesPath("r"), testChunks(4))
	info, _ := os.Stat(SamplesPath("r"))
	run := &Run{Meta: Meta{ID: "r", SamplesFileSize: info.Size()}}
	run.Profile.Series.Chunks = refs
	if err := SaveStored(Path("r"), run); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMeta(Path("r"))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := SamplesDamageOf(Path("r"), m); d != nil || err != nil {
		t.Fatalf("a whole file: %+v, %v", d, err)
	}
	os.Truncate(SamplesPath("r"), refs[3].Ref+5)
	if d, err := SamplesDamageOf(Path("r"), m); err != nil || d == nil || d.Chunks != 1 || d.OfChunks != 4 || d.Samples != uint64(refs[3].N) {
		t.Fatalf("cut in the last chunk: %+v, %v", d, err)
	}
	m.SamplesFileSize = 0 // as written before the meta kept it
	if d, err := SamplesDamageOf(Path("r"), m); err != nil || d == nil || d.Chunks != 1 {
		t.Fatalf("an older run cut inside a record: %+v, %v", d, err)
	}
	os.Truncate(SamplesPath("r"), refs[3].Ref)
	if d, err := SamplesDamageOf(Path("r"), m); err != nil || d != nil {
		t.Fatalf("an older run cut between records is left to the views: %+v, %v", d, err)
	}
}
