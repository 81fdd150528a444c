package unwind

import (
	"bytes"
	"debug/elf"
	"fmt"
	"sync"

	vdsoimg "github.com/stax-profiler/stax/internal/vdso"
)

var vdso struct {
	once sync.Once
	t    *Table
	err  error
}

// VDSOTable returns the call-frame information of the vdso. Every process on one kernel maps
// the same vdso image, so stax reads its own.
func VDSOTable() (*Table, error) {
	vdso.once.Do(func() { vdso.t, vdso.err = loadVDSO() })
	return vdso.t, vdso.err
}

func loadVDSO() (*Table, error) {
	img, err := vdsoimg.Self()
	if err != nil {
		return nil, err
	}
	ef, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return nil, fmt.Errorf("parse the vdso: %w", err)
	}
	s := ef.Section(".eh_frame")
	if s == nil {
		return nil, fmt.Errorf("parse the vdso: no .eh_frame")
	}
	data, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("parse the vdso: %w", err)
	}
	t, err := ParseEHFrame(data, s.Addr)
	if err != nil {
		return nil, err
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			t.loads = append(t.loads, segment{off: p.Off, vaddr: p.Vaddr, filesz: p.Filesz})
		}
	}
	return t, nil
}
