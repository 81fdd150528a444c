package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/stax-profiler/stax/internal/agg"
)

// offCPUMagic starts the off-CPU section: after it, a complete run file (Encode's)
// whose profile is the run's off-CPU time, so it is bounded and checked as a run is.
const offCPUMagic = "OFFCPU\x00\x01"

// encodeOffCPU is r's off-CPU section, empty when r has no off-CPU time.
func encodeOffCPU(r *Run) ([]byte, error) {
	if r.OffCPU == nil {
		return nil, nil
	}
	p := *r.OffCPU
	p.Series, p.KeyEntry = agg.Series{}, nil
	var b bytes.Buffer
	b.WriteString(offCPUMagic)
	if err := Encode(&b, &Run{Meta: Meta{ID: r.Meta.ID, Event: "off-cpu"}, Profile: p}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// readOffCPU reads the off-CPU section of n bytes into r.OffCPU.
func readOffCPU(tail *bufio.Reader, r *Run, b *budget, n int64) error {
	if n < int64(len(offCPUMagic))+headerSize {
		return fmt.Errorf("off-CPU: %d bytes declared", n)
	}
	if err := b.charge(n); err != nil {
		return err
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(tail, buf); err != nil {
		return fmt.Errorf("off-CPU: %w", err)
	}
	if string(buf[:len(offCPUMagic)]) != offCPUMagic {
		return errors.New("off-CPU: bad section marker")
	}
	in := buf[len(offCPUMagic):]
	off, err := decode(bytes.NewReader(in), int64(len(in)), All&^OffCPUPart)
	if err != nil {
		return fmt.Errorf("off-CPU: %w", err)
	}
	r.OffCPU = &off.Profile
	return nil
}
