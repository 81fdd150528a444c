package symbol

import (
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stax-profiler/stax/internal/symbol/debugfile"
	"github.com/stax-profiler/stax/internal/symbol/debuginfod"
)

// TestDebuginfodFallback checks that a debug file missing locally is
// fetched through the configured fetcher and then used for frames.
func TestDebuginfodFallback(t *testing.T) {
	img, full, _ := strippedFixture(t)
	id, err := debugfile.ReadBuildID(img)
	if err != nil {
		t.Fatal(err)
	}
	dbg := filepath.Join(t.TempDir(), "inline.debug")
	run(t, "objcopy", "--only-keep-debug", full, dbg)
	var requests atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != "/buildid/"+hex.EncodeToString(id)+"/debuginfo" {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, dbg)
	}))
	defer ts.Close()
	fetcher := debuginfod.New([]string{ts.URL}, t.TempDir())
	c := NewCache(Options{DebugRoot: t.TempDir(), Fetcher: fetcher})
	im, err := c.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	if im.DebugPath != fetcher.CachePath(id) {
		t.Fatalf("debug path %q (%v)", im.DebugPath, im.DebugErr)
	}
	inlined := false
	for _, s := range im.ELF().Symbols() {
		if !strings.Contains(s.Name, "5total") {
			continue
		}
		for a := s.Addr; a < s.Addr+s.Size; a++ {
			fr := im.Frames(a)
			if len(fr) > 1 && fr[0].Line > 0 {
				inlined = true
			}
		}
	}
	if !inlined {
		t.Fatal("no inline frames from the fetched debug file")
	}
	if n := requests.Load(); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

func TestGoBinaries(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/gomain.go.txt")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/spin\n\ngo 1.22\n"), 0o644)
	for _, tt := range []struct {
		name  string
		flags []string
	}{
		{"dwarf", nil},
		{"stripped", []string{"-ldflags=-s -w"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, tt.name)
			cmd := []string{"-C", dir, "build", "-o", out}
			run(t, "go", append(append(cmd, tt.flags...), ".")...)
			im, err := NewCache(Options{DebugRoot: t.TempDir()}).Open(out)
			if err != nil {
				t.Fatal(err)
			}
			var spin Symbol
			for _, s := range im.ELF().Symbols() {
				if s.Name == "main.spin" {
					spin, _ = im.Symbol(s.Addr)
				}
			}
			if spin.Size == 0 {
				t.Fatal("main.spin not found")
			}
			loc := im.Locate(spin.Start + 8)
			last := loc.Frames[len(loc.Frames)-1]
			if last.Func != "main.spin" || !strings.HasSuffix(loc.Frames[0].File, "main.go") || loc.Frames[0].Line == 0 {
				t.Fatalf("frames %+v", loc.Frames)
			}
			// main.add and main.sq are inlined into main.spin.
			seen := map[string]bool{}
			for a := spin.Start; a < spin.Start+spin.Size; a++ {
				fr := im.Frames(a)
				if len(fr) > 1 {
					seen[fr[0].Func] = true
				}
			}
			if !seen["main.sq"] || !seen["main.add"] {
				t.Fatalf("inlined functions seen: %v", seen)
			}
		})
	}
}
