package api

import "net/url"

// StackChartRequest asks /v1/stack_chart: one thread's stacks over time, from its samples
// and (with off_cpu or wall) its intervals off CPU (off_cpu: those alone).
type StackChartRequest struct {
	Tid uint32 `param:"tid"` // the thread; 0: the one with the most samples
	// Width is the chart's width in pixels: boxes shorter than the window's time over it
	// are left out (the answer counts them).
	Width     int `param:"width" default:"1000"`
	Window    WindowParams
	Transform Transform
	TimeMode
	// Event names the event whose samples are drawn, of a run that sampled several;
	// "": the first.
	Event string `param:"event"`
}

func (StackChartRequest) Path() string                 { return "/v1/stack_chart" }
func (r StackChartRequest) Encode() url.Values         { return EncodeParams(r) }
func (r *StackChartRequest) Decode(q url.Values) error { return DecodeParams(q, r) }

// StackChart is the answer of /v1/stack_chart: thread Tid's boxes (views.StackBox), their
// times in nanoseconds from StartSec, over the window from StartSec to EndSec (seconds
// from the run's start).
type StackChart struct {
	Schema    int        `json:"schema"`
	Run       string     `json:"run"`
	Live      bool       `json:"live"`
	State     string     `json:"state"`
	Window    *Window    `json:"window,omitempty"`
	Transform *Transform `json:"transform,omitempty"`
	Tid       uint32     `json:"tid"`
	Pid       uint32     `json:"pid"`
	Name      string     `json:"name"`
	StartSec  float64    `json:"start_sec"`
	EndSec    float64    `json:"end_sec"`
	PeriodNs  uint64     `json:"period_ns"` // the time a sample stands for
	MinNs     uint64     `json:"min_ns"`    // boxes shorter were left out
	OffCPU    bool       `json:"off_cpu,omitempty"`
	Wall      bool       `json:"wall,omitempty"`
	Event     *Event     `json:"event,omitempty"` // the event drawn; absent: a run that lists none
	StackChartData
}
