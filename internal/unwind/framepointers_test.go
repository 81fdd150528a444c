package unwind

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stax-profiler/stax/internal/testutil"
)

// TestKeepsFramePointers: a program built without frame pointers is told apart from the
// same program built with them, and from a Go program (always with them) and a file that
// is not an image.
func TestKeepsFramePointers(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("testdata", "recurse.cc")
	frameless := testutil.CC(t, dir, "frameless", "g++", "-O2", "-fomit-frame-pointer", src)
	framed := testutil.CC(t, dir, "framed", "g++", "-O2", "-fno-omit-frame-pointer", src)
	notImage := filepath.Join(dir, "text")
	os.WriteFile(notImage, []byte("not an image"), 0o644)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want bool
	}{{frameless, false}, {framed, true}, {self, true}, {notImage, true}} {
		if got := KeepsFramePointers(c.path); got != c.want {
			t.Errorf("%s: keeps frame pointers %v, want %v", filepath.Base(c.path), got, c.want)
		}
	}
}

// TestSampleFDEsSpreadsOverTheSection: sampling parses as many FDEs as asked (all, when
// there are fewer), each as the full parse does.
func TestSampleFDEsSpreadsOverTheSection(t *testing.T) {
	prog := testutil.CC(t, t.TempDir(), "recurse", "g++", "-O2", filepath.Join("testdata", "recurse.cc"))
	full, err := LoadELF(prog, "")
	if err != nil || full.NumFDEs() < 4 {
		t.Fatalf("load: %v, %d FDEs", err, full.NumFDEs())
	}
	byStart := map[uint64]fde{}
	for _, f := range full.fdes {
		byStart[f.start] = f
	}
	for _, n := range []int{1, 3, full.NumFDEs(), 10 * full.NumFDEs()} {
		s := sampleFDEs(full.data, full.secAddr, n)
		if want := min(n, full.NumFDEs()); len(s.fdes) != want {
			t.Errorf("n=%d: %d FDEs, want %d", n, len(s.fdes), want)
		}
		for _, f := range s.fdes {
			if g, ok := byStart[f.start]; !ok || g.end != f.end || g.ins != f.ins {
				t.Errorf("n=%d: FDE %#x-%#x is not one the full parse has", n, f.start, f.end)
			}
		}
	}
}
