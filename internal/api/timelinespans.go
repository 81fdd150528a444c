package api

// TimelineSpan is a span of the run on the timeline: seconds from the run's start, its
// lane under its thread (0: the top one; a span inside another is a lane below it).
type TimelineSpan struct {
	Name     string  `json:"name"`
	Pid      uint32  `json:"pid,omitempty"`
	Tid      uint32  `json:"tid"`
	StartSec float64 `json:"start_sec"`
	EndSec   float64 `json:"end_sec"`
	Lane     int     `json:"lane"`
}

// TimelineMarker is an instant marker on the timeline (tid 0: stax mark, no thread).
type TimelineMarker struct {
	Name  string  `json:"name"`
	Pid   uint32  `json:"pid,omitempty"`
	Tid   uint32  `json:"tid"`
	AtSec float64 `json:"at_sec"`
}

// TimelineSpans are the spans and markers of a timeline's window.
type TimelineSpans struct {
	Spans   []TimelineSpan   `json:"spans,omitempty"`
	Markers []TimelineMarker `json:"markers,omitempty"`
	// Omitted counts the spans and markers of the window past the bound on those listed.
	Omitted int `json:"spans_omitted,omitempty"`
	// SpansError says why a stored run shows no spans: its spans file could not be read.
	SpansError string `json:"spans_error,omitempty"`
}
