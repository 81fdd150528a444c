package api

import (
	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

// The one place the documents take the model's values: each part of a document that the
// model computes is converted here, field by field, into its wire type (wire.go). A field
// the model renames or retypes stops this file compiling rather than changing the JSON.

// TopRows are top's rows (never nil: "rows": []).
func TopRows(rows []views.TopRow) []TopRow {
	if rows == nil {
		return []TopRow{}
	}
	return wireSlice(rows, wireTopRow)
}

// ProcessRows are top --by process's rows (nil: none).
func ProcessRows(rows []views.ProcessRow) []ProcessRow { return wireSlice(rows, wireProcessRow) }

func wireTopRow(r views.TopRow) TopRow {
	return TopRow{Func: r.Func, Image: r.Image, Kind: r.Kind, Inlined: r.Inlined, File: r.File, Line: r.Line, Addr: r.Addr,
		Self: r.Self, Total: r.Total, SelfPct: r.SelfPct, TotalPct: r.TotalPct, Reason: r.Reason}
}

func wireProcessRow(r views.ProcessRow) ProcessRow {
	return ProcessRow{Pid: r.Pid, Comm: r.Comm, Threads: r.Threads, Samples: r.Samples, Pct: r.Pct, TopFunc: r.TopFunc}
}

// FlameRoot is flame's tree (nil: none).
func FlameRoot(n *views.FlameNode) *FlameNode { return wirePtr(n, wireFlameNode) }

// CallFunctions are the functions of callers and callees, with their rows.
func CallFunctions(fs []views.CallFunction) []CallFunction { return wireSlice(fs, wireCallFunction) }

// ThreadRows are the rows of threads.
func ThreadRows(rs []views.ThreadRow) []ThreadRow { return wireSlice(rs, wireThreadRow) }

// TimelineOf is the timeline's buckets, threads and phases.
func TimelineOf(t views.Timeline) TimelineData { return wireTimelineData(t) }

// ThreadStatesRows are the threads of timeline --states.
func ThreadStatesRows(rs []views.ThreadStates) []ThreadStatesRow {
	return wireSlice(rs, wireThreadStatesRow)
}

// WakerRows are the rows of wakers.
func WakerRows(rs []views.WakerRow) []WakerRow { return wireSlice(rs, wireWakerRow) }

// CompareRows are the rows of compare.
func CompareRows(rs []views.CompareRow) []CompareRow { return wireSlice(rs, wireCompareRow) }

// SpanStats are the rows of spans.
func SpanStats(rs []spans.Stat) []SpanStat { return wireSlice(rs, wireSpanStat) }

// SpanSources are the sources of spans.
func SpanSources(rs []spans.Source) []SpanSource { return wireSlice(rs, wireSpanSource) }

// RunMetaOf is status's meta.
func RunMetaOf(m store.Meta) RunMeta { return wireRunMeta(m) }

// JITSources are status's JIT sources.
func JITSources(js []store.JITSource) []JITSource { return wireSlice(js, wireJITSource) }

// SamplesDamageOf is what status and list say a damaged samples file lost (nil: nothing).
func SamplesDamageOf(d *store.SamplesDamage) *SamplesDamage { return wirePtr(d, wireSamplesDamage) }

// ImageSamplesOf are status's unsymbolized samples by image.
func ImageSamplesOf(is []agg.ImageSamples) []ImageSamples { return wireSlice(is, wireImageSamples) }

// String says what the run lost, as store.SamplesDamage does.
func (d *SamplesDamage) String() string { return (*store.SamplesDamage)(d).String() }

// wireSlice converts each of ms with f; nil stays nil (the JSON's null), empty stays empty
// ([]).
func wireSlice[M, W any](ms []M, f func(M) W) []W {
	if ms == nil {
		return nil
	}
	out := make([]W, len(ms))
	for i, m := range ms {
		out[i] = f(m)
	}
	return out
}

// wirePtr converts *m with f; nil stays nil.
func wirePtr[M, W any](m *M, f func(M) W) *W {
	if m == nil {
		return nil
	}
	w := f(*m)
	return &w
}

func wireRunMeta(m store.Meta) RunMeta {
	return RunMeta{
		ID:                m.ID,
		Command:           m.Command,
		Pid:               m.Pid,
		Attached:          m.Attached,
		SystemWide:        m.SystemWide,
		Terminal:          m.Terminal,
		TargetUID:         m.TargetUID,
		TargetGIDs:        m.TargetGIDs,
		Freq:              m.Freq,
		Event:             m.Event,
		Events:            EventCounts(m.Events),
		Counters:          wireSlice(m.Counters, wireCounterCount),
		CountersByDefault: m.CountersByDefault,
		RingPages:         m.RingPages,
		CallGraph:         m.CallGraph,
		StackSize:         m.StackSize,
		StackFit:          wirePtr(m.StackFit, wireStackFit),
		StackEnds:         m.StackEnds,
		JITFrames:         m.JITFrames,
		UserOnly:          m.UserOnly,
		CPUWide:           m.CPUWide,
		ForeignSamples:    m.ForeignSamples,
		Start:             m.Start,
		StartNs:           m.StartNs,
		End:               m.End,
		Finished:          m.Finished,
		ExitCode:          m.ExitCode,
		Notes:             m.Notes,
		Lost:              m.Lost,
		LostByCPU:         m.LostByCPU,
		LostByThread:      m.LostByThread,
		BadRecords:        m.BadRecords,
		NoUserFPChain:     m.NoUserFPChain,
		OverloadSamples:   m.OverloadSamples,
		OffCPU:            wirePtr(m.OffCPU, wireOffCPUMeta),
		JITMemory:         m.JITMemory,
		JITMemoryLimit:    m.JITMemoryLimit,
		JITMemoryShare:    m.JITMemoryShare,
		JITProcesses:      m.JITProcesses,
		FilesRefused:      m.FilesRefused,
		FilesAbandoned:    m.FilesAbandoned,
		Samples:           m.Samples,
		Unresolved:        m.Unresolved,
		Imported:          m.Imported,
		Summary:           wirePtr(m.Summary, wireSummary),
		JITSources:        wireSlice(m.JITSources, wireJITSource),
		SpanSources:       wireSlice(m.SpanSources, wireSpanSource),
		ITTHint:           m.ITTHint,
		SamplesFileSize:   m.SamplesFileSize,
		RecorderNice:      m.RecorderNice,
		DeltaGen:          m.DeltaGen,
		Window:            wirePtr(m.Window, func(w store.Window) KeptWindow { return KeptWindow(w) }),
	}
}

func wireSamplesDamage(m store.SamplesDamage) SamplesDamage {
	return SamplesDamage{
		Chunks:   m.Chunks,
		OfChunks: m.OfChunks,
		Samples:  m.Samples,
		FromNs:   m.FromNs,
		ToNs:     m.ToNs,
		Reason:   m.Reason,
	}
}

func wireJITSource(m store.JITSource) JITSource {
	return JITSource{
		Pid:       m.Pid,
		Path:      m.Path,
		Kind:      m.Kind,
		Functions: m.Functions,
		Records:   m.Records,
		Skipped:   m.Skipped,
		Evicted:   m.Evicted,
		Error:     m.Error,
	}
}

func wireImageSamples(m agg.ImageSamples) ImageSamples {
	return ImageSamples{
		Image:   m.Image,
		Samples: m.Samples,
	}
}

func wireFlameNode(m views.FlameNode) FlameNode {
	return FlameNode{
		Func:         m.Func,
		Image:        m.Image,
		Kind:         m.Kind,
		Inlined:      m.Inlined,
		Place:        wirePtr(m.Place, wirePlace),
		Self:         m.Self,
		Total:        m.Total,
		TotalPct:     m.TotalPct,
		BasePct:      m.BasePct,
		Reason:       m.Reason,
		Counters:     m.Counters,
		SelfCounters: m.SelfCounters,
		Children:     wireSlice(m.Children, func(m *views.FlameNode) *FlameNode { return wirePtr(m, wireFlameNode) }),
	}
}

func wireCallFunction(m views.CallFunction) CallFunction {
	return CallFunction{
		Func:      m.Func,
		Image:     m.Image,
		Kind:      m.Kind,
		Inlined:   m.Inlined,
		File:      m.File,
		Line:      m.Line,
		Addr:      m.Addr,
		Self:      m.Self,
		Total:     m.Total,
		SelfPct:   m.SelfPct,
		TotalPct:  m.TotalPct,
		Outermost: m.Outermost,
		Rows:      wireSlice(m.Rows, wireCallRow),
	}
}

func wireThreadRow(m views.ThreadRow) ThreadRow {
	return ThreadRow{
		Tid:     m.Tid,
		Pid:     m.Pid,
		Name:    m.Name,
		Samples: m.Samples,
		Pct:     m.Pct,
		TopFunc: m.TopFunc,
		OffCPU:  wirePtr(m.OffCPU, wireThreadOffCPU),
	}
}

func wireTimelineData(m views.Timeline) TimelineData {
	return TimelineData{
		Buckets: m.Buckets,
		Total:   m.Total,
		Threads: wireSlice(m.Threads, wireTimelineThread),
		Phases:  wireSlice(m.Phases, wirePhase),
	}
}

func wireCompareRow(m views.CompareRow) CompareRow {
	return CompareRow{
		Func:          m.Func,
		Image:         m.Image,
		Kind:          m.Kind,
		BaseSelf:      m.BaseSelf,
		CandSelf:      m.CandSelf,
		BaseSelfPct:   m.BaseSelfPct,
		CandSelfPct:   m.CandSelfPct,
		DeltaSelfPct:  m.DeltaSelfPct,
		BaseTotalPct:  m.BaseTotalPct,
		CandTotalPct:  m.CandTotalPct,
		DeltaTotalPct: m.DeltaTotalPct,
	}
}

func wireSpanStat(m spans.Stat) SpanStat {
	return SpanStat{
		Name:    m.Name,
		Count:   m.Count,
		TotalNs: m.TotalNs,
		AvgNs:   m.AvgNs,
		MaxNs:   m.MaxNs,
		Samples: m.Samples,
		Threads: m.Threads,
	}
}

func wireSpanSource(m spans.Source) SpanSource {
	return SpanSource{
		Kind:       m.Kind,
		Pid:        m.Pid,
		Path:       m.Path,
		Received:   m.Received,
		Dropped:    m.Dropped,
		Bad:        m.Bad,
		Unmatched:  m.Unmatched,
		Unfinished: m.Unfinished,
		Error:      m.Error,
	}
}

func wireWakerRow(m views.WakerRow) WakerRow {
	return WakerRow{
		Wakee:     m.Wakee,
		WakeeName: m.WakeeName,
		Waker:     m.Waker,
		WakerPid:  m.WakerPid,
		WakerName: m.WakerName,
		Count:     m.Count,
		Ns:        m.Ns,
		Stacks:    wireSlice(m.Stacks, wireWakerStack),
	}
}

func wireThreadStatesRow(m views.ThreadStates) ThreadStatesRow {
	return ThreadStatesRow{
		Tid:     m.Tid,
		Pid:     m.Pid,
		Name:    m.Name,
		Buckets: m.Buckets,
		Total:   m.Total,
	}
}

func wireStackFit(m store.StackFit) StackFit {
	return StackFit{
		Max:     m.Max,
		Need:    m.Need,
		Resizes: m.Resizes,
		Held:    m.Held,
	}
}

func wireOffCPUMeta(m store.OffCPUMeta) OffCPUMeta {
	return OffCPUMeta{
		Switches:         m.Switches,
		Intervals:        m.Intervals,
		NoStack:          m.NoStack,
		Lost:             m.Lost,
		LostNs:           m.LostNs,
		Threads:          m.Threads,
		Wakers:           m.Wakers,
		Wakeups:          m.Wakeups,
		Woken:            m.Woken,
		WakersOff:        m.WakersOff,
		IntervalsDropped: m.IntervalsDropped,
		StackRate:        m.StackRate,
		SampledTimes:     m.SampledTimes,
		Sampled:          m.Sampled,
		WakeupsAll:       m.WakeupsAll,
		OutsCounted:      m.OutsCounted,
		Unpaired:         m.Unpaired,
		PreemptedFP:      m.PreemptedFP,
		WaitStacks:       m.WaitStacks,
		PreemptedCPU:     m.PreemptedCPU,
		OnCPU:            wireSlice(m.OnCPU, wireThreadNs),
		OnCPUClock:       m.OnCPUClock,
		OnCPUCounted:     m.OnCPUCounted,
		Deaths:           m.Deaths,
		ExitedTasks:      m.ExitedTasks,
		ExitingNs:        m.ExitingNs,
		ExitingTasks:     m.ExitingTasks,
	}
}

func wireSummary(m agg.Summary) Summary {
	return Summary{
		Threads:        m.Threads,
		DistinctStacks: m.DistinctStacks,
		JITSamples:     m.JITSamples,
		JITUnnamed:     m.JITUnnamed,
		UnknownSamples: m.UnknownSamples,
		Unsymbolized:   wireSlice(m.Unsymbolized, wireImageSamples),
	}
}

func wirePlace(m views.Place) Place {
	return Place{
		File: m.File,
		Line: m.Line,
		Addr: m.Addr,
	}
}

func wireCallRow(m views.CallRow) CallRow {
	return CallRow{
		Func:    m.Func,
		Image:   m.Image,
		Kind:    m.Kind,
		Inlined: m.Inlined,
		File:    m.File,
		Line:    m.Line,
		Addr:    m.Addr,
		Self:    m.Self,
		Total:   m.Total,
		Pct:     m.Pct,
	}
}

func wireThreadOffCPU(m views.ThreadOffCPU) ThreadOffCPU {
	return ThreadOffCPU{
		OnCPUMs:    m.OnCPUMs,
		RunnableMs: m.RunnableMs,
		OffCPUMs:   m.OffCPUMs,
		Reason:     m.Reason,
	}
}

func wireTimelineThread(m views.TimelineThread) TimelineThread {
	return TimelineThread{
		Tid:     m.Tid,
		Pid:     m.Pid,
		Name:    m.Name,
		Samples: m.Samples,
		Counts:  m.Counts,
	}
}

func wirePhase(m views.Phase) Phase {
	return Phase{
		FirstBucket: m.FirstBucket,
		LastBucket:  m.LastBucket,
		Func:        m.Func,
		Image:       m.Image,
		Samples:     m.Samples,
		Pct:         m.Pct,
	}
}

func wireWakerStack(m views.WakerStack) WakerStack {
	return WakerStack{
		Frames: m.Frames,
		Kernel: m.Kernel,
		Count:  m.Count,
		Ns:     m.Ns,
	}
}

func wireThreadNs(m agg.ThreadNs) ThreadNs {
	return ThreadNs{
		Tid: m.Tid,
		Ns:  m.Ns,
	}
}

// StackChartOf is a stack chart's frames and boxes.
func StackChartOf(m views.StackChart) StackChartData {
	return StackChartData{
		Frames:    wireSlice(m.Frames, func(f views.StackChartFrame) StackChartFrame { return StackChartFrame(f) }),
		Boxes:     wireSlice(m.Boxes, func(b views.StackBox) StackBox { return StackBox(b) }),
		Samples:   m.Samples,
		OffNs:     m.OffNs,
		Hidden:    m.Hidden,
		Truncated: m.Truncated,
	}
}

// EventCounts are the events a run sampled.
func EventCounts(es []store.Event) []EventCount {
	return wireSlice(es, func(e store.Event) EventCount { return EventCount(e) })
}

func wireCounterCount(c store.Counter) CounterCount {
	out := CounterCount{Name: c.Name, Count: c.Count}
	if t := c.Time; t != nil {
		out.Time = &CounterTime{EnabledNs: t.EnabledNs, RunningNs: t.RunningNs, Pairs: t.Pairs}
	}
	return out
}
