package recorder

import (
	"encoding/binary"
	"sync"

	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/perfrecord"
	"github.com/stax-profiler/stax/internal/store"
)

// counterDecoding is how a stack worker decodes the samples of the sampling events that
// read the counters (Options.Counters): with their group read.
type counterDecoding struct {
	n         int // counters
	isLeader  func(id uint64) bool
	counterOf func(id uint64) (int, bool)
	dec       perfrecord.Decoder // the plain layout, with the read
	fixedDec  perfrecord.Decoder // the layout of a fixed period, with the read
}

// decoder is the decoder for rec: dec, or the counters' when rec is a leader's sample.
func (c *counterDecoding) decoder(dec *perfrecord.Decoder, rec []byte, waking bool) *perfrecord.Decoder {
	if c.isLeader == nil || waking || len(rec) < 16 || !c.isLeader(binary.LittleEndian.Uint64(rec[8:])) {
		return dec
	}
	if dec.SampleType&perfrecord.SamplePeriod == 0 {
		return &c.fixedDec
	}
	return &c.dec
}

// keep appends s's read to reads, the counters in their order, then the times enabled and
// running and the id of the group's leader (the sampling event), and says where.
func (c *counterDecoding) keep(s *perfrecord.Sample, reads *[]uint64) (lo, n uint32) {
	start := len(*reads)
	*reads = append(*reads, make([]uint64, c.n+3)...)
	vals := (*reads)[start:]
	for _, v := range s.Read.Values {
		if i, ok := c.counterOf(v.ID); ok && i < c.n {
			vals[i] = v.Value
		}
	}
	vals[c.n], vals[c.n+1], vals[c.n+2] = s.Read.TimeEnabled, s.Read.TimeRunning, s.ID
	return uint32(start), uint32(c.n + 3)
}

// counterWorkers tells the stack workers how to decode the counters' reads.
func (r *Recorder) counterWorkers(sess *perfevent.Session, cfg perfevent.Config) {
	if len(cfg.Counters) == 0 {
		return
	}
	r.ctr.n = len(cfg.Counters)
	for _, w := range r.in.workers {
		w.ctr = counterDecoding{n: len(cfg.Counters), isLeader: sess.IsCounterLeader, counterOf: sess.CounterOf}
		w.ctr.dec = w.dec
		w.ctr.dec.SampleType |= perfrecord.SampleRead
		w.ctr.dec.ReadFormat = perfevent.CounterReadFormat
		w.ctr.fixedDec = w.ctr.dec
		w.ctr.fixedDec.SampleType &^= perfrecord.SamplePeriod
	}
}

// counterTrack turns what each thread's counters read at its samples into what they
// counted between its samples, and sums them.
type counterTrack struct {
	n    int
	mu   sync.Mutex // guards sums, enabled and running, which checkpoints read
	last map[groupOf][]uint64
	// prev is the group each thread's sample before read.
	prev map[uint32]groupOf
	// sums are the counts of all threads.
	sums []uint64
	// enabled and running sum the times the groups were enabled and counting between two
	// samples in a row of a thread on one CPU (see deltas); paired says how many pairs.
	enabled, running, paired uint64
	out                      []uint64
}

// groupOf names a group of counters: per-thread events are opened one per CPU, each
// counting while its thread runs there, and the thread's samples on that CPU read it. A
// resized stack copy reopens the sampling events with their groups (leader: the sampling
// event's id): the new group counts from zero while the old one still samples, until
// the thread's samples are taken from the new one.
type groupOf struct {
	tid, cpu uint32
	leader   uint64
}

// deltas is what thread tid's counters on cpu counted since its sample there before
// (since the group opened, for its first): read holds the counters, the times enabled and
// running and the group leader's id. The result is valid until the next call.
func (c *counterTrack) deltas(tid, cpu uint32, read []uint64) []uint64 {
	if c.n == 0 || len(read) != c.n+3 {
		return nil
	}
	if c.last == nil {
		c.last = map[groupOf][]uint64{}
		c.prev = map[uint32]groupOf{}
		c.sums = make([]uint64, c.n)
	}
	g := groupOf{tid, cpu, read[c.n+2]}
	last, ok := c.last[g]
	if !ok {
		last = make([]uint64, c.n+3)
		c.last[g] = last
	}
	fresh := !ok
	if read[c.n] < last[c.n] || read[c.n+1] < last[c.n+1] {
		clear(last) // a new thread with the same id
		fresh = true
	}
	// A per-thread event of one CPU is enabled while its thread runs anywhere and counts
	// while it runs on that CPU, or less where the kernel multiplexed its group with
	// others on the PMU. Between two samples in a row of a thread on the same CPU it ran
	// there alone (short of a migration away and back between them): counting less than
	// enabled there is the multiplexing. The deltas are not scaled: the sampling event
	// leads the group, so the samples too were taken only while it counted, and the
	// counts are those of the samples' time (ratios such as IPC hold); status scales the
	// totals.
	var dEnabled, dRunning uint64
	samePlace := !fresh && c.prev[tid] == g
	if samePlace {
		dEnabled, dRunning = read[c.n]-last[c.n], read[c.n+1]-last[c.n+1]
	}
	c.prev[tid] = g
	c.out = c.out[:0]
	for i := range c.n {
		d := read[i]
		if read[i] >= last[i] {
			d = read[i] - last[i]
		}
		c.out = append(c.out, d)
	}
	copy(last, read)
	c.mu.Lock()
	for i, d := range c.out {
		c.sums[i] += d
	}
	if samePlace {
		c.enabled += dEnabled
		c.running += min(dRunning, dEnabled)
		c.paired++
	}
	c.mu.Unlock()
	return c.out
}

// meta lists the counters with their counts so far, for the run's meta.
func (c *counterTrack) meta(specs []perfevent.EventSpec) []store.Counter {
	if len(specs) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]store.Counter, len(specs))
	for i, ev := range specs {
		out[i] = store.Counter{Name: ev.Name}
		if i < len(c.sums) {
			out[i].Count = c.sums[i]
		}
		if c.paired > 0 {
			out[i].Time = &store.CounterTime{EnabledNs: c.enabled, RunningNs: c.running, Pairs: c.paired}
		}
	}
	return out
}
