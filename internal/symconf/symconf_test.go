package symconf

import (
	"path/filepath"
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
