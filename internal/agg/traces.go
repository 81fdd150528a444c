package agg

// TraceSample is a sample of a tracepoint kept with its raw data (its fields, read with
// the tracepoint's format: package tracefmt).
type TraceSample struct {
	Time     uint64
	Pid, Tid uint32
	// Key is the sample's key in the run: Profile.KeyEntry maps it to the entry that
	// counts it, and so to its stack.
	Key uint32
	Raw []byte
}

// TraceRing is what a run keeps of one tracepoint event's samples: the most recent Cap,
// oldest first, and how many older ones it let go.
type TraceRing struct {
	Event   uint32 // the event, an index in the run's events
	Cap     int
	Dropped uint64
	Samples []TraceSample
}

// traceRing is a TraceRing being filled: next is where the next sample goes once full.
type traceRing struct {
	TraceRing
	next int
}

func (t *traceRing) add(s TraceSample) {
	if len(t.Samples) < t.Cap {
		t.Samples = append(t.Samples, s)
		return
	}
	t.Samples[t.next] = s
	t.next = (t.next + 1) % t.Cap
	t.Dropped++
}

// DefaultTraceSamples is how many samples of each tracepoint a run keeps with their fields.
const DefaultTraceSamples = 100_000

// KeepTraces makes the run keep the raw data of the last capacity samples of event
// (AddTracedSample). It is called before the event's first sample.
func (r *Run) KeepTraces(event uint32, capacity int) {
	if capacity <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.traces {
		if t.Event == event {
			return
		}
	}
	r.traces = append(r.traces, &traceRing{TraceRing: TraceRing{Event: event, Cap: capacity}})
}

// AddTracedSample is AddCountedSample for a sample that carries raw data: a sample of an
// event the run keeps traces of (KeepTraces) keeps it, a copy, with its time, thread and key.
func (r *Run) AddTracedSample(event, pid, tid, cpu uint32, t uint64, gen uint32, chain, counters []uint64, raw []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(event, pid, tid, cpu, t, gen, chain, counters)
	key := r.keyIndex[r.lastKey]
	if len(counters) > 0 {
		r.addCounters(key, counters)
	}
	for _, tr := range r.traces {
		if tr.Event == event {
			tr.add(TraceSample{Time: t, Pid: pid, Tid: tid, Key: key, Raw: append([]byte(nil), raw...)})
			break
		}
	}
}

// Traces returns what the run keeps of its tracepoints' samples, each ring's samples
// oldest first. The samples' raw data is shared (never written again).
func (r *Run) Traces() []TraceRing {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.traces) == 0 {
		return nil
	}
	out := make([]TraceRing, len(r.traces))
	for i, t := range r.traces {
		out[i] = t.TraceRing
		out[i].Samples = make([]TraceSample, 0, len(t.Samples))
		out[i].Samples = append(append(out[i].Samples, t.Samples[t.next:]...), t.Samples[:t.next]...)
	}
	return out
}
