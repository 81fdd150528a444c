package perfevent

import (
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/perfrecord"
)

// SampleType is the sample layout stax asks for.
const SampleType = perfrecord.SampleIP | perfrecord.SampleTID | perfrecord.SampleTime | perfrecord.SampleCPU |
	perfrecord.SamplePeriod | perfrecord.SampleCallchain

const bitBuildID = 1 << 34 // perf_event_attr.build_id: MMAP2 records carry the build-id

// sideBand are the attr bits of the side-band records: one event per CPU carries them, so
// they are not written twice.
const sideBand = unix.PerfBitMmap | unix.PerfBitComm | unix.PerfBitTask | unix.PerfBitMmap2 | unix.PerfBitCommExec

// offCPUPeriod sets a context-switch or sched_waking event's sampling: every event, or,
// sampled, about Session.OffCPURate a second (the kernel's frequency mode).
func (s *Session) offCPUPeriod(a *unix.PerfEventAttr, sampled bool) {
	a.Bits &^= unix.PerfBitFreq
	a.Sample = 1
	if sampled {
		a.Bits |= unix.PerfBitFreq
		a.Sample = uint64(s.OffCPURate)
	}
}

// maxSampleRate is kernel.perf_event_max_sample_rate: a frequency above it is refused.
func maxSampleRate() int {
	if b, err := os.ReadFile("/proc/sys/kernel/perf_event_max_sample_rate"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 0 {
			return v
		}
	}
	return 100000
}

// RegsUserDwarf is sample_regs_user in "dwarf" mode: BP, SP, IP (perf x86-64 indices 6, 7, 8),
// in that order in a sample.
const RegsUserDwarf = 1<<6 | 1<<7 | 1<<8

// DwarfSampleType is the sample layout of "dwarf" mode.
const DwarfSampleType = SampleType | perfrecord.SampleRegsUser | perfrecord.SampleStackUser

// SampleTypeFor returns the sample layout and sample_regs_user for cfg, to configure a
// perfrecord.Decoder.
func SampleTypeFor(cfg Config) (sampleType, regsMask uint64) {
	sampleType = SampleType
	if cfg.CallGraph == "dwarf" {
		sampleType, regsMask = DwarfSampleType, RegsUserDwarf
	}
	if cfg.OffCPU && !cfg.SystemWide || len(cfg.Events) > 1 || len(cfg.Counters) > 0 {
		sampleType |= perfrecord.SampleIdentifier
	} else if len(cfg.Events) == 1 && cfg.Events[0].Period > 0 {
		sampleType &^= perfrecord.SamplePeriod // the only event's samples: FixedPeriod
	}
	if TracesFields(cfg.Events) {
		// A tracepoint's samples carry its fields. The samples of the other events share
		// the layout (one decoder reads a ring): theirs carry 4 bytes of no data.
		sampleType |= perfrecord.SampleRaw
	}
	return sampleType, regsMask
}

// TracesFields says whether any of events is a tracepoint whose fields are kept with its
// samples (its format was read: EventSpec.TraceFormat).
func TracesFields(events []EventSpec) bool {
	for _, ev := range events {
		if ev.Tracepoint != "" && len(ev.TraceFormat) > 0 {
			return true
		}
	}
	return false
}

// DefaultStackSize is the user stack copied per sample in dwarf mode, as perf record's
// default: the kernel copies it in the profiled thread, so a larger copy costs the program
// (a 16 KiB copy cost it 2-9% more CPU than 8 KiB) for a few deep stacks (node: 0.1% more
// stacks complete); status says when stacks were cut short by it, and --stack-size raises it.
const DefaultStackSize = 8 << 10

// StackCopy is the user stack copy, in bytes, a dwarf-mode recording with cfg takes.
func StackCopy(cfg Config) int { return int(stackSize(cfg)) }

func stackSize(cfg Config) uint32 {
	n := cfg.StackSize &^ 7
	if n <= 0 {
		n = DefaultStackSize
	}
	return uint32(min(n, perfrecord.MaxStackUser))
}

func (s *Session) attr(cfg Config, typ uint32, config uint64, enableOnExec bool) *unix.PerfEventAttr {
	a := &unix.PerfEventAttr{
		Type:             typ,
		Size:             uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Config:           config,
		Sample:           uint64(cfg.Freq),
		Clockid:          unix.CLOCK_MONOTONIC,
		Sample_max_stack: uint16(s.MaxStack),
		// Wake the reader when a ring is a quarter full, rather than relying on its tick.
		Wakeup: uint32(s.RingPages * os.Getpagesize() / 4),
	}
	a.Bits = unix.PerfBitDisabled | unix.PerfBitInherit | unix.PerfBitMmap | unix.PerfBitComm |
		unix.PerfBitFreq | unix.PerfBitTask | unix.PerfBitSampleIDAll | unix.PerfBitMmap2 |
		unix.PerfBitCommExec | unix.PerfBitUseClockID | unix.PerfBitExcludeHv | bitBuildID | unix.PerfBitWatermark
	if enableOnExec {
		a.Bits |= unix.PerfBitEnableOnExec
	}
	if cfg.SystemWide {
		a.Bits &^= unix.PerfBitInherit // a CPU-wide event sees every task already
	}
	a.Sample_type, a.Sample_regs_user = SampleTypeFor(cfg)
	if cfg.CallGraph == "dwarf" {
		a.Sample_stack_user = stackSize(cfg)
		if cfg.NoUserFPChain {
			a.Bits |= unix.PerfBitExcludeCallchainUser
		}
	}
	if s.UserOnly {
		a.Bits |= unix.PerfBitExcludeKernel | unix.PerfBitExcludeCallchainKernel
	}
	firstEventPeriod(cfg, a, typ, config)
	s.leaderRead(cfg, a, typ, config)
	return a
}
