package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"unsafe"

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

// intervalBytes is a packed interval of the body's "off_cpu_intervals" (files written
// before the intervals section): tid, stack, start, end, waker, little-endian.
const intervalBytes = 28

// The intervals section follows the spans section in the compressed stream: ivalsMagic,
// the interval count (uvarint), then per interval its thread, its stack + 1 (0: none),
// its start less the previous interval's start (zigzag varint), its length and its waker
// (uvarints). Some 10 bytes an interval, written without a JSON string around them.
const ivalsMagic = "IVALS\x00\x00\x01"

// sizeInterval is what a decoded interval takes in memory.
var sizeInterval = int64(unsafe.Sizeof(agg.Interval{}))

// maxIntervals bounds the intervals read from a file.
const maxIntervals = 4 << 20

// encodeIntervals is the intervals section of ivs, nil when there are none.
func encodeIntervals(ivs []agg.Interval) []byte { return appendIntervals(nil, ivs) }

// appendIntervals appends the intervals section of ivs to b, nothing when there are none.
func appendIntervals(b []byte, ivs []agg.Interval) []byte {
	if len(ivs) == 0 {
		return b
	}
	b = slices.Grow(b, len(ivalsMagic)+binary.MaxVarintLen64+len(ivs)*12)
	b = append(b, ivalsMagic...)
	b = binary.AppendUvarint(b, uint64(len(ivs)))
	var prev uint64
	return appendIntervalBody(b, ivs, &prev)
}

// appendIntervalBody appends the section's encoding of ivs, the interval before them
// starting at *prev (0 for the first), and leaves in *prev the start of the last.
func appendIntervalBody(b []byte, ivs []agg.Interval, prev *uint64) []byte {
	b = slices.Grow(b, len(ivs)*12)
	for _, iv := range ivs {
		b = binary.AppendUvarint(b, uint64(iv.Tid))
		b = binary.AppendUvarint(b, uint64(iv.Stack+1)) // agg.NoStack + 1 is 0
		b = binary.AppendVarint(b, int64(iv.Start-*prev))
		b = binary.AppendUvarint(b, iv.End-iv.Start)
		b = binary.AppendUvarint(b, uint64(iv.Waker))
		*prev = iv.Start
	}
	return b
}

// readIntervals reads the intervals section the layout declares into r.OffCPUIntervals.
func readIntervals(r *bufio.Reader, run *Run, b *budget, l *layout) error {
	// An interval is 5 varints: at least 5 bytes of the section.
	if l.IntervalText < int64(len(ivalsMagic)) || l.IntervalText > b.outLimit || l.Intervals > maxIntervals || l.Intervals > l.IntervalText/5 {
		return fmt.Errorf("off-CPU intervals: %d bytes, %d intervals declared", l.IntervalText, l.Intervals)
	}
	// Charged once read: the section's compressed bytes then count in the ratio of the
	// run decoded to the file read (charged before them, a million intervals of a run
	// with few stacks looked like a compression bomb). Meanwhile the budget bounds the
	// bytes read by the compressed bytes.
	var text bytes.Buffer
	text.Grow(int(min(l.IntervalText, 1<<20)))
	if _, err := io.CopyN(&text, r, l.IntervalText); err != nil {
		return fmt.Errorf("off-CPU intervals: %w", err)
	}
	if err := b.charge(l.IntervalText + l.Intervals*sizeInterval); err != nil {
		return err
	}
	buf := text.Bytes()
	if string(buf[:len(ivalsMagic)]) != ivalsMagic {
		return errors.New("off-CPU intervals: bad section marker")
	}
	c := buf[len(ivalsMagic):]
	n, k := binary.Uvarint(c)
	if k <= 0 || n != uint64(l.Intervals) {
		return fmt.Errorf("off-CPU intervals: the section does not hold the %d the file declares", l.Intervals)
	}
	ivs := make([]agg.Interval, n)
	rest, err := readIntervalBody(c[k:], ivs, 0)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return errors.New("off-CPU intervals: bytes after the last interval")
	}
	run.OffCPUIntervals = ivs
	return nil
}

// readIntervalBody decodes len(ivs) intervals of the section's encoding (appendIntervalBody's)
// from c into ivs, the interval before them starting at start, each checked, and returns
// the bytes after them.
func readIntervalBody(c []byte, ivs []agg.Interval, start uint64) ([]byte, error) {
	for i := range ivs {
		var v [5]uint64
		for j := range v {
			if j == 2 {
				d, k := binary.Varint(c)
				if k <= 0 {
					return nil, errors.New("off-CPU intervals: cut short")
				}
				v[j], c = uint64(d), c[k:]
				continue
			}
			x, k := binary.Uvarint(c)
			if k <= 0 {
				return nil, errors.New("off-CPU intervals: cut short")
			}
			v[j], c = x, c[k:]
		}
		start += v[2]
		if v[0] > 1<<32-1 || v[1] > 1<<32 || v[4] > 1<<32-1 || start+v[3] < start {
			return nil, fmt.Errorf("off-CPU intervals: interval %d is out of range", i)
		}
		ivs[i] = agg.Interval{Tid: uint32(v[0]), Stack: uint32(v[1]) - 1, Start: start, End: start + v[3], Waker: uint32(v[4])}
	}
	return c, nil
}

// intervals reads the body's off-CPU intervals into r.OffCPUIntervals. An interval of a
// stack the off-CPU profile does not have names no stack in the views (views.IntervalsIn).
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
