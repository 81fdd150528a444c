package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/stax-profiler/stax/internal/spans"
)

// spansMagic starts format 4's spans section, between the counts and the series; a file
// whose layout declares no spans bytes has none (files written before spans).
//
// After the marker: uvarint count of names, each a uvarint length and its bytes; uvarint
// count of spans, each as uvarints: name index, pid, tid, start, end-start, depth, source,
// flags (0; reserved).
const spansMagic = "SPAN\x00\x00\x00\x01"

var sizeSpan = int64(unsafe.Sizeof(spans.Span{}))

// encodeSpans is the spans section of sp (nil when there are none).
func encodeSpans(sp spans.List) []byte {
	if sp.Len() == 0 {
		return nil
	}
	// The names are written in the order the spans first use them.
	all := sp.Names()
	ids := make([]uint64, len(all))
	var names []string
	for id := range sp.Named() {
		if ids[id] == 0 {
			names = append(names, all[id])
			ids[id] = uint64(len(names))
		}
	}
	b := make([]byte, 0, len(spansMagic)+sp.Len()*16)
	b = append(b, spansMagic...)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, n := range names {
		b = binary.AppendUvarint(b, uint64(len(n)))
		b = append(b, n...)
	}
	b = binary.AppendUvarint(b, uint64(sp.Len()))
	for id, s := range sp.Named() {
		b = binary.AppendUvarint(b, ids[id]-1)
		b = binary.AppendUvarint(b, uint64(s.Pid))
		b = binary.AppendUvarint(b, uint64(s.Tid))
		b = binary.AppendUvarint(b, s.Start)
		b = binary.AppendUvarint(b, s.End-s.Start)
		b = binary.AppendUvarint(b, uint64(s.Depth))
		b = binary.AppendUvarint(b, uint64(s.Source))
		b = append(b, 0) // flags
	}
	return b
}

// readSpans reads the spans section the layout declares.
func readSpans(r *bufio.Reader, run *Run, b *budget, l *layout) error {
	// A span is 8 varints: at least 8 bytes of the section.
	if l.SpanText < int64(len(spansMagic)) || l.SpanText > b.outLimit || l.Spans > spans.MaxSpans || l.Spans > l.SpanText/8 {
		return fmt.Errorf("spans: %d bytes, %d spans declared", l.SpanText, l.Spans)
	}
	// The section's bytes count against the bounds; the spans made of them are bounded by
	// their count (see the bounds above).
	if err := b.charge(l.SpanText); err != nil {
		return err
	}
	buf := make([]byte, l.SpanText)
	if _, err := io.ReadFull(r, buf); err != nil {
		return fmt.Errorf("spans: %w", err)
	}
	if string(buf[:len(spansMagic)]) != spansMagic {
		return errors.New("spans: bad section marker")
	}
	c := buf[len(spansMagic):]
	var bad bool
	next := func() uint64 {
		v, n := binary.Uvarint(c)
		if n <= 0 {
			bad = true
			c = nil
			return 0
		}
		c = c[n:]
		return v
	}
	nn := next()
	if nn > uint64(len(c)) {
		return errors.New("spans: more names than bytes")
	}
	names := make([]string, 0, nn)
	for range nn {
		n := next()
		if bad || n > spans.MaxName || n > uint64(len(c)) {
			return errors.New("spans: a name is cut short or too long")
		}
		names = append(names, string(c[:n]))
		c = c[n:]
	}
	ns := next()
	if bad || ns != uint64(l.Spans) {
		return fmt.Errorf("spans: %d, the file declares %d", ns, l.Spans)
	}
	var out spans.Builder
	for range ns {
		name, pid, tid, start, dur, depth, src, _ := next(), next(), next(), next(), next(), next(), next(), next()
		if bad {
			return errors.New("spans: cut short")
		}
		if name >= uint64(len(names)) || pid > 1<<32-1 || tid > 1<<32-1 || depth > 1<<32-1 || src > 1<<32-1 || start+dur < start {
			return errors.New("spans: a span is out of range")
		}
		out.Add(spans.Span{Name: names[name], Pid: uint32(pid), Tid: uint32(tid), Start: start, End: start + dur,
			Depth: uint32(depth), Source: uint32(src)})
	}
	if len(c) != 0 {
		return errors.New("spans: bytes after the last span")
	}
	run.Spans = out.List()
	return nil
}
