package agg

import "testing"

func TestTraceRing(t *testing.T) {
	r := NewRun()
	r.KeepTraces(1, 3)
	for i := range 5 {
		r.AddTracedSample(1, 10, 11, 0, uint64(100+i), 0, []uint64{1, 2}, nil, []byte{byte(i)})
	}
	r.AddTracedSample(0, 10, 11, 0, 200, 0, []uint64{1, 3}, nil, []byte{9}) // an event not kept
	tr := r.Traces()
	if len(tr) != 1 || tr[0].Event != 1 || tr[0].Cap != 3 || tr[0].Dropped != 2 || len(tr[0].Samples) != 3 {
		t.Fatalf("traces: %+v", tr)
	}
	for i, s := range tr[0].Samples {
		if s.Time != uint64(102+i) || s.Raw[0] != byte(2+i) || s.Pid != 10 || s.Tid != 11 || s.Key != 0 {
			t.Errorf("sample %d: %+v", i, s)
		}
	}
	if r.Samples() != 6 {
		t.Errorf("%d samples counted", r.Samples())
	}
	raw := []byte{7}
	r.KeepTraces(2, 2)
	r.AddTracedSample(2, 1, 1, 0, 1, 0, []uint64{5}, nil, raw)
	raw[0] = 8
	if got := r.Traces()[1].Samples[0]; got.Raw[0] != 7 || got.Key != 2 {
		t.Errorf("kept %+v: not a copy, or the wrong key", got)
	}
}
