// The rolling window on disk (record --keep, --keep-bytes): the oldest chunks of samples
// leave the run as it records, their blocks of the samples file given back to the file
// system, and their samples taken out of the run's counts, so a recording of days keeps
// the last hour (or the last gigabytes) of samples and no more.

package recorder

import (
	"slices"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

// windowState is what the window let go of so far (the storage goroutine's, read by
// snapshots under mu).
type windowState struct {
	cutRef  int64    // chunks of the samples file before this offset left the run
	dropped []uint32 // samples dropped, per key
	// droppedCounters is what the dropped samples' counters counted (record
	// --counters), counters per key.
	droppedCounters []uint64
	counters        int
	w               store.Window
	floor           func() uint64 // samples at or after this time stay (not pushed yet); nil: none
	err             error         // the file's blocks could not be given back (said once)
}

// SetKeepFloor makes the window keep every sample at or after the time floor returns (on
// the samples' clock): a pusher's, so that nothing leaves the window before it was
// pushed.
func (r *Recorder) SetKeepFloor(floor func() uint64) {
	r.mu.Lock()
	r.window.floor = floor
	r.mu.Unlock()
}

// advanceWindow drops from the run the oldest chunks of samples written to its samples
// file that are past the window: older than opts.Keep before the newest sample, or beyond
// opts.KeepBytes on disk (the run's file and delta file counted first). Their samples are
// read back to count them out of the run, and their blocks are punched out of the file.
// run is the snapshot of this checkpoint; the chunks dropped leave it too.
func (r *Recorder) advanceWindow(run *store.Run) {
	keep, keepBytes := r.opts.Keep, r.opts.KeepBytes
	if (keep <= 0 && keepBytes <= 0) || r.storage.samples == nil || r.storage.samplesClosed {
		return
	}
	ch := run.Profile.Series.Chunks
	// The chunks in the file, and their sizes there.
	var spilled []int
	for i := range ch {
		if ch[i].Ref != 0 {
			spilled = append(spilled, i)
		}
	}
	if len(spilled) == 0 {
		return
	}
	size := func(k int) int64 {
		if k+1 < len(spilled) {
			return ch[spilled[k+1]].Ref - ch[spilled[k]].Ref
		}
		return r.storage.samples.Size() - ch[spilled[k]].Ref
	}
	var newest uint64
	for i := range ch {
		newest = max(newest, ch[i].Max)
	}
	var onDisk int64
	for k := range spilled {
		onDisk += size(k)
	}
	if d := r.storage.delta; d != nil {
		onDisk += d.BaseBytes + d.DeltaFileBytes
	}
	r.mu.Lock()
	floor := r.window.floor
	r.mu.Unlock()
	var pushed uint64 = ^uint64(0)
	if floor != nil {
		pushed = floor()
	}
	drop := 0
	for k := range spilled {
		c := &ch[spilled[k]]
		old := keep > 0 && newest > uint64(keep) && c.Max < newest-uint64(keep)
		big := keepBytes > 0 && onDisk > keepBytes
		// A chunk leaves only whole, and only once the samples after it are enough to
		// stand in the window (the newest chunk in the file stays), and once pushed.
		if !(old || big) || k == len(spilled)-1 || c.Max >= pushed {
			break
		}
		onDisk -= size(k)
		drop++
	}
	if drop == 0 {
		return
	}
	dropped, droppedCounters, nc := r.window.dropped, r.window.droppedCounters, run.Profile.Series.Counters
	var w store.Window
	r.mu.Lock()
	w = r.window.w
	r.mu.Unlock()
	for k := range drop {
		c := ch[spilled[k]]
		one := agg.Series{Chunks: []agg.SeriesChunk{c}, Counters: nc, Reader: r.storage.samplesFile}
		err := one.Each(0, 0, func(s agg.Sample) {
			for int(s.Key) >= len(dropped) {
				dropped = append(dropped, 0)
			}
			dropped[s.Key]++
			if nc > 0 {
				for len(droppedCounters) < len(dropped)*nc {
					droppedCounters = append(droppedCounters, 0)
				}
				agg.SumCounters(droppedCounters[int(s.Key)*nc:][:nc], s.Counters)
			}
		})
		if err != nil {
			r.note("rolling window: the samples of a chunk leaving the window could not be read back (%v): the run's counts keep them", err)
		}
		n := size(k)
		if err := r.storage.samples.Drop(c.Ref, n); err != nil && r.window.err == nil {
			r.window.err = err
			r.note("rolling window: %v; samples leave the run, but the samples file keeps its size on disk", err)
		}
		w.DroppedChunks++
		w.DroppedSamples += uint64(c.N)
		w.DroppedBytes += n
	}
	next := ch[spilled[drop]]
	w.KeepSec, w.KeepBytes = keep.Seconds(), keepBytes
	w.FromNs = next.Min - min(next.Min, r.meta.StartNs)
	r.mu.Lock()
	r.window.dropped, r.window.cutRef, r.window.w = dropped, next.Ref, w
	r.window.droppedCounters, r.window.counters = droppedCounters, nc
	r.mu.Unlock()
	r.applyWindow(run)
}

// applyWindow takes out of run what the window let go of: the chunks before it, and
// their samples from the counts.
func (r *Recorder) applyWindow(run *store.Run) {
	r.mu.Lock()
	cut, dropped, w := r.window.cutRef, r.window.dropped, r.window.w
	droppedCounters, nc := r.window.droppedCounters, r.window.counters
	r.mu.Unlock()
	if r.opts.Keep > 0 || r.opts.KeepBytes > 0 {
		w.KeepSec, w.KeepBytes = r.opts.Keep.Seconds(), r.opts.KeepBytes
		run.Meta.Window = &w
	}
	if cut == 0 {
		return
	}
	p := &run.Profile
	ch := p.Series.Chunks
	n := 0
	for n < len(ch) && ch[n].Ref != 0 && ch[n].Ref < cut {
		n++
	}
	p.Series.Chunks = ch[n:]
	changed := false
	for k, d := range dropped {
		if d == 0 || k >= len(p.KeyEntry) || p.KeyEntry[k] < 0 || int(p.KeyEntry[k]) >= len(p.Entries) {
			continue
		}
		e := &p.Entries[p.KeyEntry[k]]
		e.Count -= min(e.Count, uint64(d))
		if nc > 0 && len(e.Counters) == nc && (k+1)*nc <= len(droppedCounters) {
			e.Counters = slices.Clone(e.Counters)
			for j, v := range droppedCounters[k*nc:][:nc] {
				e.Counters[j] -= min(e.Counters[j], v)
			}
		}
		changed = true
	}
	if changed {
		sortEntries(p)
	}
}

// sortEntries puts p's entries back in order, most samples first, the keys following.
func sortEntries(p *agg.Profile) {
	order := make([]int, len(p.Entries))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		switch a, b := p.Entries[i].Count, p.Entries[j].Count; {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	moved := make([]int32, len(order))
	sorted := make([]agg.Entry, len(order))
	for to, from := range order {
		moved[from] = int32(to)
		sorted[to] = p.Entries[from]
	}
	copy(p.Entries, sorted)
	for k, e := range p.KeyEntry {
		if e >= 0 && int(e) < len(moved) {
			p.KeyEntry[k] = moved[e]
		}
	}
}
