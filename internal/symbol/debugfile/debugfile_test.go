package debugfile

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stax-profiler/stax/internal/targetfile"
	"github.com/stax-profiler/stax/internal/testutil"
)

// Fixture is a stripped image and its extracted debug file.
type Fixture struct {
	Image, Debug string
	Other        string // an unrelated image with another build-id
	BuildID      []byte
	CRC          uint32
}

func build(t *testing.T) Fixture {
	t.Helper()
	for _, tool := range []string{"gcc", "objcopy"} {
		testutil.RequireTool(t, tool)
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "prog")
	dbg := filepath.Join(dir, "prog.debug")
	other := filepath.Join(dir, "other")
	for _, c := range [][]string{
		{"gcc", "-O1", "-Wl,--build-id=0xdeadbeef", "-o", other, "testdata/prog.c"},
		{"gcc", "-g", "-O1", "-Wl,--build-id", "-o", img, "testdata/prog.c"},
		{"objcopy", "--only-keep-debug", img, dbg},
		{"objcopy", "--strip-all", "--add-gnu-debuglink=" + dbg, img},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, out)
		}
	}
	id, err := ReadBuildID(img)
	if err != nil {
		t.Fatal(err)
	}
	crc, err := FileCRC(dbg)
	if err != nil {
		t.Fatal(err)
	}
	return Fixture{img, dbg, other, id, crc}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFind(t *testing.T) {
	fx := build(t)
	// debugIDOf must equal the image's build-id.
	if id, err := ReadBuildID(fx.Debug); err != nil || string(id) != string(fx.BuildID) {
		t.Fatalf("debug file build-id %x, %v", id, err)
	}
	tests := []struct {
		name    string
		place   func(root, imgDir string) string // returns expected path, "" for none
		noID    bool
		corrupt bool
	}{
		{name: "build-id", place: func(root, _ string) string {
			return Finder{Root: root}.BuildIDPath(fx.BuildID)
		}},
		{name: "next to image", noID: true, place: func(_, imgDir string) string {
			return filepath.Join(imgDir, "prog.debug")
		}},
		{name: "dot debug", noID: true, place: func(_, imgDir string) string {
			return filepath.Join(imgDir, ".debug", "prog.debug")
		}},
		{name: "global debug dir", noID: true, place: func(root, imgDir string) string {
			return filepath.Join(root, "usr", "lib", "debug", imgDir, "prog.debug")
		}},
		{name: "crc mismatch", noID: true, corrupt: true, place: func(_, imgDir string) string {
			return filepath.Join(imgDir, "prog.debug")
		}},
		{name: "build-id mismatch", corrupt: true, place: func(root, _ string) string {
			return Finder{Root: root}.BuildIDPath(fx.BuildID)
		}},
		{name: "nothing", place: func(string, string) string { return "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			imgDir := t.TempDir()
			img := filepath.Join(imgDir, "prog")
			copyFile(t, fx.Image, img)
			want := tt.place(root, imgDir)
			if want != "" {
				src := fx.Debug
				if tt.corrupt {
					// Another ELF file: wrong CRC and wrong build-id.
					src = fx.Other
				}
				copyFile(t, src, want)
			}
			q := Query{Path: img, BuildID: fx.BuildID, DebugLink: "prog.debug", DebugLinkCRC: fx.CRC}
			if tt.noID {
				q.BuildID = nil
			}
			got, err := Finder{Root: root}.Find(q)
			if tt.corrupt || want == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("Find = %q, %v; want ErrNotFound", got, err)
				}
				return
			}
			if err != nil || got != want {
				t.Fatalf("Find = %q, %v; want %q", got, err, want)
			}
		})
	}
}

func TestNeverSelf(t *testing.T) {
	fx := build(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "prog.debug") // the image carries the link's name
	copyFile(t, fx.Image, img)
	crc, _ := FileCRC(img)
	_, err := Finder{Root: t.TempDir()}.Find(Query{Path: img, DebugLink: "prog.debug", DebugLinkCRC: crc})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}

func TestBuildIDErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x")
	os.WriteFile(p, []byte("not an ELF file at all"), 0o644)
	if _, err := ReadBuildID(p); err == nil {
		t.Fatal("no error")
	}
	if _, err := ReadBuildID(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("no error")
	}
}

func note(name string, typ uint32, desc []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(name)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(desc)))
	b = binary.LittleEndian.AppendUint32(b, typ)
	b = append(b, name...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	b = append(b, desc...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func TestParseNote(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"build-id", note("GNU\x00", 3, []byte{0xab, 0xcd, 0xef}), "abcdef"},
		{"after other note", append(note("Go\x00\x00", 4, []byte("xyz")), note("GNU\x00", 3, []byte{1, 2})...), "0102"},
		{"wrong type", note("GNU\x00", 1, []byte{1, 2}), ""},
		{"truncated", note("GNU\x00", 3, []byte{1, 2, 3, 4, 5})[:18], ""},
		{"empty", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseNote(tt.in, binary.LittleEndian)
			if string(got) != string(mustHex(tt.want)) {
				t.Fatalf("got %x want %s", got, tt.want)
			}
		})
	}
}

func mustHex(s string) []byte {
	out := make([]byte, len(s)/2)
	for i := range out {
		var v byte
		for _, c := range s[2*i : 2*i+2] {
			v <<= 4
			if c >= 'a' {
				v |= byte(c-'a') + 10
			} else {
				v |= byte(c - '0')
			}
		}
		out[i] = v
	}
	return out
}

func FuzzParseNote(f *testing.F) {
	f.Add(note("GNU\x00", 3, []byte{1, 2, 3, 4}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if id := parseNote(b, binary.LittleEndian); len(id) > 64 {
			t.Fatalf("build-id of %d bytes", len(id))
		}
	})
}

func BenchmarkFileCRC(b *testing.B) {
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(libc); err != nil {
		b.Skip(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FileCRC(libc); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFIFOPassedOver: a FIFO at the debuglink name (and at the build-id path) is passed
// over at once, not waited on for a writer, and counted as refused; the real debug file in
// .debug/ is still found.
func TestFIFOPassedOver(t *testing.T) {
	fx := build(t)
	root := t.TempDir()
	dir := filepath.Dir(fx.Image)
	good := filepath.Join(dir, ".debug", filepath.Base(fx.Debug))
	copyFile(t, fx.Debug, good)
	os.Remove(fx.Debug)
	if err := syscall.Mkfifo(fx.Debug, 0o644); err != nil {
		t.Fatal(err)
	}
	byID := Finder{Root: root}.BuildIDPath(fx.BuildID)
	os.MkdirAll(filepath.Dir(byID), 0o755)
	if err := syscall.Mkfifo(byID, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := targetfile.Counts()
	q := Query{Path: fx.Image, BuildID: fx.BuildID, DebugLink: filepath.Base(fx.Debug), DebugLinkCRC: fx.CRC}
	got, err := Finder{Root: root}.Find(q)
	if err != nil || got != good {
		t.Fatalf("Find = %q, %v; want %s", got, err, good)
	}
	if after, _ := targetfile.Counts(); after != before+2 {
		t.Errorf("refused files went from %d to %d, want the two FIFOs counted", before, after)
	}
	if _, err := FileCRC(fx.Debug); !errors.Is(err, targetfile.ErrNotRegular) {
		t.Errorf("FileCRC(FIFO) = %v, want ErrNotRegular", err)
	}
}
