package symconf

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTableCacheDir(t *testing.T) {
	t.Setenv("STAX_SYMBOL_CACHE", "")
	t.Setenv("STAX_HOME", "/h")
	if d := TableCacheDir(); d != filepath.Join("/h", "cache", "symbols") {
		t.Errorf("with STAX_HOME: %s", d)
	}
	t.Setenv("STAX_HOME", "")
	t.Setenv("XDG_CACHE_HOME", "/x")
	if d := TableCacheDir(); d != filepath.Join("/x", "stax", "symbols") {
		t.Errorf("with XDG_CACHE_HOME: %s", d)
	}
	t.Setenv("STAX_SYMBOL_CACHE", "off")
	if d := TableCacheDir(); d != "" {
		t.Errorf("turned off: %s", d)
	}
}

// TestNoServerMeansNoNetwork: without DEBUGINFOD_URLS nothing is fetched.
func TestNoServerMeansNoNetwork(t *testing.T) {
	t.Setenv("DEBUGINFOD_URLS", "")
	if c := Debuginfod(func(string, ...any) {}); c != nil {
		t.Errorf("a debuginfod client with no server configured: %+v", c.URLs)
	}
	t.Setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1")
	if c := Debuginfod(func(string, ...any) {}); c == nil || len(c.URLs) != 1 {
		t.Errorf("DEBUGINFOD_URLS was not read")
	}
}

// TestSharedSymbolCacheOff: a symbol cache other users can write to is not used (they
// could plant tables that name code as they like), and a note says why; a missing one is
// left for stax to create.
func TestSharedSymbolCacheOff(t *testing.T) {
	home := t.TempDir()
	t.Setenv("STAX_SYMBOL_CACHE", "")
	t.Setenv("STAX_HOME", home)
	t.Setenv("DEBUGINFOD_URLS", "")
	var notes []string
	note := func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }
	if o := Options(note); o.TableCache != filepath.Join(home, "cache", "symbols") || len(notes) != 0 {
		t.Errorf("a missing cache: %q, notes %q", o.TableCache, notes)
	}
	dir := filepath.Join(home, "cache", "symbols")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	o := Options(note)
	if o.TableCache != "" || len(notes) != 1 || !strings.Contains(notes[0], "symbol cache is off: symbol cache "+dir+" can be written by other users (mode 0777)") {
		t.Errorf("a shared cache: %q, notes %q", o.TableCache, notes)
	}
}
