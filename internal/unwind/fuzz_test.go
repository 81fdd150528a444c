package unwind

import (
	"debug/elf"
	"encoding/binary"
	"testing"
)

// ehFrameOf returns the .eh_frame of the running test binary's libc-free image, as a seed.
func ehFrameOf(path string) ([]byte, uint64) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, 0
	}
	defer f.Close()
	s := f.Section(".eh_frame")
	if s == nil {
		return nil, 0
	}
	b, _ := s.Data()
	if len(b) > 4096 {
		b = b[:4096]
	}
	return b, s.Addr
}

// FuzzParseCFI parses arbitrary .eh_frame and .debug_frame bytes and evaluates rows at
// addresses the tables cover: no panic, bounded work.
func FuzzParseCFI(f *testing.F) {
	if b, addr := ehFrameOf("/proc/self/exe"); b != nil {
		f.Add(b, addr, uint64(addr))
	}
	f.Add(pltCIE(), uint64(0x1000), uint64(0x2008))
	f.Fuzz(func(t *testing.T, data []byte, secAddr, pc uint64) {
		for _, debug := range []bool{false, true} {
			tab, err := parse(data, secAddr, debug)
			if err != nil {
				continue
			}
			if len(tab.fdes) > len(data)/8+1 {
				t.Fatalf("%d FDEs from %d bytes", len(tab.fdes), len(data))
			}
			tab.rowAt(pc)
			for i := range tab.fdes {
				if i >= 16 {
					break
				}
				tab.rowAt(tab.fdes[i].start)
			}
		}
		// The sampling KeepsFramePointers does reads the same bytes its own way.
		if s := sampleFDEs(data, secAddr, 16); len(s.fdes) > 0 {
			if share := s.framePointerShare(); share < 0 || share > 1 {
				t.Fatalf("frame-pointer share %v", share)
			}
		}
	})
}

// pltCIE builds a CIE and an FDE whose CFA is the PLT expression.
func pltCIE() []byte {
	var b []byte
	cie := []byte{0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b, // id, version, aug, align, ra, aug data
		0x0c, 7, 8, 0x90, 1} // def_cfa rsp+8; offset r16 at cfa-8
	for len(cie)%4 != 0 {
		cie = append(cie, 0)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(cie)))
	b = append(b, cie...)
	fdeAt := len(b)
	expr := []byte{0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x22}
	body := binary.LittleEndian.AppendUint32(nil, uint32(fdeAt+4))
	body = binary.LittleEndian.AppendUint32(body, uint32(int32(0x2000-(0x1000+fdeAt+8)))) // pcrel start
	body = binary.LittleEndian.AppendUint32(body, 0x100)
	body = append(body, 0) // augmentation length
	body = append(body, 0x0f, byte(len(expr)))
	body = append(body, expr...)
	for (len(body))%4 != 0 {
		body = append(body, 0)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, body...)
	return append(b, 0, 0, 0, 0)
}

// fuzzProc maps one executable range and gives every mapping the same table.
type fuzzProc struct{ t *Table }

func (p fuzzProc) Mapping(addr uint64) (Mapping, bool) {
	if addr >= 0x1000 && addr < 0x100000 {
		return Mapping{Start: 0x1000, End: 0x100000, Path: "/fuzz", Exec: true}, true
	}
	return Mapping{}, false
}
func (p fuzzProc) Table(Mapping) *Table { return p.t }

// FuzzUnwind unwinds hostile stack bytes and registers: no panic, output within its
// buffer, and the step count bounded by it.
func FuzzUnwind(f *testing.F) {
	stack := make([]byte, 64)
	binary.LittleEndian.PutUint64(stack[0:], 0x2010)
	binary.LittleEndian.PutUint64(stack[8:], 0x2020)
	f.Add(pltCIE(), uint64(0x2008), uint64(0x7ff000), uint64(0), stack)
	f.Add([]byte{}, uint64(0x2008), uint64(0x7ff000), uint64(0x7ff010), stack)
	f.Add(loopCFI(), uint64(0x3008), uint64(0x7ff000), uint64(0x3008), loopStack())
	f.Fuzz(func(t *testing.T, cfi []byte, ip, sp, bp uint64, stack []byte) {
		tab, err := ParseEHFrame(cfi, 0x1000)
		if err != nil {
			tab = nil
		}
		var u Unwinder
		out := make([]uint64, 0, 64)
		s := &Sample{Regs: Regs{IP: ip, SP: sp, BP: bp}, Stack: stack, FPChain: []uint64{ip, 0x2000, 0x3000}}
		pcs, end := u.Unwind(fuzzProc{tab}, s, out)
		if len(pcs) > cap(out) || end >= NumEndReasons {
			t.Fatalf("%d frames, end %d", len(pcs), end)
		}
	})
}
