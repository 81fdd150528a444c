package query

import (
	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

// topCounters gives top's rows what the counters read with their self samples counted
// (stax record --counters). Samples without counters (another event's, a window of a
// run recorded before its series kept them) leave the rows without.
func topCounters(run *store.Run, g agg.Granularity, f views.Filter, res *api.Top) {
	if len(run.Meta.Counters) == 0 {
		return
	}
	sums := views.SelfCounters(views.At(&run.Profile, g), f)
	if sums == nil {
		return
	}
	res.Counters = counterNames(run, false)
	res.CountersMultiplexed = countersMultiplexed(run)
	for i := range res.Rows {
		r := &res.Rows[i]
		v := sums[agg.Frame{Func: r.Func, Image: r.Image, Kind: r.Kind, Inlined: r.Inlined, File: r.File, Line: r.Line, Addr: r.Addr}]
		r.Counters = make([]uint64, len(res.Counters))
		copy(r.Counters, v)
	}
}

// counterNames names the counters read with each sample (stax record --counters), as a
// view that shows them lists them; nil without counters, or with none shown.
func counterNames(run *store.Run, none bool) []string {
	if none || len(run.Meta.Counters) == 0 {
		return nil
	}
	names := make([]string, len(run.Meta.Counters))
	for i, c := range run.Meta.Counters {
		names[i] = c.Name
	}
	return names
}

// countersMultiplexed is the share of the time the run's counters counted where the kernel
// multiplexed them; nil where it did not, or where that was not measured.
func countersMultiplexed(run *store.Run) *float64 {
	for _, c := range run.Meta.Counters {
		if c.Time == nil {
			continue
		}
		if t := (api.CounterTime{EnabledNs: c.Time.EnabledNs, RunningNs: c.Time.RunningNs}); t.Multiplexed() {
			share := t.Share()
			return &share
		}
	}
	return nil
}

// countersMultiplexedIf is countersMultiplexed for a view that shows the counters (shown).
func countersMultiplexedIf(run *store.Run, shown bool) *float64 {
	if !shown {
		return nil
	}
	return countersMultiplexed(run)
}
