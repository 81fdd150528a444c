// Package perfrecord decodes the PERF_RECORD_* records that the kernel writes into a perf ring
// buffer. It is pure: it works on byte slices and knows nothing of file descriptors.
//
// Decoding never allocates for samples: slices in a decoded Sample point into the record's
// bytes and are valid only until the caller's buffer is reused.
package perfrecord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// Record types (include/uapi/linux/perf_event.h).
const (
	TypeMmap        = 1
	TypeLost        = 2
	TypeComm        = 3
	TypeExit        = 4
	TypeThrottle    = 5
	TypeUnthrottle  = 6
	TypeFork        = 7
	TypeSample      = 9
	TypeMmap2       = 10
	TypeLostSamples = 13
	TypeSwitch      = 14 // PERF_RECORD_SWITCH: the thread of the sample_id trailer went out or in
	TypeSwitchCPU   = 15 // PERF_RECORD_SWITCH_CPU_WIDE: the same, with the other thread's ids
)

// Sample type bits used by stax.
const (
	SampleIP         = 1 << 0
	SampleTID        = 1 << 1
	SampleTime       = 1 << 2
	SampleAddr       = 1 << 3
	SampleRead       = 1 << 4
	SampleCallchain  = 1 << 5
	SampleIDBit      = 1 << 6
	SampleCPU        = 1 << 7
	SamplePeriod     = 1 << 8
	SampleStreamID   = 1 << 9
	SampleRaw        = 1 << 10
	SampleRegsUser   = 1 << 12
	SampleStackUser  = 1 << 13
	SampleIdentifier = 1 << 16
)

// MaxStackUser bounds a PERF_SAMPLE_STACK_USER copy: the kernel accepts less than 64 KiB.
const MaxStackUser = 65528

// MaxRaw bounds a sample's raw data (PERF_SAMPLE_RAW): a record's size is 16 bits, so
// no kernel sends more; a larger size is a damaged record.
const MaxRaw = 1<<16 - 1

// maxRegsUser bounds the number of user registers a sample may carry.
const maxRegsUser = 64

// Header misc bits.
const (
	MiscCPUModeMask   = 7
	MiscKernel        = 1
	MiscUser          = 2
	MiscCommExec      = 1 << 13
	MiscSwitchOut     = 1 << 13 // a switch record: the thread went out (else in)
	MiscSwitchPreempt = 1 << 14 // a switch out: the thread was preempted, still runnable
	MiscMmapBuildID   = 1 << 14
	headerSize        = 8
	maxCallchainSize  = 4096
)

// Callchain context markers: values at or above ContextMax are not addresses.
const (
	ContextHV     = ^uint64(32 - 1)   // -32
	ContextKernel = ^uint64(128 - 1)  // -128
	ContextUser   = ^uint64(512 - 1)  // -512
	ContextMax    = ^uint64(4095 - 1) // -4095
	// TruncatedMark is stax's own marker, put at the root end of a user stack that was cut
	// short (the kernel's depth limit, the stack copy's size): it is named [truncated].
	TruncatedMark = ^uint64(8192 - 1) // -8192: not a context, not a canonical address
)

// Header is the 8-byte prefix of every record.
type Header struct {
	Type uint32
	Misc uint16
	Size uint16
}

// SampleID is the trailer that sample_id_all adds to non-sample records.
type SampleID struct {
	Pid, Tid uint32
	Time     uint64
	CPU      uint32
}

// Sample is a PERF_RECORD_SAMPLE.
type Sample struct {
	IP        uint64
	Pid, Tid  uint32
	Time      uint64
	CPU       uint32
	Period    uint64
	Callchain []uint64 // raw, with context markers; aliases the record bytes' copy in the decoder
	Misc      uint16
	// Raw is the event's raw data (PERF_SAMPLE_RAW: a tracepoint's fields); it aliases
	// the record bytes.
	Raw []byte
	// ID is the event's id (PERF_SAMPLE_IDENTIFIER: the id of the event opened, for inherited
	// events too), 0 without it.
	ID uint64

	// RegsABI is PERF_SAMPLE_REGS_ABI_* (0 none, 1 32-bit, 2 64-bit); Regs holds the registers
	// of Decoder.RegsUserMask in ascending bit order, valid when RegsABI != 0. It aliases a
	// buffer owned by the decoder.
	RegsABI uint64
	Regs    []uint64
	// Stack is the valid part (dyn_size bytes) of the user stack copy, starting at the
	// sampled stack pointer; StackSize is the size asked for. Stack aliases the record bytes.
	Stack     []byte
	StackSize uint64
	// Read is what PERF_SAMPLE_READ read of the event (or its group) as the sample was
	// taken (read.go).
	Read ReadValues
}

// Mmap2 is a PERF_RECORD_MMAP2 (or a PERF_RECORD_MMAP, with no inode and build-id data).
type Mmap2 struct {
	Pid, Tid   uint32
	Addr, Len  uint64
	Pgoff      uint64
	Maj, Min   uint32
	Ino        uint64
	BuildID    []byte // nil when the kernel did not send one
	Prot, Flag uint32
	Filename   string
	SampleID   SampleID
	Misc       uint16
}

// Comm is a PERF_RECORD_COMM.
type Comm struct {
	Pid, Tid uint32
	Comm     string
	Exec     bool
	SampleID SampleID
}

// Task is a PERF_RECORD_FORK or PERF_RECORD_EXIT.
type Task struct {
	Pid, PPid, Tid, PTid uint32
	Time                 uint64
	SampleID             SampleID
}

// Switch is a PERF_RECORD_SWITCH or PERF_RECORD_SWITCH_CPU_WIDE: SampleID's thread was
// switched out (Out; Preempt when it was still runnable) or in.
type Switch struct {
	Out, Preempt bool
	SampleID     SampleID
}

// Lost is a PERF_RECORD_LOST or PERF_RECORD_LOST_SAMPLES.
type Lost struct {
	Lost     uint64
	SampleID SampleID
}

// ErrShort is returned when a record is shorter than its fields need.
var ErrShort = errors.New("record too short")

// Decoder decodes records for one sample_type configuration.
type Decoder struct {
	SampleType  uint64
	SampleIDAll bool
	// RegsUserMask is perf_event_attr.sample_regs_user (used with SampleRegsUser).
	RegsUserMask uint64
	// ReadFormat is perf_event_attr.read_format (used with SampleRead; read.go).
	ReadFormat uint64
	chain      []uint64
	regs       []uint64
	values     []ReadValue
}

// ParseHeader reads the record header at the start of b.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < headerSize {
		return Header{}, ErrShort
	}
	return Header{
		Type: binary.LittleEndian.Uint32(b),
		Misc: binary.LittleEndian.Uint16(b[4:]),
		Size: binary.LittleEndian.Uint16(b[6:]),
	}, nil
}

type reader struct {
	b   []byte
	off int
	err bool
}

func (r *reader) u64() uint64 {
	if r.off+8 > len(r.b) {
		r.err = true
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

func (r *reader) u32() uint32 {
	if r.off+4 > len(r.b) {
		r.err = true
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || r.off+n > len(r.b) {
		r.err = true
		return nil
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v
}

// cstring reads a NUL-terminated string padded to 8 bytes.
func (r *reader) cstring() string {
	rest := r.b[r.off:]
	n := 0
	for n < len(rest) && rest[n] != 0 {
		n++
	}
	s := string(rest[:n])
	padded := (n + 1 + 7) &^ 7
	if r.off+padded > len(r.b) {
		r.off = len(r.b)
	} else {
		r.off += padded
	}
	return s
}

// sampleIDTrailerSize is the size of the sample_id trailer for this configuration.
func (d *Decoder) sampleIDTrailerSize() int {
	if !d.SampleIDAll {
		return 0
	}
	n := 0
	for _, bit := range []uint64{SampleTID, SampleTime, SampleIDBit, SampleStreamID, SampleCPU, SampleIdentifier} {
		if d.SampleType&bit != 0 {
			n += 8
		}
	}
	return n
}

func (d *Decoder) sampleID(body []byte) SampleID {
	var id SampleID
	n := d.sampleIDTrailerSize()
	if n == 0 || len(body) < n {
		return id
	}
	r := reader{b: body[len(body)-n:]}
	if d.SampleType&SampleTID != 0 {
		id.Pid = r.u32()
		id.Tid = r.u32()
	}
	if d.SampleType&SampleTime != 0 {
		id.Time = r.u64()
	}
	if d.SampleType&SampleIDBit != 0 {
		r.u64()
	}
	if d.SampleType&SampleStreamID != 0 {
		r.u64()
	}
	if d.SampleType&SampleCPU != 0 {
		id.CPU = r.u32()
		r.u32()
	}
	return id
}

// Switch decodes a PERF_RECORD_SWITCH or PERF_RECORD_SWITCH_CPU_WIDE.
func (d *Decoder) Switch(rec []byte) (Switch, error) {
	h, err := ParseHeader(rec)
	if err != nil {
		return Switch{}, err
	}
	if h.Type != TypeSwitch && h.Type != TypeSwitchCPU {
		return Switch{}, fmt.Errorf("decode switch: record type %d is not a switch", h.Type)
	}
	n := d.sampleIDTrailerSize()
	if h.Type == TypeSwitchCPU {
		n += 8 // next_prev_pid, next_prev_tid
	}
	if int(h.Size) > len(rec) || int(h.Size) < headerSize+n {
		return Switch{}, fmt.Errorf("decode switch: %w", ErrShort)
	}
	return Switch{
		Out:      h.Misc&MiscSwitchOut != 0,
		Preempt:  h.Misc&MiscSwitchOut != 0 && h.Misc&MiscSwitchPreempt != 0,
		SampleID: d.sampleID(rec[headerSize:h.Size]),
	}, nil
}

// Time is the time of any record: a sample's own, or the sample_id trailer's of the
// others. A record too short to hold one, or without times, is at 0.
func (d *Decoder) Time(rec []byte) uint64 {
	h, err := ParseHeader(rec)
	if err != nil || int(h.Size) > len(rec) || h.Size < headerSize || d.SampleType&SampleTime == 0 {
		return 0
	}
	body := rec[headerSize:h.Size]
	if h.Type != TypeSample {
		return d.sampleID(body).Time
	}
	off := 0
	for _, bit := range []uint64{SampleIdentifier, SampleIP, SampleTID} {
		if d.SampleType&bit != 0 {
			off += 8
		}
	}
	if len(body) < off+8 {
		return 0
	}
	return binary.LittleEndian.Uint64(body[off:])
}

// SamplePid is the process of a PERF_RECORD_SAMPLE, read without decoding the rest: false
// for another record, or a sample too short to hold one, or without PERF_SAMPLE_TID.
func (d *Decoder) SamplePid(rec []byte) (uint32, bool) {
	h, err := ParseHeader(rec)
	if err != nil || h.Type != TypeSample || int(h.Size) > len(rec) || h.Size < headerSize || d.SampleType&SampleTID == 0 {
		return 0, false
	}
	off := headerSize
	for _, bit := range []uint64{SampleIdentifier, SampleIP} {
		if d.SampleType&bit != 0 {
			off += 8
		}
	}
	if int(h.Size) < off+4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(rec[off:]), true
}

// Sample decodes a PERF_RECORD_SAMPLE. rec is the whole record, header included. The
// returned callchain aliases a buffer owned by the decoder, valid until the next call.
func (d *Decoder) Sample(rec []byte, s *Sample) error {
	h, err := ParseHeader(rec)
	if err != nil {
		return err
	}
	if int(h.Size) > len(rec) || h.Size < headerSize {
		return fmt.Errorf("decode sample: size %d does not fit %d bytes", h.Size, len(rec))
	}
	r := reader{b: rec[headerSize:h.Size]}
	st := d.SampleType
	*s = Sample{Misc: h.Misc}
	if st&SampleIdentifier != 0 {
		s.ID = r.u64()
	}
	if st&SampleIP != 0 {
		s.IP = r.u64()
	}
	if st&SampleTID != 0 {
		s.Pid = r.u32()
		s.Tid = r.u32()
	}
	if st&SampleTime != 0 {
		s.Time = r.u64()
	}
	if st&SampleAddr != 0 {
		r.u64()
	}
	if st&SampleIDBit != 0 {
		r.u64()
	}
	if st&SampleStreamID != 0 {
		r.u64()
	}
	if st&SampleCPU != 0 {
		s.CPU = r.u32()
		r.u32()
	}
	if st&SamplePeriod != 0 {
		s.Period = r.u64()
	}
	if st&SampleRead != 0 {
		if err := d.read(&r, s); err != nil {
			return err
		}
	}
	if st&SampleCallchain != 0 {
		nr := r.u64()
		if r.err {
			return fmt.Errorf("decode sample: %w", ErrShort)
		}
		if nr > maxCallchainSize || int(nr)*8 > len(r.b)-r.off {
			return fmt.Errorf("decode sample: callchain of %d entries does not fit the record", nr)
		}
		raw := r.bytes(int(nr) * 8)
		if cap(d.chain) < int(nr) {
			d.chain = make([]uint64, int(nr), int(nr)+16)
		}
		d.chain = d.chain[:nr]
		for i := range d.chain {
			d.chain[i] = binary.LittleEndian.Uint64(raw[i*8:])
		}
		s.Callchain = d.chain
	}
	if st&SampleRaw != 0 {
		n := r.u32()
		if !r.err && (n > MaxRaw || int(n) > len(r.b)-r.off) {
			return fmt.Errorf("decode sample: raw data of %d bytes does not fit the record", n)
		}
		s.Raw = r.bytes(int(n))
		if r.err {
			return fmt.Errorf("decode sample: raw data: %w", ErrShort)
		}
	}
	if st&(1<<11) != 0 {
		return errors.New("decode sample: PERF_SAMPLE_BRANCH_STACK is not supported")
	}
	if st&SampleRegsUser != 0 {
		s.RegsABI = r.u64()
		if s.RegsABI != 0 {
			n := bits.OnesCount64(d.RegsUserMask)
			if n > maxRegsUser || n*8 > len(r.b)-r.off {
				return fmt.Errorf("decode sample: %d user registers do not fit the record", n)
			}
			if cap(d.regs) < n {
				d.regs = make([]uint64, n)
			}
			d.regs = d.regs[:n]
			for i := range d.regs {
				d.regs[i] = r.u64()
			}
			s.Regs = d.regs
		}
	}
	if st&SampleStackUser != 0 {
		size := r.u64()
		if r.err {
			return fmt.Errorf("decode sample: %w", ErrShort)
		}
		if size > MaxStackUser || int(size) > len(r.b)-r.off {
			return fmt.Errorf("decode sample: user stack of %d bytes does not fit the record", size)
		}
		s.StackSize = size
		if size != 0 {
			data := r.bytes(int(size))
			dyn := r.u64()
			if dyn > size {
				dyn = size
			}
			s.Stack = data[:dyn]
		}
	}
	if r.err {
		return fmt.Errorf("decode sample: %w", ErrShort)
	}
	return nil
}

// Mmap2 decodes a PERF_RECORD_MMAP2 or PERF_RECORD_MMAP.
func (d *Decoder) Mmap2(rec []byte) (Mmap2, error) {
	h, err := ParseHeader(rec)
	if err != nil {
		return Mmap2{}, err
	}
	if int(h.Size) > len(rec) || h.Size < headerSize {
		return Mmap2{}, fmt.Errorf("decode mmap: size %d does not fit %d bytes", h.Size, len(rec))
	}
	body := rec[headerSize:h.Size]
	trailer := d.sampleIDTrailerSize()
	if len(body) < trailer {
		return Mmap2{}, fmt.Errorf("decode mmap: %w", ErrShort)
	}
	r := reader{b: body[:len(body)-trailer]}
	m := Mmap2{Misc: h.Misc}
	m.Pid = r.u32()
	m.Tid = r.u32()
	m.Addr = r.u64()
	m.Len = r.u64()
	m.Pgoff = r.u64()
	if h.Type == TypeMmap2 {
		if h.Misc&MiscMmapBuildID != 0 {
			hdr := r.bytes(4)
			id := r.bytes(20)
			if !r.err {
				n := int(hdr[0])
				if n > 20 {
					n = 20
				}
				m.BuildID = append([]byte(nil), id[:n]...)
			}
		} else {
			m.Maj = r.u32()
			m.Min = r.u32()
			m.Ino = r.u64()
			r.u64() // ino_generation
		}
		m.Prot = r.u32()
		m.Flag = r.u32()
	}
	if r.err {
		return Mmap2{}, fmt.Errorf("decode mmap: %w", ErrShort)
	}
	m.Filename = r.cstring()
	m.SampleID = d.sampleID(body)
	return m, nil
}

// Comm decodes a PERF_RECORD_COMM.
func (d *Decoder) Comm(rec []byte) (Comm, error) {
	h, err := ParseHeader(rec)
	if err != nil {
		return Comm{}, err
	}
	if int(h.Size) > len(rec) || h.Size < headerSize {
		return Comm{}, fmt.Errorf("decode comm: size %d does not fit %d bytes", h.Size, len(rec))
	}
	body := rec[headerSize:h.Size]
	trailer := d.sampleIDTrailerSize()
	if len(body) < trailer+8 {
		return Comm{}, fmt.Errorf("decode comm: %w", ErrShort)
	}
	r := reader{b: body[:len(body)-trailer]}
	c := Comm{Pid: r.u32(), Tid: r.u32(), Exec: h.Misc&MiscCommExec != 0}
	c.Comm = r.cstring()
	c.SampleID = d.sampleID(body)
	return c, nil
}

// Task decodes a PERF_RECORD_FORK or PERF_RECORD_EXIT.
func (d *Decoder) Task(rec []byte) (Task, error) {
	h, err := ParseHeader(rec)
	if err != nil {
		return Task{}, err
	}
	if int(h.Size) > len(rec) || h.Size < headerSize {
		return Task{}, fmt.Errorf("decode task: size %d does not fit %d bytes", h.Size, len(rec))
	}
	body := rec[headerSize:h.Size]
	r := reader{b: body}
	t := Task{Pid: r.u32(), PPid: r.u32(), Tid: r.u32(), PTid: r.u32(), Time: r.u64()}
	if r.err {
		return Task{}, fmt.Errorf("decode task: %w", ErrShort)
	}
	t.SampleID = d.sampleID(body)
	return t, nil
}

// Lost decodes a PERF_RECORD_LOST or PERF_RECORD_LOST_SAMPLES.
func (d *Decoder) Lost(rec []byte) (Lost, error) {
	h, err := ParseHeader(rec)
	if err != nil {
		return Lost{}, err
	}
	if int(h.Size) > len(rec) || h.Size < headerSize {
		return Lost{}, fmt.Errorf("decode lost: size %d does not fit %d bytes", h.Size, len(rec))
	}
	body := rec[headerSize:h.Size]
	r := reader{b: body}
	var l Lost
	if h.Type == TypeLost {
		r.u64() // id
	}
	l.Lost = r.u64()
	if r.err {
		return Lost{}, fmt.Errorf("decode lost: %w", ErrShort)
	}
	l.SampleID = d.sampleID(body)
	return l, nil
}

// SplitCallchain splits a raw callchain into its kernel and user parts, leaf first, dropping
// context markers. Either part may be empty.
func SplitCallchain(chain []uint64) (kernel, user []uint64) {
	ctx := uint64(0)
	start := 0
	for i, a := range chain {
		if a >= ContextMax {
			if ctx == ContextKernel {
				kernel = chain[start:i]
			} else if ctx == ContextUser {
				user = chain[start:i]
			}
			ctx = a
			start = i + 1
		}
	}
	switch ctx {
	case ContextKernel:
		kernel = chain[start:]
	case ContextUser:
		user = chain[start:]
	}
	return kernel, user
}
