package store

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/spans"
)

// spanRun is timedRun with spans and their sources.
func spanRun() *Run {
	r := timedRun()
	r.Spans = spans.ListOf([]spans.Span{
		{Name: "frame", Pid: 10, Tid: 10, Start: 1e9, End: 1e9 + 500e6, Source: 0},
		{Name: "physics", Pid: 10, Tid: 10, Start: 1e9 + 1, End: 1e9 + 100e6, Depth: 1, Source: 0},
		{Name: "frame", Pid: 10, Tid: 11, Start: 1e9 + 5, End: 1e9 + 5, Source: 1},
	})
	r.Meta.SpanSources = []spans.Source{{Kind: spans.KindITT, Pid: 10, Path: "/tmp/x", Received: 3, Dropped: 1}, {Kind: spans.KindMark, Received: 1}}
	return r
}

func TestRoundTripKeepsSpans(t *testing.T) {
	want := spanRun()
	data := encode(t, want)
	got, err := Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Spans.Slice(), want.Spans.Slice()) || !reflect.DeepEqual(got.Meta.SpanSources, want.Meta.SpanSources) {
		t.Fatalf("spans changed in the round trip:\n%+v\n%+v", got.Spans, got.Meta.SpanSources)
	}
	if !reflect.DeepEqual(got.Profile.Series, want.Profile.Series) {
		t.Fatal("the series after the spans changed")
	}
	// A view without samples stops before the spans; status reads the sources in the meta.
	path := filepath.Join(t.TempDir(), "r.stax")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	body, err := LoadParts(path, 0)
	if err != nil || body.Spans.Len() != 0 {
		t.Errorf("body only: %v, %d spans", err, body.Spans.Len())
	}
	m, err := ReadMeta(path)
	if err != nil || len(m.SpanSources) != 2 || m.SpanSources[0].Dropped != 1 {
		t.Errorf("meta: %v, %+v", err, m.SpanSources)
	}
	// A run without spans has no spans section, as files written before spans.
	plain := encode(t, timedRun())
	if bytes.Contains(plain, []byte(`"spans_bytes"`)) {
		t.Error("a run without spans declares a spans section")
	}
}

// Damaged spans sections are errors, never a crash.
func TestDecodeDamagedSpans(t *testing.T) {
	good := encodeSpans(spanRun().Spans, nil)
	cases := map[string][]byte{
		"cut":       good[:len(good)-3],
		"marker":    append([]byte("SPAN\x00\x00\x00\x02"), good[8:]...),
		"trailing":  append(append([]byte(nil), good...), 0),
		"bad name":  append([]byte(spansMagic), 1, 0xff, 0xff, 0x03),
		"bad index": append([]byte(spansMagic), 1, 1, 'a', 1, 5, 0, 0, 0, 0, 0, 0, 0),
		"wraps":     append(append([]byte(spansMagic), 1, 1, 'a', 1, 0, 0, 0), append(uvar(1<<63), append(uvar(1<<63), 0, 0, 0)...)...),
	}
	for name, sec := range cases {
		t.Run(name, func(t *testing.T) {
			n := int64(1)
			if name == "cut" || name == "marker" || name == "trailing" {
				n = 3
			}
			b := newBudget(bytes.NewReader(nil), &countReader{r: bytes.NewReader(nil)}, 1<<20, &layout{SpanText: int64(len(sec)), Spans: n})
			b.in.n = 1 << 20
			var r Run
			err := readSpans(bufioReader(sec), &r, b, &layout{SpanText: int64(len(sec)), Spans: n}, "")
			if err == nil {
				t.Errorf("decoded: %+v", r.Spans)
			}
		})
	}
}

func uvar(v uint64) []byte {
	var b []byte
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// TestWriteSpanSeed keeps the fuzz seed of a run with spans up to date (-update-seeds).
func TestWriteSpanSeed(t *testing.T) {
	if os.Getenv("STAX_UPDATE_SEEDS") == "" {
		t.Skip("set STAX_UPDATE_SEEDS=1 to rewrite testdata/fuzz/FuzzDecode/spans")
	}
	data := encode(t, spanRun())
	s := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
	if err := os.WriteFile("testdata/fuzz/FuzzDecode/spans", []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// TestDecodeManyLikeSpans: a run of as many spans as a run keeps, all alike (a program's
// tight loop of one task), compresses far better than other parts of a run; it still opens.
func TestDecodeManyLikeSpans(t *testing.T) {
	want := spanRun()
	var b spans.Builder
	for i := range spans.MaxSpans {
		at := uint64(1e9 + i*1000)
		b.Add(spans.Span{Name: "unit", Pid: 10, Tid: 10, Start: at, End: at + 500})
	}
	want.Spans = b.List()
	got, err := Decode(bytes.NewReader(encode(t, want)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Spans.Len() != want.Spans.Len() || got.Spans.At(got.Spans.Len()-1) != want.Spans.At(want.Spans.Len()-1) {
		t.Fatalf("%d spans back, want %d", got.Spans.Len(), want.Spans.Len())
	}
}

// TestOpenSpansOfEarlierFiles: a file written before the spans file, its spans inline and
// its layout without span_file_*, opens with its spans.
func TestOpenSpansOfEarlierFiles(t *testing.T) {
	seed, err := os.ReadFile("testdata/fuzz/FuzzDecode/spans")
	if err != nil {
		t.Fatal(err)
	}
	lit := strings.TrimSuffix(strings.TrimPrefix(strings.SplitN(string(seed), "\n", 3)[1], "[]byte("), ")")
	data, err := strconv.Unquote(lit)
	if err != nil || bytes.Contains([]byte(data), []byte("span_file")) {
		t.Fatalf("the seed is not a file of spans inline: %v", err)
	}
	got, err := Decode(strings.NewReader(data))
	if err != nil || got.SpansErr != nil || !reflect.DeepEqual(got.Spans.Slice(), spanRun().Spans.Slice()) {
		t.Fatalf("%v, %v, %+v", err, got.SpansErr, got.Spans.Slice())
	}
}
