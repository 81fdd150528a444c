package store

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/testutil/synthrun"
)

// offRecording is the off-CPU side of a recording, as the recorder keeps it: the off-CPU
// time and the wakers' aggregates, and the intervals under their keys.
type offRecording struct {
	off, wakeNs, wakeN *agg.Run
	ivs                []agg.Interval // Stack holds the key until a checkpoint names it
	late               int            // intervals counted after the last checkpoint named its stacks
}

func newOffRecording(t testing.TB, id string) *recording {
	rec := newRecording(t, id)
	rec.offCPU = &offRecording{off: agg.NewRun(), wakeNs: agg.NewRun(), wakeN: agg.NewRun()}
	return rec
}

// addOff records n waits over stacks distinct stacks (numbered from first) on tids
// threads, each of its own length, ended by a wakeup from a thread of the next stack.
func (r *recording) addOff(n, first, stacks, tids int) {
	o := r.offCPU
	for i := range n {
		s := first + i%stacks
		chain := []uint64{^uint64(511), uint64(s%40+1) << 8, uint64(s/40+200) << 8, 9 << 8}
		tid := uint32(10 + i%tids)
		ns := uint64(1000 + i*37%5000)
		key, ok := o.off.AddWeightKey(10, tid, r.next, 0, chain, ns, 0)
		if !ok {
			r.t.Fatal("off-CPU weight refused")
		}
		o.ivs = append(o.ivs, agg.Interval{Tid: tid, Stack: key, Start: r.next, End: r.next + ns, Waker: tid + 1})
		wchain := []uint64{^uint64(511), uint64(s%30+1) << 8, uint64(tid+300) << 8}
		o.wakeNs.AddWeight(10, tid+1, r.next, 0, wchain, ns, 0)
		o.wakeN.AddWeight(10, tid+1, r.next, 0, wchain, 1, 0)
		r.next += 1e5
	}
}

// offParts names the off-CPU aggregates' new stacks and returns the parts as a snapshot
// of the recorder has them: an interval whose stack was not named yet has none (its
// stack is named at the next checkpoint), and the wait still open (ended at now, so far)
// is last.
func (r *recording) offParts(run *Run, ths []agg.ThreadInfo) {
	o := r.offCPU
	o.off.Resolve(synthrun.Names{})
	o.wakeNs.Resolve(synthrun.Names{})
	o.wakeN.Resolve(synthrun.Names{})
	run.OffCPU = o.off.Profile(ths)
	run.WakersNs, run.WakersN = o.wakeNs.Profile(ths), o.wakeN.Profile(ths)
	// Waits counted after the names: their stacks are the next checkpoint's.
	r.addOff(o.late, 500, 3, 2)
	p := run.OffCPU
	ivs := make([]agg.Interval, 0, len(o.ivs)+1)
	for _, iv := range o.ivs {
		if k := iv.Stack; int(k) < len(p.KeyEntry) && p.KeyEntry[k] >= 0 {
			iv.Stack = p.Entries[p.KeyEntry[k]].Stack
		} else {
			iv.Stack = agg.NoStack
		}
		ivs = append(ivs, iv)
	}
	run.OffCPUIntervals = append(ivs, agg.Interval{Tid: 99, Stack: agg.NoStack, Start: 1e9, End: r.next})
}

// samePart checks that got (read back) is the profile want (saved): the same tables,
// threads and entries (entries in any order).
func samePart(t testing.TB, what string, got, want *agg.Profile) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Fatalf("%s: read back %v, want %v", what, got != nil, want != nil)
	}
	if got == nil {
		return
	}
	same := func(a, b any) bool {
		va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
		return va.Len() == 0 && vb.Len() == 0 || reflect.DeepEqual(a, b)
	}
	if !same(got.Frames, want.Frames) || !same(got.Mappings, want.Mappings) || !same(got.Locations, want.Locations) ||
		!same(got.Stacks, want.Stacks) || !same(got.Threads, want.Threads) {
		t.Fatalf("%s: the tables differ: %d/%d frames, %d/%d locations, %d/%d stacks, %d/%d threads", what, len(got.Frames), len(want.Frames),
			len(got.Locations), len(want.Locations), len(got.Stacks), len(want.Stacks), len(got.Threads), len(want.Threads))
	}
	order := func(es []agg.Entry) []agg.Entry {
		es = slices.Clone(es)
		slices.SortFunc(es, func(a, b agg.Entry) int {
			return cmp.Or(cmp.Compare(a.Tid, b.Tid), cmp.Compare(a.Stack, b.Stack), cmp.Compare(a.Leaf, b.Leaf), cmp.Compare(a.Event, b.Event))
		})
		return es
	}
	if g, w := order(got.Entries), order(want.Entries); !same(g, w) {
		t.Fatalf("%s: %d entries read back, want %d: %+v\nwant %+v", what, len(g), len(w), g, w)
	}
	for i := 1; i < len(got.Entries); i++ {
		if got.Entries[i].Count > got.Entries[i-1].Count {
			t.Fatalf("%s: entries out of order", what)
		}
	}
	if len(got.FrameStacks) != len(got.Stacks) {
		t.Fatalf("%s: %d stacks of functions for %d stacks", what, len(got.FrameStacks), len(got.Stacks))
	}
}

// sameOffCPU checks that got holds the off-CPU parts of want.
func sameOffCPU(t testing.TB, what string, got, want *Run) {
	t.Helper()
	for i, g := range partsOf(got) {
		samePart(t, what+": "+partNames[i], g, partsOf(want)[i])
	}
	if len(got.OffCPUIntervals)+len(want.OffCPUIntervals) > 0 && !reflect.DeepEqual(got.OffCPUIntervals, want.OffCPUIntervals) {
		t.Fatalf("%s: %d intervals read back, want %d", what, len(got.OffCPUIntervals), len(want.OffCPUIntervals))
	}
	if !reflect.DeepEqual(got.Meta.OffCPU, want.Meta.OffCPU) {
		t.Fatalf("%s: off-CPU meta %+v, want %+v", what, got.Meta.OffCPU, want.Meta.OffCPU)
	}
}

// wholeCopy is run saved whole, as the writer did before off-CPU parts had a delta form,
// and read back.
func wholeCopy(t testing.TB, run *Run) *Run {
	t.Helper()
	path := filepath.Join(t.TempDir(), "whole.stax")
	r := *run
	r.Meta.DeltaGen = 0
	if err := SaveStored(path, &r); err != nil {
		t.Fatal(err)
	}
	got, err := LoadParts(path, All)
	if err != nil {
		t.Fatal(err)
	}
	closeRun(got)
	return got
}

// TestDeltaOffCPUCheckpointsReadBackAsTheRun: a run with off-CPU time, wakers and
// intervals, checkpointed as deltas while new stacks, threads and waits come and the
// counts move, reads back at each checkpoint as the run saved whole does (each off-CPU
// part, the intervals, the rest); the delta file is of version 2 and is written to, not
// the base at each checkpoint; the final save leaves one file.
func TestDeltaOffCPUCheckpointsReadBackAsTheRun(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	defer func(n int64) { minDeltaBase = n }(minDeltaBase)
	minDeltaBase = 4 << 10
	rec := newOffRecording(t, "off")
	for step := range 14 {
		rec.add(400, step*2, 10+step, 2+step%3)
		// Waits on the stacks seen before (counts move) and on new ones, on new threads.
		rec.addOff(300+step*50, step*3, 8+step, 2+step%4)
		rec.offCPU.late = step % 3
		want := rec.checkpoint(false)
		what := fmt.Sprint("checkpoint ", step)
		got, err := LoadParts(Path("off"), All)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		sameRun(t, what, got, want)
		closeRun(got)
		whole := wholeCopy(t, want)
		sameOffCPU(t, what, got, whole)
		sameOffCPU(t, what+" (as saved)", got, want)
		// A view of the profile alone reads no off-CPU part; one of the off-CPU time
		// alone reads the parts without the intervals, as it does a run saved whole.
		if p, err := LoadParts(Path("off"), 0); err != nil || p.OffCPU != nil || p.OffCPUIntervals != nil {
			t.Fatalf("%s: the profile alone: %v", what, err)
		}
		if p, err := LoadParts(Path("off"), OffCPUPart); err != nil || p.OffCPUIntervals != nil {
			t.Fatalf("%s: the off-CPU time alone: %v", what, err)
		} else {
			for i, part := range partsOf(p) {
				samePart(t, what+" (off-CPU alone): "+partNames[i], part, partsOf(whole)[i])
			}
		}
		if m, err := ReadMeta(Path("off")); err != nil || !reflect.DeepEqual(m.OffCPU, want.Meta.OffCPU) {
			t.Fatalf("%s: meta alone: %+v, %v", what, m.OffCPU, err)
		}
	}
	if rec.w.Deltas < 8 || rec.w.Bases > 5 {
		t.Errorf("%d deltas and %d bases written for 14 checkpoints", rec.w.Deltas, rec.w.Bases)
	}
	if b, err := os.ReadFile(DeltaPath("off")); err != nil || binary.LittleEndian.Uint32(b[8:]) != deltaVersionOffCPU {
		t.Errorf("the delta file of a run with off-CPU parts is not of version %d: %v", deltaVersionOffCPU, err)
	}
	want := rec.checkpoint(true)
	if _, err := os.Stat(DeltaPath("off")); !os.IsNotExist(err) {
		t.Errorf("the final save left the delta file: %v", err)
	}
	got, err := LoadParts(Path("off"), All)
	if err != nil {
		t.Fatal(err)
	}
	sameRun(t, "final", got, want)
	sameOffCPU(t, "final", got, want)
	closeRun(got)
}

// TestDeltaOffCPUBytesFollowNewData: the checkpoints of a run with off-CPU time write
// what is new (waits added, counts moved), not the run: far less than writing the run
// whole at each checkpoint, and at most three times what the store keeps.
func TestDeltaOffCPUBytesFollowNewData(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	rec := newOffRecording(t, "offsteady")
	scratch := filepath.Join(t.TempDir(), "whole.stax")
	const checkpoints = 60
	var whole int64
	for step := range checkpoints {
		rec.add(400, 0, 100, 4)
		rec.addOff(2000, step, 200, 6)
		run := rec.checkpoint(false)
		r := *run
		r.Meta.DeltaGen = 0
		if err := SaveStored(scratch, &r); err != nil {
			t.Fatal(err)
		}
		info, _ := os.Stat(scratch)
		whole += info.Size()
	}
	kept := int64(0)
	for _, p := range []string{Path("offsteady"), DeltaPath("offsteady")} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		kept += info.Size()
	}
	t.Logf("%d checkpoints: %d bases, %d deltas; %d bytes written, %d kept (ratio %.2f); written whole at each checkpoint: %d (%.1f times as many)",
		checkpoints, rec.w.Bases, rec.w.Deltas, rec.w.Written, kept, float64(rec.w.Written)/float64(kept), whole, float64(whole)/float64(rec.w.Written))
	if rec.w.Written > 3*kept || rec.w.Written*4 > whole {
		t.Errorf("%d bytes written to keep %d (whole at each checkpoint: %d)", rec.w.Written, kept, whole)
	}
}

// TestDeltaOffCPUTornTailIsDropped: a record of a run with off-CPU parts cut short or
// damaged is dropped with what follows it; the run, off-CPU parts included, reads as of
// the checkpoint before.
func TestDeltaOffCPUTornTailIsDropped(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	rec := newOffRecording(t, "offtorn")
	var saved []*Run
	var sizes []int64
	for i := range 4 {
		rec.add(300, 0, 20, 2)
		rec.addOff(400, i*5, 10, 3)
		rec.offCPU.late = 1
		saved = append(saved, rec.checkpoint(false))
		sizes = append(sizes, rec.w.DeltaFileBytes)
	}
	if rec.w.Deltas != 3 {
		t.Fatalf("%d deltas written, want 3", rec.w.Deltas)
	}
	whole, err := os.ReadFile(DeltaPath("offtorn"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want int
	}{
		{"cut in the last record", whole[:len(whole)-7], 2},
		{"cut in the second record", whole[:sizes[1]+30], 1},
		{"a bit flipped in the third record", func() []byte {
			b := bytes.Clone(whole)
			b[sizes[1]+40] ^= 4
			return b
		}(), 1},
		{"the header alone", whole[:deltaHeaderSize], 0},
	} {
		if err := os.WriteFile(DeltaPath("offtorn"), c.b, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := LoadParts(Path("offtorn"), All)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.want < 3 && len(c.b) > int(sizes[c.want]) && (got.DeltaDamage == nil || got.DeltaDamage.Records != c.want) {
			t.Errorf("%s: damage %+v, want %d records applied", c.name, got.DeltaDamage, c.want)
		}
		sameRun(t, c.name, got, saved[c.want])
		sameOffCPU(t, c.name, got, saved[c.want])
		closeRun(got)
	}
}

// writeRecords writes a delta file of version v holding the records bodies, of
// generation gen, numbered from 1.
func writeRecords(t testing.TB, path string, v uint32, gen uint64, bodies ...any) {
	t.Helper()
	b := append([]byte(deltaMagic), make([]byte, 8)...)
	binary.LittleEndian.PutUint32(b[8:], v)
	for i, body := range bodies {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		if err := json.NewEncoder(zw).Encode(body); err != nil {
			t.Fatal(err)
		}
		zw.Close()
		p := binary.LittleEndian.AppendUint64(nil, gen)
		p = binary.LittleEndian.AppendUint64(p, uint64(i+1))
		p = append(p, z.Bytes()...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p)))
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(p, castagnoli))
		b = append(b, p...)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDeltaOffCPURecordsAreChecked: records whose off-CPU parts do not follow the run
// (intervals it does not hold, more than their bytes, bytes left over, a part it does
// not have, tables of other sizes, entries naming stacks it lacks) are errors, never a
// run read wrong; a delta file of a version this stax does not know is refused.
func TestDeltaOffCPURecordsAreChecked(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	rec := newOffRecording(t, "offbad")
	rec.add(100, 0, 5, 2)
	rec.addOff(100, 0, 5, 2)
	run := rec.checkpoint(false)
	gen := rec.w.gen
	p := run.OffCPU
	partOf := func(p *agg.Profile) *profDelta {
		return &profDelta{Frames: len(p.Frames), Mappings: len(p.Mappings), Locations: len(p.Locations), Stacks: len(p.Stacks)}
	}
	body := func(edit func(d *deltaBody)) *deltaBody {
		d := &deltaBody{profDelta: *partOf(&run.Profile), Keys: len(run.Profile.KeyEntry), Chunks: len(run.Profile.Series.Chunks), Code: len(run.Code),
			OffCPU: partOf(p), WakersNs: partOf(run.WakersNs), WakersN: partOf(run.WakersN)}
		edit(d)
		return d
	}
	held := len(run.OffCPUIntervals)
	last := run.OffCPUIntervals[held-1].Start
	ivData := appendIntervalBody(nil, []agg.Interval{{Tid: 5, Stack: 0, Start: 7, End: 9}}, &last)
	// A record that follows the run: it reads back with it applied.
	writeRecords(t, DeltaPath("offbad"), deltaVersion, gen, body(func(d *deltaBody) {
		d.Intervals = &ivDelta{Held: held, Kept: held, N: 1, Data: ivData}
		d.OffCPU.Entries = []agg.Entry{{Tid: 77, Pid: 10, Stack: 0, Count: 5, LeafFunc: -1}}
	}))
	got, err := LoadParts(Path("offbad"), All)
	if err != nil {
		t.Fatalf("a record that follows the run: %v", err)
	}
	if n := len(got.OffCPUIntervals); n != held+1 || got.OffCPUIntervals[n-1] != (agg.Interval{Tid: 5, Stack: 0, Start: 7, End: 9}) ||
		len(got.OffCPU.Entries) != len(p.Entries)+1 {
		t.Fatalf("a record that follows the run: %d intervals, %d entries", n, len(got.OffCPU.Entries))
	}
	closeRun(got)
	for _, c := range []struct {
		name string
		edit func(d *deltaBody)
	}{
		{"intervals held that the run does not hold", func(d *deltaBody) { d.Intervals = &ivDelta{Held: held + 1, Kept: held, N: 1, Data: ivData} }},
		{"more intervals kept than held", func(d *deltaBody) { d.Intervals = &ivDelta{Held: held, Kept: held + 1, N: 1, Data: ivData} }},
		{"intervals kept below zero", func(d *deltaBody) { d.Intervals = &ivDelta{Held: held, Kept: -1, N: 1, Data: ivData} }},
		{"more intervals than their bytes", func(d *deltaBody) { d.Intervals = &ivDelta{Held: held, Kept: held, N: 1 << 40, Data: ivData} }},
		{"more intervals than a run holds (their bytes expand past a record's bound)", func(d *deltaBody) {
			d.Intervals = &ivDelta{Held: held, Kept: held, N: maxIntervals, Data: make([]byte, 5*maxIntervals)}
		}},
		{"intervals cut short", func(d *deltaBody) {
			d.Intervals = &ivDelta{Held: held, Kept: held, N: 2, Data: append(ivData, 1, 2, 3, 4, 5)[:len(ivData)+4]}
		}},
		{"bytes after the intervals", func(d *deltaBody) {
			d.Intervals = &ivDelta{Held: held, Kept: held, N: 1, Data: append(slices.Clone(ivData), 0)}
		}},
		{"an interval that ends past the clock", func(d *deltaBody) {
			b := binary.AppendUvarint(binary.AppendUvarint(nil, 5), 0)
			b = binary.AppendUvarint(binary.AppendVarint(b, 5), ^uint64(0))
			d.Intervals = &ivDelta{Held: held, Kept: held, N: 1, Data: binary.AppendUvarint(b, 0)}
		}},
		{"an interval of a thread past 32 bits", func(d *deltaBody) {
			b := binary.AppendUvarint(binary.AppendUvarint(nil, 1<<33), 0)
			b = binary.AppendUvarint(binary.AppendVarint(b, 5), 1)
			d.Intervals = &ivDelta{Held: held, Kept: held, N: 1, Data: binary.AppendUvarint(b, 0)}
		}},
		{"no off-CPU part where the run has one", func(d *deltaBody) { d.OffCPU = nil }},
		{"a wakers part of other tables", func(d *deltaBody) { d.WakersN.Stacks++ }},
		{"an off-CPU entry of a stack the part lacks", func(d *deltaBody) {
			d.OffCPU.Entries = []agg.Entry{{Tid: 1, Stack: uint32(len(p.Stacks)), Count: 1, LeafFunc: -1}}
		}},
		{"an off-CPU location of a frame the part lacks", func(d *deltaBody) {
			d.OffCPU.NewLocations = []agg.Location{{Lines: []agg.Line{{Func: uint32(len(p.Frames) + 3)}}}}
		}},
		{"an off-CPU entry of an event the run lacks", func(d *deltaBody) {
			d.OffCPU.Entries = []agg.Entry{{Tid: 1, Stack: 0, Count: 1, LeafFunc: -1, Event: 3}}
		}},
	} {
		writeRecords(t, DeltaPath("offbad"), deltaVersion, gen, body(c.edit))
		if got, err := LoadParts(Path("offbad"), All); err == nil {
			closeRun(got)
			t.Errorf("%s: read back without an error", c.name)
		}
	}
	// A part the run does not have.
	plain := newRecording(t, "plainbad")
	plain.add(100, 0, 5, 2)
	prun := plain.checkpoint(false)
	if b, _ := os.ReadFile(DeltaPath("plainbad")); len(b) < deltaHeaderSize || binary.LittleEndian.Uint32(b[8:]) != deltaVersionPlain {
		t.Errorf("the delta file of a run without off-CPU parts is not of version %d", deltaVersionPlain)
	}
	writeRecords(t, DeltaPath("plainbad"), deltaVersion, plain.w.gen, &deltaBody{profDelta: *partOf(&prun.Profile), Keys: len(prun.Profile.KeyEntry),
		Chunks: len(prun.Profile.Series.Chunks), OffCPU: &profDelta{}})
	if got, err := LoadParts(Path("plainbad"), All); err == nil {
		closeRun(got)
		t.Error("an off-CPU part of a run without one read back without an error")
	}
	// A version this stax does not know is refused, by the views and by status.
	writeRecords(t, DeltaPath("offbad"), deltaVersion+1, gen)
	if _, err := LoadParts(Path("offbad"), All); err == nil || !strings.Contains(err.Error(), "version") {
		t.Errorf("a delta file of version %d: %v", deltaVersion+1, err)
	}
	if _, err := ReadMeta(Path("offbad")); err == nil {
		t.Errorf("the meta of a run whose delta file is of version %d read without an error", deltaVersion+1)
	}
}

// TestDeltaOffCPUPartComesLater: a run that gains an off-CPU part, or intervals, after its
// base is written whole again, its delta file then of version 2.
func TestDeltaOffCPUPartComesLater(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	rec := newRecording(t, "later")
	rec.add(100, 0, 5, 2)
	rec.checkpoint(false)
	rec.add(100, 0, 5, 2)
	rec.checkpoint(false)
	if rec.w.Bases != 1 || rec.w.Deltas != 1 {
		t.Fatalf("%d bases, %d deltas", rec.w.Bases, rec.w.Deltas)
	}
	rec.offCPU = &offRecording{off: agg.NewRun(), wakeNs: agg.NewRun(), wakeN: agg.NewRun()}
	rec.addOff(100, 0, 5, 2)
	want := rec.checkpoint(false)
	if rec.w.Bases != 2 {
		t.Errorf("the run that gained off-CPU parts was not written whole: %d bases", rec.w.Bases)
	}
	rec.addOff(100, 0, 7, 3)
	want = rec.checkpoint(false)
	if rec.w.Deltas != 2 {
		t.Errorf("%d deltas, want 2", rec.w.Deltas)
	}
	got, err := LoadParts(Path("later"), All)
	if err != nil {
		t.Fatal(err)
	}
	sameRun(t, "later", got, want)
	sameOffCPU(t, "later", got, want)
	closeRun(got)
}
