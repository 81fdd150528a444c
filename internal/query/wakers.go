package query

import (
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

// Wakers answers `stax wakers`: the wakers of thread tid (0: of every thread), with at most
// stacks stacks each.
func Wakers(run *store.Run, tid uint32, stacks int) (api.Wakers, error) {
	if run.WakersNs == nil {
		why := "recorded with --no-off-cpu or -a, or by an older stax"
		if o := run.Meta.OffCPU; o != nil && o.WakersOff {
			return api.Wakers{}, notRecorded("run %s has no wakers: it was recorded with --no-wakers; record it again without it to see which thread ended each wait", run.Meta.ID)
		} else if o != nil && !o.Wakers {
			why = "recording them takes root or CAP_PERFMON"
		}
		return api.Wakers{}, notRecorded("run %s has no wakers (%s): record it again as root to see which thread ended each wait", run.Meta.ID, why)
	}
	res := api.Wakers{Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Tid: tid,
		Rows: api.WakerRows(views.Wakers(run.WakersNs, run.WakersN, tid, stacks))}
	if run.Meta.OffCPU != nil {
		o := run.Meta.OffCPU
		res.Woken, res.Wakeups = o.Woken, o.Wakeups
		if o.WakeupsAll > o.Wakeups {
			res.WakeupsAll = o.WakeupsAll
		}
	}
	return res, nil
}
