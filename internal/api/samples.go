package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"net/url"
	"slices"

	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/tracefmt"
)

// SamplesRequest asks /v1/samples (stax samples): the samples of a tracepoint event kept
// with their fields, the most recent N of those in the window (and of process Pid, of
// thread Tid). Transform rewrites their stacks as it does a view's: the samples it drops
// (focus, ignore) are not selected.
type SamplesRequest struct {
	Event     string `param:"event" required:"give a tracepoint event the run sampled (--event SYS:NAME)"`
	N         int    `param:"n" default:"100"` // 0: all those kept
	Pid       uint32 `param:"pid" what:"a process id"`
	Tid       uint32 `param:"tid" what:"a thread id"`
	Window    WindowParams
	Transform Transform
}

func (SamplesRequest) Path() string                 { return "/v1/samples" }
func (r SamplesRequest) Encode() url.Values         { return EncodeParams(r) }
func (r *SamplesRequest) Decode(q url.Values) error { return DecodeParams(q, r) }

// Samples is the answer of `stax samples`: a tracepoint's samples, oldest first.
type Samples struct {
	Schema int    `json:"schema"`
	Run    string `json:"run"`
	Live   bool   `json:"live"`
	State  string `json:"state"`
	Event  string `json:"event"`
	// Kept is how many samples of the event the run keeps (at most Cap), Dropped how many
	// older ones it let go; Matched how many of those kept the request selects, of which
	// Samples are the last (N).
	Kept    int           `json:"kept"`
	Cap     int           `json:"cap"`
	Dropped uint64        `json:"dropped"`
	Matched int           `json:"matched"`
	Samples []TraceSample `json:"samples"`
	StartNs uint64        `json:"start_ns,omitempty"` // the run's start on the samples' clock
}

// TraceSample is one sample of a tracepoint: when (CLOCK_MONOTONIC), which thread, the
// function it was in (the leaf of its stack, "" where not named yet) and its stack's
// functions, leaf first, and the tracepoint's fields, in the order of its format.
type TraceSample struct {
	TimeNs uint64      `json:"time_ns"`
	Pid    uint32      `json:"pid"`
	Tid    uint32      `json:"tid"`
	Comm   string      `json:"comm,omitempty"`
	Func   string      `json:"func"`
	Stack  []string    `json:"stack"`
	Fields FieldValues `json:"fields"`
}

// FieldValue is one field of a sample: its value is JSON, an integer, a string or a list
// of integers.
type FieldValue struct {
	Name  string
	Value json.RawMessage
}

// Text is the value as a perf script line shows it: a string as it is, a number or a
// list of numbers as JSON writes it.
func (v FieldValue) Text() string {
	var s string
	if len(v.Value) > 0 && v.Value[0] == '"' && json.Unmarshal(v.Value, &s) == nil {
		return s
	}
	return string(v.Value)
}

// FieldValues are a sample's fields: a JSON object, in their order.
type FieldValues []FieldValue

// MarshalJSON writes the fields as an object, in their order.
func (f FieldValues) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, v := range f {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(v.Name)
		if err != nil {
			return nil, err
		}
		if !json.Valid(v.Value) {
			return nil, errors.New("fields: " + v.Name + " is not JSON")
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v.Value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an object of fields, keeping their order.
func (f *FieldValues) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return errors.New("fields: not an object")
	}
	*f = (*f)[:0]
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		name, ok := t.(string)
		if !ok {
			return errors.New("fields: a key is not a string")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		*f = append(*f, FieldValue{Name: name, Value: v})
	}
	_, err = dec.Token()
	return err
}

// TraceEvent is a tracepoint event whose samples a run keeps with their fields (stax
// record -e SYS:NAME): how many it keeps (at most Cap), how many older ones it let go, and
// the fields each sample has (those of the tracepoint's format, less the common ones).
type TraceEvent struct {
	Event   string       `json:"event"`
	Kept    int          `json:"kept"`
	Cap     int          `json:"cap"`
	Dropped uint64       `json:"dropped,omitempty"`
	Fields  []TraceField `json:"fields"`
}

// TraceField is one field of a tracepoint: its name, its type as the format declares it
// ("size_t", "const char *", "__data_loc char[]"), and how its values are written: "int"
// (a number: top and flame --weight take it), "string" or "list" (of numbers).
type TraceField struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Kind   string `json:"kind"`
	Signed bool   `json:"signed,omitempty"`
}

// TraceEvents are the tracepoint events whose samples run keeps with their fields, in the
// order of its events; nil when it keeps none. An event whose format cannot be read is
// listed without fields.
func TraceEvents(run *store.Run) []TraceEvent {
	traces := slices.Clone(run.Traces)
	slices.SortStableFunc(traces, func(a, b store.TraceEvent) int { return cmp.Compare(a.Event, b.Event) })
	var out []TraceEvent
	for _, t := range traces {
		if int(t.Event) >= len(run.Meta.Events) {
			continue
		}
		ev := TraceEvent{Event: run.Meta.Events[t.Event].Name, Kept: len(t.Samples), Cap: t.Cap, Dropped: t.Dropped, Fields: []TraceField{}}
		if f, err := tracefmt.Parse(t.Format); err == nil {
			for _, fl := range f.Fields {
				if fl.Common() {
					continue
				}
				kind := map[tracefmt.Kind]string{tracefmt.Int: "int", tracefmt.String: "string", tracefmt.List: "list"}[fl.Kind]
				ev.Fields = append(ev.Fields, TraceField{Name: fl.Name, Type: fl.Type, Kind: kind, Signed: fl.Signed})
			}
		}
		out = append(out, ev)
	}
	return out
}
