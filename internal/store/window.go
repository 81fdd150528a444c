package store

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Window says what a recording's rolling window on disk (stax record --keep, --keep-bytes)
// let go of its samples: the oldest chunks of its series, dropped from its samples file as
// the window moved on. The views of such a run cover the samples kept alone, from FromNs
// on; its counts (top, flame without --from) are those of the samples kept.
type Window struct {
	KeepSec   float64 `json:"keep_sec,omitempty"`   // the window's length (0: no bound by time)
	KeepBytes int64   `json:"keep_bytes,omitempty"` // its size on disk (0: no bound by size)
	// Dropped* count what left it: chunks of samples, their samples and bytes.
	DroppedChunks  int    `json:"dropped_chunks"`
	DroppedSamples uint64 `json:"dropped_samples"`
	DroppedBytes   int64  `json:"dropped_bytes"`
	// FromNs is the time of the first sample kept, in nanoseconds from the run's start.
	FromNs uint64 `json:"from_ns"`
}

// Drop gives the file system back the blocks of n bytes of the samples file at off (a
// chunk that left a rolling window): a hole is punched there, and the file keeps its size,
// so the offsets of the chunks after it stay as they are.
func (l *SampleLog) Drop(off, n int64) error {
	if off < samplesHeaderSize || n <= 0 || off+n > l.off {
		return fmt.Errorf("drop samples: %d bytes at %d of %d", n, off, l.off)
	}
	if err := unix.Fallocate(int(l.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n); err != nil {
		return fmt.Errorf("give back the blocks of samples that left the window in %s: %w", l.f.Name(), err)
	}
	return nil
}
