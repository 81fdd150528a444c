package push

import (
	"bytes"
	"fmt"
	"github.com/klauspost/compress/gzip"
	"time"

	"github.com/stax-profiler/stax/internal/export"
	"github.com/stax-profiler/stax/internal/store"
)

// Encoder turns a run's window into a request for one protocol.
type Encoder struct {
	Protocol Protocol
	Resource Resource
}

// Window encodes the samples of run with from <= time < to (CLOCK_MONOTONIC ns; to 0: no
// end) as request seq. empty says the window had no samples to send (and r is not set but
// for LeftOut). OTLP gets every event of the run, a profile each (ProfilesOf); Pyroscope
// the first event's samples alone, the others' counted in r.LeftOut.
func (e Encoder) Window(run *store.Run, from, to uint64, seq uint64) (r Request, empty bool, err error) {
	w := run
	if from != 0 || to != 0 {
		p, err := run.Profile.Window(from, to)
		if err != nil {
			return Request{}, false, fmt.Errorf("select window: %w", err)
		}
		cp := *run
		cp.Profile = *p
		w = &cp
	}
	var left uint64
	if e.Protocol == Pyroscope {
		// Pyroscope takes the first event's samples, as CPU samples; the others are counted.
		w, left = export.OnlyEvent(w, 0)
	}
	if len(w.Profile.Entries) == 0 {
		return Request{LeftOut: left}, true, nil
	}
	prof, vals, err := export.PprofWithValues(w)
	if err != nil {
		return Request{}, false, err
	}
	start, end := wallTimes(run, from, to)
	prof.TimeNanos, prof.DurationNanos = start.UnixNano(), end.Sub(start).Nanoseconds()
	switch e.Protocol {
	case Pyroscope:
		labels := map[string]string{"hostname": e.Resource.Host}
		if e.Resource.Pid != 0 {
			labels["pid"] = fmt.Sprint(e.Resource.Pid)
		}
		r, err = PyroscopeRequest(prof, e.Resource.Service, labels, start, end, run.Meta.Freq)
	default:
		var raw []byte
		if raw, err = EncodeOTLPValues(prof, vals, e.Resource, seq); err == nil {
			r.Body, err = gzipBytes(raw)
		}
		r.Path, r.ContentType, r.ContentEncoding = "/v1development/profiles", "application/x-protobuf", "gzip"
	}
	r.Seq, r.LeftOut = seq, left
	return r, false, err
}

// gzipBytes compresses an OTLP request: OTLP/HTTP receivers take Content-Encoding gzip, and
// the repetitive tables of a profile shrink to about half at the fastest level.
func gzipBytes(b []byte) ([]byte, error) {
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestSpeed)
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// wallTimes is the window in wall-clock time: sample times are CLOCK_MONOTONIC, and the
// run's start is known on both clocks. An open end is the last sample.
func wallTimes(run *store.Run, from, to uint64) (time.Time, time.Time) {
	first, last := run.Profile.TimeRange()
	if from == 0 {
		from = first
	}
	if to == 0 || to > last+1 {
		to = last + 1
	}
	at := func(t uint64) time.Time {
		if run.Meta.Start.IsZero() || run.Meta.StartNs == 0 {
			return time.Now()
		}
		return run.Meta.Start.Add(time.Duration(int64(t) - int64(run.Meta.StartNs)))
	}
	s, e := at(from), at(max(to, from))
	return s, e
}
