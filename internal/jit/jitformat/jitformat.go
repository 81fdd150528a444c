// Package jitformat defines perf's jitdump file format, with stax's extension records, once
// for all of stax: the constants, the header and the fixed part of each record. The writer
// of pkg/jitdump encodes with it, the reader of internal/jit decodes with it, and a test
// compiles the C collector's header (collector/stax_jitdump.h) and compares every constant,
// size and field offset with these.
//
// A file is in its writer's byte order, which the reader learns from the magic. Each
// layout below is a struct of uint32 and uint64 fields in file order, without padding, so
// its size and field offsets are those of the file.
package jitformat

import (
	"encoding/binary"
	"reflect"
	"runtime"
	"slices"
	"unsafe"
)

// Magic is the header's first field, "JiTD" when read as a big-endian uint32.
const Magic = 0x4A695444

// Version is the header version written.
const Version = 1

// FlagArchTimestamp in the header's flags: timestamps come from the CPU's time-stamp
// counter rather than CLOCK_MONOTONIC.
const FlagArchTimestamp = 1

// Record ids: perf's, then stax's extensions (docs/jitdump-extensions.md).
const (
	RecCodeLoad          = 0
	RecCodeMove          = 1
	RecCodeDebugInfo     = 2
	RecCodeClose         = 3
	RecCodeUnwindingInfo = 4
	RecStaxMethodID      = 100
	RecStaxInline        = 101
	RecStaxCodeUnload    = 102
)

// Header is the file header. TotalSize is the header's size, where the first record
// starts; ElfMach is the ELF e_machine of the code.
type Header struct {
	Magic, Version, TotalSize, ElfMach, Pad1, Pid uint32
	Timestamp, Flags                              uint64
}

// RecordPrefix starts every record; TotalSize counts the prefix.
type RecordPrefix struct {
	ID, TotalSize uint32
	Timestamp     uint64
}

// CodeLoad starts CODE_LOAD's body; the function's NUL-terminated name and CodeSize bytes
// of code follow.
type CodeLoad struct {
	Pid, Tid                           uint32
	VMA, CodeAddr, CodeSize, CodeIndex uint64
}

// CodeMove is CODE_MOVE's body.
type CodeMove struct {
	Pid, Tid                                           uint32
	VMA, OldCodeAddr, NewCodeAddr, CodeSize, CodeIndex uint64
}

// DebugInfo starts CODE_DEBUG_INFO's body; NrEntry entries follow.
type DebugInfo struct {
	CodeAddr, NrEntry uint64
}

// DebugEntry starts each entry of CODE_DEBUG_INFO; the NUL-terminated file name follows
// ("\xff" alone: the previous entry's).
type DebugEntry struct {
	Addr          uint64
	Line, Discrim uint32
}

// UnwindingInfo starts CODE_UNWINDING_INFO's body; UnwindingSize bytes (.eh_frame, then
// EHFrameHdrSize bytes of .eh_frame_hdr) follow, padded to 8 bytes.
type UnwindingInfo struct {
	UnwindingSize, EHFrameHdrSize, MappedSize uint64
}

// StaxMethodID is the body of record 100: the method id of the code at CodeAddr.
type StaxMethodID struct {
	CodeAddr, CodeSize uint64
	MethodID, Pad      uint32
}

// StaxInline starts the body of record 101, an inlined range; the NUL-terminated method
// name and source file follow.
type StaxInline struct {
	MethodID, ParentMethodID uint32
	Start, Size              uint64
}

// StaxCodeUnload is the body of record 102: the code at CodeAddr is gone.
type StaxCodeUnload struct {
	CodeAddr, CodeSize uint64
}

// StaxLost is stax's header extension, right after the Header (whose TotalSize counts it):
// what stax's collector could not write, updated in place. Functions counts the CODE_LOAD
// records not written (a write failed and the collector gave the file up), FailedWrites the
// writes that failed, Error the errno of the last.
type StaxLost struct {
	Magic, Size         uint32
	Functions           uint64
	FailedWrites, Error uint32
}

// StaxLostMagic starts a StaxLost ("STXL" in a little-endian file).
const StaxLostMagic = 0x4C585453

// MaxRecordSize is the largest record stax reads (a record's TotalSize); writers stay
// below it.
const MaxRecordSize = 256 << 20

// Layout is any of the layouts.
type Layout interface {
	Header | RecordPrefix | CodeLoad | CodeMove | DebugInfo | DebugEntry | UnwindingInfo |
		StaxMethodID | StaxInline | StaxCodeUnload | StaxLost
}

// Sizes of the layouts in a file.
const (
	HeaderSize         = 40
	RecordPrefixSize   = 16
	CodeLoadSize       = 40
	CodeMoveSize       = 48
	DebugInfoSize      = 16
	DebugEntrySize     = 16
	UnwindingInfoSize  = 24
	StaxMethodIDSize   = 24
	StaxInlineSize     = 24
	StaxCodeUnloadSize = 16
	StaxLostSize       = 24
)

// Each size is its layout's: this does not compile otherwise.
func _() {
	var x [1]struct{}
	_ = x[HeaderSize-unsafe.Sizeof(Header{})]
	_ = x[RecordPrefixSize-unsafe.Sizeof(RecordPrefix{})]
	_ = x[CodeLoadSize-unsafe.Sizeof(CodeLoad{})]
	_ = x[CodeMoveSize-unsafe.Sizeof(CodeMove{})]
	_ = x[DebugInfoSize-unsafe.Sizeof(DebugInfo{})]
	_ = x[DebugEntrySize-unsafe.Sizeof(DebugEntry{})]
	_ = x[UnwindingInfoSize-unsafe.Sizeof(UnwindingInfo{})]
	_ = x[StaxMethodIDSize-unsafe.Sizeof(StaxMethodID{})]
	_ = x[StaxInlineSize-unsafe.Sizeof(StaxInline{})]
	_ = x[StaxCodeUnloadSize-unsafe.Sizeof(StaxCodeUnload{})]
	_ = x[StaxLostSize-unsafe.Sizeof(StaxLost{})]
}

// probe read in a byte order tells which it is.
var (
	probe     = [2]byte{1, 0}
	hostProbe = binary.NativeEndian.Uint16(probe[:])
)

func raw[T Layout](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// Append appends v to b in the host's byte order, as a writer on this host writes it.
func Append[T Layout](b []byte, v *T) []byte {
	return append(b, raw(v)...)
}

// Put writes v at the start of b in the host's byte order; b must hold the layout.
func Put[T Layout](b []byte, v *T) {
	copy(b[:unsafe.Sizeof(*v)], raw(v))
}

// Decode sets *v from the start of b, in byte order o, and returns the rest of b. It
// returns false, leaving *v unset, when b is shorter than the layout.
func Decode[T Layout](o binary.ByteOrder, b []byte, v *T) ([]byte, bool) {
	r := raw(v)
	if len(b) < len(r) {
		return b, false
	}
	copy(r, b)
	if o.Uint16(probe[:]) != hostProbe {
		// the other byte order: reverse each field's bytes
		t := reflect.TypeFor[T]()
		for i := range t.NumField() {
			f := t.Field(i)
			slices.Reverse(r[f.Offset : f.Offset+f.Type.Size()])
		}
	}
	return b[len(r):], true
}

// ELF machine numbers of the architectures Go runs on, by GOARCH.
var elfMachine = map[string]uint32{
	"386":      3,
	"amd64":    62,
	"arm":      40,
	"arm64":    183,
	"loong64":  258,
	"mips":     8,
	"mipsle":   8,
	"mips64":   8,
	"mips64le": 8,
	"ppc64":    21,
	"ppc64le":  21,
	"riscv64":  243,
	"s390x":    22,
}

// HostMachine is the ELF e_machine of the code this program runs, for the header's
// ElfMach (0, EM_NONE, where unknown).
func HostMachine() uint32 { return elfMachine[runtime.GOARCH] }
