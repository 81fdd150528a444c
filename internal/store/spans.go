package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"unsafe"

	"github.com/stax-profiler/stax/internal/spans"
)

// spansMagic starts format 4's spans section, between the counts and the series; a file
// whose layout declares no spans bytes has none (files written before spans).
//
// After the marker: uvarint count of names, each a uvarint length and its bytes; uvarint
// count of spans, each as uvarints: name index, pid, tid, start, end-start, depth, source,
// flags (0; reserved). In the run store's copy, the records of the first spans may be in
// the run's spans file instead (spanlog.go; the layout says how many): the section holds
// the records of the spans after them.
const spansMagic = "SPAN\x00\x00\x00\x01"

var sizeSpan = int64(unsafe.Sizeof(spans.Span{}))

// spanRecordSize is about what a span's record takes (the encoding allows up to
// maxSpanRecord).
const (
	spanRecordSize = 24
	maxSpanRecord  = 5 + 5 + 5 + 10 + 10 + 5 + 5 + 1
)

// spanNames numbers the names of spans in the order the spans first use them.
type spanNames struct {
	ids   []uint32 // by a List's name id: the name's number plus one (0: not numbered yet)
	names []string // by number
}

// number is the number of the name with id in all, a List's Names.
func (n *spanNames) number(id uint32, all []string) uint64 {
	if int(id) >= len(n.ids) {
		n.ids = append(n.ids, make([]uint32, len(all)-len(n.ids))...)
	}
	if n.ids[id] == 0 {
		n.names = append(n.names, all[id])
		n.ids[id] = uint32(len(n.names))
	}
	return uint64(n.ids[id] - 1)
}

// appendSpan appends the record of s, whose name has number name.
func appendSpan(b []byte, name uint64, s spans.Span) []byte {
	b = binary.AppendUvarint(b, name)
	b = binary.AppendUvarint(b, uint64(s.Pid))
	b = binary.AppendUvarint(b, uint64(s.Tid))
	b = binary.AppendUvarint(b, s.Start)
	b = binary.AppendUvarint(b, s.End-s.Start)
	b = binary.AppendUvarint(b, uint64(s.Depth))
	b = binary.AppendUvarint(b, uint64(s.Source))
	return append(b, 0) // flags
}

// encodeSpans is the spans section of sp (nil when there are none). With log, the records
// of the spans already in the run's spans file are left out: the section names them, and
// holds the records of the spans after them alone.
func encodeSpans(sp spans.List, log *SpanLog) []byte {
	if sp.Len() == 0 {
		return nil
	}
	var n spanNames
	done := 0
	if log != nil {
		n, done = log.names, log.spans
		if done < sp.Len() {
			n = spanNames{ids: slices.Clone(n.ids), names: slices.Clip(n.names)}
		}
	}
	all := sp.Names()
	for id := range sp.NamedFrom(done) {
		n.number(id, all)
	}
	size := len(spansMagic) + 3*binary.MaxVarintLen64 + (sp.Len()-done)*spanRecordSize
	for _, name := range n.names {
		size += binary.MaxVarintLen64 + len(name)
	}
	b := make([]byte, 0, size)
	b = append(b, spansMagic...)
	b = binary.AppendUvarint(b, uint64(len(n.names)))
	for _, name := range n.names {
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
	}
	b = binary.AppendUvarint(b, uint64(sp.Len()))
	for id, s := range sp.NamedFrom(done) {
		b = appendSpan(b, n.number(id, all), s)
	}
	return b
}

// readSpans reads the spans section the layout declares. The records of the first spans
// may be in the run's spans file at spanPath (layout's span_file_*); when it cannot be
// read, the run has no spans and SpansErr says why.
func readSpans(r *bufio.Reader, run *Run, b *budget, l *layout, spanPath string) error {
	inline := l.Spans - l.SpanFileSpans
	// A span is 8 varints: at least 8 bytes of the section or of the spans file.
	if l.SpanText < int64(len(spansMagic)) || l.SpanText > b.outLimit || l.Spans > spans.MaxSpans || l.SpanFileSpans < 0 || inline < 0 || inline > l.SpanText/8 ||
		l.SpanFileBytes < 8*l.SpanFileSpans || l.SpanFileBytes > maxSpanRecord*l.SpanFileSpans {
		return fmt.Errorf("spans: %d bytes, %d spans declared (%d in %d bytes of the spans file)", l.SpanText, l.Spans, l.SpanFileSpans, l.SpanFileBytes)
	}
	// The section's bytes count against the bounds; the spans made of them, and the
	// spans file's bytes, are bounded by their count (see the bounds above).
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
	c := &varints{b: buf[len(spansMagic):]}
	nn := c.next()
	if nn > uint64(len(c.b)) {
		return errors.New("spans: more names than bytes")
	}
	names := make([]string, 0, nn)
	for range nn {
		n := c.next()
		if c.bad || n > spans.MaxName || n > uint64(len(c.b)) {
			return errors.New("spans: a name is cut short or too long")
		}
		names = append(names, string(c.b[:n]))
		c.b = c.b[n:]
	}
	ns := c.next()
	if c.bad || ns != uint64(l.Spans) {
		return fmt.Errorf("spans: %d, the file declares %d", ns, l.Spans)
	}
	var out spans.Builder
	if l.SpanFileSpans > 0 {
		recs, err := readSpanFile(spanPath, l)
		if err != nil {
			run.SpansErr = err
			return nil
		}
		f := &varints{b: recs}
		err = decodeSpans(f, names, l.SpanFileSpans, &out)
		if err == nil && len(f.b) != 0 {
			err = errors.New("bytes after the last span the run lists")
		}
		if err != nil {
			run.SpansErr = fmt.Errorf("read spans %s: %w (the file is not this run's; the run's other data still opens)", spanPath, err)
			return nil
		}
	}
	if err := decodeSpans(c, names, inline, &out); err != nil {
		return fmt.Errorf("spans: %w", err)
	}
	if len(c.b) != 0 {
		return errors.New("spans: bytes after the last span")
	}
	run.Spans = out.List()
	return nil
}

// decodeSpans decodes n span records into out.
func decodeSpans(c *varints, names []string, n int64, out *spans.Builder) error {
	for range n {
		name, pid, tid, start, dur, depth, src, _ := c.next(), c.next(), c.next(), c.next(), c.next(), c.next(), c.next(), c.next()
		if c.bad {
			return errors.New("cut short")
		}
		if name >= uint64(len(names)) || pid > 1<<32-1 || tid > 1<<32-1 || depth > 1<<32-1 || src > 1<<32-1 || start+dur < start {
			return errors.New("a span is out of range")
		}
		out.Add(spans.Span{Name: names[name], Pid: uint32(pid), Tid: uint32(tid), Start: start, End: start + dur,
			Depth: uint32(depth), Source: uint32(src)})
	}
	return nil
}

// varints reads uvarints from b; one cut short or too long sets bad and empties b.
type varints struct {
	b   []byte
	bad bool
}

func (c *varints) next() uint64 {
	v, n := binary.Uvarint(c.b)
	if n <= 0 {
		c.bad, c.b = true, nil
		return 0
	}
	c.b = c.b[n:]
	return v
}
