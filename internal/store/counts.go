package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/stax-profiler/stax/internal/agg"
)

// From format 4 a run's locations, stacks and entries (what every view counts) follow the
// JSON body as binary, in the compressed stream. A run of a million samples over 50,000
// stacks reads in tens of milliseconds this way, where JSON took most of a second.
//
// The section starts with "COUNTS\x00\x02" and holds, little-endian, all integers varints:
//
//   - the location count (u32), then each location: its address as the zigzag difference
//     from the previous location's (the first from 0), its mapping (Mappings index + 1; 0:
//     none), its line count (1 to maxLocationLines) and each line's frame id and line;
//   - the stack count (u32), then each stack: its length and its location ids, leaf first;
//   - the entry count (u32), then each entry: tid, pid, stack, count, its leaf address as
//     the zigzag difference from the address of its stack's leaf location (0 for a stack
//     of none), its leaf function as the zigzag difference from the function of that
//     location's outermost line (-1 for none), and its first sample's time.
//
// Format 5 starts the section with "COUNTS\x00\x03" and ends each entry with its event (the
// index in Meta.Events) and its counters (their number, then each sum; Meta.Counters); the sections of format 4 ("COUNTS\x00\x02") are read with every
// entry's event 0.
//
// Files written by earlier builds of format 4 start the section with "COUNTS\x00\x01" and
// have no locations: their stacks are frame ids, and their entries keep the leaf address
// and leaf function as they are (a uvarint and a zigzag varint). They are still read, and
// their stacks turned into locations as those of formats 1 to 3.
const (
	countsMagic      = "COUNTS\x00\x03"
	countsMagicV2    = "COUNTS\x00\x02"
	countsMagicV1    = "COUNTS\x00\x01"
	maxLocationLines = 4096 // inline levels of one location
)

var (
	sizeLocation = int64(unsafe.Sizeof(agg.Location{}))
	sizeLocLine  = int64(unsafe.Sizeof(agg.Line{}))
	sizeMapping  = int64(unsafe.Sizeof(agg.Mapping{}))
)

func encodeCounts(p *agg.Profile) []byte { return appendCounts(nil, p) }

// appendCounts appends the counts section of p to b.
func appendCounts(b []byte, p *agg.Profile) []byte {
	b = append(b, countsMagic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(p.Locations)))
	var prev uint64
	for i := range p.Locations {
		l := &p.Locations[i]
		b = binary.AppendVarint(b, int64(l.Addr-prev))
		prev = l.Addr
		b = binary.AppendUvarint(b, uint64(l.Mapping))
		b = binary.AppendUvarint(b, uint64(len(l.Lines)))
		for _, ln := range l.Lines {
			b = binary.AppendUvarint(b, uint64(ln.Func))
			b = binary.AppendUvarint(b, uint64(uint32(ln.Line)))
		}
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(p.Stacks)))
	for _, s := range p.Stacks {
		b = binary.AppendUvarint(b, uint64(len(s)))
		for _, id := range s {
			b = binary.AppendUvarint(b, uint64(id))
		}
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(p.Entries)))
	leaves := leafBases(p)
	for i := range p.Entries {
		e := &p.Entries[i]
		addr, fn := leaves.of(e.Stack)
		b = binary.AppendUvarint(b, uint64(e.Tid))
		b = binary.AppendUvarint(b, uint64(e.Pid))
		b = binary.AppendUvarint(b, uint64(e.Stack))
		b = binary.AppendUvarint(b, e.Count)
		b = binary.AppendVarint(b, int64(e.Leaf-addr))
		b = binary.AppendVarint(b, int64(e.LeafFunc)-fn)
		b = binary.AppendUvarint(b, e.Time)
		b = binary.AppendUvarint(b, uint64(e.Event))
		b = binary.AppendUvarint(b, uint64(len(e.Counters)))
		for _, v := range e.Counters {
			b = binary.AppendUvarint(b, v)
		}
	}
	return b
}

// stackLeaves holds, per stack, what an entry's leaf address and leaf function are written
// relative to: the address of the stack's leaf location and the function of that
// location's outermost line (0 and -1 for an empty stack, or one that names no location).
// Entries are many and in no order: finding these per entry would reach into the stacks
// and locations at random for each.
type stackLeaves struct {
	addr []uint64
	fn   []int32
}

func leafBases(p *agg.Profile) stackLeaves {
	s := stackLeaves{addr: make([]uint64, len(p.Stacks)), fn: make([]int32, len(p.Stacks))}
	for i, st := range p.Stacks {
		s.addr[i], s.fn[i] = leafOf(p, st)
	}
	return s
}

func leafOf(p *agg.Profile, st []uint32) (uint64, int32) {
	if len(st) == 0 || int(st[0]) >= len(p.Locations) {
		return 0, -1
	}
	l := &p.Locations[st[0]]
	if len(l.Lines) == 0 {
		return l.Addr, -1
	}
	return l.Addr, int32(l.Outer())
}

func (s stackLeaves) of(stack uint32) (uint64, int64) {
	if int(stack) >= len(s.addr) {
		return 0, -1
	}
	return s.addr[stack], int64(s.fn[stack])
}

// readCounts reads format 4's locations, stacks and entries into p, within the bounds of b
// and the declared layout l, which every format 4 file has. It says whether the stacks
// are of frame ids (an earlier build's file), to be turned into locations.
func readCounts(r *bufio.Reader, p *agg.Profile, b *budget, l *layout) (frameIDs bool, err error) {
	if l == nil {
		return false, errors.New("counts: the file declares no layout")
	}
	if l.Counts < int64(len(countsMagic)+8) || l.Counts > b.outLimit {
		return false, fmt.Errorf("counts: %d bytes declared", l.Counts)
	}
	if err := b.charge(l.Counts); err != nil {
		return false, err
	}
	buf := make([]byte, l.Counts)
	if _, err := io.ReadFull(r, buf); err != nil {
		return false, fmt.Errorf("counts: %w", err)
	}
	withEvents := false
	switch string(buf[:len(countsMagic)]) {
	case countsMagic:
		withEvents = true
	case countsMagicV2:
	case countsMagicV1:
		frameIDs = true
	default:
		return false, errors.New("counts: bad section marker")
	}
	c := countReader2{b: buf[len(countsMagic):]}
	if !frameIDs {
		if err := readLocations(&c, p, b, l); err != nil {
			return false, err
		}
	}
	n := c.u32()
	if c.err == nil && n != l.Stacks {
		return false, fmt.Errorf("stacks: %d, the file declares %d", n, l.Stacks)
	}
	if err := b.charge(n*sizeStack + 4*l.StackIDs); err != nil {
		return false, err
	}
	var ids int64
	if n > 0 {
		p.Stacks = make([][]uint32, 0, n)
		all := make([]uint32, 0, l.StackIDs)
		for i := int64(0); i < n && c.err == nil; i++ {
			k := int64(c.uv(1 << 20))
			if ids += k; ids > l.StackIDs {
				return false, fmt.Errorf("stacks: more ids than the %d the file declares", l.StackIDs)
			}
			start := len(all)
			for j := int64(0); j < k && c.err == nil; j++ {
				all = append(all, uint32(c.uv(1<<32-1)))
			}
			p.Stacks = append(p.Stacks, all[start:len(all):len(all)])
		}
	}
	if c.err == nil && ids != l.StackIDs {
		return false, fmt.Errorf("stacks: %d ids, the file declares %d", ids, l.StackIDs)
	}
	n = c.u32()
	if c.err == nil && n != l.Entries {
		return false, fmt.Errorf("entries: %d, the file declares %d", n, l.Entries)
	}
	if err := b.charge(n*sizeEntry + 12*l.Stacks); err != nil {
		return false, err
	}
	var leaves stackLeaves
	if !frameIDs {
		leaves = leafBases(p)
	}
	if n > 0 {
		p.Entries = make([]agg.Entry, 0, n)
	}
	for i := int64(0); i < n && c.err == nil; i++ {
		e := agg.Entry{Tid: uint32(c.uv(1<<32 - 1)), Pid: uint32(c.uv(1<<32 - 1)), Stack: uint32(c.uv(1<<32 - 1)), Count: c.uv(1<<64 - 1)}
		if frameIDs {
			e.Leaf = c.uv(1<<64 - 1)
			e.LeafFunc = int32(c.v(-1<<31, 1<<31-1)) // validate checks it names a frame
		} else {
			addr, fn := leaves.of(e.Stack)
			e.Leaf = addr + uint64(c.v(-1<<63, 1<<63-1))
			f := fn + c.v(-1<<32, 1<<32)
			if f < -1<<31 || f > 1<<31-1 {
				c.err = errCounts
			}
			e.LeafFunc = int32(f) // validate checks it names a frame
		}
		e.Time = c.uv(1<<64 - 1)
		if withEvents {
			e.Event = uint32(c.uv(maxEvents - 1)) // validate checks the meta lists it
			if n := c.uv(maxCounters); n > 0 && c.err == nil {
				if err := b.charge(int64(n) * 8); err != nil {
					return false, err
				}
				e.Counters = make([]uint64, n)
				for j := range e.Counters {
					e.Counters[j] = c.uv(1<<64 - 1)
				}
			}
		}
		p.Entries = append(p.Entries, e)
	}
	if c.err != nil {
		return false, fmt.Errorf("counts: %w", c.err)
	}
	if len(c.b) != 0 {
		return false, fmt.Errorf("counts: %d bytes past the entries", len(c.b))
	}
	return frameIDs, nil
}

// readLocations reads the locations at the start of the counts section, as many as l
// declares, with as many lines in all.
func readLocations(c *countReader2, p *agg.Profile, b *budget, l *layout) error {
	n := c.u32()
	if c.err == nil && n != l.Locations {
		return fmt.Errorf("locations: %d, the file declares %d", n, l.Locations)
	}
	if err := b.charge(n*sizeLocation + l.LocLines*sizeLocLine); err != nil {
		return err
	}
	if n == 0 {
		return c.err
	}
	p.Locations = make([]agg.Location, 0, n)
	lines := make([]agg.Line, 0, l.LocLines)
	var addr uint64
	for i := int64(0); i < n && c.err == nil; i++ {
		addr += uint64(c.v(-1<<63, 1<<63-1))
		m := uint32(c.uv(1<<32 - 1)) // validate checks it names a mapping
		k := int64(c.uv(maxLocationLines))
		if c.err == nil && k == 0 {
			return fmt.Errorf("locations: location %d has no lines", i)
		}
		if int64(len(lines))+k > l.LocLines {
			return fmt.Errorf("locations: more lines than the %d the file declares", l.LocLines)
		}
		at := len(lines)
		for j := int64(0); j < k && c.err == nil; j++ {
			lines = append(lines, agg.Line{Func: uint32(c.uv(1<<32 - 1)), Line: int32(c.uv(1<<31 - 1))})
		}
		p.Locations = append(p.Locations, agg.Location{Addr: addr, Mapping: m, Lines: lines[at:len(lines):len(lines)]})
	}
	if c.err == nil && int64(len(lines)) != l.LocLines {
		return fmt.Errorf("locations: %d lines, the file declares %d", len(lines), l.LocLines)
	}
	return c.err
}

// countReader2 decodes the counts section from memory; the first error sticks.
type countReader2 struct {
	b   []byte
	err error
}

var errCounts = errors.New("the locations, stacks and entries are damaged")

func (c *countReader2) u32() int64 {
	if c.err != nil || len(c.b) < 4 {
		c.err = errCounts
		return 0
	}
	n := binary.LittleEndian.Uint32(c.b)
	c.b = c.b[4:]
	return int64(n)
}

func (c *countReader2) uv(max uint64) uint64 {
	if c.err != nil {
		return 0
	}
	v, n := binary.Uvarint(c.b)
	if n <= 0 || v > max {
		c.err = errCounts
		return 0
	}
	c.b = c.b[n:]
	return v
}

func (c *countReader2) v(lo, hi int64) int64 {
	if c.err != nil {
		return 0
	}
	v, n := binary.Varint(c.b)
	if n <= 0 || v < lo || v > hi {
		c.err = errCounts
		return 0
	}
	c.b = c.b[n:]
	return v
}
