package symbol

import (
	"os"
	"testing"
	"time"
)

// TestSymCacheUseMarksTime: a run that uses a cached table sets its file's time, which
// the cache's bound evicts by (least recently used first).
func TestSymCacheUseMarksTime(t *testing.T) {
	img, _, root := strippedFixture(t)
	opts := Options{DebugRoot: root, TableCache: t.TempDir()}
	open(t, img, opts)
	p := symFile(t, opts.TableCache, img)
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	if _, cached := open(t, img, opts); !cached {
		t.Fatal("the second load did not come from the cache")
	}
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(info.ModTime()) > time.Hour {
		t.Errorf("the table used has the time %v: its use was not marked", info.ModTime())
	}
}
