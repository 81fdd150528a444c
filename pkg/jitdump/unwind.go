package jitdump

import (
	"encoding/binary"

	"github.com/stax-profiler/stax/internal/jit/jitformat"
)

// WriteUnwindingInfo writes CODE_UNWINDING_INFO for the function announced by the next
// WriteCodeLoad: its .eh_frame and .eh_frame_hdr bytes (the data holds the .eh_frame
// first, then the header, as perf's reader expects).
func (w *Writer) WriteUnwindingInfo(ehFrame, ehFrameHdr []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return ErrClosed
	}
	size := uint64(len(ehFrame) + len(ehFrameHdr))
	w.record(jitformat.RecCodeUnwindingInfo)
	w.buf = jitformat.Append(w.buf, &jitformat.UnwindingInfo{UnwindingSize: size, EHFrameHdrSize: uint64(len(ehFrameHdr)), MappedSize: size})
	w.buf = append(w.buf, ehFrame...)
	w.buf = append(w.buf, ehFrameHdr...)
	for len(w.buf)%8 != 0 {
		w.buf = append(w.buf, 0)
	}
	return w.flush()
}

// FramelessEHFrame returns an .eh_frame and .eh_frame_hdr describing size bytes of code at
// addr that never moves the stack pointer and keeps its return address at [rsp] (a leaf
// with no prologue). Addresses are absolute, so the bytes need no relocation.
func FramelessEHFrame(addr, size uint64) (ehFrame, ehFrameHdr []byte) {
	o := binary.LittleEndian
	cie := []byte{
		0, 0, 0, 0, // CIE id
		1, 'z', 'R', 0, // version, augmentation
		1,          // code alignment
		0x78,       // data alignment -8
		16,         // return address register (rip)
		1,          // augmentation data length
		0x00,       // FDE pointers: DW_EH_PE_absptr
		0x0c, 7, 8, // DW_CFA_def_cfa rsp+8
		0x90, 1, // DW_CFA_offset rip at cfa-8
	}
	for (len(cie)+4)%8 != 0 {
		cie = append(cie, 0) // DW_CFA_nop
	}
	b := o.AppendUint32(nil, uint32(len(cie)))
	b = append(b, cie...)
	fdeAt := len(b)
	fde := o.AppendUint32(nil, uint32(fdeAt+4)) // CIE pointer: back to offset 0
	fde = o.AppendUint64(fde, addr)
	fde = o.AppendUint64(fde, size)
	fde = append(fde, 0) // augmentation data length
	for (len(fde)+4)%8 != 0 {
		fde = append(fde, 0)
	}
	b = o.AppendUint32(b, uint32(len(fde)))
	b = append(b, fde...)
	b = append(b, 0, 0, 0, 0) // terminator
	// .eh_frame_hdr: version 1, eh_frame_ptr pc-relative sdata4 (the header follows the
	// .eh_frame directly), no binary search table.
	hdr := []byte{1, 0x1b, 0xff, 0xff}
	hdr = o.AppendUint32(hdr, uint32(int32(-(len(b) + 4))))
	return b, hdr
}
