package api

import (
	"math"
	"time"
)

// The wire types of the documents' parts: the JSON stax documents (docs/json.md), written
// from these types alone, never from the model's (internal/agg, internal/store, ...), so
// that the model may change without changing the JSON. convert.go fills them from the
// model, field by field.

// RunMeta describes a run.
type RunMeta struct {
	ID       string   `json:"id"`
	Command  []string `json:"command,omitempty"`
	Pid      int      `json:"pid"`
	Attached bool     `json:"attached,omitempty"`
	// SystemWide: every process on every CPU was recorded (stax record -a).
	SystemWide bool `json:"system_wide,omitempty"`
	// Terminal is the controlling terminal of stax record (its tty_nr in /proc/PID/stat),
	// 0 for none: a query from the same terminal prefers the runs started there.
	Terminal int `json:"terminal,omitempty"`
	// TargetUID and TargetGIDs are the target's file-system identity: files it names (JIT
	// debug info, source paths) are shown only if it could read them itself.
	TargetUID  *uint32  `json:"target_uid,omitempty"`
	TargetGIDs []uint32 `json:"target_gids,omitempty"`
	Freq       int      `json:"freq"`
	Event      string   `json:"event"`
	// Events are the events sampled (stax record -e; one when not given). Runs recorded
	// before stax listed them have none.
	Events []EventCount `json:"events,omitempty"`
	// Counters are read with each sample of the first event (stax record --counters).
	Counters []CounterCount `json:"counters,omitempty"`
	// CountersByDefault: the counters are read by default, --counters not given (cycles
	// and instructions where the machine counts them; --counters none leaves them out).
	CountersByDefault bool   `json:"counters_by_default,omitempty"`
	RingPages         int    `json:"ring_pages,omitempty"` // data pages per CPU ring
	CallGraph         string `json:"call_graph,omitempty"` // fp or dwarf
	StackSize         int    `json:"stack_size,omitempty"` // dwarf: bytes of user stack copied per sample (at the end, when fitted)
	// StackFit (dwarf): the copy was fitted to the stacks seen, StackSize bytes at most
	// where it started (see StackFit).
	StackFit  *StackFit         `json:"stack_fit,omitempty"`
	StackEnds map[string]uint64 `json:"stack_ends,omitempty"` // dwarf: how user stacks ended (complete, truncated, no_cfi, ...)
	// JITFrames (dwarf): frames in JIT code without unwinding info that stacks went through,
	// by how they were unwound (frame_pointer, cpython_trampoline).
	JITFrames map[string]uint64 `json:"jit_frames,omitempty"`
	UserOnly  bool              `json:"user_only,omitempty"`
	// CPUWide: the CPU was sampled through one event per CPU, which sees every task;
	// ForeignSamples, those of other processes, were dropped as they were read.
	CPUWide        bool              `json:"cpu_wide,omitempty"`
	ForeignSamples uint64            `json:"foreign_samples,omitempty"`
	Start          time.Time         `json:"start"`
	StartNs        uint64            `json:"start_ns,omitempty"` // Start on CLOCK_MONOTONIC, the clock of sample times
	End            time.Time         `json:"end,omitzero"`
	Finished       bool              `json:"finished"` // false: a checkpoint of a run still recording (or one that crashed)
	ExitCode       *int              `json:"exit_code,omitempty"`
	Notes          []string          `json:"notes,omitempty"`
	Lost           uint64            `json:"lost"`                     // samples the kernel dropped: the reader fell behind
	LostByCPU      map[string]uint64 `json:"lost_by_cpu,omitempty"`    // of those, per CPU
	LostByThread   map[string]uint64 `json:"lost_by_thread,omitempty"` // of those, per thread where known
	BadRecords     uint64            `json:"bad_records,omitempty"`    // records that could not be decoded
	// NoUserFPChain (dwarf): the program was built without frame pointers, so its samples
	// carry no kernel walk of them; the chains stax needs are walked in the stack copies.
	NoUserFPChain bool `json:"no_user_fp_chain,omitempty"`
	// OverloadSamples counts the stacks (samples and off-CPU stacks) taken while the
	// recorder was behind (its rings more than half full): they are their frame-pointer
	// chains, with the frames the chain skips above the sampled function put back, not
	// walked whole with call-frame information (dwarf mode).
	OverloadSamples uint64 `json:"overload_samples,omitempty"`
	// OffCPU counts what was recorded of the time threads spent switched out; nil when it
	// was not recorded.
	OffCPU *OffCPUMeta `json:"off_cpu,omitempty"`
	// JITMemory is what the run's JIT tables keep (names, code, line tables), and
	// JITMemoryLimit the most they may. JITProcesses processes with JIT files share the
	// limit: each may keep JITMemoryShare (past it, its oldest functions are dropped).
	JITMemory      uint64 `json:"jit_memory,omitempty"`
	JITMemoryLimit uint64 `json:"jit_memory_limit,omitempty"`
	JITMemoryShare uint64 `json:"jit_memory_share,omitempty"`
	JITProcesses   int    `json:"jit_processes,omitempty"`
	// FilesRefused counts the files of the recorded programs that stax would not open (a
	// FIFO, device or socket at the path of a debug file, image, JIT or spans file), each
	// path once; FilesAbandoned the opens and reads of their files abandoned at their
	// deadline (a file system that did not answer). The notes name them.
	FilesRefused   uint64 `json:"files_refused,omitempty"`
	FilesAbandoned uint64 `json:"files_abandoned,omitempty"`
	Samples        uint64 `json:"samples"`
	Unresolved     uint64 `json:"unresolved_frames"`
	// Imported is the SHA-256 (hex) of the file stax open imported the run from.
	Imported string `json:"imported,omitempty"`
	// Summary is what status shows of the run's samples, written with it (format 4), so
	// status reads a run's meta alone.
	Summary *Summary `json:"summary,omitempty"`
	// JITSources are the run's JIT sources as status shows them (format 4), beside the
	// copy in the body.
	JITSources []JITSource `json:"jit_sources,omitempty"`
	// SpanSources count the spans each source reported, kept and dropped.
	SpanSources []SpanSource `json:"span_sources,omitempty"`
	// ITTHint says that a recorded process loaded a library that reports ITT tasks while
	// no collector was named for it, so that its tasks are not recorded (the first such).
	ITTHint string `json:"itt_hint,omitempty"`
	// SamplesFileSize is the bytes of the run's samples file that hold the chunks its
	// series lists (the run store's own copy; 0: none): a file shorter than that lost some.
	SamplesFileSize int64 `json:"samples_file_size,omitempty"`
	// RecorderNice is the nice level the recorder's threads ran at when it raised their
	// priority above the target's (nil: it could not).
	RecorderNice *int `json:"recorder_nice,omitempty"`
	// DeltaGen, in the run store's copy of a recording, is the generation of the records
	// of its delta file that carry it on from that file; 0: none do.
	DeltaGen uint64 `json:"delta_gen,omitempty"`
	// Window says what a rolling window (record --keep, --keep-bytes) let go of the run.
	Window *KeptWindow `json:"window,omitempty"`
}

// SamplesDamage says what a run lost of its samples to a damaged samples file (cut short
// by a full disk or a crash, or changed since): the chunks its file lists that could not
// be read back whole, which the run read without.
type SamplesDamage struct {
	Chunks   int    `json:"chunks"`    // chunks lost
	OfChunks int    `json:"of_chunks"` // chunks the run lists
	Samples  uint64 `json:"samples"`   // samples in the chunks lost
	// FromNs and ToNs bound the lost samples' times, in nanoseconds from the run's start.
	FromNs uint64 `json:"from_ns"`
	ToNs   uint64 `json:"to_ns"`
	Reason string `json:"reason"` // the first chunk's error
}

// JITSource is the state of one JIT symbol source (a jitdump file or perf map).
type JITSource struct {
	Pid       int               `json:"pid"`
	Path      string            `json:"path"`
	Kind      string            `json:"kind"`
	Functions int               `json:"functions"`
	Records   uint64            `json:"records"`
	Skipped   map[string]uint64 `json:"skipped,omitempty"`
	// Evicted counts its functions dropped, oldest first, after they were kept: the
	// process's JIT tables were at their share of the run's JIT memory.
	Evicted uint64 `json:"evicted,omitempty"`
	Error   string `json:"error,omitempty"`
}

// ImageSamples is a count of samples in one image.
type ImageSamples struct {
	Image   string `json:"image"`
	Samples uint64 `json:"samples"`
}

// FlameNode is one node of the call tree, root first.
type FlameNode struct {
	Func    string `json:"func"`
	Image   string `json:"image"`
	Kind    string `json:"kind"`
	Inlined bool   `json:"inlined,omitempty"`
	// Place is set in views by source line or address (by=line or by=address); its keys are
	// the node's own in JSON.
	*Place
	Self     uint64   `json:"self"`
	Total    uint64   `json:"total"`
	TotalPct float64  `json:"total_pct"`
	BasePct  *float64 `json:"base_pct,omitempty"` // flame --diff: the same path's share in the base run
	Reason   string   `json:"reason,omitempty"`   // off-CPU: the reason with the most of the node's time
	// Counters are what the counters read with the samples (stax record --counters)
	// counted in the node's samples, its callees' included, in the order of
	// Flame.Counters; SelfCounters in those whose stack ends at the node (absent: none).
	Counters     []uint64     `json:"counters,omitempty"`
	SelfCounters []uint64     `json:"self_counters,omitempty"`
	Children     []*FlameNode `json:"children,omitempty"`
}

// CallFunction is one function matching a callers or callees query, with its rows.
type CallFunction struct {
	Func     string  `json:"func"`
	Image    string  `json:"image"`
	Kind     string  `json:"kind"`
	Inlined  bool    `json:"inlined,omitempty"`
	File     string  `json:"file,omitempty"`
	Line     int     `json:"line,omitempty"`
	Addr     uint64  `json:"addr,omitempty"`
	Self     uint64  `json:"self"`
	Total    uint64  `json:"total"`
	SelfPct  float64 `json:"self_pct"`  // of all samples
	TotalPct float64 `json:"total_pct"` // of all samples
	// Outermost counts the samples in which the function has no caller (callers only: it
	// is the stack's outermost frame). With the rows' totals and, for callees, Self, it makes
	// up Total.
	Outermost uint64    `json:"outermost,omitempty"`
	Rows      []CallRow `json:"rows"`
}

// ThreadRow is one thread in the threads view.
type ThreadRow struct {
	Tid     uint32  `json:"tid"`
	Pid     uint32  `json:"pid"`
	Name    string  `json:"name"`
	Samples uint64  `json:"samples"`
	Pct     float64 `json:"pct"`
	TopFunc string  `json:"top_func,omitempty"` // the thread's hottest function (self)
	// OffCPU is the thread's time on and off CPU, where the run recorded it.
	OffCPU *ThreadOffCPU `json:"off_cpu,omitempty"`
}

// TimelineData is activity over time: samples per bucket, per thread, and the phases in which
// one function leads.
type TimelineData struct {
	Buckets int              `json:"buckets"`
	Total   []uint64         `json:"total"`
	Threads []TimelineThread `json:"threads"`
	Phases  []Phase          `json:"phases"`
}

// CompareRow is one function's shares of samples in two runs. Shares are percentages of
// each run's samples, so runs of different lengths compare.
type CompareRow struct {
	Func          string  `json:"func"`
	Image         string  `json:"image"`
	Kind          string  `json:"kind"`
	BaseSelf      uint64  `json:"base_self"`
	CandSelf      uint64  `json:"cand_self"`
	BaseSelfPct   float64 `json:"base_self_pct"`
	CandSelfPct   float64 `json:"cand_self_pct"`
	DeltaSelfPct  float64 `json:"delta_self_pct"` // cand - base, percentage points
	BaseTotalPct  float64 `json:"base_total_pct"`
	CandTotalPct  float64 `json:"cand_total_pct"`
	DeltaTotalPct float64 `json:"delta_total_pct"`
}

// SpanStat sums the spans of one name.
type SpanStat struct {
	Name    string `json:"name"`
	Count   uint64 `json:"count"`    // spans and markers
	TotalNs uint64 `json:"total_ns"` // their durations, summed (nested spans of one name each count)
	AvgNs   uint64 `json:"avg_ns"`
	MaxNs   uint64 `json:"max_ns"`
	// Samples are the CPU samples taken on a span's thread while it was inside one (once
	// each, however deeply spans of this name nest).
	Samples uint64 `json:"samples"`
	Threads int    `json:"threads"` // threads it ran on
}

// SpanSource counts the spans of one source: a file a process wrote, or stax mark.
type SpanSource struct {
	Kind     string `json:"kind"`
	Pid      int    `json:"pid,omitempty"`
	Path     string `json:"path,omitempty"`
	Received uint64 `json:"received"`          // spans read from it
	Dropped  uint64 `json:"dropped,omitempty"` // of those, not kept (a bound was reached)
	// Bad counts what could not be read as a span (garbage lines, damaged records); the
	// writer's own drops (a full buffer) are in Dropped.
	Bad uint64 `json:"bad,omitempty"`
	// Unmatched counts task ends without a begin; Unfinished tasks still open when their
	// thread or the process ended (ITT spans files).
	Unmatched  uint64 `json:"unmatched,omitempty"`
	Unfinished uint64 `json:"unfinished,omitempty"`
	Error      string `json:"error,omitempty"`
}

// WakerRow is a thread that woke another: how often, the time off CPU it ended, and from
// which stacks (most time first).
type WakerRow struct {
	Wakee     uint32       `json:"wakee_tid"`
	WakeeName string       `json:"wakee_name"`
	Waker     uint32       `json:"waker_tid"`
	WakerPid  uint32       `json:"waker_pid"`
	WakerName string       `json:"waker_name"`
	Count     uint64       `json:"count"`
	Ns        uint64       `json:"ns"`
	Stacks    []WakerStack `json:"stacks"`
}

// ThreadStatesRow is a thread's time per state in each bucket of a timeline: running, and
// off CPU by reason (runnable among them), in nanoseconds.
type ThreadStatesRow struct {
	Tid  uint32 `json:"tid"`
	Pid  uint32 `json:"pid"`
	Name string `json:"name"`
	// Buckets[i] maps a state ("running" or a reason) to its nanoseconds in bucket i.
	Buckets []map[string]uint64 `json:"buckets"`
	// Total is the thread's time per state over the buckets.
	Total map[string]uint64 `json:"total"`
}

// StackFit says how a DWARF recording's stack copy was fitted to the stacks it saw: the
// kernel copies the whole size at every sample, in the program's time.
type StackFit struct {
	Max     int `json:"max"`     // the copy it started with, and never exceeded
	Need    int `json:"need"`    // the most bytes of a copy one unwind read
	Resizes int `json:"resizes"` // how often the sampling events were reopened with another size
	// Held says why the copy was not shrunk to fit (many threads, frequent switches).
	Held string `json:"held,omitempty"`
}

// OffCPUMeta counts the context switches of a run that records off-CPU time.
type OffCPUMeta struct {
	Switches  uint64 `json:"switches"`           // switch records read, out and in
	Intervals uint64 `json:"intervals"`          // times off CPU counted (a switch out to the next in)
	NoStack   uint64 `json:"no_stack,omitempty"` // of those, without the stack of the switch out
	Lost      uint64 `json:"lost,omitempty"`     // intervals not counted (in whole or in part): the off-CPU tables were full
	LostNs    uint64 `json:"lost_ns,omitempty"`  // their time
	Threads   int    `json:"threads,omitempty"`  // threads followed
	// Wakers says which thread ended each wait was recorded (sched_waking); Wakeups counts
	// the wakeups read and Woken the waits matched to the wakeup that ended them.
	Wakers  bool   `json:"wakers,omitempty"`
	Wakeups uint64 `json:"wakeups,omitempty"`
	Woken   uint64 `json:"woken,omitempty"`
	// WakersOff says the recording was asked not to record wakers (--no-wakers).
	WakersOff bool `json:"wakers_off,omitempty"`
	// IntervalsDropped counts the intervals counted but not kept with their times (past
	// the bound on them).
	IntervalsDropped uint64 `json:"intervals_dropped,omitempty"`
	// StackRate is the rate, per second per thread and CPU, the stacks of the switches
	// out and of the wakeups were sampled at while the target switched out more often
	// than that (0: every one always); SampledTimes counts the times sampling began.
	// Sampled counts the intervals whose switch out had no stack sample of its own and
	// took its thread's latest sampled stack of a switch out like it (waiting, or
	// preempted).
	StackRate    int    `json:"stack_rate,omitempty"`
	SampledTimes uint64 `json:"sampled_times,omitempty"`
	Sampled      uint64 `json:"sampled,omitempty"`
	// WakeupsAll is how many wakeups the kernel counted: more than Wakeups when their
	// stacks were sampled (StackRate), and then wakers are of the wakeups seen alone.
	WakeupsAll uint64 `json:"wakeups_all,omitempty"`
	// OutsCounted is how many switches out the kernel counted (the waits, with
	// WaitStacks), with StackRate: beside the intervals read, how many were lost.
	OutsCounted uint64 `json:"outs_counted,omitempty"`
	// Unpaired counts the switch records found missing: a thread switched out twice with
	// no switch in between, or in twice with no switch out (records lost from a full ring).
	Unpaired uint64 `json:"unpaired,omitempty"`
	// PreemptedFP counts the stacks of preemptions (runnable time) taken from the kernel's
	// frame-pointer chain rather than unwound from the stack copy (DWARF mode): a thread
	// preempted anywhere in its code adds nothing the CPU samples do not show, and a
	// target with more busy threads than cores is preempted thousands of times a second.
	PreemptedFP uint64 `json:"preempted_fp,omitempty"`
	// WaitStacks says the stacks of switches out came from sched:sched_switch, filtered
	// in the kernel to the threads that wait (root or CAP_PERFMON): a preemption copied
	// no stack, and PreemptedCPU counts the preemptions that took their thread's latest
	// CPU sample's stack instead (those without one are NoStack).
	WaitStacks   bool   `json:"wait_stacks,omitempty"`
	PreemptedCPU uint64 `json:"preempted_cpu_stack,omitempty"`
	// OnCPU is each thread's time on CPU from the switch records (a switch in to the next
	// switch out, or the thread's exit), sorted by thread: the views' on-CPU time where a
	// thread has it, in place of its samples over the frequency. Runs recorded by an
	// older stax have none.
	OnCPU []ThreadNs `json:"on_cpu,omitempty"`
	// OnCPUClock says whose clock OnCPU is: "scheduler", the scheduler's own run times
	// (sched:sched_stat_runtime: schedstat's), or empty, the switch records'.
	OnCPUClock string `json:"on_cpu_clock,omitempty"`
	// OnCPUCounted is, with the scheduler's clock, the run time the kernel counted on the
	// target's events: past OnCPU's sum, time on CPU whose records were lost from full
	// rings.
	OnCPUCounted uint64 `json:"on_cpu_counted_ns,omitempty"`
	// Deaths says each task's last switch out was recorded: a task's time from its exit
	// record to it is counted, runnable, under [exiting]. Without, that time is not
	// recorded, and ExitedTasks counts the tasks that lost it.
	Deaths      bool   `json:"deaths,omitempty"`
	ExitedTasks uint64 `json:"exited_tasks,omitempty"`
	// ExitingNs is the time counted under [exiting], of ExitingTasks tasks.
	ExitingNs    uint64 `json:"exiting_ns,omitempty"`
	ExitingTasks uint64 `json:"exiting_tasks,omitempty"`
}

// Summary is what status shows of a run's samples.
type Summary struct {
	Threads        int    `json:"threads"`
	DistinctStacks int    `json:"distinct_stacks"`
	JITSamples     uint64 `json:"jit_samples"`     // samples whose leaf is JIT code
	JITUnnamed     uint64 `json:"jit_unnamed"`     // of those, no JIT source names the leaf
	UnknownSamples uint64 `json:"unknown_samples"` // samples whose leaf has no name
	// Unsymbolized counts, by image, the samples whose leaf is native code no symbol names
	// (an image+0xOFF row), most first.
	Unsymbolized []ImageSamples `json:"unsymbolized,omitempty"`
}

// Place is where a row of a view by source line or by address is.
type Place struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Addr uint64 `json:"addr,omitempty"`
}

// CallRow is one caller (or callee) of a function: the samples in which it calls the
// function (or the function calls it).
type CallRow struct {
	Func    string `json:"func"`
	Image   string `json:"image"`
	Kind    string `json:"kind"`
	Inlined bool   `json:"inlined,omitempty"`
	// File and Line locate the caller's (callee's) function, as in top; in a view by line
	// (by=line) they are the row's line: for a caller, the line of its call.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Addr uint64 `json:"addr,omitempty"` // in a view by address: the row's instruction`
	// Total counts the samples through this edge; Self those of them whose leaf is the
	// function asked about (callers) or this callee (callees).
	Self  uint64 `json:"self"`
	Total uint64 `json:"total"`
	// Pct is Total's share of the function's total samples.
	Pct float64 `json:"pct"`
}

// ThreadOffCPU is a thread's time on and off CPU.
type ThreadOffCPU struct {
	OnCPUMs    float64 `json:"on_cpu_ms"`        // from the switch records, else its samples over the sampling frequency
	RunnableMs float64 `json:"runnable_ms"`      // preempted, waiting for a CPU
	OffCPUMs   float64 `json:"off_cpu_ms"`       // waiting for an event (runnable time aside)
	Reason     string  `json:"reason,omitempty"` // the reason with the most of its waiting time
}

// TimelineThread is one thread's samples per time bucket.
type TimelineThread struct {
	Tid     uint32   `json:"tid"`
	Pid     uint32   `json:"pid"`
	Name    string   `json:"name"`
	Samples uint64   `json:"samples"`
	Counts  []uint64 `json:"counts"`
}

// Phase is a stretch of consecutive buckets with the same hottest function (by self
// samples, as stax top sorts).
type Phase struct {
	FirstBucket int     `json:"first_bucket"`
	LastBucket  int     `json:"last_bucket"` // inclusive
	Func        string  `json:"func"`
	Image       string  `json:"image"`
	Samples     uint64  `json:"samples"` // of the function in the phase
	Pct         float64 `json:"pct"`     // of the phase's samples
}

// WakerStack is a stack a waker woke a thread from.
type WakerStack struct {
	Frames []string `json:"frames"`                  // its functions, leaf first
	Kernel int      `json:"kernel_frames,omitempty"` // how many of the first are the kernel's
	Count  uint64   `json:"count"`
	Ns     uint64   `json:"ns"` // the time off CPU its wakeups ended
}

// ThreadNs is a thread's time, in nanoseconds.
type ThreadNs struct {
	Tid uint32 `json:"tid"`
	Ns  uint64 `json:"ns"`
}

// StackChartData is a stack chart's boxes, deepest last among those that start together.
type StackChartData struct {
	Frames []StackChartFrame `json:"frames"`
	Boxes  []StackBox        `json:"boxes"`
	// Samples and OffNs are the thread's samples and time off CPU in the chart; Hidden
	// counts the boxes left out as shorter than MinNs, Truncated says the bound on boxes
	// was reached (the boxes stop there).
	Samples   uint64 `json:"samples"`
	OffNs     uint64 `json:"off_ns"`
	Hidden    int    `json:"hidden"`
	Truncated bool   `json:"truncated,omitempty"`
}

// StackChartFrame is a function a box stands for.
type StackChartFrame struct {
	Func    string `json:"func"`
	Image   string `json:"image"`
	Kind    string `json:"kind"`
	Inlined bool   `json:"inlined,omitempty"`
}

// StackBox is one frame over a stretch of time: at depth Depth (0: the stack's root), from
// Start to End (ns from the chart's start). Samples counts the samples in it; Off its time
// off CPU, and Reason the reason of that time when all of it had one.
type StackBox struct {
	Depth   int    `json:"d"`
	Frame   uint32 `json:"f"`
	Start   uint64 `json:"s"`
	End     uint64 `json:"e"`
	Samples uint32 `json:"n,omitempty"`
	Off     uint64 `json:"off,omitempty"`
	Reason  string `json:"r,omitempty"`
}

// EventCount is one event a run sampled (stax record -e EVENT,...), with its samples.
type EventCount struct {
	Name string `json:"name"`
	// Period: a sample every Period events; else Freq samples a second, the kernel
	// choosing each sample's period.
	Period uint64 `json:"period,omitempty"`
	Freq   int    `json:"freq,omitempty"`
	// Samples counted, and Count the events they stand for: the sum of their periods
	// (Period times Samples for a fixed period; nanoseconds for cpu-clock and task-clock).
	Samples uint64 `json:"samples"`
	Count   uint64 `json:"count"`
}

// CounterCount is a counter read with each sample (stax record --counters): Count is what
// the samples read, the sum of each thread's counts between its samples.
type CounterCount struct {
	Name  string `json:"name"`
	Count uint64 `json:"count"`
	// Time is how long the counter counted against how long it was enabled (absent: not
	// measured, no thread had two samples in a row on one CPU).
	Time *CounterTime `json:"time,omitempty"`
}

// CounterTime is the time a counter's group was enabled and counting, summed between two
// samples in a row of a thread on one CPU (pairs: how many such pairs), where its per-CPU
// group was enabled only while the thread ran there. Counting less than enabled means the
// kernel multiplexed the groups with others on the PMU: Count is then what was counted while
// they counted, as the samples were taken only then.
type CounterTime struct {
	EnabledNs uint64 `json:"enabled_ns"`
	RunningNs uint64 `json:"running_ns"`
	Pairs     uint64 `json:"pairs"`
}

// MultiplexedBelow is the share of its enabled time under which a counter counted is said
// to be multiplexed: a thread that left a CPU and came back between two samples there
// lowers the share a little with no multiplexing.
const MultiplexedBelow = 0.98

// Share is the share of the enabled time the counters counted.
func (t *CounterTime) Share() float64 {
	if t.EnabledNs == 0 {
		return 1
	}
	return float64(t.RunningNs) / float64(t.EnabledNs)
}

// Multiplexed says whether the kernel multiplexed the counters.
func (t *CounterTime) Multiplexed() bool { return t.Share() < MultiplexedBelow }

// Scaled is count scaled to the whole enabled time: what the counter would have counted
// had the kernel not multiplexed it (perf stat's estimate). ok false: it never counted.
func (t *CounterTime) Scaled(count uint64) (scaled uint64, ok bool) {
	if t.RunningNs == 0 {
		return 0, false
	}
	return uint64(math.Round(float64(count) * float64(t.EnabledNs) / float64(t.RunningNs))), true
}

// KeptWindow is what a rolling window (record --keep, --keep-bytes) kept of a run and let go.
type KeptWindow struct {
	KeepSec   float64 `json:"keep_sec,omitempty"`   // the window's length (0: no bound by time)
	KeepBytes int64   `json:"keep_bytes,omitempty"` // its size on disk (0: no bound by size)
	// Dropped* count what left it: chunks of samples, their samples and bytes.
	DroppedChunks  int    `json:"dropped_chunks"`
	DroppedSamples uint64 `json:"dropped_samples"`
	DroppedBytes   int64  `json:"dropped_bytes"`
	// FromNs is the time of the first sample kept, in nanoseconds from the run's start.
	FromNs uint64 `json:"from_ns"`
}
