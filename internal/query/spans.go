package query

import (
	"fmt"
	"slices"
	"sort"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/store"
)

// SpansOptions are the flags of `stax spans`.
type SpansOptions struct {
	By string // time (default), count, avg or max
	N  int    // rows (0: all)
}

// Spans answers `stax spans`: the run's spans by name, with the CPU samples taken inside.
func Spans(run *store.Run, o SpansOptions) (api.Spans, error) {
	by := o.By
	if by == "" {
		by = "time"
	}
	if !slices.Contains([]string{"time", "count", "avg", "max"}, by) {
		return api.Spans{}, fmt.Errorf("--by must be time, count, avg or max, not %q", by)
	}
	if run.SpansErr != nil {
		return api.Spans{}, run.SpansErr
	}
	times := map[uint32][]uint64{}
	p := &run.Profile
	if run.Spans.Len() > 0 {
		err := p.Series.Each(0, 0, func(s agg.Sample) {
			if int(s.Key) >= len(p.KeyEntry) {
				return
			}
			if e := p.KeyEntry[s.Key]; e >= 0 && int(e) < len(p.Entries) {
				tid := p.Entries[e].Tid
				times[tid] = append(times[tid], s.Time)
			}
		})
		if err != nil {
			return api.Spans{}, err
		}
		for _, ts := range times {
			slices.Sort(ts)
		}
	}
	rows := spans.Stats(run.Spans, times)
	key := func(s spans.Stat) uint64 {
		switch by {
		case "count":
			return s.Count
		case "avg":
			return s.AvgNs
		case "max":
			return s.MaxNs
		}
		return s.TotalNs
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if a, b := key(rows[i]), key(rows[j]); a != b {
			return a > b
		}
		return rows[i].Name < rows[j].Name
	})
	if o.N > 0 && len(rows) > o.N {
		rows = rows[:o.N]
	}
	srcs := run.Meta.SpanSources
	if srcs == nil {
		srcs = []spans.Source{}
	}
	return api.Spans{Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Sort: by, Samples: p.TotalSamples(),
		Rows: api.SpanStats(rows), Sources: api.SpanSources(srcs)}, nil
}
