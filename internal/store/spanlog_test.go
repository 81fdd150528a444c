package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/spans"
)

// addSpans adds n spans after the i-th to b, of names "task 0" to "task names-1".
func addSpans(b *spans.Builder, from, n, names int) {
	for i := from; i < from+n; i++ {
		at := uint64(1e9 + i*1000)
		b.Add(spans.Span{Name: fmt.Sprintf("task %d", i%names), Pid: 10, Tid: uint32(10 + i%3), Start: at, End: at + uint64(i%700),
			Depth: uint32(i % 4), Source: uint32(i % 2)})
	}
}

// recordBytes is what the records of sp's spans from the i-th on take, each name's number
// a 1-byte varint.
func recordBytes(sp spans.List, from int) int64 {
	var n int64
	var b [binary.MaxVarintLen64]byte
	for _, s := range sp.NamedFrom(from) {
		n += 2 // the name's number, the flags
		for _, v := range []uint64{uint64(s.Pid), uint64(s.Tid), s.Start, s.End - s.Start, uint64(s.Depth), uint64(s.Source)} {
			n += int64(binary.PutUvarint(b[:], v))
		}
	}
	return n
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// storedSpanRun saves a run of spans to the store as a recorder does, in checkpoints of
// 1,000, 2,500 and 3 spans, each of new names too, and returns the spans of the last.
func storedSpanRun(t *testing.T, id string) spans.List {
	t.Helper()
	t.Setenv("STAX_HOME", t.TempDir())
	os.MkdirAll(Dir(), 0o700)
	log, err := CreateSpanLog(SpanLogPath(id))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	var b spans.Builder
	n, size := 0, int64(spanLogHeaderSize)
	var sp spans.List
	for i, add := range []int{1000, 2500, 3} {
		addSpans(&b, n, add, 10*(i+1))
		sp = b.List()
		before, _ := os.ReadFile(SpanLogPath(id))
		if err := log.Append(sp); err != nil {
			t.Fatal(err)
		}
		run := timedRun()
		run.Spans, run.SpanLog = sp, log
		if err := SaveStored(Path(id), run); err != nil {
			t.Fatal(err)
		}
		size += recordBytes(sp, n)
		if got := fileSize(t, SpanLogPath(id)); got != size {
			t.Fatalf("checkpoint %d: the spans file has %d bytes, want %d (those before and the %d new records)", i, got, size, add)
		}
		after, _ := os.ReadFile(SpanLogPath(id))
		if string(after[:len(before)]) != string(before) {
			t.Fatalf("checkpoint %d rewrote the spans file", i)
		}
		n += add
	}
	// The stored copy names the spans alone: far less than their records.
	if got := fileSize(t, Path(id)); got > 8<<10 {
		t.Errorf("the stored copy takes %d bytes: the spans are not listed by reference", got)
	}
	return sp
}

// TestStoredCopyListsSpansOfTheSpansFile: checkpoints append the new spans' records to the
// run's spans file alone; the run reads back whole from its file and the spans file, and a
// copy saved for travel holds its spans itself.
func TestStoredCopyListsSpansOfTheSpansFile(t *testing.T) {
	want := storedSpanRun(t, "r")
	got, err := Load(Path("r"))
	if err != nil || got.SpansErr != nil {
		t.Fatal(err, got.SpansErr)
	}
	if !reflect.DeepEqual(got.Spans.Slice(), want.Slice()) {
		t.Fatalf("%d spans read back, want %d, or they differ", got.Spans.Len(), want.Len())
	}
	// Read from elsewhere than its file, the run has no spans, and says where they are.
	data, _ := os.ReadFile(Path("r"))
	if read, err := Decode(bytes.NewReader(data)); err != nil || read.SpansErr == nil || read.Spans.Len() != 0 {
		t.Fatalf("decoded from its bytes: %v, spans error %v", err, read.SpansErr)
	}
	travel := filepath.Join(t.TempDir(), "travel.stax")
	if err := Save(travel, got); err != nil {
		t.Fatal(err)
	}
	os.Remove(SpanLogPath("r"))
	moved, err := Load(travel)
	if err != nil || moved.SpansErr != nil || !reflect.DeepEqual(moved.Spans.Slice(), want.Slice()) {
		t.Fatalf("the saved copy: %v, %v, %d spans", err, moved.SpansErr, moved.Spans.Len())
	}
}

// TestSpansFileDamage: a spans file that is damaged, cut short or gone leaves the run
// without spans, and says so, naming the file; bytes past those the run lists (an append
// a crash cut short) are not read.
func TestSpansFileDamage(t *testing.T) {
	want := storedSpanRun(t, "r")
	good, _ := os.ReadFile(SpanLogPath("r"))
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 0x40
	cases := []struct {
		name, data, err string
	}{
		{"flipped", string(flipped), "checksum mismatch"},
		{"truncated", string(good[:len(good)-5]), "cut short"},
		{"foreign", "NOTSTAX\x00" + string(good[8:]), "not a stax spans file"},
		{"missing", "", "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(SpanLogPath("r"))
			if c.name != "missing" {
				os.WriteFile(SpanLogPath("r"), []byte(c.data), 0o600)
			}
			got, err := LoadParts(Path("r"), Samples)
			if err != nil {
				t.Fatalf("the run does not open: %v", err)
			}
			if got.SpansErr == nil || !strings.Contains(got.SpansErr.Error(), c.err) || !strings.Contains(got.SpansErr.Error(), SpanLogPath("r")) {
				t.Fatalf("spans error %v, want one naming the file and saying %q", got.SpansErr, c.err)
			}
			if got.Spans.Len() != 0 || got.Profile.Series.Len() != 2000 {
				t.Fatalf("%d spans, %d samples", got.Spans.Len(), got.Profile.Series.Len())
			}
			if err := Save(filepath.Join(t.TempDir(), "x.stax"), got); err == nil {
				t.Fatal("a run whose spans were lost was saved without them")
			}
		})
	}
	crashed := append(append([]byte(nil), good...), "\x07\x01\x02half a record"...)
	os.WriteFile(SpanLogPath("r"), crashed, 0o600)
	got, err := Load(Path("r"))
	if err != nil || got.SpansErr != nil || !reflect.DeepEqual(got.Spans.Slice(), want.Slice()) {
		t.Fatalf("with bytes past the spans listed: %v, %v, %d spans", err, got.SpansErr, got.Spans.Len())
	}
}

// TestCheckpointSpansBeyondTheFile: spans not yet in the spans file are written in the
// run's file, after those of the file.
func TestCheckpointSpansBeyondTheFile(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	os.MkdirAll(Dir(), 0o700)
	log, err := CreateSpanLog(SpanLogPath("r"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	var b spans.Builder
	addSpans(&b, 0, 100, 5)
	if err := log.Append(b.List()); err != nil {
		t.Fatal(err)
	}
	addSpans(&b, 100, 50, 9)
	run := timedRun()
	run.Spans, run.SpanLog = b.List(), log
	if err := SaveStored(Path("r"), run); err != nil {
		t.Fatal(err)
	}
	got, err := Load(Path("r"))
	if err != nil || got.SpansErr != nil || !reflect.DeepEqual(got.Spans.Slice(), run.Spans.Slice()) {
		t.Fatalf("%v, %v, %d spans", err, got.SpansErr, got.Spans.Len())
	}
}

// TestEncodeSpansAllocatesOnce: the spans section is made in one buffer of about its size,
// not grown span by span.
func TestEncodeSpansAllocatesOnce(t *testing.T) {
	var b spans.Builder
	for i := range 200_000 {
		at := uint64(3e14 + i*4000)
		b.Add(spans.Span{Name: fmt.Sprintf("task %d", i%50), Pid: 123456, Tid: uint32(123456 + i%8), Start: at, End: at + uint64(2000+i%9000), Depth: uint32(i % 3)})
	}
	sp := b.List()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	sec := encodeSpans(sp, nil)
	runtime.ReadMemStats(&m1)
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > uint64(len(sec))*3/2 {
		t.Errorf("encoding %d bytes of spans allocated %d bytes", len(sec), alloc)
	}
}

func TestRemoveDeletesTheSpansFile(t *testing.T) {
	storedSpanRun(t, "r")
	if err := Remove("r"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(SpanLogPath("r")); !os.IsNotExist(err) {
		t.Fatalf("the spans file is still there: %v", err)
	}
}

// spanLogSeed is a spans section and the spans file it refers to: 40 spans, 30 of them in
// the file.
func spanLogSeed(t testing.TB) (section, file []byte, fileSpans int64) {
	path := filepath.Join(t.TempDir(), "seed.spanlog")
	log, err := CreateSpanLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	var b spans.Builder
	addSpans(&b, 0, 30, 4)
	if err := log.Append(b.List()); err != nil {
		t.Fatal(err)
	}
	addSpans(&b, 30, 10, 6)
	file, _ = os.ReadFile(path)
	return encodeSpans(b.List(), log), file, 30
}

// readSpansOf reads a spans section of spans spans, fileSpans of them in fileBytes bytes of
// the spans file holding file, written at path (its checksum made to match, so damage past
// it is read).
func readSpansOf(path string, section, file []byte, spans, fileSpans, fileBytes int64) (*Run, error) {
	l := &layout{SpanText: int64(len(section)), Spans: spans, SpanFileSpans: fileSpans, SpanFileBytes: fileBytes}
	if fileBytes >= 0 && fileBytes <= int64(len(file))-spanLogHeaderSize {
		l.SpanFileCRC = crc32.Checksum(file[spanLogHeaderSize:spanLogHeaderSize+fileBytes], castagnoli)
	}
	os.WriteFile(path, file, 0o600)
	b := newBudget(bytes.NewReader(nil), &countReader{r: bytes.NewReader(nil)}, 1<<20, l)
	b.in.n = 1 << 20
	var r Run
	return &r, readSpans(bufioReader(section), &r, b, l, path)
}

func TestReadSpansOfTheSpansFile(t *testing.T) {
	section, file, n := spanLogSeed(t)
	path := filepath.Join(t.TempDir(), "f.spanlog")
	r, err := readSpansOf(path, section, file, 40, n, int64(len(file)-spanLogHeaderSize))
	if err != nil || r.SpansErr != nil || r.Spans.Len() != 40 || r.Spans.At(39).Name != "task 3" || r.Spans.At(35).Name != "task 5" {
		t.Fatalf("%v, %v, %d spans", err, r.SpansErr, r.Spans.Len())
	}
	// The file holding fewer spans than it is said to, or more, is an error.
	for _, k := range []int64{n - 1, n + 1} {
		if r, err := readSpansOf(path, section, file, 40, k, int64(len(file)-spanLogHeaderSize)); err == nil && r.SpansErr == nil {
			t.Errorf("%d spans said to be in a file of %d: read", k, n)
		}
	}
}

// FuzzSpanLog reads a spans section whose first spans are in a spans file, both
// arbitrary: an error or the spans declared, never a panic or a huge allocation.
func FuzzSpanLog(f *testing.F) {
	section, file, n := spanLogSeed(f)
	path := filepath.Join(f.TempDir(), "f.spanlog")
	f.Add(section, file, int64(40), n, int64(len(file)-spanLogHeaderSize))
	f.Add(section, file[:40], int64(40), n, int64(len(file)-spanLogHeaderSize))
	f.Add(section, file, int64(40), int64(spans.MaxSpans), int64(maxSpanRecord*spans.MaxSpans))
	f.Fuzz(func(t *testing.T, section, file []byte, ns, fileSpans, fileBytes int64) {
		if len(section) == 0 {
			return
		}
		r, err := readSpansOf(path, section, file, ns, fileSpans, fileBytes)
		if err == nil && r.SpansErr == nil && int64(r.Spans.Len()) != ns {
			t.Fatalf("%d spans read, %d declared", r.Spans.Len(), ns)
		}
	})
}

// TestWriteSpanLogSeeds keeps the seeds of FuzzSpanLog up to date.
func TestWriteSpanLogSeeds(t *testing.T) {
	if os.Getenv("STAX_UPDATE_SEEDS") == "" {
		t.Skip("set STAX_UPDATE_SEEDS=1 to rewrite testdata/fuzz/FuzzSpanLog")
	}
	storedSpanRun(t, "r")
	section, file, n := spanLogSeed(t)
	flipped := append([]byte(nil), file...)
	flipped[len(flipped)-7] ^= 1
	size := int64(len(file) - spanLogHeaderSize)
	seeds := map[string]struct {
		file       []byte
		fileSpans  int64
		fileBytes  int64
		declared   int64
		sectionCut int
	}{
		"valid":        {file, n, size, 40, 0},
		"file_cut":     {file[:len(file)-9], n, size, 40, 0},
		"file_flipped": {flipped, n, size, 40, 0},
		"crash_tail":   {append(append([]byte(nil), file...), 1, 2, 3), n, size, 40, 0},
		"all_inline":   {file[:spanLogHeaderSize], 0, 0, 40, 0},
		"section_cut":  {file, n, size, 40, 5},
	}
	stored, _ := os.ReadFile(Path("r"))
	os.WriteFile("testdata/fuzz/FuzzDecode/stored_run_spans_file", []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", stored)), 0o644)
	os.MkdirAll("testdata/fuzz/FuzzSpanLog", 0o755)
	for name, s := range seeds {
		sec := section
		if s.fileSpans == 0 {
			var b spans.Builder
			addSpans(&b, 0, 30, 4)
			addSpans(&b, 30, 10, 6)
			sec = encodeSpans(b.List(), nil)
		}
		sec = sec[:len(sec)-s.sectionCut]
		data := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\nint64(%d)\nint64(%d)\nint64(%d)\n", sec, s.file, s.declared, s.fileSpans, s.fileBytes)
		if err := os.WriteFile(filepath.Join("testdata/fuzz/FuzzSpanLog", name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
