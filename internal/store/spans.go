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
func encodeSpans(sp []spans.Span) []byte {
	if len(sp) == 0 {
		return nil
	}
	ids := map[string]uint64{}
	var names []string
	for i := range sp {
		if _, ok := ids[sp[i].Name]; !ok {
			ids[sp[i].Name] = uint64(len(names))
			names = append(names, sp[i].Name)
		}
	}
	b := []byte(spansMagic)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, n := range names {
		b = binary.AppendUvarint(b, uint64(len(n)))
		b = append(b, n...)
	}
	b = binary.AppendUvarint(b, uint64(len(sp)))
	for i := range sp {
		s := &sp[i]
		for _, v := range []uint64{ids[s.Name], uint64(s.Pid), uint64(s.Tid), s.Start, s.End - s.Start, uint64(s.Depth), uint64(s.Source), 0} {
			b = binary.AppendUvarint(b, v)
		}
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
	out := make([]spans.Span, 0, ns)
	for range ns {
		name, pid, tid, start, dur, depth, src, _ := next(), next(), next(), next(), next(), next(), next(), next()
		if bad {
			return errors.New("spans: cut short")
		}
		if name >= uint64(len(names)) || pid > 1<<32-1 || tid > 1<<32-1 || depth > 1<<32-1 || src > 1<<32-1 || start+dur < start {
			return errors.New("spans: a span is out of range")
		}
		out = append(out, spans.Span{Name: names[name], Pid: uint32(pid), Tid: uint32(tid), Start: start, End: start + dur,
			Depth: uint32(depth), Source: uint32(src)})
	}
	if len(c) != 0 {
		return errors.New("spans: bytes after the last span")
	}
	run.Spans = out
	return nil
}
