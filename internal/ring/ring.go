// Package ring reads records out of a perf ring buffer's data area. It is pure: the caller
// supplies the data area, the head it loaded and the tail it last stored, so it can be
// tested over plain byte slices without a kernel.
package ring

import (
	"encoding/binary"
	"fmt"
)

// Reader walks the records between tail and head of a power-of-two sized data area. Records
// that wrap around the end of the area are copied into a scratch buffer owned by the Reader.
type Reader struct {
	Data    []byte
	scratch []byte
}

// Drain calls fn for every whole record in [tail, head) and returns the new tail. A record
// whose declared size is zero or runs past head ends the walk: the ring is corrupt or still
// being written, and the caller resumes from the returned tail. The slice passed to fn is
// valid only during the call.
func (r *Reader) Drain(tail, head uint64, fn func(rec []byte)) (uint64, error) {
	size := uint64(len(r.Data))
	if size == 0 || size&(size-1) != 0 {
		return tail, fmt.Errorf("drain ring: data size %d is not a power of two", size)
	}
	if head-tail > size {
		return head, fmt.Errorf("drain ring: head %d is %d bytes past tail %d, more than the ring holds", head, head-tail, tail)
	}
	mask := size - 1
	for tail+8 <= head {
		off := tail & mask
		var hdr [8]byte
		r.copyOut(hdr[:], off)
		recSize := uint64(binary.LittleEndian.Uint16(hdr[6:]))
		if recSize < 8 {
			return head, fmt.Errorf("drain ring: record at %d has size %d", tail, recSize)
		}
		if tail+recSize > head {
			break
		}
		var rec []byte
		if off+recSize <= size {
			rec = r.Data[off : off+recSize]
		} else {
			if cap(r.scratch) < int(recSize) {
				r.scratch = make([]byte, recSize, 1<<16)
			}
			rec = r.scratch[:recSize]
			r.copyOut(rec, off)
		}
		fn(rec)
		tail += recSize
	}
	return tail, nil
}

func (r *Reader) copyOut(dst []byte, off uint64) {
	n := copy(dst, r.Data[off:])
	if n < len(dst) {
		copy(dst[n:], r.Data)
	}
}
