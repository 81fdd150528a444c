package unwind

import (
	"debug/elf"
	"encoding/binary"
	"sort"

	"github.com/stax-profiler/stax/internal/targetfile"
)

// Thresholds of KeepsFramePointers: an image where fewer than minFPShare of the functions
// sampled (up to fpSampled) address their frame from rbp was built without frame pointers
// (a compiler still gives a few functions one: those with variable-sized frames or wide
// alignment).
const (
	fpSampled  = 256
	minFPShare = 0.1
)

// KeepsFramePointers says whether the program at path may keep a frame-pointer chain that
// the kernel's walk can follow: false only for an image whose call-frame information shows
// its functions frameless. A Go program always keeps them; an image that cannot be read, or
// describes no function, may. (java's launcher gives one of its four functions a frame
// pointer, and so keeps the chain its JIT, loaded later, needs.)
func KeepsFramePointers(path string) bool {
	f, err := targetfile.OpenELF(path)
	if err != nil {
		return true
	}
	defer f.Close()
	if f.Section(".gopclntab") != nil || f.Section(".go.buildinfo") != nil {
		return true
	}
	sec := f.Section(".eh_frame")
	if sec == nil || sec.Type == elf.SHT_NOBITS || sec.Size == 0 || sec.Size > maxCFISection {
		return true
	}
	data, err := readSection(sec)
	if err != nil {
		return true
	}
	t := sampleFDEs(data, sec.Addr, fpSampled)
	return len(t.fdes) == 0 || t.framePointerShare() >= minFPShare
}

// sampleFDEs parses up to n of the FDEs of an .eh_frame section, spread over it: a large
// program's section holds tens of thousands, and the program waits while they are judged.
func sampleFDEs(data []byte, secAddr uint64, n int) *Table {
	t := &Table{data: data, secAddr: secAddr, Complete: true}
	total := eachFDE(data, nil)
	if total == 0 {
		return t
	}
	k := min(total, n)
	cieAt := map[int]int32{}
	taken, next := 0, 0 // the j-th FDE taken is the (j*total/k)-th
	eachFDE(data, func(i, body, end int, id uint32) bool {
		if i == next {
			t.addFDE(data, body, end, id, cieAt)
			taken++
			next = taken * total / k
		}
		return taken < k
	})
	sort.Slice(t.fdes, func(i, j int) bool { return t.fdes[i].start < t.fdes[j].start })
	return t
}

// eachFDE calls fn (when not nil) with the index, body and CIE pointer of each FDE of an
// .eh_frame section until fn returns false, and returns how many it found.
func eachFDE(data []byte, fn func(i, body, end int, id uint32) bool) int {
	i := 0
	for off := 0; off+4 <= len(data); {
		length := uint64(binary.LittleEndian.Uint32(data[off:]))
		off += 4
		if length == 0 || length == 0xffffffff || length > uint64(len(data)-off) {
			break
		}
		body, end := off, off+int(length)
		off = end
		if end-body < 4 {
			continue
		}
		if id := binary.LittleEndian.Uint32(data[body:]); id != 0 {
			if fn != nil && !fn(i, body, end, id) {
				return i + 1
			}
			i++
		}
	}
	return i
}

// framePointerShare is the share of t's functions whose frame address halfway through
// them is rbp-based.
func (t *Table) framePointerShare() float64 {
	fp := 0
	for _, f := range t.fdes {
		if rw, ok := t.rowAt(f.start + (f.end-f.start)/2); ok && rw.cfa.kind == ruleOffset && rw.cfa.reg == regRBP {
			fp++
		}
	}
	return float64(fp) / float64(len(t.fdes))
}
