package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/tracefmt"
)

// TraceEvent is what a run keeps of a tracepoint's samples with their fields (stax record
// -e SYS:NAME): the most recent Cap samples' raw data, and the format that reads it.
type TraceEvent struct {
	Event   uint32 // the event, an index in Meta.Events
	Format  []byte // the tracepoint's format file (tracefmt.Parse reads it)
	Cap     int    // the samples kept at most
	Dropped uint64 // older samples the ring let go
	Samples []agg.TraceSample
}

// The body's "traces" (a JSON string, base64) holds Run.Traces: tracesMagic, the number of
// events (uvarint), then per event its index, cap, dropped count, format (a length and
// its bytes) and samples: a count, then per sample its time less the previous sample's
// (zigzag varint), pid, tid, key and raw data (a length and its bytes), uvarints. Readers
// older than it skip the key; readers that do not ask for TracesPart skip it too.
const tracesMagic = "STAXTRC\x01"

// Bounds on what decodeTraces takes.
const (
	maxTraceEvents  = 16
	maxTraceCap     = 1 << 24
	maxTraceRaw     = 1<<16 - 1
	minTraceSampleB = 5 // time, pid, tid, key, raw length: a byte each at least
)

func encodeTraces(ts []TraceEvent) []byte {
	if len(ts) == 0 {
		return nil
	}
	b := append([]byte(nil), tracesMagic...)
	b = binary.AppendUvarint(b, uint64(len(ts)))
	for _, t := range ts {
		b = binary.AppendUvarint(b, uint64(t.Event))
		b = binary.AppendUvarint(b, uint64(t.Cap))
		b = binary.AppendUvarint(b, t.Dropped)
		b = binary.AppendUvarint(b, uint64(len(t.Format)))
		b = append(b, t.Format...)
		b = binary.AppendUvarint(b, uint64(len(t.Samples)))
		b = appendTraceSamples(b, t.Samples)
	}
	return b
}

// appendTraceSamples appends the samples ss: per sample its time less the previous
// sample's (the first's less 0; zigzag varint), pid, tid, key and raw data (a length and
// its bytes), uvarints.
func appendTraceSamples(b []byte, ss []agg.TraceSample) []byte {
	var prev uint64
	for _, s := range ss {
		b = binary.AppendVarint(b, int64(s.Time-prev))
		prev = s.Time
		b = binary.AppendUvarint(b, uint64(s.Pid))
		b = binary.AppendUvarint(b, uint64(s.Tid))
		b = binary.AppendUvarint(b, uint64(s.Key))
		b = binary.AppendUvarint(b, uint64(len(s.Raw)))
		b = append(b, s.Raw...)
	}
	return b
}

var errTraces = errors.New("traces")

// traceReader reads the traces section, failing once anything does not fit.
type traceReader struct {
	b   []byte
	err bool
}

func (r *traceReader) uvarint(max uint64) uint64 {
	if r.err {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > max {
		r.err = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *traceReader) varint() int64 {
	if r.err {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *traceReader) bytes(n uint64) []byte {
	if r.err || n > uint64(len(r.b)) {
		r.err = true
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// samples reads len(ss) samples into ss (appendTraceSamples's encoding) and returns it.
func (r *traceReader) samples(ss []agg.TraceSample) []agg.TraceSample {
	var prev uint64
	for i := range ss {
		s := &ss[i]
		s.Time = prev + uint64(r.varint())
		prev = s.Time
		s.Pid = uint32(r.uvarint(1<<32 - 1))
		s.Tid = uint32(r.uvarint(1<<32 - 1))
		s.Key = uint32(r.uvarint(1<<32 - 1))
		s.Raw = r.bytes(r.uvarint(maxTraceRaw))
	}
	return ss
}

// decodeTraces reads a traces section, checking every count against the bytes left; an
// event's samples may be fewer than its cap, and its format is parsed when read.
func decodeTraces(b []byte) ([]TraceEvent, error) {
	if len(b) < len(tracesMagic) || string(b[:len(tracesMagic)]) != tracesMagic {
		return nil, fmt.Errorf("%w: not a traces section", errTraces)
	}
	r := traceReader{b: b[len(tracesMagic):]}
	n := r.uvarint(maxTraceEvents)
	var out []TraceEvent
	seen := map[uint32]bool{}
	for range n {
		var t TraceEvent
		t.Event = uint32(r.uvarint(maxTraceEvents - 1))
		t.Cap = int(r.uvarint(maxTraceCap))
		t.Dropped = r.uvarint(1<<63 - 1)
		t.Format = r.bytes(r.uvarint(tracefmt.MaxFormat))
		ns := r.uvarint(uint64(t.Cap))
		if r.err || ns > uint64(len(r.b)/minTraceSampleB) {
			return nil, fmt.Errorf("%w: event %d: %d samples do not fit the section", errTraces, t.Event, ns)
		}
		if seen[t.Event] {
			return nil, fmt.Errorf("%w: event %d twice", errTraces, t.Event)
		}
		seen[t.Event] = true
		t.Samples = r.samples(make([]agg.TraceSample, ns))
		if r.err {
			return nil, fmt.Errorf("%w: event %d: cut short", errTraces, t.Event)
		}
		out = append(out, t)
	}
	if r.err {
		return nil, fmt.Errorf("%w: cut short", errTraces)
	}
	return out, nil
}

// traces reads the body's "traces".
func (d *decoder) traces(r *Run) error {
	start := d.dec.InputOffset()
	d.b.element("traces", start, d.b.outLimit-start)
	var raw []byte
	err := d.dec.Decode(&raw)
	d.b.element("", 0, 0)
	if err != nil {
		return fmt.Errorf("traces: %w", err)
	}
	if err := d.b.charge(2 * (d.dec.InputOffset() - start)); err != nil {
		return err
	}
	r.Traces, err = decodeTraces(raw)
	return err
}
