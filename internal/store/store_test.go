package store

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/testutil/synthrun"
	"github.com/stax-profiler/stax/internal/views"
)

// sampleRun is a small run with every part: an inlined function (work in main) and an
// unnamed frame, locations with addresses, lines and a mapping, JIT sources and code.
func sampleRun() *Run {
	exit := 3
	r := &Run{
		Meta: Meta{
			ID: "20260101-120000-ab12", Command: []string{"./app", "--flag", "a b"}, Pid: 1234, Freq: 999,
			Event: "cycles", Start: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC),
			End: time.Date(2026, 1, 1, 12, 0, 5, 0, time.UTC), Finished: true, ExitCode: &exit,
			Notes: []string{"a note"}, Lost: 2, Samples: 30, Unresolved: 1,
		},
		Profile: agg.Profile{
			Frames: []agg.Frame{
				{Func: "main", Image: "/bin/app", Kind: agg.KindUser, File: "main.c", Line: 10},
				{Func: "work", Image: "/bin/app", Kind: agg.KindUser, Inlined: true},
				{Func: "[unknown]", Kind: agg.KindUnknown},
			},
			Mappings: []agg.Mapping{{Pid: 1234, Start: 0x400000, Limit: 0x402000, File: "/bin/app", BuildID: "abcd"}},
			Locations: []agg.Location{
				{Addr: 0x401010, Mapping: 1, Lines: []agg.Line{{Func: 1, Line: 12}, {Func: 0, Line: 10}}},
				{Addr: 0x7f0000001000, Lines: []agg.Line{{Func: 2}}},
				{Addr: 0x40100a, Mapping: 1, Lines: []agg.Line{{Func: 0, Line: 11}}},
			},
			Stacks: [][]uint32{{0}, {1, 2}, {}},
			Entries: []agg.Entry{
				{Tid: 1234, Pid: 1234, Stack: 0, Count: 20, Leaf: 0x401010, LeafFunc: 1, Time: 100},
				{Tid: 1235, Pid: 1234, Stack: 1, Count: 9, Leaf: 0x7f0000001000, LeafFunc: -1, Time: 200},
				{Tid: 1235, Pid: 1234, Stack: 2, Count: 1, LeafFunc: -1, Time: 300},
			},
			Threads: []agg.ThreadInfo{{Tid: 1234, Pid: 1234, Name: "app"}, {Tid: 1235, Pid: 1234, Name: "worker"}},
		},
		JIT: []JITSource{{Pid: 1234, Path: "/tmp/jit-1234.dump", Kind: "jitdump", Functions: 3, Records: 5,
			Skipped: map[string]uint64{"debug": 1}}},
		Code: []Code{
			{Frame: 1, Start: 0x401000, Arch: 62, Bytes: []byte{0x55, 0xc3},
				Lines: []Line{{Addr: 0x401000, File: "main.c", Line: 11}}},
			{Frame: 0, Start: 0x400000, Arch: 62, Path: "/bin/app", BuildID: "abcd"},
		},
	}
	r.Profile.ExpandStacks()
	return r
}

// asFormat3 is the JSON of r as stax wrote it before locations (formats 1 to 3): stacks of
// frame ids and no mappings; and the run a reader makes of it, those stacks turned into
// locations of address 0.
func asFormat3(t testing.TB, r *Run) ([]byte, *Run) {
	old, want := format3Run(r)
	js, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	return js, want
}

// format3Run is r as formats 1 to 3 held it (see asFormat3), and as it reads.
func format3Run(r *Run) (old, want *Run) {
	o := *r
	o.Profile.Stacks, o.Profile.Locations, o.Profile.Mappings, o.Profile.FrameStacks = r.Profile.FrameStacks, nil, nil, nil
	w := o
	w.Profile.Stacks = append([][]uint32(nil), o.Profile.Stacks...)
	w.Profile.LocateFrameStacks()
	return &o, &w
}

func encode(t testing.TB, r *Run) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Encode(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// frame builds a saved-run file around an arbitrary payload, with a correct checksum.
func frame(version uint32, payload []byte) []byte {
	hdr := make([]byte, headerSize)
	copy(hdr, magic)
	binary.LittleEndian.PutUint32(hdr[8:], version)
	binary.LittleEndian.PutUint32(hdr[12:], crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli)))
	binary.LittleEndian.PutUint64(hdr[16:], uint64(len(payload)))
	return append(hdr, payload...)
}

// withMeta builds a format 2 payload: the meta section, then body.
func withMeta(meta string, body []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(meta)))
	return append(append(b, meta...), body...)
}

// TestReadsFormat1 reads a file of the first format: the whole run gzip'd as one document.
func TestReadsFormat1(t *testing.T) {
	js, want := asFormat3(t, sampleRun())
	path := filepath.Join(t.TempDir(), "old.stax")
	os.WriteFile(path, frame(1, gz(string(js))), 0o600)
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("format 1 read as %+v", got)
	}
	meta, err := ReadMeta(path)
	if err != nil || meta.ID != want.Meta.ID {
		t.Errorf("ReadMeta of a format 1 file: %+v, %v", meta, err)
	}
}

// encodeCountsV1 is the counts section of format 4 as first written: stacks of frame ids
// and entries with their leaf address and function as they are.
func encodeCountsV1(p *agg.Profile) []byte {
	b := []byte(countsMagicV1)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(p.Stacks)))
	for _, s := range p.Stacks {
		b = binary.AppendUvarint(b, uint64(len(s)))
		for _, id := range s {
			b = binary.AppendUvarint(b, uint64(id))
		}
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(p.Entries)))
	for _, e := range p.Entries {
		for _, v := range []uint64{uint64(e.Tid), uint64(e.Pid), uint64(e.Stack), e.Count, e.Leaf} {
			b = binary.AppendUvarint(b, v)
		}
		b = binary.AppendVarint(b, int64(e.LeafFunc))
		b = binary.AppendUvarint(b, e.Time)
	}
	return b
}

// TestReadsFormat4FrameStacks reads a format 4 file written before locations: its counts
// section holds stacks of frame ids, turned into locations as those of format 3.
func TestReadsFormat4FrameStacks(t *testing.T) {
	for _, r := range []*Run{sampleRun(), timedRun()} {
		old, want := format3Run(r)
		var payload bytes.Buffer
		if err := writePayloadCounts(&payload, old, false, encodeCountsV1(&old.Profile)); err != nil {
			t.Fatal(err)
		}
		got, err := Decode(bytes.NewReader(frame(4, payload.Bytes())))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: read as %+v\nwant %+v", r.Meta.ID, got.Profile.Locations, want.Profile.Locations)
		}
	}
}

// TestReadMetaAndCheck: listing reads the meta alone, and a damaged file is told apart
// without decoding it.
func TestReadMetaAndCheck(t *testing.T) {
	dir := t.TempDir()
	good := encode(t, sampleRun())
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := write("good.stax", good)
	meta, err := ReadMeta(p)
	// The meta keeps what status shows of the samples and JIT sources, beside the body.
	if err != nil || meta.Summary == nil || meta.Summary.DistinctStacks != len(sampleRun().Profile.Stacks) || len(meta.JITSources) != len(sampleRun().JIT) {
		t.Fatalf("ReadMeta: %+v, %v", meta, err)
	}
	meta.Summary, meta.JITSources = nil, nil
	if !reflect.DeepEqual(meta, sampleRun().Meta) {
		t.Fatalf("ReadMeta: %+v", meta)
	}
	if err := Check(p); err != nil {
		t.Errorf("Check of a good file: %v", err)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-3] ^= 0x10
	p = write("flipped.stax", flipped)
	if _, err := ReadMeta(p); err != nil {
		t.Errorf("ReadMeta reads the meta of a file damaged past it: %v", err)
	}
	if err := Check(p); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("Check of a bit-flipped file: %v", err)
	}
	p = write("short.stax", good[:len(good)-10])
	if _, err := ReadMeta(p); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("ReadMeta of a truncated file: %v", err)
	}
	p = write("foreign.stax", []byte("#!/bin/sh\necho not a run\n"))
	if _, err := ReadMeta(p); err == nil || !strings.Contains(err.Error(), "not a stax run file") {
		t.Errorf("ReadMeta of a foreign file: %v", err)
	}
}

func gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	io.WriteString(w, s)
	w.Close()
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		run  *Run
	}{
		{"full", sampleRun()},
		{"empty", &Run{}},
		{"unfinished", func() *Run {
			r := sampleRun()
			r.Meta.Finished = false
			r.Meta.ExitCode = nil
			r.Meta.End = time.Time{}
			return r
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := encode(t, tc.run)
			if string(b[:8]) != magic || binary.LittleEndian.Uint32(b[8:]) != 5 ||
				binary.LittleEndian.Uint64(b[16:]) != uint64(len(b)-headerSize) {
				t.Fatalf("bad header % x", b[:headerSize])
			}
			got, err := Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.run) {
				t.Errorf("round trip changed the run:\n got %+v\nwant %+v", got, tc.run)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	good := encode(t, sampleRun())
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	withProfile := func(f func(r *Run)) []byte {
		r := sampleRun()
		f(r)
		return encode(t, r)
	}
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "header"},
		{"short header", good[:10], "header"},
		{"bad magic", mod(func(b []byte) []byte { b[0] = 'X'; return b }), "bad magic"},
		{"wrong version", mod(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], FormatVersion+1); return b }), fmt.Sprintf("format version %d", FormatVersion+1)},
		{"version zero", mod(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 0); return b }), "format version 0"},
		{"checksum mismatch", mod(func(b []byte) []byte { b[12] ^= 1; return b }), "checksum"},
		{"payload bit flip", mod(func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b }), "checksum"},
		{"truncated payload", good[:len(good)-5], "truncated"},
		{"header only", good[:headerSize], "truncated"},
		{"payload over the limit", mod(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[16:], maxPayload+1); return b }), "limit"},
		{"payload length all ones", mod(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[16:], ^uint64(0)); return b }), "limit"},
		{"v1 not gzip", frame(1, []byte("plain text, not gzip")), "gzip"},
		{"v1 not json", frame(1, gz("not json")), "invalid character"},
		{"v1 json of the wrong shape", frame(1, gz(`{"profile":{"frames":7}}`)), "cannot unmarshal"},
		{"meta over the limit", frame(2, []byte{0xff, 0xff, 0xff, 0xff}), "limit"},
		{"meta cut short", frame(2, []byte{10, 0, 0, 0, '{'}), "read run meta"},
		{"meta not json", frame(2, withMeta("nope", nil)), "read run meta"},
		{"body not gzip", frame(2, withMeta(`{"id":"x"}`, []byte("plain text, not gzip"))), "gzip"},
		{"body of the wrong shape", frame(2, withMeta(`{"id":"x"}`, gz(`{"profile":{"frames":7}}`))), "cannot unmarshal"},
		{"stack names a missing location", withProfile(func(r *Run) { r.Profile.Stacks[1] = []uint32{2, 3} }), "stack 1 names location 3 of 3"},
		{"location names a missing frame", withProfile(func(r *Run) { r.Profile.Locations[2].Lines[0].Func = 3 }), "location 2 names frame 3 of 3"},
		{"location names a missing mapping", withProfile(func(r *Run) { r.Profile.Locations[1].Mapping = 2 }), "location 1 names mapping 2 of 1"},
		{"location of no lines", withProfile(func(r *Run) { r.Profile.Locations[1].Lines = nil }), "location 1 has no lines"},
		{"format 3 stack names a missing frame", frame(3, withMeta(`{"id":"x"}`, gz(`{"profile":{"frames":[{}],"stacks":[[0,1]]}}`))), "names frame 1 of 1"},
		{"entry names a missing stack", withProfile(func(r *Run) { r.Profile.Entries[2].Stack = 3 }), "entry 2 names stack 3 of 3"},
		{"leaf_func past the frames", withProfile(func(r *Run) { r.Profile.Entries[0].LeafFunc = 3 }), "entry 0 names frame 3 of 3"},
		{"leaf_func below -1", withProfile(func(r *Run) { r.Profile.Entries[1].LeafFunc = -2 }), "entry 1 names frame -2 of 3"},
		{"code names a missing frame", withProfile(func(r *Run) { r.Code[1].Frame = 9 }), "code 1 names frame 9 of 3"},
		{"fewer stacks than declared", frame(3, withMeta(layoutMeta(`"stacks":2`), gz(smallBody+seriesSection(0, 0, 0, 0)))), "stacks: 1, the file declares 2"},
		{"fewer frame ids than declared", frame(3, withMeta(layoutMeta(`"stack_frames":3`), gz(smallBody+seriesSection(0, 0, 0, 0)))), "1 frame ids, the file declares 3"},
		{"absent array declared", frame(3, withMeta(layoutMeta(`"threads":2`), gz(smallBody+seriesSection(0, 0, 0, 0)))), "threads: 0, the file declares 2"},
		{"fewer chunks than declared", frame(3, withMeta(layoutMeta(`"series_chunks":1`), gz(smallBody+seriesSection(0, 0, 0, 0)))), "0 chunks, the file declares 1"},
		{"body shorter than declared", frame(3, withMeta(layoutMeta(`"body_bytes":1000`), gz(smallBody+seriesSection(0, 0, 0, 0)))), "the body has 82 bytes, the file declares 1000"},
		{"series shorter than declared", frame(3, withMeta(layoutMeta(`"series_bytes":100`), gz(smallBody+seriesSection(0, 0, 0, 0)))), "holds 94 bytes, the file declares 182"},
		{"negative size declared", frame(3, withMeta(layoutMeta(`"entries":-1`), gz(smallBody+seriesSection(0, 0, 0, 0)))), "out of range"},
		{"chunk of no samples", frame(3, withMeta(`{"id":"x"}`, gz(smallBody+seriesSection(1, 0, 3, 1)))), "chunk 0: 0 samples in 3 bytes"},
		{"chunk too small for its samples", frame(3, withMeta(`{"id":"x"}`, gz(smallBody+seriesSection(1, 2, 5, 1)))), "chunk 0: 2 samples in 5 bytes"},
		{"body key given twice", frame(2, withMeta(`{"id":"x"}`, gz(`{"profile":{"stacks":[],"stacks":[]}}`))), "given twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Decode(bytes.NewReader(tc.in))
			if err == nil {
				t.Fatalf("no error; decoded %+v", r.Meta)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// layoutMeta is a meta section whose layout declares smallBody and an empty series, with
// the fields in change replaced.
func layoutMeta(change string) string {
	l := map[string]any{"body_bytes": len(smallBody), "frames": 1, "stacks": 1, "stack_frames": 1, "entries": 1, "series_bytes": len(seriesMagic) + 4}
	var c map[string]any
	if err := json.Unmarshal([]byte("{"+change+"}"), &c); err != nil {
		panic(err)
	}
	for k, v := range c {
		l[k] = v
	}
	b, _ := json.Marshal(map[string]any{"id": "x", "layout": l})
	return string(b)
}

// TestLayoutMatchesTheFile: Encode declares exactly what it writes, and a file of format 3
// written before the layout existed is still read.
func TestLayoutMatchesTheFile(t *testing.T) {
	old, want := format3Run(timedRun())
	if got, err := Decode(bytes.NewReader(frame(3, withMeta(layoutMeta(""), gz(smallBody+seriesSection(0, 0, 0, 0)))))); err != nil || len(got.Profile.Stacks) != 1 {
		t.Fatalf("a file that matches its layout: %v", err)
	}
	// Format 3 as first written: the meta section holds the meta alone.
	meta, _ := json.Marshal(old.Meta)
	b := body{Profile: old.Profile, JIT: old.JIT, Code: old.Code}
	b.Profile.Series = agg.Series{}
	js, _ := json.Marshal(b)
	var series bytes.Buffer
	writeSeriesV3(&series, &want.Profile.Series)
	got, err := Decode(bytes.NewReader(frame(3, withMeta(string(meta), gz(string(js)+"\n"+series.String())))))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("a format 3 file without a layout read as %+v", got.Profile.Locations)
	}
}

// TestDecodeTrailingData: bytes after the payload are not read.
func TestDecodeTrailingData(t *testing.T) {
	b := append(encode(t, sampleRun()), "trailing"...)
	if _, err := Decode(bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n <= 0 {
		return 0, errors.New("disk full")
	}
	w.n--
	return len(p), nil
}

func TestEncodeWriteError(t *testing.T) {
	for _, n := range []int{0, 1} {
		if err := Encode(&failWriter{n: n}, sampleRun()); err == nil {
			t.Errorf("no error when write %d fails", n)
		}
	}
}

func TestSaveLoadList(t *testing.T) {
	home := t.TempDir()
	t.Setenv("STAX_HOME", home)
	t.Setenv("XDG_STATE_HOME", "")
	if got, want := Dir(), filepath.Join(home, "runs"); got != want {
		t.Fatalf("Dir = %s, want %s", got, want)
	}
	ids, err := List()
	if err != nil || len(ids) != 0 {
		t.Fatalf("List before any run = %v, %v", ids, err)
	}
	now := time.Now()
	order := []string{"run-a", "run-b", "run-c"}
	for i, id := range order {
		r := sampleRun()
		r.Meta.ID = id
		if err := Save(Path(id), r); err != nil {
			t.Fatal(err)
		}
		// Distinct modification times, oldest first.
		mt := now.Add(time.Duration(i-10) * time.Minute)
		if err := os.Chtimes(Path(id), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	// Not runs: hidden files, temp files, other extensions, directories.
	for _, name := range []string{".tmp-123", ".hidden.stax", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(Dir(), name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ids, err = List()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"run-c", "run-b", "run-a"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("List = %v, want %v", ids, want)
	}
	got, err := Load(Path("run-b"))
	if err != nil {
		t.Fatal(err)
	}
	want := sampleRun()
	want.Meta.ID = "run-b"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load changed the run")
	}

	// Saving again replaces the file and leaves no temp file behind.
	want.Meta.Samples = 99
	if err := Save(Path("run-b"), want); err != nil {
		t.Fatal(err)
	}
	if got, err := Load(Path("run-b")); err != nil || got.Meta.Samples != 99 {
		t.Errorf("after re-save: %v, %v", got, err)
	}
	ents, _ := os.ReadDir(Dir())
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") && e.Name() != ".tmp-123" {
			t.Errorf("temp file %s left behind", e.Name())
		}
	}

	if _, err := Load(Path("missing")); err == nil {
		t.Errorf("no error loading a missing run")
	}
	bad := filepath.Join(Dir(), "bad.stax")
	os.WriteFile(bad, []byte("garbage garbage garbage garbage"), 0o600)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("Load of a bad file: %v (want the path in the error)", err)
	}
}

func TestDir(t *testing.T) {
	t.Setenv("STAX_HOME", "")
	xdg := t.TempDir()
	t.Setenv("XDG_STATE_HOME", xdg)
	if got, want := Dir(), filepath.Join(xdg, "stax", "runs"); got != want {
		t.Errorf("Dir = %s, want %s", got, want)
	}
	t.Setenv("XDG_STATE_HOME", "")
	home := t.TempDir()
	t.Setenv("HOME", home)
	if got, want := Dir(), filepath.Join(home, ".local", "state", "stax", "runs"); got != want {
		t.Errorf("Dir = %s, want %s", got, want)
	}
}

func TestSaveErrors(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o600)
	if err := Save(filepath.Join(blocker, "x.stax"), sampleRun()); err == nil {
		t.Errorf("no error saving under a file")
	}
	// The target is a non-empty directory: the rename fails and no temp file stays.
	target := filepath.Join(dir, "d.stax")
	os.MkdirAll(filepath.Join(target, "inner"), 0o700)
	if err := Save(target, sampleRun()); err == nil {
		t.Errorf("no error saving over a directory")
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("temp file %s left behind", e.Name())
		}
	}
}

func TestListErrors(t *testing.T) {
	home := t.TempDir()
	t.Setenv("STAX_HOME", home)
	// runs is a file, not a directory.
	os.WriteFile(filepath.Join(home, "runs"), nil, 0o600)
	if _, err := List(); err == nil {
		t.Errorf("no error listing a file")
	}
}

func TestValidID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"20260101-120000-ab12", true},
		{"my run", true},
		{"", false},
		{".hidden", false},
		{"..", false},
		{"a/b", false},
		{`a\b`, false},
		{"a\x00b", false},
		{strings.Repeat("x", 128), true},
		{strings.Repeat("x", 129), false},
	}
	for _, tc := range tests {
		if got := ValidID(tc.id); got != tc.want {
			t.Errorf("ValidID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

// FuzzDecode: any input decodes to a run whose indexes are all valid, or to an error.
func FuzzDecode(f *testing.F) {
	good := encode(f, sampleRun())
	f.Add(good)
	f.Add(encode(f, timedRun()))
	f.Add(encode(f, countedRun()))
	f.Add(encode(f, offCPURun()))
	f.Add(encode(f, offCPUWakersRun()))
	f.Add(encode(f, offCPUIntervalsRun()))
	f.Add(good[:len(good)-1])
	f.Add(frame(FormatVersion, gz(`{"profile":{"frames":[{}],"stacks":[[0]],"entries":[{"stack":0,"leaf_func":-1}]}}`)))
	f.Add(frame(FormatVersion, gz(`{"profile":{"stacks":[[5]]}}`)))
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		p := &r.Profile
		checkIndexes(p, r)
		if o := r.OffCPU; o != nil {
			reasons := views.StackReasons(o)
			views.OffCPUTop(o, reasons, views.Filter{}, 10, false)
			views.OffCPUFlame(o, reasons, views.Filter{}, 0, 0, true)
			rows, _ := views.Threads(p, 0)
			views.OffCPUThreads(rows, o, reasons, 999, 0, nil)
			if ivs := r.OffCPUIntervals; ivs != nil {
				w := views.IntervalsIn(o, ivs, 0, ^uint64(0))
				views.OffCPUTop(w, views.StackReasons(w), views.Filter{}, 10, false)
				views.MakeThreadStates(p, views.Filter{}, o, reasons, ivs, 0, 1e9, 1e8, 1e6, 0)
			}
		}
		if r.WakersNs != nil {
			views.Wakers(r.WakersNs, r.WakersN, 0, 3)
		}
		// The views must work on whatever decoded.
		views.Top(p, views.Filter{}, 10, false)
		views.Flame(p, views.Filter{}, 0, 0)
		views.Threads(p, 0)
		for _, by := range agg.Granularities {
			q := views.At(p, agg.Granularity{By: by, NoInline: true, Short: true})
			views.Top(q, views.Filter{}, 10, false)
			views.Flame(q, views.Filter{}, 0, 0)
		}
		first, last := p.TimeRange()
		if w, err := p.Window(first, last); err == nil {
			views.Top(w, views.Filter{}, 10, false)
		}
		if last > first && last-first < 1<<40 {
			views.MakeTimeline(p, views.Filter{}, first, last+1, max((last-first)/50, 1), 0)
		}
	})
}

// checkIndexes follows every index of a decoded run (a bad one panics).
func checkIndexes(p *agg.Profile, r *Run) {
	for _, e := range p.Entries {
		for _, lid := range p.Stacks[e.Stack] {
			l := p.Locations[lid]
			_ = p.Frames[l.Leaf()]
			if l.Mapping > 0 {
				_ = p.Mappings[l.Mapping-1]
			}
		}
		for _, id := range p.FrameStacks[e.Stack] {
			_ = p.Frames[id]
		}
		if e.LeafFunc >= 0 {
			_ = p.Frames[e.LeafFunc]
		}
	}
	for _, c := range r.Code {
		_ = p.Frames[c.Frame]
	}
}

// timedRun is a small run with a sample series: 3 threads, 6 stacks, 2,000 samples.
func timedRun() *Run {
	r := agg.NewRun()
	for i := 0; i < 2000; i++ {
		chain := []uint64{^uint64(511), uint64(i%6+1) << 8, 7 << 8}
		r.AddSample(10, uint32(10+i%3), uint32(i%2), 1e9+uint64(i)*1e6, 0, chain)
	}
	r.Resolve(synthrun.Names{})
	return &Run{Meta: Meta{ID: "timed", Samples: 2000, StartNs: 1e9}, Profile: *r.Profile(nil)}
}

// countedRun is timedRun's samples with two counters read with each: sample i counted
// 1000+i and i%7.
func countedRun() *Run {
	r := agg.NewRun()
	r.CountersPerSample(2)
	for i := 0; i < 2000; i++ {
		chain := []uint64{^uint64(511), uint64(i%6+1) << 8, 7 << 8}
		r.AddCountedSample(0, 10, uint32(10+i%3), uint32(i%2), 1e9+uint64(i)*1e6, 0, chain, []uint64{uint64(1000 + i), uint64(i % 7)})
	}
	r.Resolve(synthrun.Names{})
	return &Run{Meta: Meta{ID: "counted", Samples: 2000, StartNs: 1e9, Counters: []Counter{{Name: "task-clock"}, {Name: "page-faults"}}}, Profile: *r.Profile(nil)}
}

// The counters each sample carries survive a round trip (format 7), so a window of a
// stored run sums its own samples' counters.
func TestRoundTripKeepsSampleCounters(t *testing.T) {
	want := countedRun()
	data := encode(t, want)
	if v := binary.LittleEndian.Uint32(data[8:]); v != 7 {
		t.Errorf("a run with counters per sample is written as format %d, want 7", v)
	}
	if v := binary.LittleEndian.Uint32(encode(t, timedRun())[8:]); v != 5 {
		t.Errorf("a run without them is written as format %d, want 5", v)
	}
	got, err := Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got.Profile.Series.Counters != 2 || !reflect.DeepEqual(got.Profile.Series.Chunks, want.Profile.Series.Chunks) {
		t.Fatalf("the sample series changed in the round trip: %d counters", got.Profile.Series.Counters)
	}
	sums := func(p *agg.Profile) (s [2]uint64) {
		for _, e := range p.Entries {
			for j, v := range e.Counters {
				s[j] += v
			}
		}
		return s
	}
	var whole, half [2]uint64
	for i := range 2000 {
		whole[0], whole[1] = whole[0]+uint64(1000+i), whole[1]+uint64(i%7)
		if i >= 500 && i < 1000 {
			half[0], half[1] = half[0]+uint64(1000+i), half[1]+uint64(i%7)
		}
	}
	if s := sums(&got.Profile); s != whole {
		t.Errorf("the run counted %v, want %v", s, whole)
	}
	w, err := got.Profile.Window(1e9+500e6, 1e9+1000e6)
	if err != nil || w.TotalSamples() != 500 {
		t.Fatalf("window over the read run: %v, %d samples, want 500", err, w.TotalSamples())
	}
	if s := sums(w); s != half {
		t.Errorf("the window counted %v, want %v", s, half)
	}
}

func TestRoundTripKeepsSampleTimes(t *testing.T) {
	want := timedRun()
	got, err := Decode(bytes.NewReader(encode(t, want)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Profile.Series, want.Profile.Series) || !reflect.DeepEqual(got.Profile.KeyEntry, want.Profile.KeyEntry) {
		t.Fatal("the sample series changed in the round trip")
	}
	w, err := got.Profile.Window(1e9+500e6, 1e9+1000e6)
	if err != nil || w.TotalSamples() != 500 {
		t.Errorf("window over the read run: %v, %d samples, want 500", err, w.TotalSamples())
	}
	// A damaged series section is an error, not a crash.
	data := encode(t, want)
	for _, cut := range []int{len(data) - 8, len(data) - 40} {
		bad := append([]byte(nil), data[:cut]...)
		if _, err := Decode(bytes.NewReader(bad)); err == nil {
			t.Errorf("a run cut at %d of %d bytes decoded", cut, len(data))
		}
	}
}

// FuzzDecodePayload frames fuzzed JSON with a valid header and checksum, so the fuzzer gets
// past the checksum to the JSON decoding and index validation.
func FuzzDecodePayload(f *testing.F) {
	f.Add(`{"profile":{"frames":[{}],"stacks":[[0]],"entries":[{"stack":0,"leaf_func":-1}]}}`)
	f.Add(`{"profile":{"stacks":[[5]]}}`)
	f.Add(`{"profile":{"frames":[{}],"entries":[{"stack":0,"leaf_func":0}]},"code":[{"frame":1}]}`)
	f.Add(`{"meta":{"id":"x","start":"2026-01-01T00:00:00Z"}}`)
	f.Fuzz(func(t *testing.T, payload string) {
		r, err := Decode(bytes.NewReader(frame(2, withMeta(`{"id":"x"}`, gz(payload)))))
		if err != nil {
			return
		}
		p := &r.Profile
		checkIndexes(p, r)
		views.Top(p, views.Filter{}, 10, true)
		views.Flame(p, views.Filter{Tid: 1}, 3, 1)
		views.Threads(p, 5)
	})
}

func BenchmarkDecode(b *testing.B) {
	data := encode(b, sampleRun())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// bomb is a gzip stream of head, then tail repeated n times (as n further gzip members, each
// compressed once), then end: a small file that expands to len(tail)*n bytes.
func bomb(head, tail string, n int, end string) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	io.WriteString(zw, head)
	zw.Close()
	var member bytes.Buffer
	zw, _ = gzip.NewWriterLevel(&member, gzip.BestCompression)
	io.WriteString(zw, tail)
	zw.Close()
	for range n {
		b.Write(member.Bytes())
	}
	if end != "" {
		b.Write(gz(end))
	}
	return b.Bytes()
}

// seriesSection is a series marker claiming chunks chunks, then chunk headers of n samples
// in size bytes each (with their bytes, zero, after each) for the first count of them.
func seriesSection(chunks uint32, n, size uint32, count int) string {
	b := []byte(seriesMagic)
	b = binary.LittleEndian.AppendUint32(b, chunks)
	for range count {
		var h [chunkHeader]byte
		binary.LittleEndian.PutUint32(h[24:], n)
		binary.LittleEndian.PutUint32(h[28:], size)
		b = append(b, h[:]...)
		b = append(b, make([]byte, size)...)
	}
	return string(b)
}

const smallBody = `{"profile":{"frames":[{}],"stacks":[[0]],"entries":[{"stack":0,"leaf_func":-1}]}}` + "\n"

// craftedFile is a file made to cost far more to decode than its size, and what the
// error refusing it says.
type craftedFile struct {
	name, want string
	data       func() []byte // made when needed: the files are large
}

// craftedFiles are files made to cost far more to decode than their size: compression
// bombs in each part of the body, series that claim more than they hold, layouts that
// declare less than is there or more than the file can hold. Most repeat a compressed
// megabyte members times: 10,000 make files of about 11 MB that expand to 10 GB.
func craftedFiles(members int) []craftedFile {
	const meta = `{"id":"crafted","samples":10}`
	mb := strings.Repeat(",[]", 1<<20/3)
	// A megabyte of digits that compresses about 60-fold, as a real run's best parts may.
	rng := rand.New(rand.NewPCG(1, 2))
	var block strings.Builder
	for block.Len() < 16<<10 {
		fmt.Fprintf(&block, ",%d", rng.IntN(3000))
	}
	digits := strings.Repeat(block.String(), 64)
	return []craftedFile{
		{"empty stacks bomb", "from", func() []byte { return frame(3, withMeta(meta, bomb(`{"profile":{"stacks":[[]`, mb, members, ""))) }},
		{"one endless stack", "more than 4 MB", func() []byte {
			return frame(3, withMeta(meta, bomb(`{"profile":{"stacks":[[0`, strings.Repeat(",0", 1<<19), members, "")))
		}},
		{"endless stack of varied frames", "more than 4 MB", func() []byte {
			return frame(3, withMeta(meta, bomb(`{"profile":{"stacks":[[0`, digits, members/10, "")))
		}},
		{"endless function name", "more than 4 MB", func() []byte {
			return frame(3, withMeta(meta, bomb(`{"profile":{"frames":[{"func":"`, strings.Repeat("a", 1<<20), members, "")))
		}},
		{"empty entries bomb", "from", func() []byte {
			return frame(3, withMeta(meta, bomb(`{"profile":{"entries":[{}`, strings.Repeat(",{}", 1<<20/3), members, "")))
		}},
		{"format 1 bomb", "from", func() []byte { return frame(1, bomb(`{"profile":{"stacks":[[]`, mb, members, "")) }},
		{"series of zero-filled chunks", "from", func() []byte {
			return frame(3, withMeta(meta, bomb(smallBody+seriesSection(100000, 40000, 1<<20, 0),
				seriesSection(0, 40000, 1<<20, 1)[len(seriesMagic)+4:], members/10, "")))
		}},
		{"series claiming every chunk", "do not fit", func() []byte { return frame(3, withMeta(meta, gz(smallBody+seriesSection(maxChunks, 1, 3, 1)))) }},
		{"layout smaller than the body", "declares", func() []byte {
			return frame(3, withMeta(`{"id":"crafted","layout":{"body_bytes":100,"stacks":1}}`,
				bomb(`{"profile":{"stacks":[[]`, mb, members, "")))
		}},
		{"layout fewer entries than the body", "more than the 10 the file declares", func() []byte {
			return frame(3, withMeta(`{"id":"crafted","layout":{"body_bytes":100000000,"entries":10}}`,
				bomb(`{"profile":{"entries":[{}`, strings.Repeat(",{}", 1<<20/3), members, "")))
		}},
		{"layout larger than the file", "more than a run holds", func() []byte {
			return frame(3, withMeta(`{"id":"crafted","layout":{"body_bytes":1000,"stacks":1000000000}}`, gz(smallBody)))
		}},
		{"location lines bomb", "more than a run of this size holds", locationLinesBomb},
	}
}

// locationLinesBomb is a format 4 file with one location of maxLocationLines lines and a
// stack that names it a million times: small, and honest in its layout, but its stacks
// expand to 16 GB of frames.
func locationLinesBomb() []byte {
	const body = `{"profile":{"frames":[{}]}}` + "\n"
	counts := binary.LittleEndian.AppendUint32([]byte(countsMagic), 1)
	counts = append(counts, 0, 0) // address, mapping
	counts = binary.AppendUvarint(counts, maxLocationLines)
	for range maxLocationLines {
		counts = append(counts, 0, 0)
	}
	counts = binary.LittleEndian.AppendUint32(counts, 1)
	counts = binary.AppendUvarint(counts, 1<<20)
	counts = append(counts, make([]byte, 1<<20)...)
	counts = binary.LittleEndian.AppendUint32(counts, 0)
	meta := fmt.Sprintf(`{"id":"crafted","layout":{"body_bytes":%d,"frames":1,"stacks":1,"stack_frames":%d,"locations":1,"location_lines":%d,"counts_bytes":%d,"series_bytes":%d}}`,
		len(body), 1<<20, maxLocationLines, len(counts), len(seriesMagic4)+8)
	series := string(binary.LittleEndian.AppendUint64([]byte(seriesMagic4), 0))
	return frame(4, withMeta(meta, gz(body+string(counts)+series)))
}

// TestCraftedFilesAreRefusedCheaply: a file made to expand to gigabytes is refused with one
// line that says why, having allocated little more than the file itself.
func TestCraftedFilesAreRefusedCheaply(t *testing.T) {
	for _, tc := range craftedFiles(10000) {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := Decode(bytes.NewReader(data))
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			// The payload is read whole (its checksum is checked first); beyond it, decoding
			// stops within the allowances (memSlack of run, textSlack of text, buffers).
			alloc := after.TotalAlloc - before.TotalAlloc
			if limit := uint64(len(data)) + 48<<20; alloc > limit {
				t.Errorf("refusing a %d-byte file allocated %d MB, want at most %d MB", len(data), alloc>>20, limit>>20)
			}
			// A safety net only: it takes well under a second (seconds under -race).
			if limit := 10 * time.Second; took > limit && !testutil.Race || took > 6*limit {
				t.Errorf("refusing a %d-byte file took %v", len(data), took)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("a %d-byte crafted file: error %v, want one line that mentions %q", len(data), err, tc.want)
			}
			t.Logf("%d-byte file refused in %v, %d MB allocated: %v", len(data), took, alloc>>20, err)
		})
	}
}

// writeSeriesV3 writes a series section as format 3 did.
func writeSeriesV3(w io.Writer, s *agg.Series) {
	b := []byte(seriesMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s.Chunks)))
	for i := range s.Chunks {
		c := &s.Chunks[i]
		var h [chunkHeader]byte
		binary.LittleEndian.PutUint64(h[0:], c.Base)
		binary.LittleEndian.PutUint64(h[8:], c.Min)
		binary.LittleEndian.PutUint64(h[16:], c.Max)
		binary.LittleEndian.PutUint32(h[24:], c.N)
		binary.LittleEndian.PutUint32(h[28:], uint32(len(c.Data)))
		b = append(append(b, h[:]...), c.Data...)
	}
	w.Write(b)
}

// TestSaveStoredReusesBuffers: a recorder rewrites its run every few seconds; a save of a
// small run allocates about what the run holds, not a new compressor and file buffer (some
// 2 MiB) each time.
func TestSaveStoredReusesBuffers(t *testing.T) {
	run := &Run{Meta: Meta{ID: "small", Samples: 1000, Freq: 999}, Profile: *synthrun.Profile(1000, 20)}
	path := filepath.Join(t.TempDir(), "run.stax")
	if err := SaveStored(path, run); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const saves = 10
	for range saves {
		if err := SaveStored(path, run); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / saves; per > 512<<10 {
		t.Errorf("a save of a 1,000-sample run allocated %d bytes, want at most 512 KiB", per)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Profile.Series.Len() != 1000 {
		t.Fatalf("%d samples read back, want 1000", got.Profile.Series.Len())
	}
}

// TestRemoveTakesThePushQueue: removing a run removes the windows it left unpushed.
func TestRemoveTakesThePushQueue(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	if err := os.MkdirAll(PushQueuePath("r1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(PushQueuePath("r1"), "00000000000000000001.req"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Path("r1"), []byte("run"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Remove("r1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(PushQueuePath("r1")); !os.IsNotExist(err) {
		t.Errorf("the push queue is still there: %v", err)
	}
}

// TestSaveStoredReusesSectionBuffers: the counts and intervals sections are built in
// memory kept from the last save: a save of a run of 20,000 stacks and 100,000 intervals
// allocates less than those sections take, and a smaller run saved after a
// larger one reads back as itself, nothing of the larger left in it.
func TestSaveStoredReusesSectionBuffers(t *testing.T) {
	big := &Run{Meta: Meta{ID: "big", Samples: 100_000, Freq: 999}, Profile: *synthrun.Profile(100_000, 20_000)}
	for i := range 100_000 {
		big.OffCPUIntervals = append(big.OffCPUIntervals, agg.Interval{Tid: uint32(1 + i%4), Stack: agg.NoStack, Start: uint64(i) * 1000, End: uint64(i)*1000 + 700})
	}
	big.OffCPU = &agg.Profile{}
	path := filepath.Join(t.TempDir(), "run.stax")
	if err := SaveStored(path, big); err != nil {
		t.Fatal(err)
	}
	sections := len(encodeCounts(&big.Profile)) + len(encodeIntervals(big.OffCPUIntervals))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const saves = 5
	for range saves {
		if err := SaveStored(path, big); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	// Building them afresh allocated five times what they take; the race detector and
	// other tests running at the same time add to what is counted.
	if per := int((after.TotalAlloc - before.TotalAlloc) / saves); per > sections {
		t.Errorf("a save allocated %d bytes; its counts and intervals sections take %d", per, sections)
	}

	small := &Run{Meta: Meta{ID: "small", Samples: 1000, Freq: 999}, Profile: *synthrun.Profile(1000, 20)}
	small.OffCPUIntervals = big.OffCPUIntervals[:3]
	small.OffCPU = &agg.Profile{}
	if err := SaveStored(path, small); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Profile.Entries, small.Profile.Entries) || !reflect.DeepEqual(got.Profile.Stacks, small.Profile.Stacks) || !reflect.DeepEqual(got.OffCPUIntervals, small.OffCPUIntervals) {
		t.Fatalf("the small run read back with %d stacks, %d entries, %d intervals; want %d, %d, 3", len(got.Profile.Stacks), len(got.Profile.Entries), len(got.OffCPUIntervals), len(small.Profile.Stacks), len(small.Profile.Entries))
	}
}
