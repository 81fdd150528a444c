package unwind

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"sync"
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
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil, fmt.Errorf("find the vdso: %w", err)
	}
	var start, end uint64
	for _, line := range bytes.Split(maps, []byte("\n")) {
		if bytes.HasSuffix(line, []byte("[vdso]")) {
			fmt.Sscanf(string(line), "%x-%x", &start, &end)
		}
	}
	if start == 0 || end <= start || end-start > 1<<20 {
		return nil, fmt.Errorf("find the vdso: no [vdso] mapping in /proc/self/maps")
	}
	f, err := os.Open("/proc/self/mem")
	if err != nil {
		return nil, fmt.Errorf("read the vdso: %w", err)
	}
	defer f.Close()
	img := make([]byte, end-start)
	if _, err := f.ReadAt(img, int64(start)); err != nil {
		return nil, fmt.Errorf("read the vdso: %w", err)
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
