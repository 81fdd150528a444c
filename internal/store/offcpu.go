package store

import (
	"bytes"
	"fmt"

	"github.com/stax-profiler/stax/internal/agg"
)

// The off-CPU time of a run is kept in the body, under "off_cpu", as a complete run file
// (Encode's) whose profile is the off-CPU aggregate: it is bounded and checked as a run
// is, and readers that do not know it skip one JSON string.

// encodeOffCPU is r's off-CPU time as a run file, nil when r has none.
func encodeOffCPU(r *Run) ([]byte, error) {
	if r.OffCPU == nil {
		return nil, nil
	}
	p := *r.OffCPU
	p.Series, p.KeyEntry = agg.Series{}, nil
	var b bytes.Buffer
	if err := Encode(&b, &Run{Meta: Meta{ID: r.Meta.ID, Event: "off-cpu"}, Profile: p}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// offCPU reads the body's off-CPU time into r.OffCPU.
func (d *decoder) offCPU(r *Run) error {
	start := d.dec.InputOffset()
	limit := d.b.outLimit - start
	d.b.element("off_cpu", start, limit)
	var raw []byte
	err := d.dec.Decode(&raw)
	d.b.element("", 0, 0)
	if err != nil {
		return fmt.Errorf("off-CPU: %w", err)
	}
	if err := d.b.charge(2 * (d.dec.InputOffset() - start)); err != nil {
		return err
	}
	off, err := decode(bytes.NewReader(raw), int64(len(raw)), All&^OffCPUPart)
	if err != nil {
		return fmt.Errorf("off-CPU: %w", err)
	}
	r.OffCPU = &off.Profile
	return nil
}
