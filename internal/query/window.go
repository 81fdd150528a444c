package query

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

// Window selects samples by time, as the user wrote it in --from and --to:
//
//	N   N seconds after the run's start
//	-N  N seconds before its end (its last sample)
//	+N  (--to only) N seconds after --from
//	mark:NAME  the first marker or span named NAME (its end for --to)
//
// Empty means the start (From) or the end (To).
type Window struct {
	From, To string
	// Span keeps, of the window's samples, those taken inside a span of this name on the
	// span's thread (spans nested in it included).
	Span string
}

// IsAll says whether the window is the whole run.
func (w Window) IsAll() bool { return w.From == "" && w.To == "" && w.Span == "" }

// ErrNoSpan says a run has no span of the name asked for.
var ErrNoSpan = errors.New("no such span")

// ErrNotRecorded says that a run lacks what a query needs (off-CPU time, its intervals,
// wakers, samples to place in time): it was recorded without them. Errors that say so
// match it with errors.Is and read as their own message.
var ErrNotRecorded = errors.New("not recorded")

type notRecordedError struct{ msg string }

func (e *notRecordedError) Error() string        { return e.msg }
func (e *notRecordedError) Is(target error) bool { return target == ErrNotRecorded }

// notRecorded is an error that says what the run lacks, and matches ErrNotRecorded.
func notRecorded(format string, args ...any) error {
	return &notRecordedError{fmt.Sprintf(format, args...)}
}

type noMatchError struct{ msg string }

func (e *noMatchError) Error() string        { return e.msg }
func (e *noMatchError) Is(target error) bool { return target == ErrNoMatch }

// noMatch is an error that says what selected nothing of the run, and matches ErrNoMatch.
func noMatch(format string, args ...any) error {
	return &noMatchError{fmt.Sprintf(format, args...)}
}

// ErrNoTimes says a run keeps no sample times (saved by a stax before they were kept).
var ErrNoTimes = errors.New("this run keeps no sample times (an older stax recorded it), so --from/--to cannot select from it")

// bounds turns the window into monotonic-clock nanoseconds [from, to) for run.
func (w Window) bounds(run *store.Run) (from, to uint64, err error) {
	p := &run.Profile
	// A window empty whatever the run (--from 3 --to 2) is the command line's error first.
	if f, ok := plainSecs(w.From); ok {
		if t, ok := plainSecs(w.To); ok && t <= f {
			return 0, 0, fmt.Errorf("the window is empty: --to (%.3f s) is not after --from (%.3f s)", t, f)
		}
	}
	if !p.HasTimes() {
		if run.Meta.Samples == 0 {
			return 0, 0, notRecorded("run %s has no samples, so there is nothing to place in time (stax status --run %s may say why)", run.Meta.ID, run.Meta.ID)
		}
		return 0, 0, ErrNoTimes
	}
	first, last := p.TimeRange()
	start := run.Meta.StartNs
	if start == 0 || start > first {
		start = first
	}
	end := last + 1
	at := func(flag, s string, rel uint64, relOK bool) (uint64, error) {
		if strings.HasPrefix(s, MarkPrefix) {
			return anchor(run, flag, s, flag == "to")
		}
		v, err := strconv.ParseFloat(strings.TrimLeft(s, "+-"), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return 0, fmt.Errorf("--%s %q: want seconds (3.2), seconds before the end (-2) or, for --to, seconds after --from (+0.5)", flag, s)
		}
		ns := uint64(v * 1e9)
		switch {
		case strings.HasPrefix(s, "-"):
			if ns > end-start {
				return start, nil
			}
			return end - ns, nil
		case strings.HasPrefix(s, "+") && relOK:
			return rel + ns, nil
		default:
			return start + ns, nil
		}
	}
	from, to = start, end
	if w.From != "" {
		if from, err = at("from", w.From, 0, false); err != nil {
			return 0, 0, err
		}
	}
	if w.To != "" {
		if to, err = at("to", w.To, from, true); err != nil {
			return 0, 0, err
		}
	}
	if to <= from && from >= end && w.To == "" {
		// A selection past the run's end: it matches nothing of the run.
		return 0, 0, noMatch("--from %s is past the end of run %s (it lasts %.3f s)", w.From, run.Meta.ID, secs(end, start))
	}
	if to <= from {
		return 0, 0, fmt.Errorf("the window is empty: --to (%.3f s) is not after --from (%.3f s)", secs(to, start), secs(from, start))
	}
	return from, to, nil
}

// plainSecs is s as seconds from the run's start where it is written so (3.2: no sign, no
// mark), whatever the run.
func plainSecs(s string) (float64, bool) {
	if s == "" || strings.HasPrefix(s, MarkPrefix) || strings.ContainsAny(s[:1], "+-") {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

func secs(t, start uint64) float64 {
	if t < start {
		return 0
	}
	return float64(t-start) / 1e9
}

// Apply returns run restricted to the window (run itself for the whole run) and the
// window's description for answers (nil for the whole run).
func (w Window) Apply(run *store.Run) (*store.Run, *api.Window, error) {
	if w.IsAll() {
		return run, trimmedWindow(run), nil
	}
	var keep func(uint64, uint32) bool
	if w.Span != "" {
		if run.SpansErr != nil {
			return nil, nil, run.SpansErr
		}
		ix := spans.IndexOf(run.Spans, w.Span)
		if len(ix) == 0 {
			return nil, nil, fmt.Errorf("%w: no span named %q that lasts (stax spans lists the run's spans)", ErrNoSpan, w.Span)
		}
		keep = ix.Contains
	}
	from, to, err := w.bounds(run)
	if err != nil {
		return nil, nil, err
	}
	p, err := run.Profile.WindowWhere(from, to, keep)
	if err != nil {
		return nil, nil, err
	}
	out := *run
	out.Profile = *p
	start := runStart(run)
	return &out, &api.Window{FromSec: secs(from, start), ToSec: secs(to, start), Span: w.Span}, nil
}

// trimmedWindow describes the whole of a run whose rolling window let its first samples
// go (record --keep, --keep-bytes): the part it covers; nil for a run that has them all.
func trimmedWindow(run *store.Run) *api.Window {
	tw := run.Meta.Window
	if tw == nil || tw.DroppedChunks == 0 {
		return nil
	}
	to := run.Meta.End.Sub(run.Meta.Start).Seconds()
	if _, last := run.Profile.TimeRange(); last != 0 {
		to = secs(last, runStart(run))
	}
	return &api.Window{FromSec: float64(tw.FromNs) / 1e9, ToSec: max(to, float64(tw.FromNs)/1e9)}
}

// runStart is the monotonic time the run's seconds count from.
func runStart(run *store.Run) uint64 {
	first, _ := run.Profile.TimeRange()
	if s := run.Meta.StartNs; s != 0 && s <= first {
		return s
	}
	return first
}

// TimelineOptions are the flags of `stax timeline`.
type TimelineOptions struct {
	Tid        uint32
	Processes  Processes
	BucketMs   float64 // 0: chosen for about Buckets buckets
	Buckets    int     // 0: 60
	MaxThreads int
	Window     Window
	Transform  api.Transform
}

const maxBuckets = 10_000

// bucket is the width of the timeline's buckets over [from, to): --bucket, or a round
// width that makes about --buckets (60 by default).
func (o TimelineOptions) bucket(from, to uint64) (uint64, error) {
	bucket := uint64(o.BucketMs * 1e6)
	if o.BucketMs == 0 {
		n := uint64(60)
		if o.Buckets > 0 {
			n = uint64(min(o.Buckets, maxBuckets/2))
		}
		bucket = niceBucket((to - from) / n)
	}
	if bucket == 0 || (to-from)/bucket >= maxBuckets {
		return 0, fmt.Errorf("--bucket %gms makes more than %d buckets of this %.1f s window: take a larger one", o.BucketMs, maxBuckets, float64(to-from)/1e9)
	}
	return bucket, nil
}

// Timeline answers `stax timeline`.
func Timeline(run *store.Run, o TimelineOptions) (api.Timeline, error) {
	if o.Tid != 0 && run.Meta.Samples == 0 && !run.Profile.HasTimes() {
		// The selection matches nothing before the run lacks what a timeline needs.
		return api.Timeline{}, noMatch("thread %d has no samples in run %s (stax threads --run %s lists its threads)", o.Tid, run.Meta.ID, run.Meta.ID)
	}
	from, to, err := o.Window.bounds(run)
	if err != nil {
		return api.Timeline{}, err
	}
	from, to = withSpans(run, o.Window, from, to)
	bucket, err := o.bucket(from, to)
	if err != nil {
		return api.Timeline{}, err
	}
	// The transform is of the whole run: the window is taken in the timeline's buckets.
	run, tr, err := ApplyTransform(run, o.Transform)
	if err != nil {
		return api.Timeline{}, err
	}
	tl, err := views.MakeTimeline(&run.Profile, o.Processes.filter(&run.Profile, o.Tid), from, to, bucket, o.MaxThreads)
	if err != nil {
		return api.Timeline{}, err
	}
	start := runStart(run)
	var win *api.Window
	if !o.Window.IsAll() {
		win = &api.Window{FromSec: secs(from, start), ToSec: secs(to, start)}
	}
	return api.Timeline{Schema: api.Schema, Run: run.Meta.ID, State: api.StateOf(run.Meta), Window: win, Transform: tr,
		StartSec: secs(from, start), BucketSec: float64(bucket) / 1e9, TimelineData: api.TimelineOf(tl),
		TimelineSpans: timelineSpans(run, from, to, start, o.Tid)}, nil
}

// niceBucket rounds ns up to 1, 2 or 5 times a power of ten milliseconds (1 ms at least).
func niceBucket(ns uint64) uint64 {
	b := uint64(1_000_000)
	for {
		for _, m := range []uint64{1, 2, 5} {
			if b*m >= ns {
				return b * m
			}
		}
		b *= 10
	}
}
