package store

import (
	"bytes"
	"os"
	"path/filepath"
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
