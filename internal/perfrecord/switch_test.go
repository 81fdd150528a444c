package perfrecord

import "testing"

func switchRec(typ uint32, misc uint16, sid SampleID, identifier uint64) []byte {
	var w rb
	if typ == TypeSwitchCPU {
		w.u32(7) // next_prev_pid
		w.u32(8) // next_prev_tid
	}
	w.trailer(sid)
	w.u64(identifier)
	return rec(typ, misc, w.b)
}

func TestSwitch(t *testing.T) {
	d := &Decoder{SampleType: staxSampleType | SampleIdentifier, SampleIDAll: true}
	id := SampleID{Pid: 1, Tid: 2, Time: 3, CPU: 4}
	tests := []struct {
		name string
		rec  []byte
		want Switch
	}{
		{"in", switchRec(TypeSwitch, 0, id, 9), Switch{SampleID: id}},
		{"out", switchRec(TypeSwitch, MiscSwitchOut, id, 9), Switch{Out: true, SampleID: id}},
		{"preempted", switchRec(TypeSwitch, MiscSwitchOut|MiscSwitchPreempt, id, 9), Switch{Out: true, Preempt: true, SampleID: id}},
		{"cpu wide", switchRec(TypeSwitchCPU, MiscSwitchOut, id, 9), Switch{Out: true, SampleID: id}},
	}
	for _, tt := range tests {
		got, err := d.Switch(tt.rec)
		if err != nil || got != tt.want {
			t.Errorf("%s: Switch = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
		if tm := d.Time(tt.rec); tm != 3 {
			t.Errorf("%s: Time = %d, want 3", tt.name, tm)
		}
	}
	if _, err := d.Switch(switchRec(TypeSwitch, 0, id, 9)[:20]); err == nil {
		t.Error("a cut switch record decoded")
	}
	if _, err := d.Switch(lostSamplesRec(1, id)); err == nil {
		t.Error("a lost record decoded as a switch")
	}
}

func TestSampleIdentifier(t *testing.T) {
	d := &Decoder{SampleType: staxSampleType | SampleIdentifier, SampleIDAll: true}
	var w rb
	w.u64(42) // identifier
	w.u64(0x401000)
	w.u32(1)
	w.u32(2)
	w.u64(3) // time
	w.u32(4)
	w.u32(0)
	w.u64(1) // period
	w.u64(1)
	w.u64(0x401000)
	var s Sample
	if err := d.Sample(rec(TypeSample, MiscUser, w.b), &s); err != nil || s.ID != 42 || s.Time != 3 || s.Tid != 2 || len(s.Callchain) != 1 {
		t.Fatalf("Sample = %+v, %v; want id 42 at time 3 of thread 2", s, err)
	}
}
