package perfrecord

import (
	"testing"
)

// FuzzDecode feeds arbitrary bytes to every decoder under the recorder's sample layout and
// a fuzzed one. Decoders must return errors for bad records, never panic, and keep their
// outputs within the bounds the record format allows.
func FuzzDecode(f *testing.F) {
	id := SampleID{Pid: 1, Tid: 2, Time: 3, CPU: 4}
	f.Add(sampleRec(sampleFields{ip: 0x401000, pid: 1, tid: 2, time: 3, cpu: 4, period: 5,
		chain: []uint64{ContextKernel, 0xffffffff81000000, ContextUser, 0x401000, 0x401100}}, MiscUser), uint64(staxSampleType), true)
	f.Add(mmap2Rec(mmapFields{pid: 1, tid: 1, addr: 0x1000, len: 0x1000, ino: 5, name: "/bin/true"}, id, true), uint64(staxSampleType), true)
	f.Add(mmap2Rec(mmapFields{pid: 1, tid: 1, buildID: []byte{1, 2, 3, 4}, name: "/lib/x.so"}, id, true), uint64(staxSampleType), true)
	f.Add(mmapRec(mmapFields{pid: 1, tid: 1, name: "//anon"}, id), uint64(staxSampleType), true)
	f.Add(commRec(1, 1, "prog", true, id), uint64(staxSampleType), true)
	f.Add(taskRec(TypeFork, 2, 1, 2, 1, 9, id), uint64(staxSampleType), true)
	f.Add(taskRec(TypeExit, 2, 1, 2, 1, 9, id), uint64(staxSampleType), false)
	f.Add(lostRec(1, 2, id), uint64(staxSampleType), true)
	f.Add(lostSamplesRec(2, id), uint64(SampleIdentifier|SampleTID|SampleTime|SampleIDBit|SampleStreamID|SampleCPU), true)
	f.Add([]byte{9, 0, 0, 0, 0, 0, 8, 0}, uint64(staxSampleType), true)
	f.Add(dwarfSampleRec(sampleFields{ip: 1, chain: []uint64{ContextUser, 1}}, 2, []uint64{1, 2, 3}, []byte{1, 2, 3, 4, 5, 6, 7, 8}, 8, 8), uint64(dwarfSampleType), true)
	f.Add(dwarfSampleRec(sampleFields{ip: 1}, 0, nil, nil, 0, 0), uint64(dwarfSampleType), true)
	f.Add(switchRec(TypeSwitchCPU, MiscSwitchOut|MiscSwitchPreempt, id, 5), uint64(staxSampleType|SampleIdentifier), true)
	f.Add(rec(TypeSample, 0, []byte{1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1, 2, 3, 4}), uint64(SampleIP|SampleRaw), true)
	f.Add(groupReadRec(7, 1000, 900, []ReadValue{{5, 7}, {3, 8}, {2, 9}}), uint64(groupReadSampleType), true)
	f.Fuzz(func(t *testing.T, data []byte, sampleType uint64, idAll bool) {
		for _, d := range []*Decoder{
			{SampleType: staxSampleType, SampleIDAll: true},
			{SampleType: sampleType, SampleIDAll: idAll},
			{SampleType: dwarfSampleType, SampleIDAll: true, RegsUserMask: regsMask},
			{SampleType: sampleType, SampleIDAll: idAll, RegsUserMask: sampleType},
			{SampleType: groupReadSampleType, SampleIDAll: true, ReadFormat: groupReadFormat},
			{SampleType: sampleType, SampleIDAll: idAll, ReadFormat: sampleType >> 40 & 0x1f},
		} {
			d.Time(data)
			var s Sample
			err := d.Sample(data, &s)
			h, herr := ParseHeader(data)
			isSample := herr == nil && h.Type == TypeSample
			if pid, ok := d.SamplePid(data); err == nil && isSample && d.SampleType&SampleTID != 0 && (!ok || pid != s.Pid) {
				t.Errorf("SamplePid %d, %v; the decoded sample's pid %d", pid, ok, s.Pid)
			}
			if err == nil {
				if len(s.Callchain) > maxCallchainSize {
					t.Errorf("callchain of %d entries", len(s.Callchain))
				}
				if len(s.Raw) > MaxRaw {
					t.Errorf("raw data of %d bytes", len(s.Raw))
				}
				if len(s.Read.Values) > MaxReadValues {
					t.Errorf("a read of %d values", len(s.Read.Values))
				}
				if len(s.Stack) > MaxStackUser || uint64(len(s.Stack)) > s.StackSize || len(s.Regs) > maxRegsUser {
					t.Errorf("stack %d of %d bytes, %d registers", len(s.Stack), s.StackSize, len(s.Regs))
				}
				k, u := SplitCallchain(s.Callchain)
				if len(k)+len(u) > len(s.Callchain) {
					t.Errorf("split %d+%d entries out of %d", len(k), len(u), len(s.Callchain))
				}
			}
			if m, err := d.Mmap2(data); err == nil && len(m.BuildID) > 20 {
				t.Errorf("build-id of %d bytes", len(m.BuildID))
			}
			if c, err := d.Comm(data); err == nil && len(c.Comm) > len(data) {
				t.Errorf("comm of %d bytes from %d", len(c.Comm), len(data))
			}
			_, _ = d.Task(data)
			_, _ = d.Lost(data)
			_, _ = d.Switch(data)
		}
	})
}
