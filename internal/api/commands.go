package api

import "net/url"

// The live run's commands are requests too, decoded by the same codec as the queries: the
// server reads no parameter of its own.

// MarkRequest asks POST /v1/mark (stax mark): drop a marker named Name into the live run.
type MarkRequest struct {
	Name string `param:"name" required:"empty (a marker needs a name)"`
	// At is when, on CLOCK_MONOTONIC (the clock of samples) in nanoseconds; 0: when the
	// recorder takes it.
	At uint64 `param:"at" what:"a time in nanoseconds"`
}

// StopRequest asks POST /v1/stop (stax stop): end the live run cleanly. It has no
// parameters; its answer is a Stopped.
type StopRequest struct{}

// Stopped is the answer of POST /v1/stop.
type Stopped struct {
	Run     string `json:"run"`
	Schema  int    `json:"schema"`
	Stopped bool   `json:"stopped"`
}

// RunFileRequest asks GET /v1/run.stax (see RunFilePath): the whole run as a saved-run
// file, with Bake as stax save keeps it.
type RunFileRequest struct {
	Bake bool `param:"bake"`
}

func (MarkRequest) Path() string    { return "/v1/mark" }
func (StopRequest) Path() string    { return "/v1/stop" }
func (RunFileRequest) Path() string { return RunFilePath }

func (r MarkRequest) Encode() url.Values    { return EncodeParams(r) }
func (r StopRequest) Encode() url.Values    { return EncodeParams(r) }
func (r RunFileRequest) Encode() url.Values { return EncodeParams(r) }

func (r *MarkRequest) Decode(q url.Values) error    { return DecodeParams(q, r) }
func (r *StopRequest) Decode(q url.Values) error    { return DecodeParams(q, r) }
func (r *RunFileRequest) Decode(q url.Values) error { return DecodeParams(q, r) }

// Commands lists a new request of each of the live run's commands and files, beside the
// queries of Requests.
func Commands() []Request {
	return []Request{&MarkRequest{}, &StopRequest{}, &RunFileRequest{}}
}
