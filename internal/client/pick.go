package client

import (
	"fmt"

	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/store"
)

// thisTerminal is the querying process's controlling terminal (0: none).
var thisTerminal = proc.Terminal

// pickDefault chooses the run a command asks when none is named, and says why in Run.Why:
//
//  1. a live run: the newest, or the newest started from this terminal when several are
//     live;
//  2. else the newest stored run with samples started from this terminal;
//  3. else the newest stored run with samples;
//  4. else (every run is empty) the newest one, saying it has none.
//
// Damaged files are skipped (stax list shows them). A run with no samples (the program
// ended before the first one, or nothing could be sampled) is passed over, and the
// choice says so when it was newer.
func pickDefault() (*Run, error) {
	term := thisTerminal()
	if live := LiveRuns(); len(live) > 0 {
		r := live[0]
		if len(live) > 1 {
			r.Why = fmt.Sprintf("newest of %d live runs", len(live))
			for _, l := range live {
				if m, err := store.ReadMeta(l.StoredPath()); err == nil && term != 0 && m.Terminal == term {
					r = l
					r.Why = fmt.Sprintf("started from this terminal, of %d live runs", len(live))
					break
				}
			}
		}
		return r, nil
	}
	return pickStored(term)
}

// pickStored is pickDefault when no run is live.
func pickStored(term int) (*Run, error) {
	ids, err := store.List()
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no runs yet: %w (start one with: stax record -- CMD)", ErrNotFound)
	}
	type storedMeta struct {
		id   string
		meta store.Meta
	}
	var runs []storedMeta // newest first; a file whose meta cannot be read is damaged
	for _, id := range ids {
		if m, err := store.ReadMeta(store.Path(id)); err == nil {
			runs = append(runs, storedMeta{id, m})
		}
	}
	// A run's checksum is read (the whole file) only when it would be chosen.
	damaged := map[string]bool{}
	whole := func(id string) bool {
		bad, seen := damaged[id]
		if !seen {
			bad = store.Check(store.Path(id)) != nil
			damaged[id] = bad
		}
		return !bad
	}
	// newest is the newest whole run with samples that fits, and the newest run without
	// samples that fits and is newer ("" for none).
	newest := func(fits func(store.Meta) bool) (id, emptier string) {
		for _, r := range runs {
			switch {
			case !fits(r.meta):
			case r.meta.Samples == 0:
				if emptier == "" {
					emptier = r.id
				}
			case whole(r.id):
				return r.id, emptier
			}
		}
		return "", emptier
	}
	chosen := func(id, why, emptier string) *Run {
		if emptier != "" {
			why += fmt.Sprintf(" with samples; newer run %s has none", emptier)
		}
		return &Run{ID: id, Why: why}
	}
	if term != 0 {
		if id, emptier := newest(func(m store.Meta) bool { return m.Terminal == term }); id != "" {
			return chosen(id, "newest from this terminal", emptier), nil
		}
	}
	if id, emptier := newest(func(store.Meta) bool { return true }); id != "" {
		return chosen(id, "newest", emptier), nil
	}
	for _, r := range runs {
		if whole(r.id) {
			return &Run{ID: r.id, Why: "newest; it has no samples"}, nil
		}
	}
	return nil, fmt.Errorf("every stored run is damaged: %w (stax list shows them; stax rm removes them)", ErrNotFound)
}
