// Package symconf reads, from the environment, where symbols may come from beyond the
// images themselves: the debug-file root and debuginfod servers. Nothing configured means
// no network at all.
package symconf

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/symbol"
	"github.com/stax-profiler/stax/internal/symbol/debuginfod"
)

// Options returns the symbol options of this environment: STAX_DEBUG_ROOT (a directory
// standing in for / when looking for /usr/lib/debug), and DEBUGINFOD_URLS or
// /etc/debuginfod/*.urls with DEBUGINFOD_TIMEOUT, DEBUGINFOD_MAXSIZE and
// DEBUGINFOD_CACHE_PATH, as elfutils reads them. note reports a configuration problem.
func Options(note func(string, ...any)) symbol.Options {
	opts := symbol.Options{DebugRoot: os.Getenv("STAX_DEBUG_ROOT"), TableCache: TableCacheDir()}
	if d := opts.TableCache; d != "" {
		// Symbol tables read from a cache another user can write would name code as they like.
		if err := store.CheckOwnDir(d, "symbol cache"); err != nil && !errors.Is(err, os.ErrNotExist) {
			note("the symbol cache is off: %v", err)
			opts.TableCache = ""
		}
	}
	if opts.TableCache != "" {
		keepTrimmed(opts.TableCache, note)
	}
	if c := Debuginfod(note); c != nil {
		opts.Fetcher = c
	}
	return opts
}

// TableCacheDir is where decoded DWARF tables are kept between runs: $STAX_HOME/cache/symbols,
// else $XDG_CACHE_HOME/stax/symbols, else ~/.cache/stax/symbols; STAX_SYMBOL_CACHE=off turns
// it off.
func TableCacheDir() string {
	if os.Getenv("STAX_SYMBOL_CACHE") == "off" {
		return ""
	}
	if d := os.Getenv("STAX_HOME"); d != "" {
		return filepath.Join(d, "cache", "symbols")
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "stax", "symbols")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".cache", "stax", "symbols")
	}
	return ""
}

// Debuginfod returns the debuginfod client of this environment, or nil when no server is
// configured.
func Debuginfod(note func(string, ...any)) *debuginfod.Client {
	c, err := debuginfod.FromEnv(debuginfod.Env{})
	if err != nil {
		note("debuginfod is off: %v", err)
		return nil
	}
	if len(c.URLs) == 0 {
		return nil
	}
	return c
}
