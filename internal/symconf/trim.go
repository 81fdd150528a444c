package symconf

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stax-profiler/stax/internal/store"
)

// DefaultCacheMax is the symbol cache's bound unless STAX_SYMBOL_CACHE_MAX says another:
// enough for the decoded DWARF and symbol tables of a few hundred libraries and programs.
const DefaultCacheMax = 512 << 20

// trimEvery is how often a long recording trims the symbol cache again: new programs add
// their tables as they appear.
const trimEvery = 10 * time.Minute

// CacheMax is the symbol cache's bound in bytes: STAX_SYMBOL_CACHE_MAX (512M, 2G, ...),
// else DefaultCacheMax; 0 for none (STAX_SYMBOL_CACHE_MAX=0 or off).
func CacheMax() (int64, error) {
	v := strings.TrimSpace(os.Getenv("STAX_SYMBOL_CACHE_MAX"))
	switch v {
	case "":
		return DefaultCacheMax, nil
	case "off", "0":
		return 0, nil
	}
	n, err := store.ParseSize(v)
	if err != nil {
		return DefaultCacheMax, fmt.Errorf("STAX_SYMBOL_CACHE_MAX: %w", err)
	}
	return n, nil
}

// Trimmed says what TrimCache did.
type Trimmed struct {
	Dir          string
	Limit        int64 // the bound (0: none)
	Files        int   // files kept
	Bytes        int64 // their size
	Evicted      int   // files removed, least recently used first
	EvictedBytes int64
}

// String says it in a line.
func (t Trimmed) String() string {
	s := fmt.Sprintf("symbol cache %s: %d files, %s", t.Dir, t.Files, store.FormatSize(t.Bytes))
	if t.Limit > 0 {
		s += " of " + store.FormatSize(t.Limit)
	}
	if t.Evicted > 0 {
		s += fmt.Sprintf("; evicted %d least recently used (%s)", t.Evicted, store.FormatSize(t.EvictedBytes))
	}
	return s
}

// TrimCache removes files of the symbol cache in dir, least recently used first (a run
// sets the time of each file it uses, symbol.markUsed), until what is left fits limit
// bytes (0: no bound). Files being written (named .*) are left alone unless an hour old:
// a writer that died left them. A run that has a removed file mapped keeps its copy; the
// next run decodes that image again and keeps a new one.
func TrimCache(dir string, limit int64) (Trimmed, error) {
	t := Trimmed{Dir: dir, Limit: limit}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return t, nil
		}
		return t, fmt.Errorf("trim symbol cache: %w", err)
	}
	type file struct {
		name string
		size int64
		used time.Time
	}
	var files []file
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if strings.HasPrefix(e.Name(), ".") {
			if time.Since(info.ModTime()) > time.Hour {
				os.Remove(filepath.Join(dir, e.Name()))
			}
			continue
		}
		files = append(files, file{e.Name(), info.Size(), info.ModTime()})
		t.Bytes += info.Size()
	}
	t.Files = len(files)
	if limit <= 0 || t.Bytes <= limit {
		return t, nil
	}
	slices.SortFunc(files, func(a, b file) int { return a.used.Compare(b.used) })
	for _, f := range files {
		if t.Bytes <= limit {
			break
		}
		if err := os.Remove(filepath.Join(dir, f.name)); err != nil && !os.IsNotExist(err) {
			return t, fmt.Errorf("trim symbol cache: %w", err)
		}
		t.Files--
		t.Bytes -= f.size
		t.Evicted++
		t.EvictedBytes += f.size
	}
	return t, nil
}

var trimOnce sync.Once

// keepTrimmed trims the symbol cache in dir now and every trimEvery while the process
// runs, saying through note what it evicted.
func keepTrimmed(dir string, note func(string, ...any)) {
	trimOnce.Do(func() {
		limit, err := CacheMax()
		if err != nil {
			note("%v; the bound is %s", err, store.FormatSize(limit))
		}
		if limit <= 0 {
			return
		}
		trim := func() {
			t, err := TrimCache(dir, limit)
			if err != nil {
				note("%v", err)
			} else if t.Evicted > 0 {
				note("%s", t)
			}
		}
		trim()
		go func() {
			for range time.Tick(trimEvery) {
				trim()
			}
		}()
	})
}
