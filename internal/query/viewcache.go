package query

import (
	"fmt"
	"sync"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
)

// recentViews keeps the last views computed (a window and a stack transform of one run): the
// panels of a page ask for one view at once (flame, top, callers, threads), and each would
// otherwise rewrite every stack of the run again. Concurrent askers of one view wait for
// the first to compute it.
var recentViews = viewCache{max: 4}

type viewKey struct {
	run *store.Run // runs are not changed once made: a live run's snapshot is a new one
	w   Window
	t   string
	tid uint32
}

type viewEntry struct {
	key   viewKey
	ready chan struct{}
	run   *store.Run
	win   *api.Window
	tr    *api.Transform
	err   error
}

type viewCache struct {
	mu      sync.Mutex
	max     int
	entries []*viewEntry // most recently asked last
}

func (c *viewCache) get(run *store.Run, w Window, t api.Transform, tid uint32, compute func() (*store.Run, *api.Window, *api.Transform, error)) (*store.Run, *api.Window, *api.Transform, error) {
	key := viewKey{run: run, w: w, t: fmt.Sprintf("%q %q %q %v %q %v", t.Focus, t.Ignore, t.Hide, t.FoldRecursion, t.CollapseImage, t.Python), tid: tid}
	c.mu.Lock()
	for i, e := range c.entries {
		if e.key == key {
			c.entries = append(append(c.entries[:i:i], c.entries[i+1:]...), e)
			c.mu.Unlock()
			<-e.ready
			return e.run, e.win, e.tr, e.err
		}
	}
	e := &viewEntry{key: key, ready: make(chan struct{})}
	c.entries = append(c.entries, e)
	if len(c.entries) > c.max {
		c.entries = c.entries[len(c.entries)-c.max:]
	}
	c.mu.Unlock()
	e.run, e.win, e.tr, e.err = compute()
	close(e.ready)
	return e.run, e.win, e.tr, e.err
}
