package store

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/stax-profiler/stax/internal/agg"
)

// A payload is decoded as a stream: the JSON body element by element (never the whole body
// at once), the series chunk by chunk. Its cost is bounded three ways, so a damaged or
// hostile file is refused before it costs more than a real run of its size would:
//
//   - by what the file declares (its layout, in the meta section): the body and series
//     have exactly the declared bytes, each array the declared number of elements, and the
//     declarations must fit the payload's size;
//   - by the payload's size: at most maxRatio uncompressed bytes, and memRatio bytes of
//     decoded run, per compressed byte (files without a layout are bounded by this alone);
//   - as it goes: the uncompressed bytes and the decoded run may not outgrow the
//     compressed bytes read so far by more than burstRatio and memBurstRatio (a part of a
//     run may compress far better than the whole, but not as well as a compression bomb,
//     about 1000-fold), nor may one element of an array be larger than a run's ever is; so
//     a bomb is refused within its first megabytes.
//
// The spans are bounded by their count instead (spans.MaxSpans, and one per 8 bytes of their
// section at most): a program's loop of one task makes spans that compress far better than
// the ratios allow for the rest of a run. So are the records the run's spans file holds
// (spanlog.go), which are not in the payload: at most maxSpanRecord bytes a span, and no
// more than the file has.
const (
	maxRatio      = 64       // uncompressed bytes per compressed byte, in all
	burstRatio    = 256      // uncompressed bytes per compressed byte read so far
	textSlack     = 8 << 20  // uncompressed bytes allowed beyond those ratios
	memRatio      = 128      // bytes of decoded run per compressed byte, in all
	memBurstRatio = 1024     // bytes of decoded run per compressed byte read so far
	memSlack      = 8 << 20  // decoded bytes allowed beyond those ratios
	maxElement    = 4 << 20  // bytes of JSON of one frame, stack, entry, thread or JIT source
	maxCode       = 64 << 20 // bytes of JSON of one piece of code (its bytes, lines, source)
)

// layout is what a file declares, in its meta section, about the compressed rest of its
// payload: the body's bytes and array lengths, and the series' size. Encode writes it;
// files written before it have none (they are bounded by their payload's size).
type layout struct {
	Body      int64 `json:"body_bytes"` // the JSON body, with its newline
	Frames    int64 `json:"frames"`
	Stacks    int64 `json:"stacks"`
	StackIDs  int64 `json:"stack_frames"` // ids in all stacks together (location ids from format 4)
	Entries   int64 `json:"entries"`
	Threads   int64 `json:"threads"`
	Keys      int64 `json:"keys"`
	JIT       int64 `json:"jit"`
	Code      int64 `json:"code"`
	Series    int64 `json:"series_bytes"` // the series section, its marker included
	Chunks    int64 `json:"series_chunks"`
	Samples   int64 `json:"series_samples"`
	CodeText  int64 `json:"code_bytes,omitempty"`   // format 4's code section, its marker included
	Counts    int64 `json:"counts_bytes,omitempty"` // format 4's locations, stacks and entries, their marker included
	Mappings  int64 `json:"mappings,omitempty"`
	Locations int64 `json:"locations,omitempty"`
	LocLines  int64 `json:"location_lines,omitempty"` // lines of all locations together
	Spans     int64 `json:"spans,omitempty"`
	SpanText  int64 `json:"spans_bytes,omitempty"` // the spans section, its marker included
	// The records of the first SpanFileSpans spans are the first SpanFileBytes bytes of
	// the run's spans file after its header, of CRC-32C SpanFileCRC (spanlog.go).
	SpanFileSpans int64  `json:"span_file_spans,omitempty"`
	SpanFileBytes int64  `json:"span_file_bytes,omitempty"`
	SpanFileCRC   uint32 `json:"span_file_crc,omitempty"`
	// The off-CPU intervals' section, after the spans'; files that keep them in the body
	// (base64 JSON) have none.
	Intervals    int64 `json:"off_cpu_intervals,omitempty"`
	IntervalText int64 `json:"off_cpu_intervals_bytes,omitempty"`
}

// metaSection is the meta section's JSON: the run's meta and the file's layout.
type metaSection struct {
	Meta
	Layout *layout `json:"layout,omitempty"`
}

func layoutOf(r *Run, bodyBytes, countBytes int, series *seriesOut, codeBytes int) *layout {
	p := &r.Profile
	l := &layout{Body: int64(bodyBytes), Frames: int64(len(p.Frames)), Stacks: int64(len(p.Stacks)),
		Entries: int64(len(p.Entries)), Threads: int64(len(p.Threads)), Keys: int64(len(p.KeyEntry)),
		JIT: int64(len(r.JIT)), Code: int64(len(r.Code)), Chunks: int64(len(p.Series.Chunks)),
		Series: series.size(), Samples: series.samples(), CodeText: int64(codeBytes), Counts: int64(countBytes),
		Mappings: int64(len(p.Mappings)), Locations: int64(len(p.Locations))}
	for _, s := range p.Stacks {
		l.StackIDs += int64(len(s))
	}
	for i := range p.Locations {
		l.LocLines += int64(len(p.Locations[i].Lines))
	}
	return l
}

// Sizes of what decoding allocates per element.
var (
	sizeFrame  = int64(unsafe.Sizeof(agg.Frame{}))
	sizeStack  = int64(unsafe.Sizeof([]uint32{}))
	sizeEntry  = int64(unsafe.Sizeof(agg.Entry{}))
	sizeThread = int64(unsafe.Sizeof(agg.ThreadInfo{}))
	sizeJIT    = int64(unsafe.Sizeof(JITSource{}))
	sizeCode   = int64(unsafe.Sizeof(Code{}))
	sizeLine   = int64(unsafe.Sizeof(Line{}))
	sizeSymbol = int64(unsafe.Sizeof(Symbol{}))
	sizeSource = int64(unsafe.Sizeof(SourceLine{}))
	sizeChunk  = int64(unsafe.Sizeof(agg.SeriesChunk{}))
	sizeMapKey = int64(48) // a map entry's share of its table, beyond the key's bytes
)

// check refuses a layout that declares more than the payload of size bytes can hold.
func (l *layout) check(payload int64) error {
	counts := []int64{l.Body, l.Frames, l.Stacks, l.StackIDs, l.Entries, l.Threads, l.Keys, l.JIT, l.Code, l.Series, l.Chunks, l.Samples, l.CodeText, l.Counts,
		l.Mappings, l.Locations, l.LocLines, l.Spans, l.SpanText, l.SpanFileSpans, l.SpanFileBytes,
		l.Intervals, l.IntervalText}
	for _, n := range counts {
		if n < 0 || n > maxExpanded {
			return errors.New("the file's layout is damaged (a size is out of range)")
		}
	}
	text := l.Body + l.Counts + l.Series + l.CodeText + l.SpanText + l.IntervalText
	if text > textLimit(payload) {
		return fmt.Errorf("the file declares %d bytes of data in a %d-byte payload, more than a run holds (the file is damaged or was not written by stax)", text, payload)
	}
	mem := l.Body + l.Counts + l.Series + l.CodeText + l.SpanText + l.IntervalText + l.Intervals*sizeInterval + l.Frames*sizeFrame + l.Stacks*sizeStack + l.StackIDs*4 + l.Entries*sizeEntry +
		l.Threads*sizeThread + l.Keys*4 + l.JIT*sizeJIT + l.Code*sizeCode + l.Chunks*sizeChunk +
		l.Mappings*sizeMapping + l.Locations*sizeLocation + l.LocLines*sizeLocLine
	if mem > memLimit(payload) {
		return fmt.Errorf("the file declares a run of %d MB in a %d-byte payload, more than a run holds (the file is damaged or was not written by stax)", mem>>20, payload)
	}
	return nil
}

// matches checks the body's arrays against the declared lengths (an array may be absent).
// From format 4 the key entries and the code are not in the body.
func (l *layout) matches(r *Run, version uint32) error {
	p := &r.Profile
	type check struct {
		name      string
		got, want int
	}
	checks := []check{{"frames", len(p.Frames), int(l.Frames)}, {"threads", len(p.Threads), int(l.Threads)}, {"jit", len(r.JIT), int(l.JIT)},
		{"mappings", len(p.Mappings), int(l.Mappings)}}
	if version < 4 {
		checks = append(checks, check{"stacks", len(p.Stacks), int(l.Stacks)}, check{"entries", len(p.Entries), int(l.Entries)},
			check{"key_entry", len(p.KeyEntry), int(l.Keys)}, check{"code", len(r.Code), int(l.Code)})
	}
	for _, c := range checks {
		if c.got != c.want {
			return fmt.Errorf("%s: %d, the file declares %d", c.name, c.got, c.want)
		}
	}
	return nil
}

func textLimit(payload int64) int64 { return min(maxExpanded, payload*maxRatio+textSlack) }
func memLimit(payload int64) int64  { return payload*memRatio + memSlack }

// countReader counts the compressed bytes the decompressor has taken. It is an
// io.ByteReader, so the decompressor takes no more than it needs.
type countReader struct {
	r *bytes.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// limitError is a bound a payload broke.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

// budget reads the uncompressed stream and keeps the decoding within its bounds.
type budget struct {
	z        io.Reader    // the decompressor
	in       *countReader // the compressed bytes under it
	out      int64        // uncompressed bytes read
	outLimit int64
	declared bool // outLimit is the file's own declaration
	mem      int64
	memLimit int64
	// The element being decoded.
	elemName             string
	elemStart, elemLimit int64
}

func newBudget(z io.Reader, in *countReader, payload int64, l *layout) *budget {
	b := &budget{z: z, in: in, outLimit: textLimit(payload), memLimit: memLimit(payload)}
	if l != nil {
		b.outLimit, b.declared = l.Body+l.Counts+l.Series+l.CodeText+l.SpanText+l.IntervalText, true
	}
	return b
}

func (b *budget) Read(p []byte) (int, error) {
	if b.out >= b.outLimit {
		// One byte past the limit tells a stream that ends exactly there from a longer one.
		var one [1]byte
		if n, err := b.z.Read(one[:]); n == 0 {
			if err == nil || err == io.EOF {
				return 0, io.EOF
			}
			return 0, err
		}
		if b.declared {
			return 0, &limitError{fmt.Sprintf("the compressed data holds more than the %d bytes the file declares (the file is damaged or was not written by stax)", b.outLimit)}
		}
		return 0, &limitError{fmt.Sprintf("the compressed data expands past %d bytes, more than a run of this size holds (the file is damaged or was not written by stax)", b.outLimit)}
	}
	p = p[:min(int64(len(p)), b.outLimit-b.out, 64<<10)]
	n, err := b.z.Read(p)
	b.out += int64(n)
	if b.out > b.in.n*burstRatio+textSlack {
		return n, &limitError{fmt.Sprintf("the compressed data expands more than %d-fold (%d bytes from %d): a compression bomb, not a run", burstRatio, b.out, b.in.n)}
	}
	if b.elemLimit > 0 && b.out-b.elemStart > b.elemLimit+64<<10 {
		return n, &limitError{fmt.Sprintf("%s has an element of more than %d MB, more than a run holds (the file is damaged or was not written by stax)", b.elemName, b.elemLimit>>20)}
	}
	return n, err
}

// element starts an element of array name, at offset start of the uncompressed stream,
// which may take at most limit bytes.
func (b *budget) element(name string, start, limit int64) {
	b.elemName, b.elemStart, b.elemLimit = name, start, limit
}

// charge counts n bytes of decoded run against the bounds.
func (b *budget) charge(n int64) error {
	b.mem += n
	if b.mem > b.memLimit || b.mem > b.in.n*memBurstRatio+memSlack {
		return &limitError{fmt.Sprintf("the run decodes to more than %d MB from %d compressed bytes, more than a run of this size holds (the file is damaged or was not written by stax)", b.mem>>20, b.in.n)}
	}
	return nil
}

// decoder walks the JSON body.
type decoder struct {
	b       *budget
	dec     *json.Decoder
	lay     *layout
	version uint32
	want    Parts
}

// decodeCompressed reads the compressed part of a payload into r: the JSON body (with the
// meta inside it for format 1), from format 3 the binary series, from format 4 the code
// after it; spans listed in the run's spans file are read from spanPath ("": unknown). A reader that wants no samples or no code stops before them (format 4; older
// formats hold them in the body, which is always read whole).
func decodeCompressed(r *Run, version uint32, rest *bytes.Reader, payload int64, l *layout, want Parts, spanPath string) error {
	in := &countReader{r: rest}
	zr, err := gzip.NewReader(in)
	if err != nil {
		return err
	}
	if l != nil {
		if err := l.check(payload); err != nil {
			return err
		}
	}
	b := newBudget(zr, in, payload, l)
	d := &decoder{b: b, dec: json.NewDecoder(b), lay: l, version: version, want: want}
	if err := d.body(r, version); err != nil {
		return firstLimit(b, err)
	}
	if l != nil {
		if err := l.matches(r, version); err != nil {
			return err
		}
		// The body ends with a newline.
		if n := d.dec.InputOffset() + 1; n != l.Body {
			return fmt.Errorf("the body has %d bytes, the file declares %d", n, l.Body)
		}
	}
	whole := want == All || version < 4
	tail := bufio.NewReader(io.MultiReader(d.dec.Buffered(), b))
	frameIDs := version < 4 // stacks of frame ids, to be turned into locations
	if version >= 4 {
		if err := skipNewline(tail); err != nil {
			return err
		}
		ids, err := readCounts(tail, &r.Profile, b, l)
		if err != nil {
			return firstLimit(b, err)
		}
		frameIDs = ids
	}
	if frameIDs {
		// Each frame id may become a location of one line, and stays in FrameStacks.
		if err := b.charge(countIDs(r.Profile.Stacks) * (sizeLocation + sizeLocLine)); err != nil {
			return err
		}
		r.Profile.LocateFrameStacks()
	} else if err := b.charge(frameStackBytes(&r.Profile)); err != nil {
		return err
	}
	if !whole && want&(Samples|CodeParts) == 0 {
		return nil
	}
	if version >= 4 && l != nil && l.SpanText > 0 {
		if err := readSpans(tail, r, b, l, spanPath); err != nil {
			return firstLimit(b, err)
		}
	}
	if version >= 4 && l != nil && l.IntervalText > 0 {
		if want&OffCPUPart == 0 {
			if _, err := io.CopyN(io.Discard, tail, l.IntervalText); err != nil {
				return fmt.Errorf("off-CPU intervals: %w", firstLimit(b, err))
			}
		} else if err := readIntervals(tail, r, b, l); err != nil {
			return firstLimit(b, err)
		}
	}
	if version >= 3 {
		if err := readSeries(tail, &r.Profile, b, l, version); err != nil {
			return fmt.Errorf("samples: %w", firstLimit(b, err))
		}
	}
	if version >= 4 {
		if !whole && want&CodeParts == 0 {
			return nil
		}
		if err := d.code(tail, r); err != nil {
			return firstLimit(b, err)
		}
	}
	if l != nil {
		if _, err := io.Copy(io.Discard, tail); err != nil {
			return firstLimit(b, err)
		}
		if b.out != b.outLimit {
			return fmt.Errorf("the compressed data holds %d bytes, the file declares %d", b.out, b.outLimit)
		}
	}
	return nil
}

// countIDs is the number of ids in stacks.
func countIDs(stacks [][]uint32) int64 {
	var n int64
	for _, s := range stacks {
		n += int64(len(s))
	}
	return n
}

// frameStackBytes is the memory of p's stacks expanded into frames (what ExpandStacks
// makes), counting nothing for a location that does not exist (validate refuses those).
func frameStackBytes(p *agg.Profile) int64 {
	return int64(len(p.Stacks))*sizeStack + 4*p.FrameCount() + 4*int64(len(p.Locations))
}

// code reads format 4's code section.
func (d *decoder) code(tail *bufio.Reader, r *Run) error {
	marker := make([]byte, len(codeMagic))
	if _, err := io.ReadFull(tail, marker); err != nil {
		return fmt.Errorf("code: %w", err)
	}
	if string(marker) != codeMagic {
		return errors.New("code: bad section marker")
	}
	cd := &decoder{b: d.b, dec: json.NewDecoder(tail), lay: d.lay}
	if err := decodeArray(cd, "code", &r.Code, cd.declared(func(l *layout) int64 { return l.Code }), sizeCode, codeBytes); err != nil {
		return err
	}
	if d.lay != nil && int64(len(marker))+cd.dec.InputOffset()+1 != d.lay.CodeText {
		return fmt.Errorf("code: %d bytes, the file declares %d", int64(len(marker))+cd.dec.InputOffset()+1, d.lay.CodeText)
	}
	// What the JSON decoder read ahead (the newline) is the section's end.
	_, err := io.Copy(io.Discard, cd.dec.Buffered())
	return err
}

// firstLimit prefers a broken bound to the error it caused further up (a JSON value cut
// short, say): the bound says what is wrong.
func firstLimit(b *budget, err error) error {
	var le *limitError
	if errors.As(err, &le) {
		return le
	}
	return err
}

// declared is the layout's count for an array, or -1 without a layout.
func (d *decoder) declared(n func(*layout) int64) int64 {
	if d.lay == nil {
		return -1
	}
	return n(d.lay)
}

func (d *decoder) body(r *Run, version uint32) error {
	withMeta := version == 1
	return d.object("run", func(key string) error {
		switch key {
		case "meta":
			if !withMeta {
				return d.skip()
			}
			start := d.dec.InputOffset()
			d.b.element("meta", start, maxMeta)
			err := d.dec.Decode(&r.Meta)
			d.b.element("", 0, 0)
			if err != nil {
				return fmt.Errorf("meta: %w", err)
			}
			return d.b.charge(2 * (d.dec.InputOffset() - start))
		case "profile":
			return d.profile(&r.Profile)
		case "jit":
			return decodeArray(d, "jit", &r.JIT, d.declared(func(l *layout) int64 { return l.JIT }), sizeJIT, jitBytes)
		case "code":
			if version >= 4 {
				return errors.New("code: in the body of a format 4 file")
			}
			return decodeArray(d, "code", &r.Code, d.declared(func(l *layout) int64 { return l.Code }), sizeCode, codeBytes)
		case "off_cpu":
			if d.want&OffCPUPart == 0 {
				return d.skip()
			}
			return d.offCPU(r)
		case "off_cpu_intervals":
			if d.want&OffCPUPart == 0 {
				return d.skip()
			}
			return d.intervals(r)
		case "traces":
			if d.want&TracesPart == 0 {
				return d.skip()
			}
			return d.traces(r)
		case "wakers_ns", "wakers_n":
			if d.want&OffCPUPart == 0 {
				return d.skip()
			}
			if key == "wakers_ns" {
				return d.part(key, &r.WakersNs)
			}
			return d.part(key, &r.WakersN)
		}
		return d.skip()
	})
}

func (d *decoder) profile(p *agg.Profile) error {
	var ids int64
	err := d.object("profile", func(key string) error {
		switch key {
		case "frames":
			return decodeArray(d, "frames", &p.Frames, d.declared(func(l *layout) int64 { return l.Frames }), sizeFrame, func(f *agg.Frame) int64 {
				return int64(len(f.Func) + len(f.Image) + len(f.Kind) + len(f.File))
			})
		case "mappings":
			return decodeArray(d, "mappings", &p.Mappings, d.declared(func(l *layout) int64 { return l.Mappings }), sizeMapping, func(m *agg.Mapping) int64 {
				return int64(len(m.File) + len(m.BuildID))
			})
		case "stacks":
			if d.version >= 4 {
				return d.skip() // in the counts section
			}
			want := d.declared(func(l *layout) int64 { return l.StackIDs })
			return decodeArray(d, "stacks", &p.Stacks, d.declared(func(l *layout) int64 { return l.Stacks }), sizeStack, func(s *[]uint32) int64 {
				ids += int64(len(*s))
				if want >= 0 && ids > want {
					return -1
				}
				return 4 * int64(cap(*s))
			})
		case "entries":
			if d.version >= 4 {
				return d.skip()
			}
			return decodeArray(d, "entries", &p.Entries, d.declared(func(l *layout) int64 { return l.Entries }), sizeEntry, func(*agg.Entry) int64 { return 0 })
		case "threads":
			return decodeArray(d, "threads", &p.Threads, d.declared(func(l *layout) int64 { return l.Threads }), sizeThread, func(t *agg.ThreadInfo) int64 { return int64(len(t.Name)) })
		case "key_entry":
			return decodeArray(d, "key_entry", &p.KeyEntry, d.declared(func(l *layout) int64 { return l.Keys }), 4, func(*int32) int64 { return 0 })
		case "series":
			// Format 2 keeps the series in the body; later formats leave it empty there.
			return d.object("series", func(key string) error {
				if key != "chunks" {
					return d.skip()
				}
				return decodeArray(d, "series chunks", &p.Series.Chunks, -1, sizeChunk, func(c *agg.SeriesChunk) int64 { return int64(len(c.Data)) })
			})
		}
		return d.skip()
	})
	if err != nil {
		return err
	}
	if d.lay != nil && d.version < 4 && ids != d.lay.StackIDs {
		return fmt.Errorf("stacks: %d frame ids, the file declares %d", ids, d.lay.StackIDs)
	}
	return nil
}

// object walks a JSON object (or null), calling fn for each key with the decoder at its
// value. A key given twice is an error.
func (d *decoder) object(name string, fn func(key string) error) error {
	t, err := d.dec.Token()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if t == nil {
		return nil
	}
	if t != json.Delim('{') {
		return fmt.Errorf("%s: cannot unmarshal %s into an object", name, kind(t))
	}
	seen := map[string]bool{}
	for d.dec.More() {
		t, err := d.dec.Token()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		key, _ := t.(string)
		if seen[key] {
			return fmt.Errorf("%s: key %q is given twice", name, key)
		}
		seen[key] = true
		if err := fn(key); err != nil {
			return err
		}
	}
	if _, err := d.dec.Token(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// skip reads past one value.
func (d *decoder) skip() error {
	depth := 0
	for {
		t, err := d.dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

func kind(t json.Token) string {
	switch t.(type) {
	case json.Delim:
		if t == json.Delim('[') {
			return "array"
		}
		return "object"
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "bool"
	}
	return "value"
}

// decodeArray decodes a JSON array (or null) into *dst one element at a time. want is the
// declared length (-1: none); size is the element's own size, extra the bytes it holds
// beyond it (-1: it breaks a declared bound).
func decodeArray[T any](d *decoder, name string, dst *[]T, want, size int64, extra func(*T) int64) error {
	limit := int64(maxElement)
	if name == "code" {
		limit = maxCode
	}
	t, err := d.dec.Token()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if t == nil {
		if want > 0 {
			return fmt.Errorf("%s: none, the file declares %d", name, want)
		}
		return nil
	}
	if t != json.Delim('[') {
		return fmt.Errorf("%s: cannot unmarshal %s into an array", name, kind(t))
	}
	if *dst != nil {
		return fmt.Errorf("%s: given twice", name)
	}
	*dst = make([]T, 0, max(0, min(want, 1<<12)))
	var n int64
	for d.dec.More() {
		if want >= 0 && n == want {
			return fmt.Errorf("%s: more than the %d the file declares", name, want)
		}
		var v T
		d.b.element(name, d.dec.InputOffset(), limit)
		err := d.dec.Decode(&v)
		d.b.element("", 0, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		x := extra(&v)
		if x < 0 {
			return fmt.Errorf("%s: more frame ids than the file declares", name)
		}
		// The element is decoded on its own, then copied into its place in the array.
		if err := d.b.charge(2*size + x); err != nil {
			return err
		}
		*dst = append(*dst, v)
		n++
	}
	if _, err := d.dec.Token(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if want >= 0 && n != want {
		return fmt.Errorf("%s: %d, the file declares %d", name, n, want)
	}
	return nil
}

func jitBytes(j *JITSource) int64 {
	n := int64(len(j.Path) + len(j.Kind) + len(j.Error))
	for k := range j.Skipped {
		n += int64(len(k)) + sizeMapKey
	}
	return n
}

func codeBytes(c *Code) int64 {
	n := int64(len(c.Bytes) + len(c.Origin) + len(c.Warning) + len(c.Path) + len(c.BuildID) + len(c.Error))
	for _, l := range c.Lines {
		n += sizeLine + int64(len(l.File))
		for _, s := range l.Inlined {
			n += 16 + int64(len(s))
		}
	}
	for _, s := range c.Symbols {
		n += sizeSymbol + int64(len(s.Name))
	}
	for _, s := range c.Source {
		n += sizeSource + int64(len(s.File)+len(s.Text))
	}
	return n
}

// skipNewline reads past the newline that ends the JSON body.
func skipNewline(r *bufio.Reader) error {
	for {
		c, err := r.ReadByte()
		if err != nil {
			return fmt.Errorf("counts: %w", err)
		}
		if c != '\n' && c != ' ' && c != '\r' && c != '\t' {
			return r.UnreadByte()
		}
	}
}
