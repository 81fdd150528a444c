// Package collectorabi defines, once for all of stax, what stax shares with the programs it
// records through its collector library (collector/) and its Go package (pkg/stax): the
// spans file's format and names, the attach file, the environment variables, and the
// collector library's name.
//
// The collector is C: a test compiles a small program against collector/stax_itt.h and
// compares every constant with these, and another checks collector/build.conf (the
// library's name, sources and compiler flags, read by collector/build.sh) against
// [LibName].
package collectorabi

import "strconv"

// The spans file: a header, then records, little-endian. Version 1 (stax's Go package) has
// a 16-byte header: magic, u32 pid, u32 reserved. Version 2 (the collector) has a 40-byte
// one: magic, u32 pid, u32 header size, u64 start time of the process (field 22 of
// /proc/PID/stat, clock ticks since boot; 0 if unknown), u64 dropped (every task and marker
// not written), u32 failed writes, u32 errno of the last; the last three are updated in
// place while the process runs.
const (
	SpansMagicV1 = "STAXITT\x01"
	SpansMagicV2 = "STAXITT\x02"

	// HeaderV1Size is the size of a version 1 header, the least any version has.
	HeaderV1Size = 16
	// HeaderV2Size is the size of a version 2 header as the collector writes it.
	HeaderV2Size = 40

	// Offsets of the header's fields.
	HdrPid          = 8
	HdrSize         = 12 // version 2; reserved in version 1
	HdrStart        = 16
	HdrDropped      = 24
	HdrFailedWrites = 32
	HdrErrno        = 36
)

// A record is a u16 type, a u16 size (the whole record, a multiple of 8), a u32 thread id,
// then a body by type:
//
//	RecName: u64 key, the name (NUL-padded to a multiple of 8): key's name for the records
//	         of this thread that follow
//	RecTask: u64 key, u64 start, u64 end (CLOCK_MONOTONIC ns), u32 depth (0: outermost),
//	         u32 flags (TaskUnfinished)
//	RecMark: u64 key, u64 time
//	RecDrop: u64 count of tasks and markers of this thread not written since its last DROP
//	RecNote: u64 task ends without a begin, u64 tasks still open at process exit (not
//	         written), since the thread's last NOTE
const (
	RecordHeaderSize = 8

	RecName = 1
	RecTask = 2
	RecMark = 3
	RecDrop = 4
	RecNote = 5

	// Body sizes (NameBodySize without the name).
	NameBodySize = 8
	TaskBodySize = 32
	MarkBodySize = 16
	DropBodySize = 8
	NoteBodySize = 16

	// TaskUnfinished in a task's flags: it was still open when its thread or the process
	// ended, and ends there.
	TaskUnfinished = 1

	// MaxName is the most bytes of a name a writer writes; longer names are cut.
	MaxName = 1024
	// MaxDepth is the most open tasks per thread the collector keeps; deeper ones are
	// dropped.
	MaxDepth = 64
	// MaxRecordSize is the largest record a writer writes (a NAME of MaxName bytes).
	MaxRecordSize = RecordHeaderSize + NameBodySize + MaxName
)

// Environment variables.
const (
	// EnvJITProfiler64 names the collector library to 64-bit JITs (the JIT Profiling API).
	EnvJITProfiler64 = "INTEL_JIT_PROFILER64"
	// EnvITT64 names the collector library to 64-bit programs instrumented with the ITT
	// API (ittnotify.h), for their tasks and markers.
	EnvITT64 = "INTEL_LIBITTNOTIFY64"
	// EnvCollect must be "1" for the collector to write anything.
	EnvCollect = "STAX_JIT_COLLECT"
	// EnvDir is the directory of the collector's and the Go package's files (default
	// DefaultDir).
	EnvDir = "STAX_JIT_DIR"
	// EnvITTMaxMB bounds the collector's spans file, in MiB.
	EnvITTMaxMB = "STAX_ITT_MAX_MB"
	// EnvSpans is "1" in the environment of a command stax launches: stax's Go package
	// writes spans from the start.
	EnvSpans = "STAX_SPANS"
)

// DefaultDir is where the files go when EnvDir is unset; the attach file is always there.
const DefaultDir = "/tmp"

// File names.
const (
	// ITTSpansPrefix and GoSpansPrefix start the names of the spans files of the collector
	// (itt-PID.spans) and of stax's Go package (stax-PID.spans); SpansSuffix ends both.
	ITTSpansPrefix = "itt-"
	GoSpansPrefix  = "stax-"
	SpansSuffix    = ".spans"
)

// LibName is the file name of the collector library.
const LibName = "libstax-jitcollector.so"

// ITTSpansName is the name of the collector's spans file of process pid.
func ITTSpansName(pid int) string { return ITTSpansPrefix + strconv.Itoa(pid) + SpansSuffix }

// GoSpansName is the name of the spans file stax's Go package writes for process pid.
func GoSpansName(pid int) string { return GoSpansPrefix + strconv.Itoa(pid) + SpansSuffix }

// AttachName is the name of the file, in DefaultDir, whose presence tells stax's Go package
// in process pid (as the process sees itself) that stax records it.
func AttachName(pid int) string { return "stax-" + strconv.Itoa(pid) + ".recording" }

// AttachPath is AttachName's path.
func AttachPath(pid int) string { return DefaultDir + "/" + AttachName(pid) }
