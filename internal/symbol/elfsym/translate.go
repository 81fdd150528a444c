package elfsym

import "debug/elf"

// Mapping describes where a part of the image is mapped in a process, as
// reported by a perf MMAP2 record or /proc/PID/maps.
type Mapping struct {
	Start uint64 // first address of the mapping
	Len   uint64 // length of the mapping in bytes
	Pgoff uint64 // file offset of Start
}

// Contains reports whether addr lies inside the mapping.
func (m Mapping) Contains(addr uint64) bool {
	return addr >= m.Start && addr-m.Start < m.Len
}

// FileOffset converts an address inside the mapping to a file offset.
func (m Mapping) FileOffset(addr uint64) uint64 { return addr - m.Start + m.Pgoff }

// OffsetToVaddr converts a file offset to the ELF virtual address of the
// PT_LOAD segment that contains it. Executable segments win when page
// rounding makes several candidates.
func (im *Image) OffsetToVaddr(off uint64) (uint64, bool) {
	// Exact containment in a segment's file extent.
	var cand *Segment
	for i := range im.Loads {
		s := &im.Loads[i]
		if off >= s.Off && off-s.Off < max(s.Filesz, 1) {
			if cand == nil || (s.Flags&elf.PF_X != 0 && cand.Flags&elf.PF_X == 0) {
				cand = s
			}
		}
	}
	if cand == nil {
		// The kernel maps whole pages; accept offsets in the page-rounded
		// extent (for example padding after the last instruction).
		for i := range im.Loads {
			s := &im.Loads[i]
			lo := s.Off &^ (pageSize - 1)
			hi := (s.Off + s.Filesz + pageSize - 1) &^ (pageSize - 1)
			if off >= lo && off < hi {
				if cand == nil || (s.Flags&elf.PF_X != 0 && cand.Flags&elf.PF_X == 0) {
					cand = s
				}
			}
		}
	}
	if cand == nil {
		return 0, false
	}
	return off - cand.Off + cand.Vaddr, true
}

const pageSize = 4096

// MappedToVaddr converts a sampled address inside mapping m to the ELF
// virtual address: the file offset addr-start+pgoff is looked up in the
// PT_LOAD segments. Images without program headers (relocatable objects,
// some debug files) are treated as if virtual addresses were file offsets.
func (im *Image) MappedToVaddr(m Mapping, addr uint64) (uint64, bool) {
	if addr < m.Start {
		return 0, false
	}
	off := m.FileOffset(addr)
	if len(im.Loads) == 0 {
		return off, true
	}
	return im.OffsetToVaddr(off)
}
