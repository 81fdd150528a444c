package store

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/stax-profiler/stax/internal/agg"
)

// The off-CPU time of a run is kept in the body, under "off_cpu", as a complete run file
// (Encode's) whose profile is the off-CPU aggregate: it is bounded and checked as a run
// is, and readers that do not know it skip one JSON string. The wakers are kept the same
// way, under "wakers_ns" and "wakers_n".

// encodeOffCPU is r's off-CPU time as a run file, nil when r has none.
func encodeOffCPU(r *Run) ([]byte, error) { return encodePart(r, r.OffCPU, "off-cpu") }

// encodePart is p, a profile of r, as a run file of event ev, nil when p is nil.
func encodePart(r *Run, p *agg.Profile, ev string) ([]byte, error) {
	if p == nil {
		return nil, nil
	}
	q := *p
	q.Series, q.KeyEntry = agg.Series{}, nil
	var b bytes.Buffer
	if err := Encode(&b, &Run{Meta: Meta{ID: r.Meta.ID, Event: ev}, Profile: q}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// offCPU reads the body's off-CPU time into r.OffCPU.
func (d *decoder) offCPU(r *Run) error { return d.part("off_cpu", &r.OffCPU) }

// part reads the body's run file of element name into *dst.
func (d *decoder) part(name string, dst **agg.Profile) error {
	start := d.dec.InputOffset()
	limit := d.b.outLimit - start
	d.b.element(name, start, limit)
	var raw []byte
	err := d.dec.Decode(&raw)
	d.b.element("", 0, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := d.b.charge(2 * (d.dec.InputOffset() - start)); err != nil {
		return err
	}
	off, err := decode(bytes.NewReader(raw), int64(len(raw)), All&^OffCPUPart, "")
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	*dst = &off.Profile
	return nil
}

// intervalBytes is a packed interval: tid, stack, start, end, waker, little-endian.
const intervalBytes = 28

// maxIntervals bounds the intervals read from a file.
const maxIntervals = 4 << 20

func packIntervals(ivs []agg.Interval) []byte {
	if len(ivs) == 0 {
		return nil
	}
	b := make([]byte, 0, len(ivs)*intervalBytes)
	for _, iv := range ivs {
		b = binary.LittleEndian.AppendUint32(b, iv.Tid)
		b = binary.LittleEndian.AppendUint32(b, iv.Stack)
		b = binary.LittleEndian.AppendUint64(b, iv.Start)
		b = binary.LittleEndian.AppendUint64(b, iv.End)
		b = binary.LittleEndian.AppendUint32(b, iv.Waker)
	}
	return b
}

// intervals reads the body's off-CPU intervals into r.OffCPUIntervals. An interval of a
// stack the off-CPU profile does not have is an error once both are read (CheckIntervals).
func (d *decoder) intervals(r *Run) error {
	start := d.dec.InputOffset()
	limit := min(d.b.outLimit-start, maxIntervals*intervalBytes*4/3+16)
	d.b.element("off_cpu_intervals", start, limit)
	var raw []byte
	err := d.dec.Decode(&raw)
	d.b.element("", 0, 0)
	if err != nil {
		return fmt.Errorf("off-CPU intervals: %w", err)
	}
	if err := d.b.charge(2 * (d.dec.InputOffset() - start)); err != nil {
		return err
	}
	if len(raw)%intervalBytes != 0 || len(raw)/intervalBytes > maxIntervals {
		return fmt.Errorf("off-CPU intervals: %d bytes are not a whole number of intervals, at most %d", len(raw), maxIntervals)
	}
	ivs := make([]agg.Interval, len(raw)/intervalBytes)
	for i := range ivs {
		b := raw[i*intervalBytes:]
		ivs[i] = agg.Interval{Tid: binary.LittleEndian.Uint32(b), Stack: binary.LittleEndian.Uint32(b[4:]),
			Start: binary.LittleEndian.Uint64(b[8:]), End: binary.LittleEndian.Uint64(b[16:]), Waker: binary.LittleEndian.Uint32(b[24:])}
		if ivs[i].End < ivs[i].Start {
			return fmt.Errorf("off-CPU intervals: interval %d ends before it starts", i)
		}
	}
	r.OffCPUIntervals = ivs
	return nil
}
