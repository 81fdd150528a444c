package api

import (
	"net/url"

	"github.com/stax-profiler/stax/internal/agg"
)

// A Request is one query of the socket API: its path and its parameters. The CLI builds
// one for a live and a stored run alike, the server decodes it, the web page's proxy
// decodes and passes it on; query answers it (query.TopOf and the like map its fields).
type Request interface {
	Path() string
	Encode() url.Values
	// Decode sets the request from q (see DecodeParams): what q lacks takes its default.
	Decode(q url.Values) error
}

// Processes restricts a query to some processes: one pid, or every process whose main
// thread has the name Comm. Zero values: every process.
type Processes struct {
	Pid  uint32 `param:"pid" what:"a process id"`
	Comm string `param:"comm"`
}

// WindowParams restricts a query to part of the run: From and To as the user wrote them
// (see query.Window), Span to the samples inside spans of that name.
type WindowParams struct {
	From string `param:"from"`
	To   string `param:"to"`
	Span string `param:"span"`
}

// TimeMode weighs a view by time rather than samples: OffCPU by the time threads spent
// off CPU, Wall by on and off CPU together, Runnable by runnable time alone.
type TimeMode struct {
	OffCPU   bool `param:"off_cpu"`
	Wall     bool `param:"wall"`
	Runnable bool `param:"runnable"`
}

// View is what the views of a run's stacks (top, flame, callers) share: what a row or
// node is, the samples they keep, how the stacks are rewritten, and whether they weigh
// time.
type View struct {
	// Granularity is what a row or node is; top's By may also be process (top --by
	// process); callers' matching functions stay whole functions.
	Granularity agg.Granularity
	Tid         uint32 `param:"tid"`
	Processes   Processes
	Window      WindowParams
	Transform   Transform
	TimeMode
	// Event names the event counted, of a run that sampled several (stax record -e);
	// "": the first.
	Event string `param:"event"`
}

// TopRequest asks /v1/top (stax top).
type TopRequest struct {
	N    int    `param:"n" default:"20"`
	Sort string `param:"sort"` // self (default) or total
	// Weight names a tracepoint's field whose values weigh the rows (query.WeightView);
	// "": samples.
	Weight string `param:"weight"`
	View
}

// FlameRequest asks /v1/flame (stax flame).
type FlameRequest struct {
	// Weight: as TopRequest's.
	Weight       string  `param:"weight"`
	Depth        int     `param:"depth" default:"12"`
	ThresholdPct float64 `param:"threshold_pct" default:"1"`
	Inverted     bool    `param:"inverted"`
	// Match, a regular expression, asks how many samples have a frame whose function it
	// matches (Flame.Matched).
	Match string `param:"match"`
	// Under asks for the subtree under a node: its path of function names from the root's
	// children down (the parameter repeated), in the tree's orientation (inverted: from
	// the leaf). ThresholdPct and Depth are then of that node's samples and below it.
	Under []string `param:"under"`
	// CallersOf and CalleesOf (regular expressions) ask for a sandwich's side: the tree of
	// the callers, or of the callees, of the functions matching, merged over every stack
	// through them (views.FlameShape).
	CallersOf string `param:"callers_of"`
	CalleesOf string `param:"callees_of"`
	View
}

// CallersRequest asks /v1/callers, or /v1/callees (stax callers and callees).
type CallersRequest struct {
	Callees   bool   `param:"-"` // the path says it
	Func      string `param:"fn" required:"give a function name or a regular expression"`
	N         int    `param:"n" default:"20"`         // rows per function
	Functions int    `param:"functions" default:"10"` // functions matching Func
	View
}

// ThreadsRequest asks /v1/threads (stax threads).
type ThreadsRequest struct {
	N         int `param:"n" default:"20"`
	Window    WindowParams
	Transform Transform
	Event     string `param:"event"`
}

// TimelineRequest asks /v1/timeline (stax timeline), or with States /v1/thread_states
// (stax timeline --states).
type TimelineRequest struct {
	States     bool   `param:"-"` // the path says it
	Tid        uint32 `param:"tid"`
	Processes  Processes
	BucketMs   float64 `param:"bucket_ms"` // 0: chosen for about Buckets buckets
	Buckets    int     `param:"buckets"`   // 0: 60
	MaxThreads int     `param:"threads"`
	Window     WindowParams
	Transform  Transform
	Event      string `param:"event"`
}

// WakersRequest asks /v1/wakers (stax wakers).
type WakersRequest struct {
	Tid    uint32 `param:"tid"` // the thread woken; 0: all
	Stacks int    `param:"stacks" default:"3"`
}

// AnnotateRequest asks /v1/annotate (stax annotate).
type AnnotateRequest struct {
	Target  string `param:"target" required:"give a function name or an address"`
	Tid     uint32 `param:"tid"`
	Version int    `param:"version"` // a code version, 1-based; 0: the hottest
	Syntax  string `param:"syntax"`  // intel, or AT&T (default)
	Window  WindowParams
	// Transform rewrites the stacks the annotation counts.
	Transform Transform
	Event     string `param:"event"`
}

// SpansRequest asks /v1/spans (stax spans).
type SpansRequest struct {
	By string `param:"by"` // time (default), count, avg or max
	N  int    `param:"n"`  // rows; 0: all
}

// WaitRequest asks /v1/wait (stax wait): answer once the run has Samples samples, or
// Seconds seconds, or a sample in a function named Symbol; at most TimeoutMs.
type WaitRequest struct {
	Samples   int     `param:"samples"`
	Seconds   float64 `param:"seconds"`
	Symbol    string  `param:"symbol"`
	TimeoutMs int     `param:"timeout_ms"`
}

func (TopRequest) Path() string      { return "/v1/top" }
func (FlameRequest) Path() string    { return "/v1/flame" }
func (ThreadsRequest) Path() string  { return "/v1/threads" }
func (WakersRequest) Path() string   { return "/v1/wakers" }
func (AnnotateRequest) Path() string { return "/v1/annotate" }
func (SpansRequest) Path() string    { return "/v1/spans" }
func (WaitRequest) Path() string     { return "/v1/wait" }

func (r CallersRequest) Path() string {
	if r.Callees {
		return "/v1/callees"
	}
	return "/v1/callers"
}

func (r TimelineRequest) Path() string {
	if r.States {
		return "/v1/thread_states"
	}
	return "/v1/timeline"
}

func (r TopRequest) Encode() url.Values      { return EncodeParams(r) }
func (r FlameRequest) Encode() url.Values    { return EncodeParams(r) }
func (r CallersRequest) Encode() url.Values  { return EncodeParams(r) }
func (r ThreadsRequest) Encode() url.Values  { return EncodeParams(r) }
func (r TimelineRequest) Encode() url.Values { return EncodeParams(r) }
func (r WakersRequest) Encode() url.Values   { return EncodeParams(r) }
func (r AnnotateRequest) Encode() url.Values { return EncodeParams(r) }
func (r SpansRequest) Encode() url.Values    { return EncodeParams(r) }
func (r WaitRequest) Encode() url.Values     { return EncodeParams(r) }

func (r *TopRequest) Decode(q url.Values) error      { return DecodeParams(q, r) }
func (r *FlameRequest) Decode(q url.Values) error    { return DecodeParams(q, r) }
func (r *CallersRequest) Decode(q url.Values) error  { return DecodeParams(q, r) }
func (r *ThreadsRequest) Decode(q url.Values) error  { return DecodeParams(q, r) }
func (r *TimelineRequest) Decode(q url.Values) error { return DecodeParams(q, r) }
func (r *WakersRequest) Decode(q url.Values) error   { return DecodeParams(q, r) }
func (r *AnnotateRequest) Decode(q url.Values) error { return DecodeParams(q, r) }
func (r *SpansRequest) Decode(q url.Values) error    { return DecodeParams(q, r) }
func (r *WaitRequest) Decode(q url.Values) error     { return DecodeParams(q, r) }

// Requests lists a new request of each kind (callees and thread states are requests of
// the callers' and the timeline's kinds), for the tests that walk them all.
func Requests() []Request {
	return []Request{&TopRequest{}, &FlameRequest{}, &CallersRequest{}, &CallersRequest{Callees: true}, &ThreadsRequest{},
		&TimelineRequest{}, &TimelineRequest{States: true}, &WakersRequest{}, &AnnotateRequest{}, &SpansRequest{}, &WaitRequest{},
		&StackChartRequest{}, &SamplesRequest{}}
}
