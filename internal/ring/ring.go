// Package ring reads records out of a perf ring buffer's data area. It is pure: the caller
// supplies the data area, the head it loaded and the tail it last stored, so it can be
// tested over plain byte slices without a kernel.
package ring

import (
	"encoding/binary"
	"fmt"
)

// Reader walks the records between tail and head of a power-of-two sized data area. A record
// that wraps around the end of the area is copied out into a slice of its own.
type Reader struct {
	Data []byte
}

// Drain calls fn for every whole record in [tail, head) and returns the new tail. A record
// whose declared size is zero or runs past head ends the walk: the ring is corrupt or still
// being written, and the caller resumes from the returned tail. The slices passed to fn stay
// valid until the caller gives their space back to the writer (stores a tail past them).
func (r *Reader) Drain(tail, head uint64, fn func(rec []byte)) (uint64, error) {
	if size := uint64(len(r.Data)); size == 0 || size&(size-1) != 0 {
		return tail, fmt.Errorf("drain ring: data size %d is not a power of two", size)
	}
	for {
		rec, err := r.Next(tail, head)
		if err != nil {
			return head, err
		}
		if rec == nil {
			return tail, nil
		}
		fn(rec)
		tail += uint64(len(rec))
	}
}

// Next returns the whole record at tail, or nil if none lies wholly before head. The slice
// stays valid until the caller gives its space back to the writer: records can be batched
// and decoded after the walk (a wrapped record, once per lap, is copied).
func (r *Reader) Next(tail, head uint64) ([]byte, error) {
	size := uint64(len(r.Data))
	if size == 0 || size&(size-1) != 0 {
		return nil, fmt.Errorf("drain ring: data size %d is not a power of two", size)
	}
	if head-tail > size {
		return nil, fmt.Errorf("drain ring: head %d is %d bytes past tail %d, more than the ring holds", head, head-tail, tail)
	}
	if tail+8 > head {
		return nil, nil
	}
	mask := size - 1
	off := tail & mask
	var hdr [8]byte
	r.copyOut(hdr[:], off)
	recSize := uint64(binary.LittleEndian.Uint16(hdr[6:]))
	if recSize < 8 {
		return nil, fmt.Errorf("drain ring: record at %d has size %d", tail, recSize)
	}
	if tail+recSize > head {
		return nil, nil
	}
	if off+recSize <= size {
		return r.Data[off : off+recSize], nil
	}
	rec := make([]byte, recSize)
	r.copyOut(rec, off)
	return rec, nil
}

// Span is the unread part of one ring: [Tail, Head) of R's data area.
type Span struct {
	R          *Reader
	Tail, Head uint64
}

// Merge calls fn for the records of several rings in the order timeOf gives them, each
// ring's own records being in that order already (a CPU writes its ring in time order), so
// that a process's mappings are known before the samples taken in them on other CPUs. It
// stops each ring at its first record timed at or after until: that record and the ones
// after it stay unread. Each span's Tail is advanced past what was read. A corrupt ring is
// skipped to its head and its error returned.
func Merge(spans []Span, timeOf func(rec []byte) uint64, until uint64, fn func(i int, rec []byte)) error {
	var firstErr error
	next := make([][]byte, len(spans))
	times := make([]uint64, len(spans))
	peek := func(i int) {
		sp := &spans[i]
		rec, err := sp.R.Next(sp.Tail, sp.Head)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("ring %d: %w", i, err)
			}
			sp.Tail, rec = sp.Head, nil
		}
		next[i] = rec
		if rec != nil {
			times[i] = timeOf(rec)
		}
	}
	for i := range spans {
		peek(i)
	}
	for {
		best := -1
		for i, rec := range next {
			if rec != nil && times[i] < until && (best < 0 || times[i] < times[best]) {
				best = i
			}
		}
		if best < 0 {
			return firstErr
		}
		fn(best, next[best])
		spans[best].Tail += uint64(len(next[best]))
		peek(best)
	}
}

func (r *Reader) copyOut(dst []byte, off uint64) {
	n := copy(dst, r.Data[off:])
	if n < len(dst) {
		copy(dst[n:], r.Data)
	}
}
