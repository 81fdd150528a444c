// Package api is what the live server and its clients share: the types that stax's query
// commands exchange, over the live socket and as --json output, where the sockets are, and
// the summaries both sides compute from a run. Schema is bumped on any incompatible change.
//
// Each query is a request type (TopRequest, FlameRequest, ...) whose tagged fields are its
// query parameters, encoded and decoded by one codec (EncodeParams, DecodeParams) for the
// CLI, the server and the web page alike.
//
// Each document is made of api's own types (wire.go), never of the model's (internal/agg,
// internal/store, ...): convert.go fills them from the model, one function per part, so
// that changing the model cannot change the JSON. Annotate's model lives above api: its
// document (annotate.go) is filled by query.AnnotateDoc.
package api

import (
	"net/url"

	"github.com/stax-profiler/stax/internal/store"
)

// Schema is the version of every JSON document stax prints or serves. Version 2: every key
// is snake_case (annotate's were camelCase) and documents about a run say its state.
const Schema = 2

// States of a run, in every document's "state".
const (
	StateLive    = "live"    // its recorder is running and answered
	StateStored  = "stored"  // finished and saved
	StateCrashed = "crashed" // its recorder ended without finishing: this is its last checkpoint
	// StateIncomplete: its recorder ended, but could not save the run whole (a full
	// disk): this is its last good checkpoint, and Incomplete says of how much.
	StateIncomplete = "incomplete"
)

// Incomplete says what the store holds of a run whose final save failed.
type Incomplete struct {
	Reason          string  `json:"reason"`           // why the save failed
	KeptSamples     uint64  `json:"kept_samples"`     // in the last good checkpoint
	KeptSec         float64 `json:"kept_sec"`         // the checkpoint's time, from the run's start
	RecordedSamples uint64  `json:"recorded_samples"` // recorded in all
	RecordedSec     float64 `json:"recorded_sec"`
}

// IncompleteOf says whether the stored run id, whose file's meta is m (nil: its file
// holds no readable run), is incomplete: its end file says so (store.End). A finished
// run is not, whatever a stale end file says.
func IncompleteOf(id string, m *store.Meta) *Incomplete {
	if m != nil && m.Finished {
		return nil
	}
	e := (*store.End)(nil)
	if m != nil && m.Ending != nil {
		e = m.Ending
	} else if e, _ = store.ReadEnd(id); e == nil {
		return nil
	}
	if !e.Incomplete {
		return nil
	}
	inc := &Incomplete{Reason: e.Reason, RecordedSamples: e.Samples, RecordedSec: e.Seconds}
	if m != nil {
		inc.KeptSamples = m.Samples
		inc.KeptSec = max(m.End.Sub(m.Start).Seconds(), 0)
	}
	return inc
}

// StateOf is the state of a run read from the store.
func StateOf(m store.Meta) string {
	switch {
	case m.Finished:
		return StateStored
	case m.Ending != nil && m.Ending.Incomplete:
		return StateIncomplete
	}
	return StateCrashed
}

// Status describes a run.
type Status struct {
	Schema     int     `json:"schema"`
	Live       bool    `json:"live"`
	State      string  `json:"state"`
	Meta       RunMeta `json:"meta"`
	ElapsedSec float64 `json:"elapsed_sec"`
	// Events are the events the run sampled, with their samples and counts (Meta.Events;
	// absent for a run recorded before stax listed them).
	Events []EventCount `json:"events,omitempty"`
	// Traces are the tracepoint events whose samples the run keeps with their fields (stax
	// samples lists them), with those fields; absent: none, or a run read without them.
	Traces []TraceEvent `json:"traces,omitempty"`
	// Incomplete: the run's final save failed (state incomplete); what the store holds.
	Incomplete *Incomplete `json:"incomplete,omitempty"`
	// SamplesDamage: what the run lost to a damaged samples file (views over time show the
	// rest).
	SamplesDamage  *SamplesDamage  `json:"samples_damage,omitempty"`
	DistinctStacks int             `json:"distinct_stacks"`
	Threads        int             `json:"threads"`
	Processes      []ProcessStatus `json:"processes"`
	JIT            []JITSource     `json:"jit"`
	JITSamples     uint64          `json:"jit_samples"`     // samples whose leaf is in JIT code
	JITUnnamed     uint64          `json:"jit_unnamed"`     // of those, samples with no name
	UnknownSamples uint64          `json:"unknown_samples"` // samples whose leaf has no name at all
	// Unsymbolized counts, by image, the samples whose leaf is native code no symbol names
	// (an image+0xOFF row), most first.
	Unsymbolized []ImageSamples `json:"unsymbolized,omitempty"`
	// Push is how pushing to a fleet store goes (record --push); absent: not pushing.
	Push *PushStatus `json:"push,omitempty"`
	// Bounds is what the live recorder holds and what it has let go; absent: a stored run.
	Bounds *Bounds `json:"bounds,omitempty"`
}

// Bounds is what a live recorder holds of the processes it met, and what it let go: an
// exited process is released, and its keys folded into its command's, ReleaseGraceSec
// after its exit once its samples are named (README, "Long recordings").
type Bounds struct {
	ProcessesHeld     int    `json:"processes_held"`
	ThreadsHeld       int    `json:"threads_held"`
	MappingsHeld      int    `json:"mappings_held"` // executable mappings, history included
	Keys              int    `json:"keys"`          // aggregation keys held
	JITWatched        int    `json:"jit_watched"`   // processes the JIT watcher follows
	ProcessesReleased uint64 `json:"processes_released"`
	ThreadsReleased   uint64 `json:"threads_released"`
	MappingsPruned    uint64 `json:"mappings_pruned"` // of released processes, and history cut
	ProcessesFolded   uint64 `json:"processes_folded"`
	KeysFolded        int    `json:"keys_folded"`     // keys now counted under their command's
	CommandsFolded    int    `json:"commands_folded"` // commands with folded processes
	// ExitedKept: exited processes past the grace period that are still held (their JIT
	// files are read, or their stacks not yet named).
	ExitedKept      uint64  `json:"exited_kept"`
	ReleaseGraceSec float64 `json:"release_grace_sec"`
	// NotReleased says why exited processes are not let go in this recording; empty: they are.
	NotReleased string `json:"not_released,omitempty"`
}

// ProcessStatus is one process of the run.
type ProcessStatus struct {
	Pid    int    `json:"pid"`
	PPid   int    `json:"ppid,omitempty"`
	Comm   string `json:"comm"`
	Exited bool   `json:"exited"`
}

// Top is the answer of `stax top`.
type Top struct {
	Schema int     `json:"schema"`
	Run    string  `json:"run"`
	Live   bool    `json:"live"`
	State  string  `json:"state"`
	Window *Window `json:"window,omitempty"` // the time window asked for; absent: the whole run
	Event  *Event  `json:"event,omitempty"`  // the event counted (events.go); absent: a run that lists none
	// Weight says the rows weigh a tracepoint's field (top --weight); absent: samples.
	Weight *Weight `json:"weight,omitempty"`
	// Counters name the counters read with each sample (stax record --counters), whose
	// counts each row has; absent: none read with the samples counted (another event's,
	// or a window of a run whose series predates them).
	Counters []string `json:"counters,omitempty"`
	// CountersMultiplexed is the share of the time the counters counted, present only where
	// the kernel multiplexed them (under 98%): their counts are then those of that time, as
	// the samples were taken only then (ratios such as IPC hold).
	CountersMultiplexed *float64 `json:"counters_multiplexed,omitempty"`
	// Transform is how the stacks were rewritten first; absent: they were not.
	Transform *Transform `json:"transform,omitempty"`
	Samples   uint64     `json:"samples"`
	// OffCPU: the rows weigh the time threads spent off CPU (top --off-cpu): Samples, Self
	// and Total are nanoseconds, and each row has its dominant reason.
	OffCPU bool `json:"off_cpu,omitempty"`
	// Wall: the rows weigh time on CPU (samples over the frequency) and off CPU together
	// (--wall), in nanoseconds, and "on-cpu" is a reason; Runnable: runnable time alone.
	Wall     bool   `json:"wall,omitempty"`
	Runnable bool   `json:"runnable,omitempty"`
	Sort     string `json:"sort"`
	// By is what a row is: a function, line (a function's source line), address (an
	// instruction), image, or process (top --by process: Processes is set).
	By string `json:"by"`
	// NoInline: each machine frame counted as the function its code belongs to (--no-inline).
	NoInline bool `json:"no_inline,omitempty"`
	// Short: C++ names without parameter lists and template arguments (--short).
	Short bool     `json:"short,omitempty"`
	Rows  []TopRow `json:"rows"`
	// Processes lists processes by samples for top --by process.
	Processes []ProcessRow `json:"processes,omitempty"`
	// Time says what Samples holds in a view weighed by time: the time off CPU, of which
	// runnable and blocked, and (--wall) on CPU; absent in a view of samples.
	Time *TimeTotals `json:"time,omitempty"`
}

// TopRow is a row of Top: a function (or a line, an address, an image), its samples
// (nanoseconds in a view weighed by time) and their shares of the answer's.
type TopRow struct {
	Func    string `json:"func"`
	Image   string `json:"image"`
	Kind    string `json:"kind"`
	Inlined bool   `json:"inlined,omitempty"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	// Addr is the row's instruction address in a view by address.
	Addr     uint64  `json:"addr,omitempty"`
	Self     uint64  `json:"self"`
	Total    uint64  `json:"total"`
	SelfPct  float64 `json:"self_pct"`
	TotalPct float64 `json:"total_pct"`
	// Reason is, in a view weighed by time, the reason with the most of the row's time.
	Reason string `json:"reason,omitempty"`
	// Counters are what the counters read with the samples (stax record --counters)
	// counted in the row itself (its self samples), in the order of Top.Counters.
	Counters []uint64 `json:"counters,omitempty"`
}

// ProcessRow is a row of Top by process.
type ProcessRow struct {
	Pid     uint32  `json:"pid"`
	Comm    string  `json:"comm"`
	Threads int     `json:"threads"`
	Samples uint64  `json:"samples"`
	Pct     float64 `json:"pct"`
	TopFunc string  `json:"top_func,omitempty"` // its hottest function (self)
}

// TimeTotals splits the time a view weighed by time counts (nanoseconds). Off CPU is
// runnable (preempted, waiting for a CPU) plus blocked (waiting for an event); a --wall
// view adds the time on CPU (absent elsewhere), a --runnable view holds only runnable time.
type TimeTotals struct {
	OnCPUNs    uint64 `json:"on_cpu_ns,omitempty"`
	OffCPUNs   uint64 `json:"off_cpu_ns"`
	RunnableNs uint64 `json:"runnable_ns"`
	BlockedNs  uint64 `json:"blocked_ns"`
}

// Flame is the answer of `stax flame`.
type Flame struct {
	Schema int     `json:"schema"`
	Run    string  `json:"run"`
	Live   bool    `json:"live"`
	State  string  `json:"state"`
	Window *Window `json:"window,omitempty"` // the time window asked for; absent: the whole run
	Event  *Event  `json:"event,omitempty"`
	// Weight: as Top's (flame --weight).
	Weight *Weight `json:"weight,omitempty"`
	// Counters name the counters read with each sample (stax record --counters), whose
	// counts each node has; absent: none read with the samples counted, or a view of time.
	Counters []string `json:"counters,omitempty"`
	// CountersMultiplexed is the share of the time the counters counted, present only where
	// the kernel multiplexed them (under 98%): their counts are then those of that time, as
	// the samples were taken only then (ratios such as IPC hold).
	CountersMultiplexed *float64   `json:"counters_multiplexed,omitempty"`
	Transform           *Transform `json:"transform,omitempty"`
	// Inverted: the tree is bottom-up (flame --inverted), leaf functions under the root and
	// their callers below them.
	Inverted bool `json:"inverted"`
	// By, NoInline and Short say what a node is, as in Top.
	By       string `json:"by"`
	NoInline bool   `json:"no_inline,omitempty"`
	Short    bool   `json:"short,omitempty"`
	// OffCPU: the tree weighs the time threads spent off CPU (flame --off-cpu): Samples,
	// Self and Total are nanoseconds, and each node has its dominant reason.
	OffCPU bool `json:"off_cpu,omitempty"`
	// Wall and Runnable: as Top's.
	Wall     bool       `json:"wall,omitempty"`
	Runnable bool       `json:"runnable,omitempty"`
	Samples  uint64     `json:"samples"`
	Root     *FlameNode `json:"root"`
	// Matched counts the samples with a frame whose function the query's match parameter
	// (a regular expression) matches, in the tree as built (transformed, filtered); absent
	// without one.
	Matched *uint64 `json:"matched,omitempty"`
	// Time: as Top's.
	Time *TimeTotals `json:"time,omitempty"`
	// Under, CallersOf and CalleesOf: as the request's (absent: the whole tree). Under the
	// tree holds the path to the subtree and the subtree; a sandwich's root counts the
	// samples through the functions.
	Under     []string `json:"under,omitempty"`
	CallersOf string   `json:"callers_of,omitempty"`
	CalleesOf string   `json:"callees_of,omitempty"`
}

// Callers is the answer of `stax callers` and `stax callees`: for each function matching
// Match, hottest first, its callers or its callees.
type Callers struct {
	Schema    int        `json:"schema"`
	Run       string     `json:"run"`
	Live      bool       `json:"live"`
	State     string     `json:"state"`
	Window    *Window    `json:"window,omitempty"`
	Event     *Event     `json:"event,omitempty"`
	Transform *Transform `json:"transform,omitempty"`
	Samples   uint64     `json:"samples"`
	// OffCPU, Wall and Runnable: as Top's (callers --off-cpu, --wall, --runnable): the
	// counts are nanoseconds.
	OffCPU    bool   `json:"off_cpu,omitempty"`
	Wall      bool   `json:"wall,omitempty"`
	Runnable  bool   `json:"runnable,omitempty"`
	Direction string `json:"direction"` // callers or callees
	Match     string `json:"match"`     // FN as given
	// By, NoInline and Short say what a row (a caller or callee) is, as in Top; the
	// functions matching Match stay whole functions.
	By        string         `json:"by"`
	NoInline  bool           `json:"no_inline,omitempty"`
	Short     bool           `json:"short,omitempty"`
	Functions []CallFunction `json:"functions"`
	// Time: as Top's.
	Time *TimeTotals `json:"time,omitempty"`
}

// Directions of a Callers answer.
const (
	DirCallers = "callers"
	DirCallees = "callees"
)

// Threads is the answer of `stax threads`.
type Threads struct {
	Schema    int         `json:"schema"`
	Run       string      `json:"run"`
	Live      bool        `json:"live"`
	State     string      `json:"state"`
	Window    *Window     `json:"window,omitempty"` // the time window asked for; absent: the whole run
	Event     *Event      `json:"event,omitempty"`
	Transform *Transform  `json:"transform,omitempty"`
	Samples   uint64      `json:"samples"`
	Rows      []ThreadRow `json:"rows"`
	// Time is the time off CPU of every thread (not only the rows shown), of which
	// runnable and blocked (a row's off_cpu_ms); absent where the run recorded none.
	Time *TimeTotals `json:"time,omitempty"`
}

// Timeline is the answer of `stax timeline`: samples per bucket of BucketSec seconds, the
// first starting StartSec seconds after the run's start.
type Timeline struct {
	Schema    int        `json:"schema"`
	Run       string     `json:"run"`
	Live      bool       `json:"live"`
	State     string     `json:"state"`
	Window    *Window    `json:"window,omitempty"`
	Event     *Event     `json:"event,omitempty"`
	Transform *Transform `json:"transform,omitempty"`
	StartSec  float64    `json:"start_sec"`
	BucketSec float64    `json:"bucket_sec"`
	TimelineData
	TimelineSpans
}

// Transform says how a query rewrites the run's stacks before answering (see views.Transform):
// the flags --focus, --ignore, --hide, --collapse-image and --fold-recursion as given, and
// the query parameters of the same names (fold_recursion=1; collapse_image repeated).
type Transform struct {
	Focus         string   `json:"focus,omitempty" param:"focus"`
	Ignore        string   `json:"ignore,omitempty" param:"ignore"`
	Hide          string   `json:"hide,omitempty" param:"hide"`
	CollapseImage []string `json:"collapse_image,omitempty" param:"collapse_image"`
	FoldRecursion bool     `json:"fold_recursion,omitempty" param:"fold_recursion"`
	Python        bool     `json:"python,omitempty" param:"python"` // --python: Python frames and the native leaf only
}

// IsZero says whether t rewrites nothing.
func (t *Transform) IsZero() bool {
	return t == nil || t.Focus == "" && t.Ignore == "" && t.Hide == "" && len(t.CollapseImage) == 0 && !t.FoldRecursion && !t.Python
}

// AddParams sets t's query parameters in q.
func (t *Transform) AddParams(q url.Values) {
	for k, v := range EncodeParams(t) {
		q[k] = v
	}
}

// Compare is the answer of `stax compare`.
type Compare struct {
	Schema          int     `json:"schema"`
	Base            RunRef  `json:"base"`
	Cand            RunRef  `json:"cand"`
	SamplesDeltaPct float64 `json:"samples_delta_pct"` // how much more (or less) CPU time cand used
	// OffCPU: the runs' time off CPU is compared (compare --off-cpu): Samples are
	// nanoseconds off CPU, the shares are of that time.
	OffCPU   bool         `json:"off_cpu,omitempty"`
	Rows     []CompareRow `json:"rows"`
	Failures []string     `json:"failures,omitempty"` // thresholds passed (--fail-*)
}

// RunRef names a run and its size.
type RunRef struct {
	Run     string `json:"run"`
	Samples uint64 `json:"samples"`
}

// Window is the part of a run an answer covers, in seconds from the run's start.
type Window struct {
	FromSec float64 `json:"from_sec"`
	ToSec   float64 `json:"to_sec"`
	// Span keeps only the samples taken inside spans of this name, each on its span's
	// thread (stax top --span).
	Span string `json:"span,omitempty"`
}

// Wait outcomes.
const (
	WaitMet     = "met"
	WaitEnded   = "ended"
	WaitTimeout = "timeout"
)

// Wait is the answer of `stax wait`.
type Wait struct {
	Schema     int     `json:"schema"`
	Run        string  `json:"run"`
	Outcome    string  `json:"outcome"`
	Samples    uint64  `json:"samples"`
	ElapsedSec float64 `json:"elapsed_sec"`
}

// RunInfo is one line of `stax list`.
type RunInfo struct {
	ID     string `json:"id"`
	Live   bool   `json:"live"`
	State  string `json:"state"`            // live, stored, crashed, incomplete, damaged
	Reason string `json:"reason,omitempty"` // why a damaged file cannot be read
	// Incomplete: the run's final save failed; what the store holds of it.
	Incomplete *Incomplete `json:"incomplete,omitempty"`
	// SamplesDamage: what the run lost to a damaged samples file.
	SamplesDamage *SamplesDamage `json:"samples_damage,omitempty"`
	Command       []string       `json:"command,omitempty"`
	Pid           int            `json:"pid"`
	Samples       uint64         `json:"samples"`
	Start         string         `json:"start"`
	Finished      bool           `json:"finished"`
}

// List is the answer of `stax list`.
type List struct {
	Schema int       `json:"schema"`
	Runs   []RunInfo `json:"runs"`
}

// Error is the body of a failed request.
type Error struct {
	Error string `json:"error"`
}

// RunFilePath answers the whole run as a saved-run file (store.EncodeStream), streamed:
// its header's checksum and length are zero in the body and follow it as the trailers
// TrailerChecksum and TrailerLength (decimal). With bake=1 (RunFileRequest) the run is
// written as stax save keeps it (its code made self-contained), and the trailers
// TrailerCodeKept and TrailerCodeFailed say how many functions' code was kept and could
// not be read.
const (
	RunFilePath       = "/v1/run.stax"
	TrailerChecksum   = "Stax-Checksum"
	TrailerLength     = "Stax-Length"
	TrailerCodeKept   = "Stax-Code-Kept"
	TrailerCodeFailed = "Stax-Code-Failed"
)

// Mark is the answer of `stax mark`: the marker dropped into the live run.
type Mark struct {
	Schema int    `json:"schema"`
	Run    string `json:"run"`
	Name   string `json:"name"`
	TimeNs uint64 `json:"time_ns"` // CLOCK_MONOTONIC, the clock of samples
}

// Spans is the answer of `stax spans`: the run's spans summed by name.
type Spans struct {
	Schema  int          `json:"schema"`
	Run     string       `json:"run"`
	Live    bool         `json:"live"`
	State   string       `json:"state"`
	Sort    string       `json:"sort"`    // time, count, avg or max
	Samples uint64       `json:"samples"` // the run's samples
	Rows    []SpanStat   `json:"rows"`
	Sources []SpanSource `json:"sources"` // spans received and dropped, per source
}

// Wakers is the answer of `stax wakers`: which threads woke which, how often, the time off
// CPU their wakeups ended, and from which stacks.
type Wakers struct {
	Schema int        `json:"schema"`
	Run    string     `json:"run"`
	Live   bool       `json:"live"`
	State  string     `json:"state"`
	Tid    uint32     `json:"tid,omitempty"` // the thread woken asked for; 0: all
	Woken  uint64     `json:"woken"`         // waits matched to the wakeup that ended them
	Rows   []WakerRow `json:"rows"`
	// Wakeups are the wakeups seen; WakeupsAll, when more, how many the kernel
	// counted: their stacks were sampled, and the rows count those seen alone.
	Wakeups    uint64 `json:"wakeups"`
	WakeupsAll uint64 `json:"wakeups_all,omitempty"`
}

// ThreadStates is the answer of `stax timeline --states`: each thread's time running,
// runnable and blocked (by reason) in buckets of BucketSec seconds, the first starting
// StartSec seconds after the run's start.
type ThreadStates struct {
	Schema    int               `json:"schema"`
	Run       string            `json:"run"`
	Live      bool              `json:"live"`
	State     string            `json:"state"`
	Window    *Window           `json:"window,omitempty"`
	StartSec  float64           `json:"start_sec"`
	BucketSec float64           `json:"bucket_sec"`
	Threads   []ThreadStatesRow `json:"threads"`
	// All is every thread's time per state in each bucket (not only the threads listed).
	All []map[string]uint64 `json:"all"`
}

// Weight says what a view weighed by a tracepoint's field counts (top and flame --weight):
// Samples and Self/Total are then the field's sums over the samples the run kept with
// their fields (the last ones: Dropped were let go before), in the window asked.
type Weight struct {
	Field string `json:"field"`
	Sum   uint64 `json:"sum"`
	// Samples counts the samples summed; Skipped those whose value was negative or could
	// not be read (counted as 0).
	Samples int    `json:"samples"`
	Skipped int    `json:"skipped,omitempty"`
	Dropped uint64 `json:"dropped,omitempty"`
}
