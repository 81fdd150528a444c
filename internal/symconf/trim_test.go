package symconf

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTrimCacheEvictsLeastRecentlyUsed: past its bound, the cache loses the files used
// longest ago first, down to the bound, and says what it evicted; under it, nothing goes.
func TestTrimCacheEvictsLeastRecentlyUsed(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	// f0 used 10 hours ago ... f9 used now; 10 KiB each.
	for i := range 10 {
		p := filepath.Join(dir, fmt.Sprintf("f%d.sym", i))
		if err := os.WriteFile(p, make([]byte, 10<<10), 0o600); err != nil {
			t.Fatal(err)
		}
		at := now.Add(-time.Duration(10-i) * time.Hour)
		os.Chtimes(p, at, at)
	}
	// A file being written by a live run is left alone; one a dead writer left, removed.
	os.WriteFile(filepath.Join(dir, ".sym-live"), make([]byte, 50<<10), 0o600)
	os.WriteFile(filepath.Join(dir, ".sym-dead"), make([]byte, 50<<10), 0o600)
	os.Chtimes(filepath.Join(dir, ".sym-dead"), now.Add(-2*time.Hour), now.Add(-2*time.Hour))

	got, err := TrimCache(dir, 1<<20)
	if err != nil || got.Evicted != 0 || got.Files != 10 || got.Bytes != 100<<10 {
		t.Fatalf("under the bound: %+v, %v", got, err)
	}
	got, err = TrimCache(dir, 35<<10)
	if err != nil {
		t.Fatal(err)
	}
	if got.Evicted != 7 || got.EvictedBytes != 70<<10 || got.Files != 3 || got.Bytes != 30<<10 {
		t.Errorf("trimmed to 35 KiB: %+v", got)
	}
	for i := range 10 {
		_, err := os.Stat(filepath.Join(dir, fmt.Sprintf("f%d.sym", i)))
		if gone := os.IsNotExist(err); gone != (i < 7) {
			t.Errorf("f%d: gone %v", i, gone)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".sym-live")); err != nil {
		t.Errorf("a file being written was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".sym-dead")); !os.IsNotExist(err) {
		t.Errorf("a dead writer's file was kept: %v", err)
	}
	if s := got.String(); !strings.Contains(s, "evicted 7 least recently used (70.0 KiB)") || !strings.Contains(s, "3 files, 30.0 KiB of 35.0 KiB") {
		t.Errorf("says %q", s)
	}
}

func TestCacheMax(t *testing.T) {
	for _, c := range []struct {
		env  string
		want int64
		err  bool
	}{{"", DefaultCacheMax, false}, {"2G", 2 << 30, false}, {"300MiB", 300 << 20, false}, {"off", 0, false}, {"0", 0, false}, {"lots", DefaultCacheMax, true}} {
		t.Setenv("STAX_SYMBOL_CACHE_MAX", c.env)
		got, err := CacheMax()
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%q: %d, %v; want %d", c.env, got, err, c.want)
		}
	}
}
