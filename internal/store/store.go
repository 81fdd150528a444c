// Package store saves runs to disk and reads them back: the saved-run format (versioned and
// checksummed) and the per-user run directory.
//
// A saved run is a 24-byte header (magic "STAXRUN\x00", format version u32, CRC-32C of the
// payload u32, payload length u64, little-endian) followed by the payload: the meta section
// (u32 length, JSON: the run's meta, a summary of what status shows, and under "layout" the
// sizes of what follows), then one gzip stream of, in order (format 4):
//
//   - the JSON body: frames (the functions), mappings, threads, JIT sources;
//   - the counts (counts.go), binary: the locations (an address, a mapping, and the source
//     lines there: a frame and a line each, innermost inlined function first), the stacks
//     (location ids, leaf first) and the entries;
//   - the spans (spans.go), binary, when the run has any (its layout says); in the run
//     store's own copy, the records of the spans already in the run's spans file
//     (spanlog.go) are left there, and the layout says how many, in how many bytes;
//   - the series (series.go): key entries and sample chunks, binary; in the run store's own
//     copy, chunks already in the run's samples file (samples.go) are listed by reference;
//   - the code: a JSON array.
//
// Where the run recorded off-CPU time, the body's "off_cpu" holds it (offcpu.go): a
// complete run file of its own whose profile is the off-CPU time, in base64; readers that
// do not ask for it skip it, as readers older than it do.
//
// A reader stops where the parts it needs end: status reads the meta section alone, top and
// flame the body and counts, windows and timelines the series too, annotate everything.
// Readers decode the gzip stream as a stream, bounded by the declared layout, by the
// payload's size and by the compressed bytes read so far (decode.go), and check every
// index, so a damaged or hostile file gives an error after little work, never a crash;
// versions 1 (JSON only), 2 (no binary series) and 3 (stacks, entries, key entries and code
// in the JSON body), with or without a layout, are still read, as are format 4 files
// written before locations. The stacks of those are frame ids: a reader turns them into
// locations, one per machine frame, with address 0 and each frame's own line.
package store

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/spans"
)

// FormatVersion is the saved-run format version written by this stax. Version 4 moves the
// key entries into the series section, lets the run store's copy list series chunks kept
// in its samples file, puts the code last (so a view that needs neither samples nor code
// reads the body alone), keeps a summary of the run in its meta (so status reads the meta
// alone), and keeps each stack's locations: its addresses, mappings and source lines. Version 3 keeps the sample series as a binary section after the JSON body;
// 2 added the meta section. The layout in the meta section came later within version 3:
// readers of version 3 that predate it ignore it, and files without it are read with the
// payload's bounds alone.
//
// The spans file (spanlog.go) came later within version 4, without a new version: only
// the run store's own copy of a run uses it, never a file stax save writes, and a stax
// that predates it still reads such a copy's meta, profile and counts (status, list, top,
// flame); views of its samples or spans refuse its spans section (more spans declared
// than bytes) rather than show a run without spans. A new version would make that stax
// refuse the whole copy, and stax gc --damaged remove it.
//
// Version 5 gives each entry its event (the run samples several: stax record -e), listed
// in Meta.Events; versions 1 to 4 are read with every sample the event of Meta.Event.
// Version 6 is a run store's copy of a recording that its delta file (delta.go) carries on:
// its meta names the generation of the records that apply to it. A stax that predates
// delta files refuses it rather than show the run as of an older checkpoint. Every other
// file, a finished run's included, is written as version 5. The delta file has a version
// of its own: version 2 carries the off-CPU parts too, and a stax that reads version 1
// alone refuses it (delta.go); the base keeps its version.
//
// Version 7 is a run whose samples carry the counters read with them (stax record
// --counters; series.go): a stax that predates it refuses it rather than misread its
// samples. It may also be carried on by a delta file, as version 6.
const FormatVersion = 7

const (
	magic       = "STAXRUN\x00"
	headerSize  = 24
	maxPayload  = 1 << 30 // compressed
	maxExpanded = 2 << 30 // uncompressed JSON: unique stacks, and about 7 bytes (base64) per sample
)

// Meta describes a run.
type Meta struct {
	ID       string   `json:"id"`
	Command  []string `json:"command,omitempty"`
	Pid      int      `json:"pid"`
	Attached bool     `json:"attached,omitempty"`
	// SystemWide: every process on every CPU was recorded (stax record -a).
	SystemWide bool `json:"system_wide,omitempty"`
	// Terminal is the controlling terminal of stax record (its tty_nr in /proc/PID/stat),
	// 0 for none: a query from the same terminal prefers the runs started there.
	Terminal int `json:"terminal,omitempty"`
	// TargetUID and TargetGIDs are the target's file-system identity: files it names (JIT
	// debug info, source paths) are shown only if it could read them itself.
	TargetUID  *uint32  `json:"target_uid,omitempty"`
	TargetGIDs []uint32 `json:"target_gids,omitempty"`
	Freq       int      `json:"freq"`
	Event      string   `json:"event"`
	// Events are the events sampled (stax record -e; one when not given): an entry's
	// event is an index in it (events.go). Runs before format 5 have none.
	Events []Event `json:"events,omitempty"`
	// Counters are read with each sample of the first event (stax record --counters): an
	// entry's counters are in their order (events.go).
	Counters []Counter `json:"counters,omitempty"`
	// CountersByDefault: the counters are those read where --counters is not given
	// (cycles and instructions, where the machine counts them).
	CountersByDefault bool   `json:"counters_by_default,omitempty"`
	RingPages         int    `json:"ring_pages,omitempty"` // data pages per CPU ring
	CallGraph         string `json:"call_graph,omitempty"` // fp or dwarf
	StackSize         int    `json:"stack_size,omitempty"` // dwarf: bytes of user stack copied per sample (at the end, when fitted)
	// StackFit (dwarf): the copy was fitted to the stacks seen, StackSize bytes at most
	// where it started (see StackFit).
	StackFit  *StackFit         `json:"stack_fit,omitempty"`
	StackEnds map[string]uint64 `json:"stack_ends,omitempty"` // dwarf: how user stacks ended (complete, truncated, no_cfi, ...)
	// JITFrames (dwarf): frames in JIT code without unwinding info that stacks went through,
	// by how they were unwound (frame_pointer, cpython_trampoline).
	JITFrames map[string]uint64 `json:"jit_frames,omitempty"`
	UserOnly  bool              `json:"user_only,omitempty"`
	// CPUWide: the CPU was sampled through one event per CPU, which sees every task;
	// ForeignSamples, those of other processes, were dropped as they were read.
	CPUWide        bool              `json:"cpu_wide,omitempty"`
	ForeignSamples uint64            `json:"foreign_samples,omitempty"`
	Start          time.Time         `json:"start"`
	StartNs        uint64            `json:"start_ns,omitempty"` // Start on CLOCK_MONOTONIC, the clock of sample times
	End            time.Time         `json:"end,omitzero"`
	Finished       bool              `json:"finished"` // false: a checkpoint of a run still recording (or one that crashed)
	ExitCode       *int              `json:"exit_code,omitempty"`
	Notes          []string          `json:"notes,omitempty"`
	Lost           uint64            `json:"lost"`                     // samples the kernel dropped: the reader fell behind
	LostByCPU      map[string]uint64 `json:"lost_by_cpu,omitempty"`    // of those, per CPU
	LostByThread   map[string]uint64 `json:"lost_by_thread,omitempty"` // of those, per thread where known
	BadRecords     uint64            `json:"bad_records,omitempty"`    // records that could not be decoded
	// NoUserFPChain (dwarf): the program was built without frame pointers, so its samples
	// carry no kernel walk of them; the chains stax needs are walked in the stack copies.
	NoUserFPChain bool `json:"no_user_fp_chain,omitempty"`
	// OverloadSamples counts the stacks (samples and off-CPU stacks) taken while the
	// recorder was behind (its rings more than half full): they are their frame-pointer
	// chains, with the frames the chain skips above the sampled function put back, not
	// walked whole with call-frame information (dwarf mode).
	OverloadSamples uint64 `json:"overload_samples,omitempty"`
	// OffCPU counts what was recorded of the time threads spent switched out; nil when it
	// was not recorded.
	OffCPU *OffCPUMeta `json:"off_cpu,omitempty"`
	// JITMemory is what the run's JIT tables keep (names, code, line tables), and
	// JITMemoryLimit the most they may. JITProcesses processes with JIT files share the
	// limit: each may keep JITMemoryShare (past it, its oldest functions are dropped).
	JITMemory      uint64 `json:"jit_memory,omitempty"`
	JITMemoryLimit uint64 `json:"jit_memory_limit,omitempty"`
	JITMemoryShare uint64 `json:"jit_memory_share,omitempty"`
	JITProcesses   int    `json:"jit_processes,omitempty"`
	// FilesRefused counts the files of the recorded programs that stax would not open (a
	// FIFO, device or socket at the path of a debug file, image, JIT or spans file), each
	// path once; FilesAbandoned the opens and reads of their files abandoned at their
	// deadline (a file system that did not answer). The notes name them.
	FilesRefused   uint64 `json:"files_refused,omitempty"`
	FilesAbandoned uint64 `json:"files_abandoned,omitempty"`
	Samples        uint64 `json:"samples"`
	Unresolved     uint64 `json:"unresolved_frames"`
	// Imported is the SHA-256 (hex) of the file stax open imported the run from.
	Imported string `json:"imported,omitempty"`
	// Summary is what status shows of the run's samples, written with it (format 4), so
	// status reads a run's meta alone.
	Summary *agg.Summary `json:"summary,omitempty"`
	// JITSources are the run's JIT sources as status shows them (format 4), beside the
	// copy in the body.
	JITSources []JITSource `json:"jit_sources,omitempty"`
	// SpanSources count the spans each source reported, kept and dropped.
	SpanSources []spans.Source `json:"span_sources,omitempty"`
	// ITTHint says that a recorded process loaded a library that reports ITT tasks while
	// no collector was named for it, so that its tasks are not recorded (the first such).
	ITTHint string `json:"itt_hint,omitempty"`
	// Ending is what the run's end file says (EndPath) of a run of the store that did not
	// finish, read with it: its final save failed. Never written in the run's file.
	Ending *End `json:"-"`
	// SamplesFileSize is the bytes of the run's samples file that hold the chunks its
	// series lists (the run store's own copy; 0: none): a file shorter than that lost some.
	SamplesFileSize int64 `json:"samples_file_size,omitempty"`
	// RecorderNice is the nice level the recorder's threads ran at when it raised their
	// priority above the target's (nil: it could not).
	RecorderNice *int `json:"recorder_nice,omitempty"`
	// DeltaGen, in the run store's copy of a recording, is the generation of the records
	// of its delta file (delta.go) that carry it on from this file; 0: none do.
	DeltaGen uint64 `json:"delta_gen,omitempty"`
	// Window says what a rolling window (record --keep, --keep-bytes) let go of the run.
	Window *Window `json:"window,omitempty"`
}

// JITSource is the state of one JIT symbol source (a jitdump file or perf map).
type JITSource struct {
	Pid       int               `json:"pid"`
	Path      string            `json:"path"`
	Kind      string            `json:"kind"`
	Functions int               `json:"functions"`
	Records   uint64            `json:"records"`
	Skipped   map[string]uint64 `json:"skipped,omitempty"`
	// Evicted counts its functions dropped, oldest first, after they were kept: the
	// process's JIT tables were at their share of the run's JIT memory.
	Evicted uint64 `json:"evicted,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Code says where a sampled piece of machine code is, so annotate works after the process
// is gone: JIT code keeps its bytes; code from an image names the file, its build-id and
// the function's ELF address. There is one per code object: a function the JIT compiled
// several times (or code reused at one address) has one Code per version, all with the
// same Frame.
type Code struct {
	Frame uint32 `json:"frame"` // the function's frame id in the profile
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"` // run-time address of the first byte
	Size  uint64 `json:"size"`
	Arch  int    `json:"arch"` // ELF machine
	// LoadTime is when JIT code was loaded (its JIT's announcement, or when its perf map
	// line was read), on the samples' clock; 0 for image code.
	LoadTime uint64 `json:"load_time,omitempty"`
	// Time is the time of the first sample seen in this code.
	Time  uint64 `json:"time,omitempty"`
	Bytes []byte `json:"bytes,omitempty"`
	// Gaps are ranges of Bytes that were not captured (they hold zeros): code read from
	// memory where no reading was made while that part held the code.
	Gaps []Gap `json:"gaps,omitempty"`
	// Origin says where Bytes came from: "jitdump" (the JIT's own copy), "memory" (read
	// from the live process), "vdso"; empty when they are read from Path.
	Origin string `json:"origin,omitempty"`
	// Warning says why Bytes may not be the code that ran (memory read that looks wrong).
	Warning string `json:"warning,omitempty"`
	Path    string `json:"path,omitempty"` // image file, when the bytes are read from disk
	BuildID string `json:"build_id,omitempty"`
	Vaddr   uint64 `json:"vaddr,omitempty"` // the function's ELF virtual address in Path
	Lines   []Line `json:"lines,omitempty"`
	Error   string `json:"error,omitempty"` // why the bytes cannot be had
	// Kept by stax save, so annotate needs neither the image nor its sources: the names of
	// call targets (by address) and the source lines the code maps to.
	Symbols []Symbol     `json:"symbols,omitempty"`
	Source  []SourceLine `json:"source,omitempty"`
}

// Gap is a range [Start, End) of run-time addresses whose bytes were not captured, and why.
type Gap struct {
	Start uint64 `json:"start"`
	End   uint64 `json:"end"`
	Why   string `json:"why"`
}

// Symbol names an address.
type Symbol struct {
	Addr uint64 `json:"addr"`
	Name string `json:"name"`
}

// SourceLine is one line of a source file.
type SourceLine struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// Line maps an address to a source line (JIT debug info).
type Line struct {
	Addr    uint64   `json:"addr"`
	File    string   `json:"file"`
	Line    int      `json:"line"`
	Inlined []string `json:"inlined,omitempty"` // the functions the line's code is inlined into, innermost first
}

// Run is everything saved about a run.
type Run struct {
	Meta    Meta        `json:"meta"`
	Profile agg.Profile `json:"profile"`
	// OffCPU is the time threads spent switched out, in nanoseconds per stack (see
	// agg.AddWeight); nil when it was not recorded.
	OffCPU *agg.Profile `json:"off_cpu,omitempty"`
	// WakersNs and WakersN are the wakeups that ended waits, per waker thread and stack
	// (its leaf frame names the thread woken, agg.WakeeFunc): the time off CPU they ended,
	// in nanoseconds, and how many; nil when wakers were not recorded.
	// OffCPUIntervals are the intervals off CPU with their times, under OffCPU's stacks.
	OffCPUIntervals []agg.Interval `json:"-"`
	WakersNs        *agg.Profile   `json:"wakers_ns,omitempty"`
	WakersN         *agg.Profile   `json:"wakers_n,omitempty"`
	// Traces are the samples of the run's tracepoints kept with their fields (traces.go),
	// read with TracesPart; nil when none were kept.
	Traces []TraceEvent `json:"-"`
	JIT    []JITSource  `json:"jit,omitempty"`
	Code   []Code       `json:"code,omitempty"`
	// Spans are the spans and markers the program reported (format 4's spans section).
	Spans spans.List `json:"-"`
	// SpansErr says why a run read back has no spans: its spans file could not be read.
	SpansErr error `json:"-"`
	// SamplesDamage says what the run lost to a damaged samples file: its series holds
	// the rest (LoadParts with Samples).
	SamplesDamage *SamplesDamage `json:"-"`
	// DeltaDamage says what was dropped of the run's delta file: a record cut short by a
	// crash or a full disk, and what followed it (nil: nothing).
	DeltaDamage *DeltaDamage `json:"-"`
	// SpanLog is the recording's spans file: SaveStored lists the spans it holds by
	// reference rather than writing them again.
	SpanLog *SpanLog `json:"-"`
	// IntervalCache is a recording's intervals section, compressed by its last save: a
	// save with it compresses only the intervals added since.
	IntervalCache *IntervalCache `json:"-"`
}

// OffCPUMeta counts the context switches of a run that records off-CPU time.
type OffCPUMeta struct {
	Switches  uint64 `json:"switches"`           // switch records read, out and in
	Intervals uint64 `json:"intervals"`          // times off CPU counted (a switch out to the next in)
	NoStack   uint64 `json:"no_stack,omitempty"` // of those, without the stack of the switch out
	Lost      uint64 `json:"lost,omitempty"`     // intervals not counted (in whole or in part): the off-CPU tables were full
	LostNs    uint64 `json:"lost_ns,omitempty"`  // their time
	Threads   int    `json:"threads,omitempty"`  // threads followed
	// Wakers says which thread ended each wait was recorded (sched_waking); Wakeups counts
	// the wakeups read and Woken the waits matched to the wakeup that ended them.
	Wakers  bool   `json:"wakers,omitempty"`
	Wakeups uint64 `json:"wakeups,omitempty"`
	Woken   uint64 `json:"woken,omitempty"`
	// WakersOff says the recording was asked not to record wakers (--no-wakers).
	WakersOff bool `json:"wakers_off,omitempty"`
	// IntervalsDropped counts the intervals counted but not kept with their times (past
	// the bound on them).
	IntervalsDropped uint64 `json:"intervals_dropped,omitempty"`
	// StackRate is the rate, per second per thread and CPU, the stacks of the switches
	// out and of the wakeups were sampled at while the target switched out more often
	// than that (0: every one always); SampledTimes counts the times sampling began.
	// Sampled counts the intervals whose switch out had no stack sample of its own and
	// took its thread's latest sampled stack of a switch out like it (waiting, or
	// preempted).
	StackRate    int    `json:"stack_rate,omitempty"`
	SampledTimes uint64 `json:"sampled_times,omitempty"`
	Sampled      uint64 `json:"sampled,omitempty"`
	// WakeupsAll is how many wakeups the kernel counted: more than Wakeups when their
	// stacks were sampled (StackRate), and then wakers are of the wakeups seen alone.
	WakeupsAll uint64 `json:"wakeups_all,omitempty"`
	// OutsCounted is how many switches out the kernel counted (the waits, with
	// WaitStacks), with StackRate: beside the intervals read, how many were lost.
	OutsCounted uint64 `json:"outs_counted,omitempty"`
	// Unpaired counts the switch records found missing: a thread switched out twice with
	// no switch in between, or in twice with no switch out (records lost from a full ring).
	Unpaired uint64 `json:"unpaired,omitempty"`
	// PreemptedFP counts the stacks of preemptions (runnable time) taken from the kernel's
	// frame-pointer chain rather than unwound from the stack copy (DWARF mode): a thread
	// preempted anywhere in its code adds nothing the CPU samples do not show, and a
	// target with more busy threads than cores is preempted thousands of times a second.
	PreemptedFP uint64 `json:"preempted_fp,omitempty"`
	// WaitStacks says the stacks of switches out came from sched:sched_switch, filtered
	// in the kernel to the threads that wait (root or CAP_PERFMON): a preemption copied
	// no stack, and PreemptedCPU counts the preemptions that took their thread's latest
	// CPU sample's stack instead (those without one are NoStack).
	WaitStacks   bool   `json:"wait_stacks,omitempty"`
	PreemptedCPU uint64 `json:"preempted_cpu_stack,omitempty"`
	// OnCPU is each thread's time on CPU from the switch records (a switch in to the next
	// switch out, or the thread's exit), sorted by thread: the views' on-CPU time where a
	// thread has it, in place of its samples over the frequency. Runs recorded by an
	// older stax have none.
	OnCPU []agg.ThreadNs `json:"on_cpu,omitempty"`
	// OnCPUClock says whose clock OnCPU is: OnCPUScheduler, the scheduler's own run
	// times (sched:sched_stat_runtime: schedstat's), or empty, the switch records'.
	OnCPUClock string `json:"on_cpu_clock,omitempty"`
	// OnCPUCounted is, with OnCPUScheduler, the run time the kernel counted on the
	// target's events (a little more than OnCPU holds when none was lost): past OnCPU's
	// sum, time on CPU whose records were lost from full rings.
	OnCPUCounted uint64 `json:"on_cpu_counted_ns,omitempty"`
	// Deaths says each task's last switch out was recorded (root or CAP_PERFMON): a
	// task's time from its exit record to it is counted, runnable, under [exiting].
	// Without, that time is not recorded, and ExitedTasks counts the tasks that lost it.
	Deaths      bool   `json:"deaths,omitempty"`
	ExitedTasks uint64 `json:"exited_tasks,omitempty"`
	// ExitingNs is the time counted under [exiting], of ExitingTasks tasks.
	ExitingNs    uint64 `json:"exiting_ns,omitempty"`
	ExitingTasks uint64 `json:"exiting_tasks,omitempty"`
}

// OnCPUScheduler is OffCPUMeta.OnCPUClock of a run whose time on CPU is the scheduler's.
const OnCPUScheduler = "scheduler"

// body is what a file holds after its meta section: the profile without its series and
// key entries, and the JIT sources (format 4; before, the code, the key entries and, in
// format 2, the series were in it too).
type body struct {
	Profile agg.Profile `json:"profile"`
	JIT     []JITSource `json:"jit,omitempty"`
	Code    []Code      `json:"code,omitempty"`
	OffCPU  []byte      `json:"off_cpu,omitempty"` // a run file (see offcpu.go)
	// The wakers (see offcpu.go), run files too.
	WakersNs []byte `json:"wakers_ns,omitempty"`
	WakersN  []byte `json:"wakers_n,omitempty"`
	// OffCPUIntervals are Run.OffCPUIntervals, packed (see offcpu.go), in files written
	// before the intervals section.
	OffCPUIntervals []byte `json:"off_cpu_intervals,omitempty"`
	// Traces are Run.Traces (traces.go): readers that predate them skip the key.
	Traces []byte `json:"traces,omitempty"`
}

// maxMeta bounds the meta section (the command line and notes live there).
const maxMeta = 4 << 20

// Encode writes a run: the header, then the payload (checksummed): the meta section (a
// length and uncompressed JSON, so listing runs reads a few hundred bytes per file) and
// the gzip'd rest.
func Encode(w io.Writer, r *Run) error {
	var payload bytes.Buffer
	if err := writePayload(&payload, r, false); err != nil {
		return fmt.Errorf("encode run: %w", err)
	}
	if _, err := w.Write(headerOf(versionOf(r), crc32.Checksum(payload.Bytes(), castagnoli), uint64(payload.Len()))); err != nil {
		return err
	}
	_, err := w.Write(payload.Bytes())
	return err
}

// EncodeStream writes a run as Encode does, but as it goes, holding only the JSON body:
// the header's checksum and length cannot be known before the end, so it writes them as
// zero and returns them, for FinishStream to put in place once the whole file is written.
func EncodeStream(w io.Writer, r *Run) (sum uint32, size uint64, err error) {
	return encodeStream(w, r, false)
}

func encodeStream(w io.Writer, r *Run, refs bool) (sum uint32, size uint64, err error) {
	if _, err := w.Write(headerOf(versionOf(r), 0, 0)); err != nil {
		return 0, 0, err
	}
	cw := &checksumWriter{w: w, sum: crc32.New(castagnoli)}
	if err := writePayload(cw, r, refs); err != nil {
		return 0, 0, fmt.Errorf("encode run: %w", err)
	}
	return cw.sum.Sum32(), cw.n, nil
}

// FinishStream writes the checksum and length of a payload that EncodeStream wrote into f.
func FinishStream(f io.WriterAt, sum uint32, size uint64) error {
	var b [12]byte
	binary.LittleEndian.PutUint32(b[0:], sum)
	binary.LittleEndian.PutUint64(b[4:], size)
	_, err := f.WriteAt(b[:], 12)
	return err
}

type checksumWriter struct {
	w   io.Writer
	sum hash.Hash32
	n   uint64
}

func (c *checksumWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.sum.Write(p[:n])
	c.n += uint64(n)
	return n, err
}

// versionOf is the format version r is written in: 7 when its samples carry counters, 6
// when a delta file carries it on, else 5 (which a stax that predates delta files reads).
func versionOf(r *Run) uint32 {
	switch {
	case r.Profile.Series.Counters > 0:
		return 7
	case r.Meta.DeltaGen != 0:
		return 6
	}
	return 5
}

func headerOf(version, sum uint32, size uint64) []byte {
	hdr := make([]byte, headerSize)
	copy(hdr, magic)
	binary.LittleEndian.PutUint32(hdr[8:], version)
	binary.LittleEndian.PutUint32(hdr[12:], sum)
	binary.LittleEndian.PutUint64(hdr[16:], size)
	return hdr
}

// writePayload writes the meta section (with the layout of what follows) and the gzip'd
// body, series and code. With refs, chunks of the series that were written to the run's
// samples file are written as references to it (the run store's own copy); else every
// sample is in the file (a file that travels).
func writePayload(w io.Writer, r *Run, refs bool) error {
	buf := sectionBuffers.get()
	buf.counts = appendCounts(buf.counts[:0], &r.Profile)
	var head int
	buf.intervals, head, buf.marks = appendIntervalsMarked(buf.intervals[:0], buf.marks[:0], r.OffCPUIntervals)
	err := writePayloadSections(w, r, refs, buf.counts, buf.intervals, head, buf.marks)
	sectionBuffers.put(buf)
	return err
}

// writePayloadCounts is writePayload with the counts section given.
func writePayloadCounts(w io.Writer, r *Run, refs bool, counts []byte) error {
	iv := encodeIntervals(r.OffCPUIntervals)
	return writePayloadSections(w, r, refs, counts, iv, len(iv), nil)
}

// writePayloadSections is writePayload with the counts and intervals sections given; the
// intervals' whole blocks end at marks, the first beginning at head (appendIntervalsMarked).
func writePayloadSections(w io.Writer, r *Run, refs bool, counts, iv []byte, head int, marks []int) error {
	off, err := encodeOffCPU(r)
	if err != nil {
		return fmt.Errorf("off-CPU: %w", err)
	}
	b := body{Profile: r.Profile, JIT: r.JIT, OffCPU: off, Traces: encodeTraces(r.Traces)}
	if b.WakersNs, err = encodePart(r, r.WakersNs, "wakers-ns"); err != nil {
		return fmt.Errorf("wakers: %w", err)
	}
	if b.WakersN, err = encodePart(r, r.WakersN, "wakers-n"); err != nil {
		return fmt.Errorf("wakers: %w", err)
	}
	b.Profile.Series = agg.Series{}
	b.Profile.KeyEntry, b.Profile.Stacks, b.Profile.Entries, b.Profile.Locations = nil, nil, nil, nil
	js, err := json.Marshal(b)
	if err != nil {
		return err
	}
	js = append(js, '\n')
	series, err := newSeriesOut(&r.Profile, refs)
	if err != nil {
		return fmt.Errorf("samples: %w", err)
	}
	cj, err := json.Marshal(r.Code)
	if err != nil {
		return err
	}
	cj = append(append([]byte(codeMagic), cj...), '\n')
	if r.SpansErr != nil {
		return fmt.Errorf("spans: %w", r.SpansErr)
	}
	var log *SpanLog
	if refs && r.SpanLog != nil && r.SpanLog.err == nil && r.SpanLog.spans <= r.Spans.Len() {
		log = r.SpanLog
	}
	sp := encodeSpans(r.Spans, log)
	m := r.Meta
	sum := agg.Summarize(&r.Profile)
	m.Summary, m.JITSources = &sum, r.JIT
	lay := layoutOf(r, len(js), len(counts), series, len(cj))
	lay.Spans, lay.SpanText = int64(r.Spans.Len()), int64(len(sp))
	if log != nil && sp != nil {
		lay.SpanFileSpans, lay.SpanFileBytes, lay.SpanFileCRC = int64(log.spans), log.bytes, log.crc
	}
	lay.Intervals, lay.IntervalText = int64(len(r.OffCPUIntervals)), int64(len(iv))
	meta, err := json.Marshal(metaSection{Meta: m, Layout: lay})
	if err != nil {
		return err
	}
	if len(meta) > maxMeta {
		return fmt.Errorf("meta of %d bytes is over the %d-byte limit", len(meta), maxMeta)
	}
	if _, err := w.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(meta)))); err != nil {
		return err
	}
	if _, err := w.Write(meta); err != nil {
		return err
	}
	zw := gzipWriters.get()
	defer gzipWriters.put(zw)
	zw.Reset(w)
	if _, err := zw.Write(js); err != nil {
		return err
	}
	if _, err := zw.Write(counts); err != nil {
		return err
	}
	if _, err := zw.Write(sp); err != nil {
		return err
	}
	if err := r.IntervalCache.writeIntervals(w, zw, iv, head, marks); err != nil {
		return err
	}
	if err := series.write(zw); err != nil {
		return err
	}
	if _, err := zw.Write(cj); err != nil {
		return err
	}
	return zw.Close()
}

// The compressor and file buffer of a save are kept for the next one: a recorder saves its
// run every few seconds, and each save would otherwise allocate some 2 MiB for them.
var (
	gzipWriters = spare[*gzip.Writer]{new: func() *gzip.Writer {
		zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
		return zw
	}}
	fileBuffers = spare[*bufio.Writer]{new: func() *bufio.Writer { return bufio.NewWriterSize(nil, 1<<20) }}
	// The counts and intervals sections are built whole (the layout before them gives
	// their sizes): in proportion to the distinct stacks and the intervals, each save's
	// would be garbage.
	sectionBuffers = spare[*sections]{new: func() *sections { return &sections{} }}
)

type sections struct {
	counts, intervals []byte
	marks             []int
}

// spare keeps up to two T for reuse (unlike a sync.Pool, which the garbage collector
// empties): a save and the save of an off-CPU part within it.
type spare[T any] struct {
	mu  sync.Mutex
	vs  [2]T
	n   int
	new func() T
}

func (s *spare[T]) get() T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 {
		return s.new()
	}
	s.n--
	v := s.vs[s.n]
	var zero T
	s.vs[s.n] = zero
	return v
}

func (s *spare[T]) put(v T) {
	s.mu.Lock()
	if s.n < len(s.vs) {
		s.vs[s.n] = v
		s.n++
	}
	s.mu.Unlock()
}

// codeMagic starts format 4's code section: the JSON array of the run's code, after the
// series, so a reader that needs no code stops before it.
const codeMagic = "CODE\x00\x00\x00\x01"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is a file's fixed header, checked.
type header struct {
	version uint32
	sum     uint32
	size    uint64 // payload bytes
}

func readHeader(rd io.Reader) (header, error) {
	var hdr [headerSize]byte
	if _, err := io.ReadFull(rd, hdr[:]); err != nil {
		return header{}, fmt.Errorf("read run header: %w", err)
	}
	if string(hdr[:8]) != magic {
		return header{}, errors.New("read run: not a stax run file (bad magic)")
	}
	h := header{binary.LittleEndian.Uint32(hdr[8:]), binary.LittleEndian.Uint32(hdr[12:]), binary.LittleEndian.Uint64(hdr[16:])}
	if h.version < 1 || h.version > FormatVersion {
		return header{}, fmt.Errorf("read run: format version %d is not supported (this stax reads 1 to %d; a newer stax wrote it)", h.version, FormatVersion)
	}
	if h.size > maxPayload {
		return header{}, fmt.Errorf("read run: payload of %d bytes is over the %d-byte limit", h.size, maxPayload)
	}
	return h, nil
}

// Parts says which parts of a run a reader needs beyond its meta and profile (names,
// stacks, counts per stack, threads, JIT sources): a view that needs no sample times or no
// code reads less.
type Parts uint8

// The parts of a run.
const (
	Samples    Parts = 1 << iota // the sample series (times), for windows, timelines, exports
	CodeParts                    // the sampled code, for annotate
	MetaOnly                     // the meta alone (its summary says what status shows)
	OffCPUPart                   // the off-CPU time (after the rest: reading it reads all)
	TracesPart                   // the tracepoints' samples with their fields
	All        = Samples | CodeParts | OffCPUPart | TracesPart
)

// Decode reads a run written by Encode (this format version or an older one), checking
// its checksum and every index.
func Decode(rd io.Reader) (*Run, error) {
	avail := int64(-1)
	if b, ok := rd.(*bytes.Reader); ok {
		avail = int64(b.Len())
	}
	return decode(rd, avail, All, "")
}

// decode reads a run from rd, which holds avail bytes (-1: unknown), whose spans file is
// at spanPath ("": unknown).
func decode(rd io.Reader, avail int64, want Parts, spanPath string) (*Run, error) {
	h, err := readHeader(rd)
	if err != nil {
		return nil, err
	}
	var payload []byte
	if avail >= 0 {
		// The payload is read into a buffer of its size, once the file is known to hold it.
		if avail-headerSize < int64(h.size) {
			return nil, fmt.Errorf("read run: payload truncated at %d of %d bytes", max(avail-headerSize, 0), h.size)
		}
		payload = make([]byte, h.size)
		if got, err := io.ReadFull(rd, payload); err != nil {
			return nil, fmt.Errorf("read run: payload truncated at %d of %d bytes", got, h.size)
		}
	} else {
		buf := bytes.NewBuffer(make([]byte, 0, min(h.size, 1<<20)))
		if got, err := io.CopyN(buf, rd, int64(h.size)); err != nil {
			return nil, fmt.Errorf("read run: payload truncated at %d of %d bytes", got, h.size)
		}
		payload = buf.Bytes()
	}
	if crc32.Checksum(payload, castagnoli) != h.sum {
		return nil, errors.New("read run: checksum mismatch (the file is damaged)")
	}
	var r Run
	rest := bytes.NewReader(payload)
	var lay *layout
	if h.version >= 2 {
		ms, err := readMetaSection(rest)
		if err != nil {
			return nil, err
		}
		r.Meta, lay = ms.Meta, ms.Layout
	}
	if err := decodeCompressed(&r, h.version, rest, int64(h.size), lay, want, spanPath); err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	// What the meta keeps for status is derived from the body, which is now read.
	r.Meta.Summary, r.Meta.JITSources = nil, nil
	if err := validate(&r); err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	if len(r.Profile.FrameStacks) != len(r.Profile.Stacks) {
		r.Profile.ExpandStacks()
	}
	return &r, nil
}

func readMetaSection(rd io.Reader) (metaSection, error) {
	var n [4]byte
	if _, err := io.ReadFull(rd, n[:]); err != nil {
		return metaSection{}, fmt.Errorf("read run meta: %w", err)
	}
	size := binary.LittleEndian.Uint32(n[:])
	if size > maxMeta {
		return metaSection{}, fmt.Errorf("read run meta: %d bytes is over the %d-byte limit", size, maxMeta)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(rd, b); err != nil {
		return metaSection{}, fmt.Errorf("read run meta: %w", err)
	}
	var m metaSection
	if err := json.Unmarshal(b, &m); err != nil {
		return metaSection{}, fmt.Errorf("read run meta: %w", err)
	}
	return m, nil
}

// ReadMeta reads only a run file's meta: the header, the file's size and, for files of
// format 2 and later, the meta section, without the checksum or the compressed rest (older
// files are decoded whole). A file that is cut short or not a run file is an error.
func ReadMeta(path string) (Meta, error) {
	f, err := os.Open(path)
	if err != nil {
		return Meta{}, fmt.Errorf("open run: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Meta{}, fmt.Errorf("open run: %w", err)
	}
	h, err := readHeader(f)
	if err != nil {
		return Meta{}, err
	}
	if uint64(info.Size()) != headerSize+h.size {
		return Meta{}, fmt.Errorf("read run: the file has %d bytes, its header says %d (it is truncated or damaged)", info.Size(), headerSize+h.size)
	}
	if h.version < 2 {
		f.Seek(0, io.SeekStart)
		r, err := Decode(f)
		if err != nil {
			return Meta{}, err
		}
		return r.Meta, nil
	}
	ms, err := readMetaSection(io.LimitReader(f, int64(h.size)))
	if err == nil && ms.Meta.DeltaGen != 0 {
		// A recording's checkpoints since this file are in its delta file.
		if m, damage, derr := deltaMeta(deltaPathOf(path), ms.Meta); derr == nil {
			if damage != nil {
				m.Notes = append(m.Notes, damage.String())
			}
			return m, nil
		} else if !errors.Is(derr, os.ErrNotExist) {
			return ms.Meta, fmt.Errorf("read run: %w", derr)
		}
	}
	return ms.Meta, err
}

// FileSum is the SHA-256 of a file, in hex: what Meta.Imported holds.
func FileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("open run: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read run: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Check reads a run file's header and checksum without decoding it: it says whether the
// file is whole.
func Check(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open run: %w", err)
	}
	defer f.Close()
	h, err := readHeader(f)
	if err != nil {
		return err
	}
	sum := crc32.New(castagnoli)
	if got, err := io.CopyN(sum, f, int64(h.size)); err != nil {
		return fmt.Errorf("read run: payload truncated at %d of %d bytes", got, h.size)
	}
	if sum.Sum32() != h.sum {
		return errors.New("read run: checksum mismatch (the file is damaged)")
	}
	return nil
}

func validate(r *Run) error {
	p := &r.Profile
	if err := p.CheckIndexes(); err != nil {
		return err
	}
	if err := checkEvents(r); err != nil {
		return err
	}
	nf := uint32(len(p.Frames))
	for k, e := range p.KeyEntry {
		if e < -1 || int(e) >= len(p.Entries) {
			return fmt.Errorf("sample key %d names entry %d of %d", k, e, len(p.Entries))
		}
	}
	// Chunks in the samples file are checked as they are read (ReadChunk); every view
	// ignores a sample whose key the run does not have.
	inline := agg.Series{Chunks: slices.DeleteFunc(slices.Clone(p.Series.Chunks), func(c agg.SeriesChunk) bool { return c.Data == nil }), Counters: p.Series.Counters}
	bad := false
	err := inline.Each(0, 0, func(s agg.Sample) {
		if int(s.Key) >= len(p.KeyEntry) {
			bad = true
		}
	})
	if err != nil {
		return err
	}
	if bad {
		return errors.New("a sample names a key the run does not have")
	}
	for i, c := range r.Code {
		if c.Frame >= nf {
			return fmt.Errorf("code %d names frame %d of %d", i, c.Frame, nf)
		}
	}
	return nil
}

// Load reads a saved run from a file, whole.
func Load(path string) (*Run, error) { return LoadParts(path, All) }

// LoadParts reads a saved run from a file: its meta and profile, and the parts want names
// (a file of format 4 is read no further than they lie; older files are read whole). A
// run of the store whose series lives in its samples file reads it from there when a
// view needs it; with Samples, each chunk there is checked, and those that cannot be read
// back whole are left out of the series, SamplesDamage saying what was lost.
func LoadParts(path string, want Parts) (*Run, error) {
	if want == MetaOnly {
		m, err := ReadMeta(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if m.Summary != nil {
			m.Ending = endingOf(path, m)
			return &Run{Meta: m}, nil
		}
		want = 0 // a file written before the summary: its profile says it
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open run: %w", err)
	}
	defer f.Close()
	avail := int64(-1)
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
		avail = info.Size()
	}
	r, err := decode(f, avail, want, spanLogPathOf(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Meta.DeltaGen != 0 {
		if err := applyDeltas(path, r, want); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if r.DeltaDamage != nil {
			r.Meta.Notes = append(r.Meta.Notes, r.DeltaDamage.String())
		}
		if err := validate(r); err != nil {
			return nil, fmt.Errorf("%s: read run: %w", path, err)
		}
		if len(r.Profile.FrameStacks) != len(r.Profile.Stacks) {
			r.Profile.ExpandStacks()
		}
	}
	r.Meta.Ending = endingOf(path, r.Meta)
	if hasRefs(&r.Profile.Series) {
		r.Profile.Series.Reader = OpenSampleFile(samplesPathOf(path))
		if want&Samples != 0 {
			// A damaged samples file costs its damaged chunks alone.
			r.SamplesDamage = salvage(&r.Profile.Series, r.Meta.StartNs)
		}
	}
	return r, nil
}

func hasRefs(s *agg.Series) bool {
	for i := range s.Chunks {
		if s.Chunks[i].Data == nil && s.Chunks[i].Ref != 0 {
			return true
		}
	}
	return false
}

// endingOf is what the end file beside the run's file at path says, when the run, whose
// meta is m, did not finish and its final save failed (nil otherwise).
func endingOf(path string, m Meta) *End {
	if m.Finished {
		return nil
	}
	e, err := readEndFile(strings.TrimSuffix(path, ".stax") + ".end")
	if err != nil || e == nil || !e.Incomplete {
		return nil
	}
	return e
}

// samplesPathOf is the samples file beside a run's file.
func samplesPathOf(path string) string { return strings.TrimSuffix(path, ".stax") + ".samples" }

// Save writes a run atomically (temp file and rename), so a crash leaves the previous copy.
// Every sample is in the file.
func Save(path string, r *Run) error { return save(path, r, false) }

// SaveStored writes the run store's own copy of a run, atomically: chunks of its series
// already in its samples file (SamplesPath) are listed by reference rather than copied, so
// a checkpoint costs what changed and the distinct stacks, not every sample again.
func SaveStored(path string, r *Run) error { return save(path, r, true) }

func save(path string, r *Run, refs bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := encodeFile(tmp, r, refs); err != nil {
		tmp.Close()
		return fmt.Errorf("save run: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	return nil
}

// WriteFile writes run r, every sample in it, into f from its current offset (it must be
// seekable: the header is finished last), as Save writes a file.
func WriteFile(f *os.File, r *Run) error {
	if err := encodeFile(f, r, false); err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	return nil
}

func encodeFile(f *os.File, r *Run, refs bool) error {
	bw := fileBuffers.get()
	bw.Reset(f)
	sum, size, err := encodeStream(bw, r, refs)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	fileBuffers.put(bw)
	if err == nil {
		err = FinishStream(f, sum, size)
	}
	return err
}

// Dir is the per-user run store: $STAX_HOME/runs, else $XDG_STATE_HOME/stax/runs, else
// ~/.local/state/stax/runs.
func Dir() string {
	if d := os.Getenv("STAX_HOME"); d != "" {
		return filepath.Join(d, "runs")
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "stax", "runs")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = os.TempDir()
	}
	return filepath.Join(home, ".local", "state", "stax", "runs")
}

// CheckDir creates the run store (Dir) when it is missing and checks it as stax checks its
// socket directory: a directory, not a symlink, of this user, that no other user can
// write to. In a store others can write, one could plant a symlink where stax (root's
// agent, too) then writes, or runs it then reads; such a store is refused with an error
// that says what to do.
func CheckDir() (string, error) {
	dir := Dir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create run store: %w", err)
	}
	if err := CheckOwnDir(dir, "run store"); err != nil {
		return "", err
	}
	return dir, checkParent(dir, "run store")
}

// checkParent checks that no other user can replace dir: the directory holding it belongs
// to this user or to root, and no one else can write to it.
func checkParent(dir, what string) error {
	parent := filepath.Dir(dir)
	fi, err := os.Stat(parent)
	if err != nil {
		return fmt.Errorf("check %s: %w", what, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || (int(st.Uid) != os.Geteuid() && st.Uid != 0) || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s %s is in %s, which other users can write to (mode %04o, uid %d): they could replace the store; set STAX_HOME to a directory of your own",
			what, dir, parent, fi.Mode().Perm(), st.Uid)
	}
	return nil
}

// CheckOwnDir checks that dir is a directory (not a symlink) of this user that no other
// user can write to; what names it in the error.
func CheckOwnDir(dir, what string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check %s: %w", what, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	fix := "set STAX_HOME to a directory of your own"
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%s %s is a symlink: stax writes only into a directory of its own; replace it with a directory, or %s", what, dir, fix)
	case !fi.IsDir():
		return fmt.Errorf("%s %s is not a directory: remove it, or %s", what, dir, fix)
	case !ok || int(st.Uid) != os.Geteuid():
		owner := -1
		if ok {
			owner = int(st.Uid)
		}
		return fmt.Errorf("%s %s belongs to uid %d, not to this user (uid %d): another user's files would be written through; %s", what, dir, owner, os.Geteuid(), fix)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s %s can be written by other users (mode %04o): they could plant files that stax writes through; chmod go-w %s, or %s", what, dir, fi.Mode().Perm(), dir, fix)
	}
	return nil
}

// Path is where the run with id is stored.
func Path(id string) string { return filepath.Join(Dir(), id+".stax") }

// Claim reserves a run id that no other recorder holds: base itself, else base-2, base-3,
// ... It creates the run's file (empty until the first Save replaces it), so two
// recorders started in the same second for the same pid never share an id, a file or a
// socket.
func Claim(base string) (string, error) {
	if _, err := CheckDir(); err != nil {
		return "", err
	}
	for n := 1; n <= 1000; n++ {
		id := base
		if n > 1 {
			id = fmt.Sprintf("%s-%d", base, n)
		}
		f, err := os.OpenFile(Path(id), os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("claim run id: %w", err)
		}
		f.Close()
		return id, nil
	}
	return "", fmt.Errorf("claim run id: 1000 runs named %s already exist (remove some with stax rm or stax gc)", base)
}

// ValidID reports whether id is a safe run id (no path separators).
func ValidID(id string) bool {
	if id == "" || len(id) > 128 || strings.ContainsAny(id, "/\\\x00") || id[0] == '.' {
		return false
	}
	return true
}

// List returns the ids of stored runs, newest first.
func List() ([]string, error) {
	ents, err := os.ReadDir(Dir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err == nil {
		if err := CheckOwnDir(Dir(), "run store"); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	type item struct {
		id  string
		mod time.Time
	}
	var items []item
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".stax") || strings.HasPrefix(name, ".") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		items = append(items, item{strings.TrimSuffix(name, ".stax"), info.ModTime()})
	}
	sort.Slice(items, func(i, j int) bool {
		if !items[i].mod.Equal(items[j].mod) {
			return items[i].mod.After(items[j].mod)
		}
		return items[i].id > items[j].id
	})
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.id
	}
	return ids, nil
}

// StackFit says how a DWARF recording's stack copy was fitted to the stacks it saw: the
// kernel copies the whole size at every sample, in the program's time.
type StackFit struct {
	Max     int `json:"max"`     // the copy it started with, and never exceeded
	Need    int `json:"need"`    // the most bytes of a copy one unwind read
	Resizes int `json:"resizes"` // how often the sampling events were reopened with another size
	// Held says why the copy was not shrunk to fit (many threads, frequent switches).
	Held string `json:"held,omitempty"`
}
