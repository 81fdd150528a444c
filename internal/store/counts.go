package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/stax-profiler/stax/internal/agg"
)

// From format 4 a run's stacks and entries (what top, flame and threads count) follow the
// JSON body as binary, in the compressed stream: "COUNTS\x00\x01", the stack count (u32)
// and each stack as its length and frame ids (uvarints), then the entry count (u32) and
// each entry as tid, pid, stack, count and leaf (uvarints), leaf function (zigzag varint)
// and first sample's time (uvarint). A run of a million samples over 50,000 stacks reads
// in tens of milliseconds this way, where JSON took most of a second.
const countsMagic = "COUNTS\x00\x01"

func encodeCounts(p *agg.Profile) []byte {
	b := []byte(countsMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(p.Stacks)))
	for _, s := range p.Stacks {
		b = binary.AppendUvarint(b, uint64(len(s)))
		for _, id := range s {
			b = binary.AppendUvarint(b, uint64(id))
		}
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(p.Entries)))
	for i := range p.Entries {
		e := &p.Entries[i]
		b = binary.AppendUvarint(b, uint64(e.Tid))
		b = binary.AppendUvarint(b, uint64(e.Pid))
		b = binary.AppendUvarint(b, uint64(e.Stack))
		b = binary.AppendUvarint(b, e.Count)
		b = binary.AppendUvarint(b, e.Leaf)
		b = binary.AppendVarint(b, int64(e.LeafFunc))
		b = binary.AppendUvarint(b, e.Time)
	}
	return b
}

// readCounts reads format 4's stacks and entries into p, within the bounds of b and the
// declared layout l, which every format 4 file has.
func readCounts(r *bufio.Reader, p *agg.Profile, b *budget, l *layout) error {
	if l == nil {
		return errors.New("counts: the file declares no layout")
	}
	if l.Counts < int64(len(countsMagic)+8) || l.Counts > b.outLimit {
		return fmt.Errorf("counts: %d bytes declared", l.Counts)
	}
	if err := b.charge(l.Counts); err != nil {
		return err
	}
	buf := make([]byte, l.Counts)
	if _, err := io.ReadFull(r, buf); err != nil {
		return fmt.Errorf("counts: %w", err)
	}
	if string(buf[:len(countsMagic)]) != countsMagic {
		return errors.New("counts: bad section marker")
	}
	c := countReader2{b: buf[len(countsMagic):]}
	n := c.u32()
	if c.err == nil && n != l.Stacks {
		return fmt.Errorf("stacks: %d, the file declares %d", n, l.Stacks)
	}
	if err := b.charge(n*sizeStack + 4*l.StackIDs); err != nil {
		return err
	}
	var ids int64
	if n > 0 {
		p.Stacks = make([][]uint32, 0, n)
		all := make([]uint32, 0, l.StackIDs)
		for i := int64(0); i < n && c.err == nil; i++ {
			k := int64(c.uv(1 << 20))
			if ids += k; ids > l.StackIDs {
				return fmt.Errorf("stacks: more frame ids than the %d the file declares", l.StackIDs)
			}
			start := len(all)
			for j := int64(0); j < k && c.err == nil; j++ {
				all = append(all, uint32(c.uv(1<<32-1)))
			}
			p.Stacks = append(p.Stacks, all[start:len(all):len(all)])
		}
	}
	if c.err == nil && ids != l.StackIDs {
		return fmt.Errorf("stacks: %d frame ids, the file declares %d", ids, l.StackIDs)
	}
	n = c.u32()
	if c.err == nil && n != l.Entries {
		return fmt.Errorf("entries: %d, the file declares %d", n, l.Entries)
	}
	if err := b.charge(n * sizeEntry); err != nil {
		return err
	}
	if n > 0 {
		p.Entries = make([]agg.Entry, 0, n)
	}
	for i := int64(0); i < n && c.err == nil; i++ {
		e := agg.Entry{Tid: uint32(c.uv(1<<32 - 1)), Pid: uint32(c.uv(1<<32 - 1)), Stack: uint32(c.uv(1<<32 - 1)),
			Count: c.uv(1<<64 - 1), Leaf: c.uv(1<<64 - 1)}
		e.LeafFunc = int32(c.v(-1<<31, 1<<31-1)) // validate checks it names a frame
		e.Time = c.uv(1<<64 - 1)
		p.Entries = append(p.Entries, e)
	}
	if c.err != nil {
		return fmt.Errorf("counts: %w", c.err)
	}
	if len(c.b) != 0 {
		return fmt.Errorf("counts: %d bytes past the entries", len(c.b))
	}
	return nil
}

// countReader2 decodes the counts section from memory; the first error sticks.
type countReader2 struct {
	b   []byte
	err error
}

var errCounts = errors.New("the stacks and entries are damaged")

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
