package resolve

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/symbol"
)

// TestJITWatcherReadsMarkerFile finds a marker file the process holds open outside /tmp,
// reads it as it grows, cuts a name of a megabyte, counts garbage lines, and keeps the
// marker files out of the JIT sources.
func TestJITWatcherReadsMarkerFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), fmt.Sprintf("marker-%d.txt", os.Getpid()))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "100 200 load\nnot a marker\n300 300 tick\n")
	set := spans.NewSet()
	w := NewJITWatcher(New(proc.NewTracker(), symbol.Options{}), set)
	defer w.Close()
	w.Track(os.Getpid())
	w.Finish(time.Now().Add(time.Minute))
	if got, _ := set.Snapshot(); got.Len() != 2 {
		t.Fatalf("spans after the first read: %+v, want 2", got)
	}
	fmt.Fprintf(f, "400 500 %s\n600 700 after\n", strings.Repeat("n", 1<<20))
	w.Finish(time.Now().Add(time.Minute))
	list, srcs := set.Snapshot()
	got := list.Slice()
	if len(got) != 4 {
		t.Fatalf("spans %d, want 4", len(got))
	}
	if got[0].Name != "load" || got[0].Start != 100 || got[0].End != 200 || got[0].Tid != uint32(os.Getpid()) {
		t.Errorf("first span %+v", got[0])
	}
	if len(got[2].Name) != spans.MaxName || got[3].Name != "after" {
		t.Errorf("the long name has %d bytes, the next span is %q", len(got[2].Name), got[3].Name)
	}
	if len(srcs) != 1 || srcs[0].Kind != spans.KindMarkerFile || srcs[0].Bad != 1 || srcs[0].Received != 4 || srcs[0].Path != path {
		t.Errorf("sources %+v", srcs)
	}
	for _, s := range w.Sources() {
		if strings.Contains(s.Path, "marker-") {
			t.Errorf("a marker file is listed as a JIT source: %+v", s)
		}
	}
}
