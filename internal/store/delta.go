package store

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/stax-profiler/stax/internal/agg"
)

// A run's delta file holds what changed in the run since its file (the base) was last
// written whole, one record per checkpoint, so that a checkpoint of a long recording
// writes what is new (the functions, stacks and threads first seen, the counts that moved,
// the samples added) rather than the whole run again. When the records since the base add
// up to more than twice the base, the next checkpoint writes the run whole again (a new base,
// of a new generation) and starts the delta file over; the final save always does, and
// removes the delta file, so a finished run is one file as before.
//
// The base's meta names its generation (Meta.DeltaGen; such a file has format version 6,
// or 7 when its samples carry counters, which a stax that does not know delta files
// refuses rather than read a stale run). A record belongs to a generation and has a
// sequence number: a reader applies, in order, the records of the base's generation
// numbered 1, 2, 3, ... and stops at the first that is cut short, damaged or out of order
// (a torn tail left by a crash or a full disk): what follows is dropped, counted in
// DeltaDamage. Records of an older generation (a new base was written but the delta file
// not yet started over when the recorder died) are ignored.
//
// Layout: the 16-byte header (magic "STAXDLT\x00", version u32, zero u32), then records:
// payload length u32, CRC-32C of the payload u32, and the payload: generation u64,
// sequence u64, then one gzip stream of the record's JSON (deltaBody).
//
// A run that records off-CPU time has its parts carried on too: the off-CPU time and the
// wakers (profiles, each diffed and applied as the run's profile is: profDelta) and the
// intervals off CPU (those from the first block of ivDeltaBlock that changed, in the
// intervals section's encoding: ivDelta). Their delta file is of version 2. A stax that
// reads version 1 alone (whose records carry the profile, series and code, and which
// ignores fields it does not know) would otherwise apply the records to the run's profile
// and show its off-CPU time as of the base: it refuses a file of version 2 instead. The
// base's format version is left as it is, for every reader of delta files checks the
// delta file's version before it applies a record; a run without those parts still has a
// delta file of version 1, which such a stax reads.
//
// A run that keeps tracepoints' samples with their fields (Run.Traces) has its records
// carry, per tracepoint, the samples added since the record before (traceDelta), in a delta
// file of version 3, which a stax that reads versions 1 and 2 alone refuses for the same
// reason. Runs with spans are written whole at every checkpoint (those have no delta form).
const (
	deltaMagic = "STAXDLT\x00"
	// deltaVersionPlain is a delta file whose records carry the profile, series and code
	// alone; deltaVersionOffCPU one whose records also carry the off-CPU parts;
	// deltaVersionTraces one whose records also carry the tracepoints' samples.
	deltaVersionPlain  = 1
	deltaVersionOffCPU = 2
	deltaVersionTraces = 3
	deltaVersion       = deltaVersionTraces // the newest this stax reads
	deltaHeaderSize    = 16
	deltaRecHeader     = 8
	maxDeltaRecord     = 64 << 20 // compressed bytes of one record
	maxDeltaRecords    = 1 << 20
)

// minDeltaBase: while the base is smaller than this, deltas still go on until they reach
// it (a run's first bases are small and would otherwise be rewritten at once).
var minDeltaBase int64 = 64 << 10

// DeltaPath is where the run with id keeps its checkpoints' deltas.
func DeltaPath(id string) string { return deltaPathOf(Path(id)) }

func deltaPathOf(path string) string { return strings.TrimSuffix(path, ".stax") + ".delta" }

// entryID is what identifies an entry across checkpoints: its thread, stack and leaf
// address (entries are merged on these and sorted by count, so their indexes move).
type entryID struct {
	Tid   uint32 `json:"t"`
	Stack uint32 `json:"s"`
	Leaf  uint64 `json:"l"`
	Event uint32 `json:"v,omitempty"` // the samples' event (stax record -e)
}

func idOf(e *agg.Entry) entryID { return entryID{e.Tid, e.Stack, e.Leaf, e.Event} }

// sameEntry says whether two entries hold the same counts, counters included.
func sameEntry(a, b *agg.Entry) bool {
	return a.Tid == b.Tid && a.Pid == b.Pid && a.Stack == b.Stack && a.Count == b.Count && a.Leaf == b.Leaf &&
		a.LeafFunc == b.LeafFunc && a.Event == b.Event && a.Time == b.Time && slices.Equal(a.Counters, b.Counters)
}

type keyRef struct {
	K int32   `json:"k"`
	E entryID `json:"e"`
}

type frameFix struct {
	I    uint32 `json:"i"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// deltaChunk is a chunk of the series from index deltaBody.Chunks on: Off > 0 says its
// data continues that chunk's first Off bytes, which the run already holds.
type deltaChunk struct {
	Base uint64 `json:"base"`
	Min  uint64 `json:"min"`
	Max  uint64 `json:"max"`
	N    uint32 `json:"n"`
	Ref  int64  `json:"ref,omitempty"`
	Off  int    `json:"off,omitempty"`
	Data []byte `json:"data,omitempty"`
}

type codeFix struct {
	I    int  `json:"i"`
	Code Code `json:"code"`
}

// profDelta is what changed in one profile (the run's, or one of its off-CPU parts): each
// count says how many of a table the profile held before it (a record that does not follow
// what the reader holds is damaged), the new elements follow them.
type profDelta struct {
	Frames       int              `json:"frames"`
	NewFrames    []agg.Frame      `json:"new_frames,omitempty"`
	FrameFix     []frameFix       `json:"frame_fix,omitempty"`
	Mappings     int              `json:"mappings"`
	NewMappings  []agg.Mapping    `json:"new_mappings,omitempty"`
	Locations    int              `json:"locations"`
	NewLocations []agg.Location   `json:"new_locations,omitempty"`
	Stacks       int              `json:"stacks"`
	NewStacks    [][]uint32       `json:"new_stacks,omitempty"`
	Threads      []agg.ThreadInfo `json:"threads,omitempty"` // added or renamed
	GoneThreads  []uint32         `json:"gone_threads,omitempty"`
	Entries      []agg.Entry      `json:"entries,omitempty"` // added or changed
}

// ivDelta is what changed in the run's intervals off CPU: of the Held intervals the run
// held before it, the first Kept stay, and the N intervals of Data follow them (the
// intervals section's encoding, appendIntervalBody's, the interval before the first
// starting where interval Kept-1 does, or at 0).
type ivDelta struct {
	Held int    `json:"held"`
	Kept int    `json:"kept"`
	N    int    `json:"n"`
	Data []byte `json:"data,omitempty"`
}

// traceDelta is what changed in one tracepoint's ring of samples (Run.Traces): after the
// Held samples the ring had taken in all (kept and let go) when the record before was
// written, the N samples of Data (appendTraceSamples's encoding); the ring then keeps its
// last Cap samples and has taken Total in all. Total exceeds Held + N where the ring let
// samples go that no checkpoint saw.
type traceDelta struct {
	Event uint32 `json:"event"`
	Held  uint64 `json:"held"`
	Total uint64 `json:"total"`
	N     int    `json:"n"`
	Data  []byte `json:"data,omitempty"`
}

// deltaBody is one record: the meta's fields that changed, what changed in the profile
// (its fields inline, as version 1 wrote them), the series and the code; in files of
// version 2, what changed in the off-CPU parts.
type deltaBody struct {
	// Meta holds the top-level keys of the meta's JSON that changed (null: removed).
	Meta map[string]json.RawMessage `json:"meta,omitempty"`
	profDelta
	Keys    int      `json:"keys"` // the keys after the record
	KeyRefs []keyRef `json:"key_refs,omitempty"`
	// ChunksDropped chunks leave the front of the series (a rolling window), then the
	// chunks from index Chunks on are replaced by NewChunks.
	ChunksDropped int          `json:"chunks_dropped,omitempty"`
	Chunks        int          `json:"chunks"`
	NewChunks     []deltaChunk `json:"new_chunks,omitempty"`
	JIT           []JITSource  `json:"jit,omitempty"`
	JITSet        bool         `json:"jit_set,omitempty"`
	Code          int          `json:"code"`
	NewCode       []Code       `json:"new_code,omitempty"`
	CodeFix       []codeFix    `json:"code_fix,omitempty"`
	// The off-CPU parts (delta file version 2): each present exactly when the run has
	// the part.
	OffCPU    *profDelta `json:"off_cpu,omitempty"`
	WakersNs  *profDelta `json:"wakers_ns,omitempty"`
	WakersN   *profDelta `json:"wakers_n,omitempty"`
	Intervals *ivDelta   `json:"off_cpu_intervals,omitempty"` // nil: unchanged
	// Traces (delta file version 3): one per tracepoint the run keeps samples of, in the
	// run's order.
	Traces []traceDelta `json:"traces,omitempty"`

	ivSums []uint64 // the writer's: the intervals' block sums once the record is written
}

// parts are the record's deltas of the run's parts, in partsOf's order.
func (d *deltaBody) parts() [3]**profDelta { return [3]**profDelta{&d.OffCPU, &d.WakersNs, &d.WakersN} }

// partsOf are r's off-CPU parts that have a delta form as a profile: the off-CPU time and
// the wakers' (nil where r has none).
func partsOf(r *Run) [3]*agg.Profile { return [3]*agg.Profile{r.OffCPU, r.WakersNs, r.WakersN} }

// partNames are the events the parts' run files are written with (encodePart).
var partNames = [3]string{"off-cpu", "wakers-ns", "wakers-n"}

// DeltaDamage says what a reader dropped of a delta file: a record cut short or damaged
// (a crash or a full disk while it was appended) and everything after it.
type DeltaDamage struct {
	Records int    `json:"records"` // records applied
	Dropped int64  `json:"dropped_bytes"`
	Reason  string `json:"reason"`
}

// String says what was dropped, for a note.
func (d *DeltaDamage) String() string {
	return fmt.Sprintf("its last checkpoint was cut short (%s): %d bytes of checkpoint deltas dropped; the run is read as of its checkpoint before", d.Reason, d.Dropped)
}

// deltaRecord is a record read back, whole and checked.
type deltaRecord struct {
	gen, seq uint64
	z        []byte // the gzip'd body
}

// readDeltaRecords reads the records of generation gen from a delta file's bytes, in
// order, stopping at the first that is cut short, damaged or out of sequence (counted in
// the damage returned, nil when nothing was dropped).
func readDeltaRecords(b []byte, gen uint64) ([]deltaRecord, *DeltaDamage, error) {
	if len(b) < deltaHeaderSize || string(b[:8]) != deltaMagic {
		// Cut short while it was started over: the base is whole, and nothing follows it.
		return nil, &DeltaDamage{Dropped: int64(len(b)), Reason: "the delta file's header is damaged"}, nil
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v < deltaVersionPlain || v > deltaVersion {
		return nil, nil, fmt.Errorf("delta file version %d is not supported", v)
	}
	var recs []deltaRecord
	off := deltaHeaderSize
	damage := func(why string) *DeltaDamage {
		return &DeltaDamage{Records: len(recs), Dropped: int64(len(b) - off), Reason: why}
	}
	for off < len(b) {
		if len(b)-off < deltaRecHeader {
			return recs, damage("a record's header is cut short"), nil
		}
		n := int(binary.LittleEndian.Uint32(b[off:]))
		if n < 16 || n > maxDeltaRecord {
			return recs, damage(fmt.Sprintf("a record of %d bytes", n)), nil
		}
		if len(b)-off-deltaRecHeader < n {
			return recs, damage("a record is cut short"), nil
		}
		p := b[off+deltaRecHeader : off+deltaRecHeader+n]
		if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(b[off+4:]) {
			return recs, damage("a record's checksum does not match"), nil
		}
		r := deltaRecord{gen: binary.LittleEndian.Uint64(p), seq: binary.LittleEndian.Uint64(p[8:]), z: p[16:]}
		if r.gen != gen {
			off += deltaRecHeader + n
			continue // an older generation's, written before the base
		}
		if r.seq != uint64(len(recs))+1 {
			return recs, damage(fmt.Sprintf("record %d where %d was due", r.seq, len(recs)+1)), nil
		}
		if len(recs) == maxDeltaRecords {
			return recs, damage("too many records"), nil
		}
		recs = append(recs, r)
		off += deltaRecHeader + n
	}
	return recs, nil, nil
}

// body decompresses and decodes a record, within the bounds a run file's payload has.
func (r deltaRecord) body() (*deltaBody, error) {
	zr, err := gzip.NewReader(bytes.NewReader(r.z))
	if err != nil {
		return nil, fmt.Errorf("delta %d: %w", r.seq, err)
	}
	limit := textLimit(int64(len(r.z)))
	js, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("delta %d: %w", r.seq, err)
	}
	if int64(len(js)) > limit {
		return nil, fmt.Errorf("delta %d: expands past %d bytes, more than a checkpoint holds", r.seq, limit)
	}
	var d deltaBody
	if err := json.Unmarshal(js, &d); err != nil {
		return nil, fmt.Errorf("delta %d: %w", r.seq, err)
	}
	return &d, nil
}

// readDeltaFile reads the delta file at path for a base of generation gen.
func readDeltaFile(path string, gen uint64) ([]deltaRecord, *DeltaDamage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open delta file: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("delta file %s is not a regular file", path)
	}
	if info.Size() > maxPayload {
		return nil, nil, fmt.Errorf("delta file of %d bytes is over the %d-byte limit", info.Size(), maxPayload)
	}
	b := make([]byte, info.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, nil, fmt.Errorf("read delta file: %w", err)
	}
	return readDeltaRecords(b, gen)
}

// deltaMeta is the meta of a base of generation gen with the records read from path
// applied: what the run's last checkpoint said.
func deltaMeta(path string, m Meta) (Meta, *DeltaDamage, error) {
	recs, damage, err := readDeltaFile(path, m.DeltaGen)
	if err != nil {
		return m, nil, err
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return m, nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return m, nil, err
	}
	for _, rec := range recs {
		d, err := rec.body()
		if err != nil {
			return m, nil, err
		}
		patchMeta(fields, d.Meta)
	}
	out, err := metaOf(fields)
	if err != nil {
		return m, nil, err
	}
	out.DeltaGen = m.DeltaGen
	return out, damage, nil
}

func patchMeta(fields, patch map[string]json.RawMessage) {
	for k, v := range patch {
		if string(v) == "null" {
			delete(fields, k)
		} else {
			fields[k] = v
		}
	}
}

func metaOf(fields map[string]json.RawMessage) (Meta, error) {
	raw, err := json.Marshal(fields)
	if err != nil {
		return Meta{}, err
	}
	var m Meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return Meta{}, fmt.Errorf("delta meta: %w", err)
	}
	return m, nil
}

// applyDeltas reads the delta file beside the run at path and applies its records to r,
// a base read with the parts want.
func applyDeltas(path string, r *Run, want Parts) error {
	recs, damage, err := readDeltaFile(deltaPathOf(path), r.Meta.DeltaGen)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // no checkpoint since the base
		}
		return err
	}
	r.DeltaDamage = damage
	if len(recs) == 0 {
		return nil
	}
	a := newApplier(r, want)
	for _, rec := range recs {
		d, err := rec.body()
		if err != nil {
			return err
		}
		if err := a.apply(d); err != nil {
			return fmt.Errorf("delta %d: %w", rec.seq, err)
		}
	}
	return a.finish()
}

type applier struct {
	r      *Run
	want   Parts
	fields map[string]json.RawMessage
	prof   *profApplier
	parts  [3]*profApplier // the off-CPU parts read (want has OffCPUPart), nil where the run has none
	offCPU bool            // the off-CPU parts were read
	traces bool            // the tracepoints' samples were read
	ivs    bool            // and the intervals (with the samples or the code: decodeCompressed)
	keys   bool            // the base's key entries were read
	chunks bool
	code   bool
}

func newApplier(r *Run, want Parts) *applier {
	a := &applier{r: r, want: want, prof: newProfApplier(&r.Profile)}
	raw, _ := json.Marshal(r.Meta)
	json.Unmarshal(raw, &a.fields)
	a.keys = want&(Samples|CodeParts) != 0
	a.chunks = a.keys
	a.code = want&CodeParts != 0
	a.offCPU = want&OffCPUPart != 0
	a.ivs = a.offCPU && want&(Samples|CodeParts) != 0
	a.traces = want&TracesPart != 0
	if a.offCPU {
		for i, p := range partsOf(r) {
			if p != nil {
				a.parts[i] = newProfApplier(p)
			}
		}
	}
	return a
}

// profApplier applies the records' deltas of one profile.
type profApplier struct {
	p       *agg.Profile
	entries map[entryID]int
}

func newProfApplier(p *agg.Profile) *profApplier {
	a := &profApplier{p: p, entries: make(map[entryID]int, len(p.Entries))}
	for i := range p.Entries {
		a.entries[idOf(&p.Entries[i])] = i
	}
	return a
}

func (a *profApplier) apply(d *profDelta) error {
	p := a.p
	if d.Frames != len(p.Frames) || d.Mappings != len(p.Mappings) || d.Locations != len(p.Locations) || d.Stacks != len(p.Stacks) {
		return fmt.Errorf("it follows a run of %d frames, %d mappings, %d locations and %d stacks, not %d, %d, %d and %d",
			d.Frames, d.Mappings, d.Locations, d.Stacks, len(p.Frames), len(p.Mappings), len(p.Locations), len(p.Stacks))
	}
	for _, f := range d.FrameFix {
		if int(f.I) >= len(p.Frames) {
			return fmt.Errorf("frame %d of %d", f.I, len(p.Frames))
		}
		p.Frames[f.I].File, p.Frames[f.I].Line = f.File, f.Line
	}
	p.Frames = append(p.Frames, d.NewFrames...)
	p.Mappings = append(p.Mappings, d.NewMappings...)
	p.Locations = append(p.Locations, d.NewLocations...)
	p.Stacks = append(p.Stacks, d.NewStacks...)
	if len(d.NewStacks) > 0 {
		p.FrameStacks = nil
	}
	if len(d.Threads) > 0 || len(d.GoneThreads) > 0 {
		byTid := make(map[uint32]agg.ThreadInfo, len(p.Threads)+len(d.Threads))
		for _, t := range p.Threads {
			byTid[t.Tid] = t
		}
		for _, tid := range d.GoneThreads {
			delete(byTid, tid)
		}
		for _, t := range d.Threads {
			byTid[t.Tid] = t
		}
		p.Threads = p.Threads[:0]
		for _, t := range byTid {
			p.Threads = append(p.Threads, t)
		}
		slices.SortFunc(p.Threads, func(x, y agg.ThreadInfo) int { return int64cmp(int64(x.Tid), int64(y.Tid)) })
	}
	for _, e := range d.Entries {
		id := idOf(&e)
		if i, ok := a.entries[id]; ok {
			p.Entries[i] = e
			continue
		}
		a.entries[id] = len(p.Entries)
		p.Entries = append(p.Entries, e)
	}
	return nil
}

// finish puts the entries back in order (most first) and says where each moved.
func (a *profApplier) finish() []int32 {
	p := a.p
	order := make([]int, len(p.Entries))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		ci, cj := p.Entries[i].Count, p.Entries[j].Count
		switch {
		case ci > cj:
			return -1
		case ci < cj:
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
	p.Entries = sorted
	return moved
}

func (a *applier) apply(d *deltaBody) error {
	p := &a.r.Profile
	patchMeta(a.fields, d.Meta)
	if err := a.prof.apply(&d.profDelta); err != nil {
		return err
	}
	if a.keys {
		if d.Keys < 0 || d.Keys > maxExpanded/4 {
			return fmt.Errorf("%d keys", d.Keys)
		}
		for len(p.KeyEntry) < d.Keys {
			p.KeyEntry = append(p.KeyEntry, -1)
		}
		for _, k := range d.KeyRefs {
			i, ok := a.prof.entries[k.E]
			if k.K < 0 || int(k.K) >= len(p.KeyEntry) || !ok {
				return fmt.Errorf("key %d names an entry the run does not have", k.K)
			}
			p.KeyEntry[k.K] = int32(i)
		}
	}
	if a.chunks {
		if err := a.applyChunks(d); err != nil {
			return err
		}
	}
	if d.JITSet {
		a.r.JIT = d.JIT
	}
	if a.code {
		if d.Code != len(a.r.Code) {
			return fmt.Errorf("it follows a run of %d pieces of code, not %d", d.Code, len(a.r.Code))
		}
		for _, c := range d.CodeFix {
			if c.I < 0 || c.I >= len(a.r.Code) {
				return fmt.Errorf("code %d of %d", c.I, len(a.r.Code))
			}
			a.r.Code[c.I] = c.Code
		}
		a.r.Code = append(a.r.Code, d.NewCode...)
	}
	if a.traces {
		if err := a.applyTraces(d); err != nil {
			return err
		}
	}
	if a.offCPU {
		return a.applyOffCPU(d)
	}
	return nil
}

// applyTraces adds the record's samples of each tracepoint to its ring, which keeps its
// last Cap.
func (a *applier) applyTraces(d *deltaBody) error {
	ts := a.r.Traces
	if len(d.Traces) != len(ts) {
		return fmt.Errorf("its %d tracepoints' samples do not follow the run's %d", len(d.Traces), len(ts))
	}
	for i, td := range d.Traces {
		t := &ts[i]
		held := t.Dropped + uint64(len(t.Samples))
		if td.Event != t.Event || td.Held != held || td.N < 0 || td.N > maxTraceCap || td.N > len(td.Data)/minTraceSampleB ||
			td.Total < td.Held || td.Total-td.Held < uint64(td.N) {
			return fmt.Errorf("tracepoint %d: %d samples after %d where the run has %d", td.Event, td.N, td.Held, held)
		}
		r := traceReader{b: td.Data}
		added := r.samples(make([]agg.TraceSample, td.N))
		if r.err || len(r.b) != 0 {
			return fmt.Errorf("tracepoint %d: its samples do not fit their bytes", td.Event)
		}
		all := append(t.Samples, added...)
		if len(all) > t.Cap {
			all = append([]agg.TraceSample(nil), all[len(all)-t.Cap:]...)
		}
		if td.Total < uint64(len(all)) {
			return fmt.Errorf("tracepoint %d: %d samples in all, %d kept", td.Event, td.Total, len(all))
		}
		t.Samples, t.Dropped = all, td.Total-uint64(len(all))
	}
	return nil
}

// applyOffCPU applies the record's deltas of the off-CPU parts: one for each part the run
// has, none for a part it has not.
func (a *applier) applyOffCPU(d *deltaBody) error {
	for i, pd := range d.parts() {
		switch {
		case *pd == nil && a.parts[i] == nil:
		case *pd == nil || a.parts[i] == nil:
			return fmt.Errorf("its %s part does not follow the run's", partNames[i])
		default:
			if err := a.parts[i].apply(*pd); err != nil {
				return fmt.Errorf("%s: %w", partNames[i], err)
			}
		}
	}
	if iv := d.Intervals; iv != nil && a.ivs {
		ivs := a.r.OffCPUIntervals
		// Each interval is at least 5 bytes of Data (5 varints).
		if iv.Held != len(ivs) || iv.Kept < 0 || iv.Kept > iv.Held || iv.N < 0 || iv.N > maxIntervals-iv.Kept || iv.N > len(iv.Data)/5 {
			return fmt.Errorf("off-CPU intervals: %d kept of %d and %d added, where the run has %d", iv.Kept, iv.Held, iv.N, len(ivs))
		}
		var start uint64
		if iv.Kept > 0 {
			start = ivs[iv.Kept-1].Start
		}
		ivs = slices.Grow(ivs[:iv.Kept], iv.N)[:iv.Kept+iv.N]
		rest, err := readIntervalBody(iv.Data, ivs[iv.Kept:], start)
		if err != nil {
			return err
		}
		if len(rest) != 0 {
			return errors.New("off-CPU intervals: bytes after the last interval")
		}
		a.r.OffCPUIntervals = ivs
	}
	return nil
}

func (a *applier) applyChunks(d *deltaBody) error {
	s := &a.r.Profile.Series
	if d.ChunksDropped < 0 || d.ChunksDropped > len(s.Chunks) {
		return fmt.Errorf("%d chunks dropped of %d", d.ChunksDropped, len(s.Chunks))
	}
	s.Chunks = s.Chunks[d.ChunksDropped:]
	if d.Chunks < 0 || d.Chunks > len(s.Chunks) {
		return fmt.Errorf("chunks from %d of %d", d.Chunks, len(s.Chunks))
	}
	old := s.Chunks[d.Chunks:]
	kept := s.Chunks[:d.Chunks:d.Chunks]
	for j, c := range d.NewChunks {
		nc := agg.SeriesChunk{Base: c.Base, Min: c.Min, Max: c.Max, N: c.N, Ref: c.Ref}
		switch {
		case c.Ref != 0:
		case c.Off > 0:
			if j >= len(old) || old[j].Data == nil || c.Off > len(old[j].Data) || old[j].Base != c.Base {
				return fmt.Errorf("chunk %d continues data the run does not have", d.Chunks+j)
			}
			nc.Data = append(append(make([]byte, 0, c.Off+len(c.Data)), old[j].Data[:c.Off]...), c.Data...)
		default:
			nc.Data = c.Data
			if nc.Data == nil && c.N > 0 {
				nc.Data = []byte{}
			}
		}
		if len(nc.Data) > maxChunkLength {
			return fmt.Errorf("chunk of %d bytes", len(nc.Data))
		}
		kept = append(kept, nc)
	}
	s.Chunks = kept
	return nil
}

// finish puts the entries back in order (most samples first), with the keys following
// them, checks the off-CPU parts as a part read from a file is checked, and takes the
// meta of the last record.
func (a *applier) finish() error {
	p := &a.r.Profile
	moved := a.prof.finish()
	for k, e := range p.KeyEntry {
		if e >= 0 && int(e) < len(moved) {
			p.KeyEntry[k] = moved[e]
		}
	}
	for i, pa := range a.parts {
		if pa == nil {
			continue
		}
		pa.finish()
		if err := validate(&Run{Meta: Meta{Event: partNames[i]}, Profile: *pa.p}); err != nil {
			return fmt.Errorf("%s: %w", partNames[i], err)
		}
		if len(pa.p.FrameStacks) != len(pa.p.Stacks) {
			pa.p.ExpandStacks()
		}
	}
	gen, ending := a.r.Meta.DeltaGen, a.r.Meta.Ending
	m, err := metaOf(a.fields)
	if err != nil {
		return err
	}
	m.DeltaGen, m.Ending = gen, ending
	m.Summary, m.JITSources = nil, nil
	a.r.Meta = m
	return nil
}

func int64cmp(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// DeltaWriter writes the run store's own copy of a recording at its checkpoints: whole
// (a base) at the first, then as records of what changed in the run's delta file, and
// whole again when those add up to more than twice the base (or for the final save).
type DeltaWriter struct {
	path string
	f    *os.File
	off  int64
	err  error // the delta file could not be made: every save is whole
	gen  uint64
	seq  uint64
	base int64 // bytes of the base
	// since the base: bytes of records
	since int64
	st    *deltaState

	// Written counts every byte written: bases and records; Bases and Deltas count them.
	Written        int64
	Bases, Deltas  int
	BaseBytes      int64 // the latest base's size
	DeltaFileBytes int64 // the delta file's size now
}

// NewDeltaWriter returns a writer of the run file at path (its delta file beside it).
func NewDeltaWriter(path string) *DeltaWriter { return &DeltaWriter{path: path} }

// deltaable says whether r's parts all have a delta form: all but the spans.
func deltaable(r *Run) bool { return r.Spans.Len() == 0 && r.SpansErr == nil }

// hasOffCPU says whether r has parts that only a delta file of version 2 carries.
func hasOffCPU(r *Run) bool {
	return r.OffCPU != nil || r.WakersNs != nil || r.WakersN != nil || len(r.OffCPUIntervals) > 0
}

// Save writes r: a record of what changed since the last save where it can, else the run
// whole (a new base). final writes it whole, with no delta file left. A save that fails
// leaves the store as the last save that succeeded left it.
func (w *DeltaWriter) Save(r *Run, final bool) error {
	if !final && w.st != nil && w.err == nil && deltaable(r) && w.since < max(2*w.base, minDeltaBase) {
		d, ok := w.st.diff(r)
		if ok {
			return w.append(r, d)
		}
	}
	return w.saveBase(r, final)
}

func (w *DeltaWriter) saveBase(r *Run, final bool) error {
	gen := uint64(0)
	if !final {
		gen = w.gen + 1
		if w.gen == 0 {
			gen = uint64(time.Now().UnixNano())
		}
	}
	prev := r.Meta.DeltaGen
	r.Meta.DeltaGen = gen
	err := SaveStored(w.path, r)
	r.Meta.DeltaGen = prev
	if err != nil {
		return err
	}
	if info, err := os.Stat(w.path); err == nil {
		w.base = info.Size()
		w.Written += w.base
		w.BaseBytes = w.base
	}
	w.Bases++
	w.gen, w.seq, w.since = gen, 0, 0
	if final {
		w.st = nil
		if w.f != nil {
			w.f.Close()
			w.f = nil
		}
		os.Remove(deltaPathOf(w.path))
		w.DeltaFileBytes = 0
		return nil
	}
	w.st = nil
	if !deltaable(r) {
		return nil
	}
	version := uint32(deltaVersionPlain)
	switch {
	case len(r.Traces) > 0:
		version = deltaVersionTraces
	case hasOffCPU(r):
		version = deltaVersionOffCPU
	}
	if err := w.startFile(version); err != nil {
		w.err = err
		return nil // the base is whole; later saves are whole too
	}
	w.st = stateOf(r)
	w.st.offCPU = version >= deltaVersionOffCPU
	w.st.tracesOK = version >= deltaVersionTraces
	return nil
}

// startFile makes the delta file empty (its header alone, of version).
func (w *DeltaWriter) startFile(version uint32) error {
	if w.f == nil {
		p := deltaPathOf(w.path)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return fmt.Errorf("create delta file: %w", err)
		}
		w.f = f
	}
	var hdr [deltaHeaderSize]byte
	copy(hdr[:], deltaMagic)
	binary.LittleEndian.PutUint32(hdr[8:], version)
	if _, err := w.f.WriteAt(hdr[:], 0); err != nil {
		return fmt.Errorf("write delta file: %w", err)
	}
	if err := w.f.Truncate(deltaHeaderSize); err != nil {
		return fmt.Errorf("write delta file: %w", err)
	}
	w.off = deltaHeaderSize
	w.Written += deltaHeaderSize
	w.DeltaFileBytes = deltaHeaderSize
	return nil
}

func (w *DeltaWriter) append(r *Run, d *deltaBody) error {
	var z bytes.Buffer
	z.Write(make([]byte, deltaRecHeader+16))
	zw := gzipWriters.get()
	zw.Reset(&z)
	err := json.NewEncoder(zw).Encode(d)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	gzipWriters.put(zw)
	if err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	rec := z.Bytes()
	if len(rec)-deltaRecHeader > maxDeltaRecord {
		return w.saveBase(r, false)
	}
	binary.LittleEndian.PutUint32(rec[0:], uint32(len(rec)-deltaRecHeader))
	binary.LittleEndian.PutUint64(rec[8:], w.gen)
	binary.LittleEndian.PutUint64(rec[16:], w.seq+1)
	binary.LittleEndian.PutUint32(rec[4:], crc32.Checksum(rec[deltaRecHeader:], castagnoli))
	// At the end of what was written whole: a record a full disk cut short is written
	// over by the next try.
	if _, err := w.f.WriteAt(rec, w.off); err != nil {
		return fmt.Errorf("save run: write delta to %s: %w", w.f.Name(), err)
	}
	w.off += int64(len(rec))
	w.since += int64(len(rec))
	w.Written += int64(len(rec))
	w.DeltaFileBytes = w.off
	w.seq++
	w.Deltas++
	w.st.commit(r, d)
	return nil
}

// Close closes the delta file (it stays, for a crashed run's readers).
func (w *DeltaWriter) Close() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
}

// deltaState is what the store holds of the run (base and records), to tell what changed.
type deltaState struct {
	meta   map[string]string
	prof   *profState
	keys   int
	named  []bool
	chunks []chunkSig
	jit    uint64
	code   []codeSig
	// offCPU says the delta file carries the off-CPU parts (version 2); parts are the
	// states of those the run has (nil: none), ivs the intervals'.
	offCPU bool
	parts  [3]*profState
	ivs    ivState
	// tracesOK says the delta file carries the tracepoints' samples (version 3); traces
	// are the states of the run's rings.
	tracesOK bool
	traces   []traceState
}

// traceState is what the store holds of one tracepoint's ring of samples.
type traceState struct {
	event  uint32
	cap    int
	format uint64 // the format's hash
	total  uint64 // the samples the ring had taken in all (kept and let go)
}

func traceStatesOf(ts []TraceEvent) []traceState {
	out := make([]traceState, len(ts))
	for i, t := range ts {
		out[i] = traceState{event: t.Event, cap: t.Cap, format: bytesHash(t.Format), total: t.Dropped + uint64(len(t.Samples))}
	}
	return out
}

func bytesHash(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// diffTraces is what the rings ts took since the states; false where they do not follow
// them (a ring came, went, or changed its event, cap or format).
func diffTraces(states []traceState, ts []TraceEvent) ([]traceDelta, bool) {
	if len(ts) != len(states) {
		return nil, false
	}
	var out []traceDelta
	for i, t := range ts {
		st := states[i]
		total := t.Dropped + uint64(len(t.Samples))
		if t.Event != st.event || t.Cap != st.cap || total < st.total || bytesHash(t.Format) != st.format {
			return nil, false
		}
		n := int(min(total-st.total, uint64(len(t.Samples))))
		added := t.Samples[len(t.Samples)-n:]
		out = append(out, traceDelta{Event: t.Event, Held: st.total, Total: total, N: n, Data: appendTraceSamples(nil, added)})
	}
	return out, true
}

// profState is what the store holds of one profile.
type profState struct {
	frameFiles []string
	frameLines []int
	mappings   int
	locations  int
	stacks     int
	fp         [3]uint64 // the last frame's, location's and stack's fingerprints
	threads    map[uint32]string
	entries    map[entryID]agg.Entry
}

// ivState is what the store holds of the intervals off CPU: how many, and a sum of each
// whole block of ivDeltaBlock of them, to tell from which block on they changed (the
// latest intervals' stacks are named a checkpoint late; the waits still open end later).
type ivState struct {
	n    int
	sums []uint64
}

// ivDeltaBlock is how many intervals a block sum covers: a record writes the intervals
// from the first block that changed.
const ivDeltaBlock = 256

// ivBlockSums are the sums of each whole block of ivs.
func ivBlockSums(ivs []agg.Interval) []uint64 {
	sums := make([]uint64, 0, len(ivs)/ivDeltaBlock)
	for i := 0; i+ivDeltaBlock <= len(ivs); i += ivDeltaBlock {
		h := uint64(14695981039346656037)
		for _, iv := range ivs[i : i+ivDeltaBlock] {
			for _, v := range [...]uint64{uint64(iv.Tid)<<32 | uint64(iv.Stack), iv.Start, iv.End, uint64(iv.Waker)} {
				h = (h ^ v) * 1099511628211
				h ^= h >> 29
			}
		}
		sums = append(sums, h)
	}
	return sums
}

type chunkSig struct {
	base, min, max uint64
	n              uint32
	ref            int64
	data           int
}

type codeSig struct {
	frame                         uint32
	pid                           int
	start, size, load, time       uint64
	bytes, lines, gaps, syms, src int
	origin, warning, err          string
}

func sigOfCode(c *Code) codeSig {
	return codeSig{c.Frame, c.Pid, c.Start, c.Size, c.LoadTime, c.Time, len(c.Bytes), len(c.Lines), len(c.Gaps), len(c.Symbols), len(c.Source), c.Origin, c.Warning, c.Error}
}

func sigOfChunk(c *agg.SeriesChunk) chunkSig {
	return chunkSig{c.Base, c.Min, c.Max, c.N, c.Ref, len(c.Data)}
}

func metaFields(m Meta) map[string]string {
	m.DeltaGen, m.Ending = 0, nil
	raw, _ := json.Marshal(m)
	var f map[string]json.RawMessage
	json.Unmarshal(raw, &f)
	out := make(map[string]string, len(f))
	for k, v := range f {
		out[k] = string(v)
	}
	return out
}

// fullMeta is the meta a save writes: with the summary and the JIT sources.
func fullMeta(r *Run) Meta {
	m := r.Meta
	sum := agg.Summarize(&r.Profile)
	m.Summary, m.JITSources = &sum, r.JIT
	if r.Meta.Summary != nil {
		m.Summary = r.Meta.Summary
	}
	return m
}

func fingerprints(p *agg.Profile) [3]uint64 {
	var fp [3]uint64
	h := fnv.New64a()
	if n := len(p.Frames); n > 0 {
		f := &p.Frames[n-1]
		h.Write([]byte(f.Func + "\x00" + f.Image + "\x00" + f.Kind))
		fp[0] = h.Sum64()
	}
	if n := len(p.Locations); n > 0 {
		l := &p.Locations[n-1]
		fp[1] = l.Addr*31 + uint64(l.Mapping)*7 + uint64(len(l.Lines))
		for _, ln := range l.Lines {
			fp[1] = fp[1]*131 + uint64(ln.Func)<<20 + uint64(uint32(ln.Line))
		}
	}
	if n := len(p.Stacks); n > 0 {
		for _, id := range p.Stacks[n-1] {
			fp[2] = fp[2]*131 + uint64(id) + 1
		}
	}
	return fp
}

func jitHash(j []JITSource) uint64 {
	raw, _ := json.Marshal(j)
	h := fnv.New64a()
	h.Write(raw)
	return h.Sum64()
}

func stateOf(r *Run) *deltaState {
	p := &r.Profile
	s := &deltaState{meta: metaFields(fullMeta(r)), prof: profStateOf(p), keys: len(p.KeyEntry), jit: jitHash(r.JIT),
		ivs: ivState{n: len(r.OffCPUIntervals), sums: ivBlockSums(r.OffCPUIntervals)}, traces: traceStatesOf(r.Traces)}
	s.named = make([]bool, len(p.KeyEntry))
	for k, e := range p.KeyEntry {
		s.named[k] = e >= 0
	}
	for i := range p.Series.Chunks {
		s.chunks = append(s.chunks, sigOfChunk(&p.Series.Chunks[i]))
	}
	for i := range r.Code {
		s.code = append(s.code, sigOfCode(&r.Code[i]))
	}
	for i, pp := range partsOf(r) {
		if pp != nil {
			s.parts[i] = profStateOf(pp)
		}
	}
	return s
}

func profStateOf(p *agg.Profile) *profState {
	s := &profState{mappings: len(p.Mappings), locations: len(p.Locations), stacks: len(p.Stacks),
		fp: fingerprints(p), threads: make(map[uint32]string, len(p.Threads)), entries: make(map[entryID]agg.Entry, len(p.Entries))}
	s.frameFiles = make([]string, len(p.Frames))
	s.frameLines = make([]int, len(p.Frames))
	for i := range p.Frames {
		s.frameFiles[i], s.frameLines[i] = p.Frames[i].File, p.Frames[i].Line
	}
	for _, t := range p.Threads {
		s.threads[t.Tid] = fmt.Sprint(t.Pid, "/", t.Name)
	}
	for _, e := range p.Entries {
		e.Counters = slices.Clone(e.Counters)
		s.entries[idOf(&e)] = e
	}
	return s
}

// diff is what changed in r since the state; false when r does not follow it (a table
// shrank or was renumbered, a part came or went): the run is then written whole.
func (s *deltaState) diff(r *Run) (*deltaBody, bool) {
	p := &r.Profile
	if len(p.KeyEntry) < s.keys || len(r.Code) < len(s.code) {
		return nil, false
	}
	if !s.offCPU && hasOffCPU(r) || !s.tracesOK && len(r.Traces) > 0 {
		return nil, false // an older version of delta file does not carry them
	}
	d := &deltaBody{Keys: len(p.KeyEntry), Code: len(s.code)}
	pd, ok := s.prof.diff(p)
	if !ok {
		return nil, false
	}
	d.profDelta = *pd
	for i, pp := range partsOf(r) {
		if (pp == nil) != (s.parts[i] == nil) {
			return nil, false
		}
		if pp != nil {
			if *d.parts()[i], ok = s.parts[i].diff(pp); !ok {
				return nil, false
			}
		}
	}
	d.Intervals, d.ivSums = s.ivs.diff(r.OffCPUIntervals)
	if s.tracesOK {
		if d.Traces, ok = diffTraces(s.traces, r.Traces); !ok {
			return nil, false
		}
	}
	// The meta's fields that changed.
	now := metaFields(fullMeta(r))
	for k, v := range now {
		if s.meta[k] != v {
			if d.Meta == nil {
				d.Meta = map[string]json.RawMessage{}
			}
			d.Meta[k] = json.RawMessage(v)
		}
	}
	for k := range s.meta {
		if _, ok := now[k]; !ok {
			if d.Meta == nil {
				d.Meta = map[string]json.RawMessage{}
			}
			d.Meta[k] = json.RawMessage("null")
		}
	}
	for k, e := range p.KeyEntry {
		if e >= 0 && (k >= len(s.named) || !s.named[k]) && int(e) < len(p.Entries) {
			d.KeyRefs = append(d.KeyRefs, keyRef{int32(k), idOf(&p.Entries[e])})
		}
	}
	// The series: the chunks that left the front (a rolling window: chunks of the
	// samples file before the first one now), then the chunks from the first that changed.
	ch := p.Series.Chunks
	drop := 0
	for drop < len(s.chunks) && s.chunks[drop].ref != 0 && (len(ch) == 0 || ch[0].Ref == 0 || s.chunks[drop].ref < ch[0].Ref) {
		drop++
	}
	d.ChunksDropped = drop
	was := s.chunks[drop:]
	first := 0
	for first < len(ch) && first < len(was) && sigOfChunk(&ch[first]) == was[first] {
		first++
	}
	d.Chunks = first
	for j := first; j < len(ch); j++ {
		c := &ch[j]
		dc := deltaChunk{Base: c.Base, Min: c.Min, Max: c.Max, N: c.N}
		switch {
		case c.Ref != 0:
			dc.Ref = c.Ref
		case j < len(was) && was[j].ref == 0 && was[j].base == c.Base && was[j].data > 0 && was[j].data <= len(c.Data):
			dc.Off, dc.Data = was[j].data, c.Data[was[j].data:]
		default:
			if c.Data == nil && c.N > 0 {
				return nil, false // samples neither in memory nor in the samples file
			}
			dc.Data = c.Data
		}
		d.NewChunks = append(d.NewChunks, dc)
	}
	if h := jitHash(r.JIT); h != s.jit {
		d.JIT, d.JITSet = r.JIT, true
	}
	for i := range s.code {
		if sigOfCode(&r.Code[i]) != s.code[i] {
			d.CodeFix = append(d.CodeFix, codeFix{i, r.Code[i]})
		}
	}
	d.NewCode = r.Code[len(s.code):]
	return d, true
}

// diff is what changed in p since the state; false when p does not follow it.
func (s *profState) diff(p *agg.Profile) (*profDelta, bool) {
	if len(p.Frames) < len(s.frameFiles) || len(p.Mappings) < s.mappings || len(p.Locations) < s.locations || len(p.Stacks) < s.stacks {
		return nil, false
	}
	old := agg.Profile{Frames: p.Frames[:len(s.frameFiles)], Locations: p.Locations[:s.locations], Stacks: p.Stacks[:s.stacks]}
	if fingerprints(&old) != s.fp {
		return nil, false
	}
	d := &profDelta{Frames: len(s.frameFiles), Mappings: s.mappings, Locations: s.locations, Stacks: s.stacks}
	for i := range s.frameFiles {
		if f := &p.Frames[i]; f.File != s.frameFiles[i] || f.Line != s.frameLines[i] {
			d.FrameFix = append(d.FrameFix, frameFix{uint32(i), f.File, f.Line})
		}
	}
	d.NewFrames = p.Frames[len(s.frameFiles):]
	d.NewMappings = p.Mappings[s.mappings:]
	d.NewLocations = p.Locations[s.locations:]
	d.NewStacks = p.Stacks[s.stacks:]
	seen := 0
	for _, t := range p.Threads {
		v, ok := s.threads[t.Tid]
		if ok {
			seen++
		}
		if !ok || v != fmt.Sprint(t.Pid, "/", t.Name) {
			d.Threads = append(d.Threads, t)
		}
	}
	if seen < len(s.threads) {
		live := make(map[uint32]bool, len(p.Threads))
		for _, t := range p.Threads {
			live[t.Tid] = true
		}
		for tid := range s.threads {
			if !live[tid] {
				d.GoneThreads = append(d.GoneThreads, tid)
			}
		}
		slices.Sort(d.GoneThreads)
	}
	for i := range p.Entries {
		e := &p.Entries[i]
		if o, ok := s.entries[idOf(e)]; !ok || !sameEntry(&o, e) {
			d.Entries = append(d.Entries, *e)
		}
	}
	return d, true
}

// diff is what changed in the intervals ivs since the state (nil: nothing), and the block
// sums of ivs.
func (s *ivState) diff(ivs []agg.Interval) (*ivDelta, []uint64) {
	sums := ivBlockSums(ivs)
	k := 0
	for k < len(s.sums) && k < len(sums) && s.sums[k] == sums[k] {
		k++
	}
	kept := k * ivDeltaBlock
	if kept == s.n && len(ivs) == s.n {
		return nil, sums
	}
	var prev uint64
	if kept > 0 {
		prev = ivs[kept-1].Start
	}
	d := &ivDelta{Held: s.n, Kept: kept, N: len(ivs) - kept}
	d.Data = appendIntervalBody(nil, ivs[kept:], &prev)
	return d, sums
}

// commit makes the state what it is with d written.
func (s *deltaState) commit(r *Run, d *deltaBody) {
	p := &r.Profile
	for k, v := range d.Meta {
		if string(v) == "null" {
			delete(s.meta, k)
		} else {
			s.meta[k] = string(v)
		}
	}
	s.prof.commit(p, &d.profDelta)
	for i, pp := range partsOf(r) {
		if pd := *d.parts()[i]; pd != nil {
			s.parts[i].commit(pp, pd)
		}
	}
	s.ivs = ivState{n: len(r.OffCPUIntervals), sums: d.ivSums}
	for i, td := range d.Traces {
		s.traces[i].total = td.Total
	}
	s.keys = len(p.KeyEntry)
	for len(s.named) < s.keys {
		s.named = append(s.named, false)
	}
	for _, k := range d.KeyRefs {
		s.named[k.K] = true
	}
	s.chunks = append(s.chunks[:0], s.chunks[d.ChunksDropped:d.ChunksDropped+d.Chunks]...)
	for i := d.Chunks; i < len(p.Series.Chunks); i++ {
		s.chunks = append(s.chunks, sigOfChunk(&p.Series.Chunks[i]))
	}
	if d.JITSet {
		s.jit = jitHash(r.JIT)
	}
	for _, c := range d.CodeFix {
		s.code[c.I] = sigOfCode(&r.Code[c.I])
	}
	for i := len(s.code); i < len(r.Code); i++ {
		s.code = append(s.code, sigOfCode(&r.Code[i]))
	}
}

// commit makes the state what it is with d, a delta of p, written.
func (s *profState) commit(p *agg.Profile, d *profDelta) {
	for _, f := range d.FrameFix {
		s.frameFiles[f.I], s.frameLines[f.I] = f.File, f.Line
	}
	for _, f := range d.NewFrames {
		s.frameFiles = append(s.frameFiles, f.File)
		s.frameLines = append(s.frameLines, f.Line)
	}
	s.mappings, s.locations, s.stacks = len(p.Mappings), len(p.Locations), len(p.Stacks)
	s.fp = fingerprints(p)
	for _, tid := range d.GoneThreads {
		delete(s.threads, tid)
	}
	for _, t := range d.Threads {
		s.threads[t.Tid] = fmt.Sprint(t.Pid, "/", t.Name)
	}
	for _, e := range d.Entries {
		e.Counters = slices.Clone(e.Counters)
		s.entries[idOf(&e)] = e
	}
}
