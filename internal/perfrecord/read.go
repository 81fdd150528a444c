package perfrecord

import "fmt"

// perf_event_attr.read_format bits.
const (
	FormatTotalTimeEnabled = 1 << 0
	FormatTotalTimeRunning = 1 << 1
	FormatID               = 1 << 2
	FormatGroup            = 1 << 3
	FormatLost             = 1 << 4
)

// MaxReadValues bounds the counters of a group read: the kernel allows more, stax opens
// at most this many.
const MaxReadValues = 32

// ReadValues is a PERF_SAMPLE_READ section: the counters' values (the group's, leader
// first, with FormatGroup; else the event's own), and the times the event (the leader)
// was enabled and running, in nanoseconds: less running than enabled means the kernel
// multiplexed the counters, counting them only part of the time.
type ReadValues struct {
	TimeEnabled, TimeRunning uint64
	Values                   []ReadValue // aliases a buffer of the decoder's, valid until its next call
}

// ReadValue is one counter's value, with its id when FormatID.
type ReadValue struct {
	Value, ID uint64
}

// read decodes a sample's read section as d.ReadFormat lays it out.
func (d *Decoder) read(r *reader, s *Sample) error {
	rf := d.ReadFormat
	if rf&^(FormatTotalTimeEnabled|FormatTotalTimeRunning|FormatID|FormatGroup|FormatLost) != 0 {
		return fmt.Errorf("decode sample: read format %#x is not one stax reads", rf)
	}
	one := func() ReadValue {
		v := ReadValue{Value: r.u64()}
		if rf&FormatID != 0 {
			v.ID = r.u64()
		}
		if rf&FormatLost != 0 {
			r.u64()
		}
		return v
	}
	d.values = d.values[:0]
	if rf&FormatGroup == 0 {
		v := ReadValue{Value: r.u64()}
		if rf&FormatTotalTimeEnabled != 0 {
			s.Read.TimeEnabled = r.u64()
		}
		if rf&FormatTotalTimeRunning != 0 {
			s.Read.TimeRunning = r.u64()
		}
		if rf&FormatID != 0 {
			v.ID = r.u64()
		}
		if rf&FormatLost != 0 {
			r.u64()
		}
		d.values = append(d.values, v)
	} else {
		nr := r.u64()
		if rf&FormatTotalTimeEnabled != 0 {
			s.Read.TimeEnabled = r.u64()
		}
		if rf&FormatTotalTimeRunning != 0 {
			s.Read.TimeRunning = r.u64()
		}
		if r.err {
			return fmt.Errorf("decode sample: %w", ErrShort)
		}
		per := 8
		if rf&FormatID != 0 {
			per += 8
		}
		if rf&FormatLost != 0 {
			per += 8
		}
		if nr == 0 || nr > MaxReadValues || int(nr)*per > len(r.b)-r.off {
			return fmt.Errorf("decode sample: a group read of %d counters does not fit the record (at most %d)", nr, MaxReadValues)
		}
		for range nr {
			d.values = append(d.values, one())
		}
	}
	if r.err {
		return fmt.Errorf("decode sample: %w", ErrShort)
	}
	s.Read.Values = d.values
	return nil
}
