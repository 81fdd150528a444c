package cli

import (
	"fmt"

	"github.com/stax-profiler/stax/internal/symconf"
)

// gcSymbols trims the symbol cache to its bound and says what it holds and evicted.
func gcSymbols(g *globals) error {
	dir := symconf.TableCacheDir()
	if dir == "" {
		return nil
	}
	limit, err := symconf.CacheMax()
	if err != nil {
		return err
	}
	t, err := symconf.TrimCache(dir, limit)
	if err != nil {
		return err
	}
	fmt.Fprintln(g.out, esc(t.String()))
	return nil
}
