package query

import (
	"sync"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
)

// EventView is run with the samples of its event named name alone ("": the first), and
// that event for answers (nil for a run that lists no events: recorded by an older stax).
// A run of one event is run itself.
func EventView(run *store.Run, name string) (*store.Run, *api.Event, error) {
	i, err := run.Meta.EventIndex(name)
	if err != nil {
		return nil, nil, noMatch("%v (stax status lists them; --event NAME picks one)", err)
	}
	if len(run.Meta.Events) == 0 {
		return run, nil, nil
	}
	e := run.Meta.Events[i]
	desc := &api.Event{Name: e.Name, Period: e.Period, Freq: e.Freq, Weight: e.Weight(), Of: len(run.Meta.Events)}
	if len(run.Meta.Events) == 1 {
		return run, desc, nil
	}
	return eventViews.get(run, uint32(i)), desc, nil
}

// eventViewCache keeps the last few event views, so that the views cached by run
// (viewcache.go) find the same run again.
type eventViewCache struct {
	mu      sync.Mutex
	entries []eventViewEntry
}

type eventViewEntry struct {
	run   *store.Run
	event uint32
	view  *store.Run
}

const maxEventViews = 8

var eventViews eventViewCache

func (c *eventViewCache) get(run *store.Run, event uint32) *store.Run {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.run == run && e.event == event {
			return e.view
		}
	}
	v := onlyEvent(run, event)
	if len(c.entries) >= maxEventViews {
		c.entries = c.entries[1:]
	}
	c.entries = append(c.entries, eventViewEntry{run, event, v})
	return v
}

// onlyEvent is run with the entries of event alone; the samples of the other events' keys
// belong to no entry.
func onlyEvent(run *store.Run, event uint32) *store.Run {
	p, _ := run.Profile.OnlyEvent(event)
	out := *run
	out.Profile = *p
	if int(event) < len(run.Meta.Events) {
		out.Meta.Event = run.Meta.Events[event].Name // what exports name the samples by
	}
	return &out
}
