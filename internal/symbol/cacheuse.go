package symbol

import (
	"os"
	"time"
)

// markUsed sets the modification time of a symbol cache file to now when a run uses it:
// the cache's bound evicts the files least recently used first (symconf.TrimCache), and
// access times are not kept on most mounts (noatime, relatime). The files are replaced by
// renaming, never written in place, so the time says nothing else.
func markUsed(path string) {
	now := time.Now()
	_ = os.Chtimes(path, now, now)
}
