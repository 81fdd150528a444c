package perfrecord

import (
	"encoding/binary"
	"testing"
)

const (
	groupReadSampleType = SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleCPU | SampleRead | SampleCallchain
	groupReadFormat     = FormatGroup | FormatID | FormatTotalTimeEnabled | FormatTotalTimeRunning
)

// groupReadRec is a sample of groupReadSampleType whose group read holds vals.
func groupReadRec(id, enabled, running uint64, vals []ReadValue) []byte {
	b := make([]byte, 8)
	u := func(v uint64) { b = binary.LittleEndian.AppendUint64(b, v) }
	u(id)
	u(0x401000)
	b = binary.LittleEndian.AppendUint32(b, 10)
	b = binary.LittleEndian.AppendUint32(b, 11)
	u(12345)
	u(1)
	u(uint64(len(vals)))
	u(enabled)
	u(running)
	for _, v := range vals {
		u(v.Value)
		u(v.ID)
	}
	u(2)
	u(ContextUser)
	u(0x401000)
	binary.LittleEndian.PutUint32(b, TypeSample)
	binary.LittleEndian.PutUint16(b[6:], uint16(len(b)))
	return b
}

func TestGroupRead(t *testing.T) {
	d := Decoder{SampleType: groupReadSampleType, SampleIDAll: true, ReadFormat: groupReadFormat}
	var s Sample
	rec := groupReadRec(7, 1000, 900, []ReadValue{{5, 7}, {3, 8}, {2, 9}})
	if err := d.Sample(rec, &s); err != nil {
		t.Fatal(err)
	}
	if s.ID != 7 || s.Tid != 11 || s.Read.TimeEnabled != 1000 || s.Read.TimeRunning != 900 || len(s.Read.Values) != 3 ||
		s.Read.Values[1] != (ReadValue{3, 8}) || len(s.Callchain) != 2 {
		t.Errorf("decoded %+v", s)
	}
	// A group that claims more counters than the record holds, or too many.
	for _, n := range []uint64{4, MaxReadValues + 1, 1 << 62} {
		bad := append([]byte(nil), rec...)
		binary.LittleEndian.PutUint64(bad[8+8+8+8+8+8:], n)
		if err := d.Sample(bad, &s); err == nil {
			t.Errorf("a group of %d counters in a record of 3: decoded", n)
		}
	}
	if err := (&Decoder{SampleType: groupReadSampleType, ReadFormat: 1 << 7}).Sample(rec, &s); err == nil {
		t.Errorf("an unknown read format: decoded")
	}
}
