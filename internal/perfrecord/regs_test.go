package perfrecord

import (
	"bytes"
	"testing"
)

const dwarfSampleType = staxSampleType | SampleRegsUser | SampleStackUser

// regsMask is BP|SP|IP in perf's x86-64 register numbering.
const regsMask = 1<<6 | 1<<7 | 1<<8

func dwarfSampleRec(s sampleFields, abi uint64, regs []uint64, stack []byte, size, dyn uint64) []byte {
	var w rb
	w.b = sampleBody(s)
	w.u64(abi)
	if abi != 0 {
		for _, r := range regs {
			w.u64(r)
		}
	}
	w.u64(size)
	if size != 0 {
		buf := make([]byte, size)
		copy(buf, stack)
		w.b = append(w.b, buf...)
		w.u64(dyn)
	}
	return rec(TypeSample, MiscUser, w.b)
}

func TestSampleRegsAndStack(t *testing.T) {
	d := &Decoder{SampleType: dwarfSampleType, SampleIDAll: true, RegsUserMask: regsMask}
	stack := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	f := sampleFields{ip: 0x401000, pid: 7, tid: 8, time: 9, cpu: 1, period: 1,
		chain: []uint64{ContextUser, 0x401000}}
	tests := []struct {
		name      string
		rec       []byte
		abi       uint64
		regs      []uint64
		stack     []byte
		stackSize uint64
	}{
		{"full", dwarfSampleRec(f, 2, []uint64{0x10, 0x20, 0x30}, stack, 16, 16), 2, []uint64{0x10, 0x20, 0x30}, stack, 16},
		{"dyn smaller", dwarfSampleRec(f, 2, []uint64{1, 2, 3}, stack, 16, 8), 2, []uint64{1, 2, 3}, stack[:8], 16},
		{"dyn larger is clamped", dwarfSampleRec(f, 2, []uint64{1, 2, 3}, stack, 16, 99), 2, []uint64{1, 2, 3}, stack, 16},
		{"no regs (kernel thread)", dwarfSampleRec(f, 0, nil, nil, 0, 0), 0, nil, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s Sample
			if err := d.Sample(tc.rec, &s); err != nil {
				t.Fatal(err)
			}
			if s.IP != f.ip || s.Tid != f.tid || len(s.Callchain) != 2 {
				t.Errorf("fixed fields: %+v", s)
			}
			if s.RegsABI != tc.abi || len(s.Regs) != len(tc.regs) {
				t.Fatalf("regs abi %d %v, want %d %v", s.RegsABI, s.Regs, tc.abi, tc.regs)
			}
			for i := range tc.regs {
				if s.Regs[i] != tc.regs[i] {
					t.Errorf("reg %d = %#x, want %#x", i, s.Regs[i], tc.regs[i])
				}
			}
			if !bytes.Equal(s.Stack, tc.stack) || s.StackSize != tc.stackSize {
				t.Errorf("stack %v (size %d), want %v (size %d)", s.Stack, s.StackSize, tc.stack, tc.stackSize)
			}
		})
	}
}

func TestSampleRegsAndStackBad(t *testing.T) {
	d := &Decoder{SampleType: dwarfSampleType, SampleIDAll: true, RegsUserMask: regsMask}
	f := sampleFields{ip: 1, chain: []uint64{}}
	good := dwarfSampleRec(f, 2, []uint64{1, 2, 3}, make([]byte, 32), 32, 32)
	var s Sample
	for n := len(good) - 1; n > 8; n-- {
		b := append([]byte(nil), good[:n]...)
		b[6], b[7] = byte(n), byte(n>>8)
		if err := d.Sample(b, &s); err == nil {
			t.Errorf("truncated to %d bytes: no error", n)
		}
	}
	huge := dwarfSampleRec(f, 2, []uint64{1, 2, 3}, nil, 8, 8)
	huge[len(huge)-16-3] = 0xff // the stack size's high bytes
	if err := d.Sample(huge, &s); err == nil {
		t.Error("huge stack size: no error")
	}
	wide := &Decoder{SampleType: dwarfSampleType, RegsUserMask: ^uint64(0)}
	if err := wide.Sample(good, &s); err == nil {
		t.Error("64 registers in a short record: no error")
	}
}
