package jit

import (
	"encoding/binary"
)

// dumpBuilder encodes jitdump files for tests, in either byte order.
type dumpBuilder struct {
	o   order
	buf []byte
}

// order is a byte order that can also append.
type order interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

func newDump(o order, pid uint32, flags uint64) *dumpBuilder {
	d := &dumpBuilder{o: o}
	d.buf = o.AppendUint32(d.buf, Magic)
	d.buf = o.AppendUint32(d.buf, 1)
	d.buf = o.AppendUint32(d.buf, HeaderSize)
	d.buf = o.AppendUint32(d.buf, 62)
	d.buf = o.AppendUint32(d.buf, 0)
	d.buf = o.AppendUint32(d.buf, pid)
	d.buf = o.AppendUint64(d.buf, 12345)
	d.buf = o.AppendUint64(d.buf, flags)
	return d
}

// rec appends a record with the given body.
func (d *dumpBuilder) rec(id RecordID, ts uint64, body []byte) *dumpBuilder {
	d.buf = d.o.AppendUint32(d.buf, uint32(id))
	d.buf = d.o.AppendUint32(d.buf, uint32(RecordPrefixSize+len(body)))
	d.buf = d.o.AppendUint64(d.buf, ts)
	d.buf = append(d.buf, body...)
	return d
}

func (d *dumpBuilder) load(ts, addr uint64, name string, code []byte) *dumpBuilder {
	o := d.o
	var b []byte
	b = o.AppendUint32(b, 1)
	b = o.AppendUint32(b, 2)
	b = o.AppendUint64(b, 0) // vma, as LLVM writes it
	b = o.AppendUint64(b, addr)
	b = o.AppendUint64(b, uint64(len(code)))
	b = o.AppendUint64(b, 7)
	b = append(b, name...)
	b = append(b, 0)
	b = append(b, code...)
	return d.rec(RecCodeLoad, ts, b)
}

func (d *dumpBuilder) move(ts, old, new, size uint64) *dumpBuilder {
	o := d.o
	var b []byte
	b = o.AppendUint32(b, 1)
	b = o.AppendUint32(b, 2)
	b = o.AppendUint64(b, 0)
	b = o.AppendUint64(b, old)
	b = o.AppendUint64(b, new)
	b = o.AppendUint64(b, size)
	b = o.AppendUint64(b, 8)
	return d.rec(RecCodeMove, ts, b)
}

type dbgEntry struct {
	addr uint64
	line uint32
	file string // "\xff" for the same-file shorthand
}

func (d *dumpBuilder) debug(ts, addr uint64, es ...dbgEntry) *dumpBuilder {
	o := d.o
	var b []byte
	b = o.AppendUint64(b, addr)
	b = o.AppendUint64(b, uint64(len(es)))
	for _, e := range es {
		b = o.AppendUint64(b, e.addr)
		b = o.AppendUint32(b, e.line)
		b = o.AppendUint32(b, 0)
		b = append(b, e.file...)
		b = append(b, 0)
	}
	return d.rec(RecCodeDebugInfo, ts, b)
}

func (d *dumpBuilder) unwind(ts uint64, data []byte) *dumpBuilder {
	o := d.o
	var b []byte
	b = o.AppendUint64(b, uint64(len(data)))
	b = o.AppendUint64(b, 0)
	b = o.AppendUint64(b, uint64(len(data)))
	b = append(b, data...)
	return d.rec(RecCodeUnwindingInfo, ts, b)
}

func (d *dumpBuilder) methodID(ts, addr, size uint64, id uint32) *dumpBuilder {
	o := d.o
	var b []byte
	b = o.AppendUint64(b, addr)
	b = o.AppendUint64(b, size)
	b = o.AppendUint32(b, id)
	b = o.AppendUint32(b, 0)
	return d.rec(RecStaxMethodID, ts, b)
}

func (d *dumpBuilder) inline(ts uint64, id, parent uint32, start, size uint64, name, file string) *dumpBuilder {
	o := d.o
	var b []byte
	b = o.AppendUint32(b, id)
	b = o.AppendUint32(b, parent)
	b = o.AppendUint64(b, start)
	b = o.AppendUint64(b, size)
	b = append(b, name...)
	b = append(b, 0)
	b = append(b, file...)
	b = append(b, 0)
	return d.rec(RecStaxInline, ts, b)
}

func (d *dumpBuilder) unload(ts, addr, size uint64) *dumpBuilder {
	o := d.o
	var b []byte
	b = o.AppendUint64(b, addr)
	b = o.AppendUint64(b, size)
	return d.rec(RecStaxCodeUnload, ts, b)
}

func (d *dumpBuilder) close(ts uint64) *dumpBuilder { return d.rec(RecCodeClose, ts, nil) }

func (d *dumpBuilder) bytes() []byte { return d.buf }

// records parses everything after the header, failing the test on error.
func mustRecords(tb interface {
	Helper()
	Fatalf(string, ...any)
}, b []byte) (Header, []Record) {
	tb.Helper()
	h, err := ParseHeader(b)
	if err != nil {
		tb.Fatalf("ParseHeader: %v", err)
	}
	recs, n, need, err := ParseRecords(h.Order, b[h.TotalSize:], nil)
	if err != nil || n != len(b)-int(h.TotalSize) || need != 0 {
		tb.Fatalf("ParseRecords: consumed %d of %d, need %d, err %v", n, len(b)-int(h.TotalSize), need, err)
	}
	return h, recs
}
