package query

import (
	"fmt"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

// ThreadStates answers `stax timeline --states`: each thread's time running (from its
// samples), runnable and blocked by reason (from its intervals off CPU) over time.
func ThreadStates(run *store.Run, o TimelineOptions) (api.ThreadStates, error) {
	if run.OffCPU == nil || run.OffCPUIntervals == nil {
		return api.ThreadStates{}, notRecorded("run %s has no off-CPU intervals (recorded with --no-off-cpu or -a, or by an older stax): record it again without those to see threads' states", run.Meta.ID)
	}
	if o.Window.Span != "" {
		return api.ThreadStates{}, fmt.Errorf("timeline --states takes no --span: give --from and --to")
	}
	from, to, err := o.Window.bounds(run)
	if err != nil {
		return api.ThreadStates{}, err
	}
	// Intervals may run past the last sample: the timeline ends at the later of the two.
	if o.Window.To == "" {
		for _, iv := range run.OffCPUIntervals {
			to = max(to, iv.End)
		}
	}
	bucket, err := o.bucket(from, to)
	if err != nil {
		return api.ThreadStates{}, err
	}
	var nsPerSample uint64
	if run.Meta.Freq > 0 {
		nsPerSample = uint64(1e9 / run.Meta.Freq)
	}
	f := o.Processes.filter(&run.Profile, o.Tid)
	ths, err := views.MakeThreadStates(&run.Profile, f, run.OffCPU, views.StackReasons(run.OffCPU), run.OffCPUIntervals, from, to, bucket, nsPerSample, 0)
	if err != nil {
		return api.ThreadStates{}, err
	}
	all := views.AllThreadStates(ths, int((to-from+bucket-1)/bucket))
	if o.MaxThreads > 0 && len(ths) > o.MaxThreads {
		ths = ths[:o.MaxThreads]
	}
	start := runStart(run)
	var win *api.Window
	if !o.Window.IsAll() {
		win = &api.Window{FromSec: secs(from, start), ToSec: secs(to, start)}
	}
	return api.ThreadStates{Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Window: win,
		StartSec: secs(from, start), BucketSec: float64(bucket) / 1e9, Threads: api.ThreadStatesRows(ths), All: all}, nil
}
