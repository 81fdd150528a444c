package perfevent

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/ring"
)

// RingPagesFor sizes a CPU's ring so that it holds about half a second of samples at freq
// with stacks of maxStack frames (and stackCopy bytes of user stack, in dwarf mode): a reader that is late by a scheduling slice or a slow
// checkpoint loses nothing. The result is a power of two from 128 (512 KiB) to 8192
// (32 MiB) pages.
func RingPagesFor(freq, maxStack, stackCopy int) int {
	recordBytes := 64 + 8*(maxStack+2) + stackCopy // header, ip, tid, time, cpu, period, callchain, user stack
	want := freq * recordBytes / 2 / os.Getpagesize()
	pages := 128
	for pages < want && pages < 8192 {
		pages *= 2
	}
	return pages
}

// offCPURingFactor is how much larger automatically sized rings are with Config.OffCPU.
const offCPURingFactor = 4

// RingError says a ring of that size could not be mapped: over the locked-memory limit
// (kernel.perf_event_mlock_kb for unprivileged users) or out of memory.
type RingError struct {
	CPU, Pages int
	Err        string
}

func (e *RingError) Error() string {
	return fmt.Sprintf("map a perf ring of %d pages on cpu %d: %s (use fewer pages with -m, or raise kernel.perf_event_mlock_kb)", e.Pages, e.CPU, e.Err)
}

type mappedRing struct {
	cpu  int
	fd   int
	mem  []byte
	meta *unix.PerfEventMmapPage
	rd   ring.Reader
}

func mapRing(fd, cpu, pages int) (*mappedRing, error) {
	pageSize := os.Getpagesize()
	mem, err := unix.Mmap(fd, 0, (pages+1)*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		// Not wrapped: an EPERM here is the locked-memory limit (perf_event_mlock_kb), not a
		// refusal to sample.
		return nil, &RingError{CPU: cpu, Pages: pages, Err: err.Error()}
	}
	r := &mappedRing{cpu: cpu, fd: fd, mem: mem, meta: (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))}
	r.rd.Data = mem[pageSize:]
	return r, nil
}

// Fill is how full the fullest ring is, from 0 to 1: records written and not yet read
// back, over the ring's size. A reader that falls behind sees it rise before the kernel
// drops samples.
func (s *Session) Fill() float64 {
	var most float64
	for _, r := range s.rings {
		head := atomic.LoadUint64(&r.meta.Data_head)
		tail := atomic.LoadUint64(&r.meta.Data_tail)
		if size := len(r.rd.Data); size > 0 {
			most = max(most, float64(head-tail)/float64(size))
		}
	}
	return most
}

// Read drains every ring, calling fn for each record. The record slice is valid only during
// the call.
func (s *Session) Read(fn func(cpu int, rec []byte)) error {
	var firstErr error
	for _, r := range s.rings {
		head := atomic.LoadUint64(&r.meta.Data_head)
		tail := atomic.LoadUint64(&r.meta.Data_tail)
		cpu := r.cpu
		newTail, err := r.rd.Drain(tail, head, func(rec []byte) { fn(cpu, rec) })
		atomic.StoreUint64(&r.meta.Data_tail, newTail)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("cpu %d: %w", cpu, err)
		}
	}
	return firstErr
}

// ReadOrdered calls fn for the records of every ring in time order (timeOf gives a record's
// time), up to until: records timed at or after it stay in their ring for the next read.
// Reading CPU by CPU would hand over a sample before the mapping it ran in when the process
// moved between CPUs after the mmap. The records passed to fn stay valid until release
// returns (release may be nil): their space goes back to the kernel after it.
func (s *Session) ReadOrdered(until uint64, timeOf func(rec []byte) uint64, fn func(cpu int, rec []byte), release func()) error {
	if cap(s.spans) < len(s.rings) {
		s.spans = make([]ring.Span, len(s.rings))
	}
	spans := s.spans[:len(s.rings)]
	for i, r := range s.rings {
		spans[i] = ring.Span{R: &r.rd, Head: atomic.LoadUint64(&r.meta.Data_head), Tail: atomic.LoadUint64(&r.meta.Data_tail)}
	}
	err := ring.Merge(spans, timeOf, until, func(i int, rec []byte) { fn(s.rings[i].cpu, rec) })
	if release != nil {
		release()
	}
	for i, r := range s.rings {
		atomic.StoreUint64(&r.meta.Data_tail, spans[i].Tail)
	}
	return err
}
