package query

import (
	"fmt"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
)

// The socket API's requests (api.TopRequest and the others) are answered here, for a live
// run by the server and for a stored one by the CLI: each function below is the one place
// that maps its request's fields to the query's options.

// TopOf is the options a top request asks for.
func TopOf(r api.TopRequest) TopOptions {
	return TopOptions{N: r.N, ByTotal: r.Sort == "total", ByProcess: r.Granularity.By == "process", Granularity: r.Granularity,
		Tid: r.Tid, Processes: Processes(r.Processes), Window: Window(r.Window), Transform: r.Transform,
		OffCPU: r.OffCPU, Wall: r.Wall, Runnable: r.Runnable}
}

// AnswerTop answers a top request.
func AnswerTop(run *store.Run, r api.TopRequest) (api.Top, error) {
	run, ev, err := EventView(run, r.Event)
	if err != nil {
		return api.Top{}, err
	}
	o := TopOf(r)
	if r.Weight != "" {
		if err := weighable(o.OffCPU || o.Wall || o.Runnable, o.ByProcess); err != nil {
			return api.Top{}, err
		}
		weighed, weight, err := WeightView(run, r.Event, r.Weight, o.Window)
		if err != nil {
			return api.Top{}, err
		}
		win := weightWindow(run, o.Window)
		o.Window = Window{}
		res, err := Top(weighed, o)
		res.Event, res.Weight, res.Window = ev, weight, win
		return res, err
	}
	res, err := Top(run, o)
	res.Event = ev
	return res, err
}

// FlameOf is the options a flame request asks for.
func FlameOf(r api.FlameRequest) FlameOptions {
	return FlameOptions{Depth: r.Depth, ThresholdPct: r.ThresholdPct, Inverted: r.Inverted, Granularity: r.Granularity,
		Tid: r.Tid, Processes: Processes(r.Processes), Window: Window(r.Window), Transform: r.Transform, Match: r.Match,
		OffCPU: r.OffCPU, Wall: r.Wall, Runnable: r.Runnable, Under: r.Under, CallersOf: r.CallersOf, CalleesOf: r.CalleesOf}
}

// AnswerFlame answers a flame request.
func AnswerFlame(run *store.Run, r api.FlameRequest) (api.Flame, error) {
	run, ev, err := EventView(run, r.Event)
	if err != nil {
		return api.Flame{}, err
	}
	o := FlameOf(r)
	if r.Weight != "" {
		if err := weighable(o.OffCPU || o.Wall || o.Runnable, false); err != nil {
			return api.Flame{}, err
		}
		weighed, weight, err := WeightView(run, r.Event, r.Weight, o.Window)
		if err != nil {
			return api.Flame{}, err
		}
		win := weightWindow(run, o.Window)
		o.Window = Window{}
		res, err := Flame(weighed, o)
		res.Event, res.Weight, res.Window = ev, weight, win
		return res, err
	}
	res, err := Flame(run, o)
	res.Event = ev
	return res, err
}

// CallersOf is the options a callers (or callees) request asks for.
func CallersOf(r api.CallersRequest) CallersOptions {
	return CallersOptions{Func: r.Func, Callees: r.Callees, MaxFuncs: max(r.Functions, 0), MaxRows: max(r.N, 0), Granularity: r.Granularity,
		Tid: r.Tid, Processes: Processes(r.Processes), Window: Window(r.Window), Transform: r.Transform,
		OffCPU: r.OffCPU, Wall: r.Wall, Runnable: r.Runnable}
}

// AnswerCallers answers a callers (or callees) request.
func AnswerCallers(run *store.Run, r api.CallersRequest) (api.Callers, error) {
	run, ev, err := EventView(run, r.Event)
	if err != nil {
		return api.Callers{}, err
	}
	res, err := Callers(run, CallersOf(r))
	res.Event = ev
	return res, err
}

// AnswerThreads answers a threads request.
func AnswerThreads(run *store.Run, r api.ThreadsRequest) (api.Threads, error) {
	run, ev, err := EventView(run, r.Event)
	if err != nil {
		return api.Threads{}, err
	}
	res, err := Threads(run, r.N, Window(r.Window), r.Transform)
	res.Event = ev
	return res, err
}

// TimelineOf is the options a timeline (or thread states) request asks for.
func TimelineOf(r api.TimelineRequest) TimelineOptions {
	return TimelineOptions{Tid: r.Tid, Processes: Processes(r.Processes), BucketMs: r.BucketMs, Buckets: r.Buckets,
		MaxThreads: r.MaxThreads, Window: Window(r.Window), Transform: r.Transform}
}

// AnswerTimeline answers a timeline request.
func AnswerTimeline(run *store.Run, r api.TimelineRequest) (api.Timeline, error) {
	run, ev, err := EventView(run, r.Event)
	if err != nil {
		return api.Timeline{}, err
	}
	res, err := Timeline(run, TimelineOf(r))
	res.Event = ev
	return res, err
}

// AnswerThreadStates answers a thread states request (a timeline request with States).
func AnswerThreadStates(run *store.Run, r api.TimelineRequest) (api.ThreadStates, error) {
	return ThreadStates(run, TimelineOf(r))
}

// AnswerWakers answers a wakers request.
func AnswerWakers(run *store.Run, r api.WakersRequest) (api.Wakers, error) {
	if r.Stacks < 0 {
		return api.Wakers{}, fmt.Errorf("parameters tid and stacks: %d and %d: give numbers from 0", r.Tid, r.Stacks)
	}
	return Wakers(run, r.Tid, r.Stacks)
}

// AnswerSpans answers a spans request.
func AnswerSpans(run *store.Run, r api.SpansRequest) (api.Spans, error) {
	return Spans(run, SpansOptions{By: r.By, N: r.N})
}

// AnnotateOf is the options an annotate request asks for, beyond the part of the run it
// looks at (AnnotateView).
func AnnotateOf(r api.AnnotateRequest) AnnotateOptions {
	return AnnotateOptions{Target: r.Target, Tid: r.Tid, Version: r.Version, Intel: r.Syntax == "intel"}
}

// AnnotateView is the part of run an annotate request looks at: its window, its stacks
// transformed.
func AnnotateView(run *store.Run, r api.AnnotateRequest) (*store.Run, *api.Window, error) {
	run, _, err := EventView(run, r.Event)
	if err != nil {
		return nil, nil, err
	}
	run, win, err := Window(r.Window).Apply(run)
	if err == nil {
		run, _, err = ApplyTransform(run, r.Transform)
	}
	return run, win, err
}

// AnswerAnnotate answers an annotate request.
func AnswerAnnotate(run *store.Run, r api.AnnotateRequest) (api.Annotate, error) {
	run, win, err := AnnotateView(run, r)
	if err != nil {
		return api.Annotate{}, err
	}
	res, err := Annotate(run, AnnotateOf(r))
	if err != nil {
		return api.Annotate{}, err
	}
	res.Window = win
	return AnnotateDoc(res), nil
}
